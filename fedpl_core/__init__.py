"""fedpl: federated learning with partial labels.

The package is layered, each layer a folder that imports only from the layers before it
in this list (``tests/test_structure.py`` holds it to that; docs/architecture.md says
which file to open for which change):

* :mod:`fedpl_core.base` - validation of settings, config files, atomic files, run locks,
  the folders figures and results go to, one-line warnings, the user's plugin modules;
* :mod:`fedpl_core.data`, :mod:`fedpl_core.partitions` - the in-memory data representation,
  the built-in synthetic data, the real data loaders, the named data sources
  (:mod:`fedpl_core.data.sources`); which samples and which classes each client has;
* :mod:`fedpl_core.nn` - the arithmetic on plain tensors: models, partial-label losses,
  aggregation rules, metrics;
* :mod:`fedpl_core.fl` - the federated engine: its settings (``fl.engine_config``), the types
  methods see (``fl.federation``), a client (``fl.site.Site``), the server, the round loop
  (``fl.simulation``), preprocessing and views, evaluation, model selection, checkpoints;
* :mod:`fedpl_core.methods` - every method, composed from :mod:`fedpl_core.methods.blocks`;
* :mod:`fedpl_core.runs` - the one runner, a module a job: a run's config, building it, its
  code fingerprint, its result file, the cache and locks, grid backends, ``run_many``;
* :mod:`fedpl_core.report` - tables, figures, the names a reader sees, the findings page and
  the documentation site;
* :mod:`fedpl_core.studies` - the papers' experiments behind the notebooks and the notebooks'
  profiles;
* :mod:`fedpl_core.apps` - the command line, the Flower app, the checks of a GPU machine.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
#: The package's top-level names and the module each comes from.  They are imported on first
#: use (PEP 562), so that ``import fedpl_core`` and the command line's ``--help`` and
#: ``methods`` start without torch and scipy.
_LAZY = {
    "EngineConfig": "fl.engine_config",
    "Simulation": "fl.simulation",
    "ExperimentConfig": "runs.experiment_config",
    "Study": "runs.study",
    "run": "runs.runner",
    "run_many": "runs.study",
    "get_method": "methods",
    "available_methods": "methods",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    """``fedpl_core.EngineConfig`` and the other names of ``__all__``, imported when first
    asked for (then kept in the package's namespace)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
