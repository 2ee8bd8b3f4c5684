"""The experiment runner, one job a module, each importing only the ones above it here:

* :mod:`~fedpl_core.runs.experiment_config` - :class:`ExperimentConfig`: fields, checks against the
  data, method and model registries, YAML / JSON, the run id (its hash);
* :mod:`~fedpl_core.runs.build` - a config's data, partition, model, method and
  :class:`~fedpl_core.fl.simulation.Simulation` (part of every result's code fingerprint);
* :mod:`~fedpl_core.runs.results` - :class:`RunResult` and its JSON file, written
  atomically;
* :mod:`~fedpl_core.runs.schema` - a result as it is read back, checked against one schema;
* :mod:`~fedpl_core.runs.runner` - one run: the results cache, stale results
  (:mod:`fedpl_core.runs.provenance`), run locks (:mod:`fedpl_core.base.locks`), resume;
* :mod:`~fedpl_core.runs.grid` - where a grid's runs execute: serial, local processes, Ray;
* :mod:`~fedpl_core.runs.study` - :class:`Study`, ``run_many`` and its tidy rows;
* :mod:`~fedpl_core.runs.options` - the options a config passes on, checked against the code
  they configure when the config is made;
* :mod:`~fedpl_core.runs.data_checks` - a run's data files, checked around the loaders.

The package itself imports nothing; each name is imported from its module.
"""
