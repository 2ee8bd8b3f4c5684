"""User plugins: modules of the user's own that register methods or data sources.

A plugin is any importable module that, when imported, registers what it brings with the
package's own decorators: ``fedpl_core.methods.register`` for a method (a
:class:`~fedpl_core.methods.base.Method` subclass with a ``name``) and
``fedpl_core.data.sources.base.register_source`` for a data source.  Name it

* on the command line: ``python -m fedpl_core --plugin mypkg.methods run --method mine ...``
  (repeatable);
* in notebook 05 (the benchmark, which runs every registered method): ``-p plugins
  '["mypkg.methods"]'``;
* in the environment: ``FEDPL_PLUGINS=mypkg.methods,other`` (comma-separated).

:func:`load_plugins` imports the modules and adds their names to ``$FEDPL_PLUGINS``, so
that every process started afterwards (a grid's worker processes, forked or spawned, a
notebook kernel started by ``reproduce``) imports them too: the registries call
:func:`load_env_plugins` before they answer, so a worker finds a plugin's method or data
source by name like a built-in one.

**[choice]** Plugins are named explicitly, not discovered through package entry points:
an installed package never changes what a run does unless the user asks for it, and the
command line's ``--help`` and ``methods`` stay fast (no scan of the installed packages).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterable

#: The environment variable that carries the plugin modules to worker processes.
ENV = "FEDPL_PLUGINS"
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_loaded: list[str] = []


class PluginError(ValueError):
    """A plugin module that cannot be named or imported."""


def plugin_names(text: str | None) -> list[str]:
    """The module names of ``$FEDPL_PLUGINS``-style text (comma- or space-separated), in order,
    each once."""
    return list(dict.fromkeys(n for n in re.split(r"[,\s]+", text or "") if n))


def load_plugins(names: Iterable[str], export: bool = True) -> list[str]:
    """Import each module of ``names`` (dotted module names, importable from ``sys.path``;
    the working directory is on it for ``python -m``) and return the names.  ``export``: add
    them to ``$FEDPL_PLUGINS`` so that worker processes started later import them too.

    A name that is not a module name, or a module that cannot be imported, raises
    :class:`PluginError` with one line naming it; an error raised while the module runs
    is re-raised as it is (it is the plugin's own)."""
    names = [str(n).strip() for n in names]
    for name in names:
        if not _MODULE.match(name):
            raise PluginError(
                f"plugin {name!r} is not a module name; give a dotted name such as mypkg.methods "
                "(a module importable from the working directory or the Python path)"
            )
    for name in names:
        if name in _loaded:
            continue
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())  # a module in the working directory, as python -m finds it
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                raise PluginError(
                    f"plugin {name!r}: no module named {e.name!r} in the working directory or on the Python path"
                ) from None
            raise
        _loaded.append(name)
    if export and names:
        os.environ[ENV] = ",".join(dict.fromkeys(plugin_names(os.environ.get(ENV)) + names))
    return names


def load_env_plugins() -> list[str]:
    """Import the modules named in ``$FEDPL_PLUGINS`` that this process has not imported yet
    (the registries call it before they answer; cheap once they are loaded)."""
    names = plugin_names(os.environ.get(ENV))
    todo = [n for n in names if n not in _loaded]
    if todo:
        load_plugins(todo, export=False)
    return names


def loaded() -> list[str]:
    """The plugin modules this process has imported, in order."""
    return list(_loaded)


__all__ = ["ENV", "PluginError", "plugin_names", "load_plugins", "load_env_plugins", "loaded"]
