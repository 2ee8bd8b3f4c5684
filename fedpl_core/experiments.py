"""The one experiment runner, by its old name: the public names of :mod:`fedpl_core.runs`.

``run(config, results_dir)`` returns a :class:`RunResult`; ``run_many(base, methods,
seeds, settings=...)`` runs a grid (settings x methods x seeds) on identical data and
partitions and returns a tidy DataFrame.  Every notebook and study goes through these two
functions and their one results cache.  Each job lives in its own module:

* configs (:class:`ExperimentConfig`, YAML / JSON, the run id): :mod:`fedpl_core.runs.config`;
* data, partition and simulation of a config (:func:`load_data`, :func:`build_partition`,
  :func:`build_simulation`): :mod:`fedpl_core.runs.build`;
* results and their JSON files (:class:`RunResult`, :func:`read_result`,
  :func:`atomic_write_json`): :mod:`fedpl_core.runs.results`;
* one run, the cache, stale results, locks, resume (:func:`run`): :mod:`fedpl_core.runs.runner`;
* the grid backends (serial, process, Ray): :mod:`fedpl_core.runs.grid`;
* :class:`Study`, :func:`run_many`, tidy rows (:func:`result_rows`): :mod:`fedpl_core.runs.study`.

To replace a function for a test, patch it where it is called (e.g.
``fedpl_core.runs.runner.build_simulation``), not here.
"""
from .config import ConfigError
from .runs.build import build_partition, build_simulation, load_data, partition_option_error
from .runs.config import ENGINE_FIELDS, PARTITIONS, ExperimentConfig, check_settings
from .runs.results import (METRIC_KEYS, ResultFileError, RunResult, StaleResultWarning, atomic_write_json,
                           finite_or_none, parse_result, read_result, stale_message)
from .runs.runner import check_writable, clean_stale_files, run
from .runs.study import SingleLabelWarning, Study, result_rows, run_many, warn_single_label_twins

__all__ = ["ExperimentConfig", "Study", "SingleLabelWarning", "warn_single_label_twins", "RunResult", "run", "run_many",
           "result_rows", "load_data", "build_partition", "build_simulation", "atomic_write_json", "finite_or_none",
           "ConfigError", "StaleResultWarning", "ENGINE_FIELDS", "PARTITIONS", "METRIC_KEYS", "ResultFileError",
           "check_settings", "check_writable", "clean_stale_files", "parse_result", "partition_option_error",
           "read_result", "stale_message"]
