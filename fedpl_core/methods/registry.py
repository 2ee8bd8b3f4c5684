"""The registry of methods: one mechanism, the :func:`register` class decorator.

Every registered class, the baselines and the papers' methods alike, carries ``@register``
in its own module; nothing else lists it.  The package's modules are found, not listed:
:func:`load_all` imports every module of :mod:`fedpl_core.methods` (``pkgutil``) the first
time a registry function answers, then the user's plugin modules named in
``$FEDPL_PLUGINS`` (:mod:`fedpl_core.base.plugins`), so that a worker process finds a
plugin's method by name.  A new method is one module with one decorated class.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Method

#: ``{registry name: class}``; :func:`register` fills it.
METHODS: dict[str, type[Method]] = {}

#: The package whose every module :func:`load_all` imports.
PACKAGE = __name__.rpartition(".")[0]
_loaded_package = False


class DuplicateMethodError(ValueError):
    """Two different classes claim one registry name."""


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type[Method]) -> type[Method]:
    """Class decorator (or call) adding a method to the registry under ``cls.name``.

    Registering the same class again is a no-op, and a class defined at the same place (the
    same module and qualified name: a reloaded module, a notebook cell run again) replaces
    its earlier version; any other class under a name that is taken is refused with a
    :class:`DuplicateMethodError` naming both classes."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name == "method":
        raise ValueError(
            f"{_where(cls)}: a registered method needs a registry name of its own (class attribute `name`)"
        )
    have = METHODS.get(name)
    if have is not None and have is not cls and _where(have) != _where(cls):
        raise DuplicateMethodError(
            f"method name {name!r} is taken by {_where(have)}: {_where(cls)} cannot be "
            "registered under it (give it a name of its own)"
        )
    METHODS[name] = cls
    return cls


def method_modules() -> list[str]:
    """The modules of the package, in name order (every one is imported by :func:`load_all`)."""
    folder = str(Path(__file__).resolve().parent)
    return sorted(f"{PACKAGE}.{m.name}" for m in pkgutil.iter_modules([folder]) if not m.name.startswith("_"))


def load_all() -> None:
    """Import every module of the package (once a process: their classes register
    themselves), then the plugin modules of ``$FEDPL_PLUGINS`` this process has not
    imported yet."""
    global _loaded_package
    from ..base.plugins import load_env_plugins

    if not _loaded_package:
        for mod in method_modules():
            importlib.import_module(mod)
        _loaded_package = True
    load_env_plugins()


__all__ = ["METHODS", "DuplicateMethodError", "register", "method_modules", "load_all"]
