"""fedpl: federated learning with partial labels.

Modules, one job each:

* :mod:`fedpl_core.data` - the in-memory data representation, the built-in synthetic
  chest X-ray / skin-lesion generator (:mod:`~fedpl_core.data.synthetic`) and loaders
  for the real data sets (:mod:`~fedpl_core.data.registry`);
* :mod:`fedpl_core.partitions` - which samples and which classes each client has;
* :mod:`fedpl_core.models` - encoder + linear head models;
* :mod:`fedpl_core.losses`, :mod:`fedpl_core.aggregation` - partial-label losses and
  server aggregation rules on plain arrays;
* :mod:`fedpl_core.methods` - every method as a small class on one interface;
* :mod:`fedpl_core.engine` - the simulation engine;
* :mod:`fedpl_core.metrics` - AUROC, mAP, BACC, F1 ...;
* :mod:`fedpl_core.experiments` - configs, runs, grids, saved results;
* :mod:`fedpl_core.tables`, :mod:`fedpl_core.plotting` - paper-style tables and figures.
"""
from .engine import EngineConfig, Simulation
from .experiments import ExperimentConfig, run, run_many
from .methods import available_methods, get_method

__version__ = "0.1.0"
__all__ = ["EngineConfig", "Simulation", "ExperimentConfig", "run", "run_many", "get_method", "available_methods"]
