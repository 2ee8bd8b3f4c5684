"""The registries watched while a plugin imports: a plugin may add methods and data sources,
never replace the package's, and only under names that can stand in a file name.

:mod:`fedpl_core.base.plugins` imports plugins but cannot see the registries (they live in
the layers above it); this module, which can, is its guard (:func:`fedpl_core.base.plugins.set_guard`),
set when :mod:`fedpl_core.methods` is imported, which every registry lookup does first.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..base.plugins import PluginError, RegistrationError, check_registry_name, set_guard
from ..data.catalog import DATASETS
from ..data.sources import base as sources
from . import registry

#: The registries a plugin may add to: the methods, the data sources, the data sources'
#: fixed-class set and task table, and the builder of every name no source registers (the
#: real data sets of the catalogue), which a plugin may not replace.
TABLES: tuple[Any, ...] = (
    registry.METHODS,
    sources.SOURCES,
    sources.FIXED_CLASSES,
    sources.SOURCE_TASKS,
    sources.FALLBACK,
)


def _own(obj: object) -> bool:
    return (getattr(obj, "__module__", "") or "").split(".")[0] == __name__.split(".")[0]


class Guard:
    """:class:`fedpl_core.base.plugins.RegistryGuard` over :data:`TABLES`."""

    def snapshot(self) -> list:
        for mod in registry.method_modules():  # the package's own methods first: a plugin comes after them
            importlib.import_module(mod)
        return [t.copy() for t in TABLES]

    def restore(self, before: Any) -> None:
        for t, b in zip(TABLES, before):
            t.clear()
            t.update(b)

    def check(self, plugin: str, before: Any) -> None:
        """:class:`PluginError` when ``plugin`` registered a method or data source under the
        name of one of the package's (or of a data set of its catalogue), or under a name
        that cannot stand in a file name (:func:`~fedpl_core.base.plugins.check_registry_name`)."""
        if TABLES[4] != before[4]:
            fn = TABLES[4].get("source")
            where = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
            raise PluginError(
                f"plugin {plugin!r} replaces the builder of the catalogue's data sets ({where}); register a data "
                "source of its own name instead"
            )
        for kind, table, old_table in (
            ("method", TABLES[0], before[0]),
            ("data source", TABLES[1], before[1]),
        ):
            for n, obj in table.items():
                old = old_table.get(n)
                if old is obj:
                    continue
                where = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"
                if (old is not None and _own(old)) or (kind == "data source" and n in DATASETS):
                    raise PluginError(
                        f"plugin {plugin!r} registers {kind} {n!r} ({where}), which is a {kind} of the package; "
                        "give it another name"
                    )
                try:
                    check_registry_name(n, kind, where)
                except RegistrationError as e:
                    raise PluginError(f"plugin {plugin!r}: {e}") from None


set_guard(Guard())
