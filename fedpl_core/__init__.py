"""fedpl: federated learning with partial labels.

The layers, each importing only from those above it in this list:

* :mod:`fedpl_core.config` - generic validation and :class:`EngineConfig` (no registry);
  :mod:`fedpl_core.fileio`, :mod:`fedpl_core.locks`, :mod:`fedpl_core.paths` - files;
* :mod:`fedpl_core.data`, :mod:`fedpl_core.datasets` - the in-memory data representation,
  the built-in synthetic data, the real data loaders and the named data sources;
* :mod:`fedpl_core.partitions` - which samples (sample splits) and which classes (label
  sets) each client has;
* :mod:`fedpl_core.models`, :mod:`fedpl_core.metrics`, :mod:`fedpl_core.losses`,
  :mod:`fedpl_core.aggregation` - models, metrics, and the arithmetic of losses and
  aggregation rules on plain tensors;
* :mod:`fedpl_core.fl` - the federated core: the types methods see (``fl.federation``),
  a client (``fl.site.Site``), the server, the round loop (``fl.simulation``), the
  preprocessing and augmented views, evaluation, model selection, checkpoints;
* :mod:`fedpl_core.methods` - every method, composed from :mod:`fedpl_core.methods.blocks`;
* :mod:`fedpl_core.runs` - the one runner, split by job: a run's config, building it, its
  result file, the cache and locks, grid backends, studies (``run_many``);
  :mod:`fedpl_core.experiments` re-exports its public names;
* :mod:`fedpl_core.studies`, :mod:`fedpl_core.profiles` - the papers' experiments and the
  notebooks' profiles; :mod:`fedpl_core.report.tables`, :mod:`fedpl_core.report.plotting` - tables and
  figures; :mod:`fedpl_core.report.docs` - the documentation site; :mod:`fedpl_core.cli`,
  :mod:`fedpl_core.flower`, :mod:`fedpl_core.gpu_checks` - the command line, the Flower app, the
  checks of a GPU machine.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
#: The package's top-level names and the module each comes from.  They are imported on first
#: use (PEP 562), so that ``import fedpl_core`` and the command line's ``--help`` and
#: ``methods`` start without torch and scipy.
_LAZY = {"EngineConfig": "config", "Simulation": "fl.simulation", "ExperimentConfig": "experiments",
         "Study": "experiments", "run": "experiments", "run_many": "experiments", "get_method": "methods",
         "available_methods": "methods"}
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
