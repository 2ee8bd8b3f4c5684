"""fedpl: federated learning with partial labels.

Modules, one job each:

* :mod:`fedpl_core.data` - the in-memory data representation, the built-in synthetic
  chest X-ray / skin-lesion generator (:mod:`~fedpl_core.data.synthetic`) and loaders
  for the real data sets (:mod:`~fedpl_core.data.registry`);
* :mod:`fedpl_core.datasets` - named data sources of experiments (train, test, extra
  evaluation sets);
* :mod:`fedpl_core.partitions` - which samples (sample splits) and which classes (label
  sets) each client has;
* :mod:`fedpl_core.models` - encoder + linear head models;
* :mod:`fedpl_core.losses`, :mod:`fedpl_core.aggregation` - partial-label losses and
  server aggregation rules on plain arrays;
* :mod:`fedpl_core.federation` - the types the engine and the methods share (client
  data, batches, updates, the client context, the server);
* :mod:`fedpl_core.methods` - every method as a small class on one interface;
* :mod:`fedpl_core.engine` - the round loop, with :mod:`~fedpl_core.preprocess`,
  :mod:`~fedpl_core.evaluation`, :mod:`~fedpl_core.selection` and
  :mod:`~fedpl_core.checkpoint` beside it, configured by :mod:`~fedpl_core.config`;
* :mod:`fedpl_core.metrics` - AUROC, mAP, BACC, F1 ...;
* :mod:`fedpl_core.experiments` - the one runner: configs, runs, grids, saved results;
  :mod:`fedpl_core.studies` - the papers' experiments as declarative specs;
* :mod:`fedpl_core.tables`, :mod:`fedpl_core.plotting` - paper-style tables and figures.
"""
from .config import EngineConfig
from .engine import Simulation
from .experiments import ExperimentConfig, Study, run, run_many
from .methods import available_methods, get_method

__version__ = "0.1.0"
__all__ = ["EngineConfig", "Simulation", "ExperimentConfig", "Study", "run", "run_many", "get_method",
           "available_methods"]
