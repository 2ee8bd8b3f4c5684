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

**What a plugin may register.**  A name of its own: the registries refuse a plugin's method or
data source under the name of one of the package's (it would change what every run of that
name computes, in silence), and a name that could not stand as a file name
(:func:`check_registry_name`: a method's name starts the name of its results file).  An
error while a plugin is imported is one line naming the plugin (:class:`PluginError`).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import typing
from collections.abc import Iterable
from typing import Any

#: The environment variable that carries the plugin modules to worker processes.
ENV = "FEDPL_PLUGINS"
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_loaded: list[str] = []


class PluginError(ValueError):
    """A plugin module that cannot be named or imported (one line naming it)."""


class RegistrationError(ValueError):
    """A name a method or data source may not be registered under (:func:`check_registry_name`)."""


#: A registry name (a method's, a data source's): lower-case letters, digits, ``_``, ``-``
#: and ``.``, starting with a letter or digit, no ``..``; it starts the name of a results
#: file (``<method>-s<seed>-<hash>.json``), so it must name no folder and climb out of none.
REGISTRY_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


def check_registry_name(name: object, kind: str, where: str) -> str:
    """``name`` when it may be registered as a ``kind`` (``"method"``, ``"data source"``)
    by ``where`` (the class or function, for the message); else
    :class:`RegistrationError` in one line."""
    if not isinstance(name, str) or not REGISTRY_NAME.fullmatch(name) or ".." in name:
        raise RegistrationError(
            f"{where}: {kind} name {name!r} cannot be registered: a name is 1 to 64 lower-case letters, "
            "digits, '_', '-' or '.', starting with a letter or digit, without '..' (it becomes part of file names)"
        )
    return name


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def plugin_names(text: str | None) -> list[str]:
    """The module names of ``$FEDPL_PLUGINS``-style text (comma- or space-separated), in order,
    each once."""
    return list(dict.fromkeys(n for n in re.split(r"[,\s]+", text or "") if n))


def load_plugins(names: Iterable[str], export: bool = True) -> list[str]:
    """Import each module of ``names`` (dotted module names, importable from ``sys.path``;
    the working directory is on it for ``python -m``) and return the names.  ``export``: add
    them to ``$FEDPL_PLUGINS`` so that worker processes started later import them too.

    A name that is not a module name, a module that cannot be found, a method or data
    source its registry refuses (:class:`RegistrationError`) and any error raised while the
    module runs raise :class:`PluginError` with one line naming the plugin (the error's own
    traceback is kept as its cause, for a debugger)."""
    names = [str(n).strip() for n in names]
    for name in names:
        if not _MODULE.fullmatch(name):
            raise PluginError(
                f"plugin {name!r} is not a module name; give a dotted name such as mypkg.methods "
                "(a module importable from the working directory or the Python path)"
            )
    for name in names:
        if name in _loaded:
            continue
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())  # a module in the working directory, as python -m finds it
        before = _guard.snapshot() if _guard is not None else None
        try:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as e:
                if e.name and (name == e.name or name.startswith(e.name + ".")):
                    raise PluginError(
                        f"plugin {name!r}: no module named {e.name!r} in the working directory or on the Python path"
                    ) from None
                raise PluginError(
                    f"plugin {name!r} failed while importing: ModuleNotFoundError: {_first_line(e)}"
                ) from e
            except (PluginError, RegistrationError) as e:  # a registry's refusal; a plugin's plugin, named
                raise PluginError(f"plugin {name!r}: {_first_line(e)}") from e
            except SystemExit as e:  # sys.exit() in a plugin would end the command without a word
                raise PluginError(
                    f"plugin {name!r} called sys.exit({e.code!r}) while importing; a plugin only registers methods "
                    "and data sources"
                ) from None
            except Exception as e:  # the plugin's own error, at import
                msg = _first_line(e)
                if type(e).__name__ == "DuplicateMethodError":  # the method registry's refusal
                    raise PluginError(f"plugin {name!r}: {msg}") from e
                raise PluginError(
                    f"plugin {name!r} failed while importing: {type(e).__name__}" + (f": {msg}" if msg else "")
                ) from e
            if _guard is not None:
                _guard.check(name, before)
        except BaseException:  # refused, or interrupted (Ctrl-C) while importing
            if _guard is not None:
                _guard.restore(before)  # a refused plugin registers nothing
            sys.modules.pop(name, None)  # imported again (and refused again) when it is named again
            raise
        _loaded.append(name)
    if export and names:
        os.environ[ENV] = ",".join(dict.fromkeys(plugin_names(os.environ.get(ENV)) + names))
    return names


class RegistryGuard(typing.Protocol):
    """What watches the registries while a plugin imports (:func:`set_guard`)."""

    def snapshot(self) -> Any:
        """The registries as they are, the package's own entries loaded first."""

    def check(self, plugin: str, before: Any) -> None:
        """A :class:`PluginError` naming ``plugin`` for what it registered that it may not."""

    def restore(self, before: Any) -> None:
        """The registries put back as ``before`` (a refused plugin registers nothing)."""


_guard: RegistryGuard | None = None


def set_guard(guard: RegistryGuard | None) -> None:
    """Watch every plugin's import with ``guard``.  The registries live in layers above this
    one, so the guard is theirs (:mod:`fedpl_core.methods.plugin_guard`, set when
    :mod:`fedpl_core.methods` is imported, which every registry lookup does first)."""
    global _guard
    _guard = guard


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


__all__ = [
    "ENV",
    "PluginError",
    "RegistrationError",
    "REGISTRY_NAME",
    "check_registry_name",
    "plugin_names",
    "load_plugins",
    "set_guard",
    "RegistryGuard",
    "load_env_plugins",
    "loaded",
]
