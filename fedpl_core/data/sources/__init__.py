"""Named data sources of experiments: ``ExperimentConfig.dataset`` -> a :class:`DataBundle`.

A source returns everything a run needs besides the partition: the training set, the
test set, extra evaluation sets (scored every evaluation round as
``<name>/<metric>``) and optional public images (never a client's data; used to
calibrate BatchNorm statistics of a randomly initialised model).

* ``synthetic-cxr`` / ``synthetic-skin`` / ``synthetic-ich``: the built-in generator
  (:mod:`fedpl_core.data.synthetic`); ``n_train`` / ``n_test`` images, ``data_seed``.
* a real data set of :mod:`fedpl_core.data.catalog` (``nih``, ``ham10000``,
  ``medmnist:<flag>``, ...): read from ``data_root``; ``n_train`` / ``n_test`` do not
  apply (a log line says so).
* the papers' federations, each in a module of its own: ``fedpsl`` (the FedPSL
  Table I / III federations, :mod:`~fedpl_core.data.sources.fedpsl`), ``surgical-ablation`` /
  ``surgical-noniid`` (Surgical Aggregation's, :mod:`~fedpl_core.data.sources.surgical`).

Bundles are cached per process by the fields that define them, so every method and
seed of a grid sees the very same arrays, decoded or generated once.

A bundle of real data (read from ``data_root``) whose test split has fewer than 10
positives of a class gets one warning naming those classes and their counts, when it is
built (:func:`fedpl_core.data.dataset_splits.warn_few_positives`).  Generated data is left out:
its test size is the user's own ``n_test``, and the small smoke runs would print it on
every run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..base import DataError
from . import fedpsl, real, surgical, synthetic  # noqa: F401  (each registers its sources on import)
from .base import (
    FALLBACK,
    FIXED_CLASSES,
    REAL_SIZES,
    SOURCE_TASKS,
    SOURCES,
    SYNTHETIC,
    SYNTHETIC_SIZES,
    DataBundle,
    check_image_size,
    register_source,
)


def _plugins() -> None:
    """The sources of the user's plugin modules named in ``$FEDPL_PLUGINS``
    (:mod:`fedpl_core.base.plugins`): a worker process finds them by name."""
    from ...base.plugins import load_env_plugins

    load_env_plugins()


def source_task(name: str) -> str | None:
    """The task of source ``name``'s data as its registration declares it; None where it
    is known only once the data are loaded (the real data sets, a source that declares none)."""
    if name not in SOURCES and name not in SYNTHETIC:
        _plugins()
    return SOURCE_TASKS.get(name)


def source_builder(name: str) -> Callable[..., DataBundle]:
    """The builder of data source ``name``: the one registered under it, else the reader of
    the real data sets (:data:`~fedpl_core.data.sources.base.FALLBACK`).  Both come from the
    tables, so the code of one source never names another's."""
    return SOURCES[name] if name in SOURCES else FALLBACK["source"]


def source_code(name: str) -> list[Callable]:
    """The functions that build data source ``name`` beyond what their code names: its
    builder (:func:`source_builder`) and, for a data set of the catalogue, its loader (the
    catalogue names it by a string).  A run's code fingerprint starts from them
    (:mod:`fedpl_core.runs.provenance`)."""
    from ..catalog import DATASETS

    if name not in SOURCES and name not in SYNTHETIC:
        _plugins()
    fns = [source_builder(name)]
    if name not in SOURCES and name in DATASETS:
        fns.append(DATASETS[name].load_fn())
    return fns


@lru_cache(maxsize=4)
def _load(key: str, progress: bool) -> DataBundle:
    name, root, classes, size, n_train, n_test, seed, kw = json.loads(key)
    if name not in SOURCES and name not in SYNTHETIC:
        _plugins()
    check_source(name)
    if name in FIXED_CLASSES and classes is not None:
        raise DataError(f"classes do not apply to data set {name!r}: its tables fix the classes; leave them out")
    extra = {} if name in SOURCES else {"progress": progress}  # the real data sets' decode progress bar
    bundle = source_builder(name)(name, root, classes, size, n_train, n_test, seed, **{**extra, **kw})
    if root is not None and bundle.test is not None:  # real data: once per bundle, i.e. per run and process
        from ..dataset_splits import warn_few_positives

        warn_few_positives(bundle.test)
    return bundle


def load_bundle(
    dataset: str,
    data_root: str | None = None,
    classes: list[str] | None = None,
    image_size: int = 32,
    n_train: int = 8000,
    n_test: int = 2000,
    data_seed: int = 0,
    dataset_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
) -> DataBundle:
    """The :class:`DataBundle` of a source (cached per process); ``progress`` shows the
    decode progress bar of real data sets."""
    key = json.dumps(
        [dataset, data_root, classes, image_size, n_train, n_test, data_seed, dataset_kwargs or {}],
        sort_keys=True,
        default=str,
    )
    return _load(key, bool(progress))


def check_source(name: str) -> None:
    """A :class:`DataError` listing the data sets there are for an unknown ``name``."""
    from ..catalog import DATASETS
    from ..loaders.medmnist import MEDMNIST_INFO

    if name.startswith("medmnist:"):
        flag = name.split(":", 1)[1]
        if flag.lower() not in MEDMNIST_INFO:
            raise DataError(
                f"unknown MedMNIST flag {flag!r} in data set {name!r}; 2-D flags: {', '.join(sorted(MEDMNIST_INFO))}"
            )
        return
    if name not in SOURCES and name not in DATASETS:
        _plugins()  # the studies' and the plugins' sources register on import
    if name not in SOURCES and name not in DATASETS:
        raise DataError(f"unknown data set {name!r}; available: {', '.join(known_sources())}")


def check_data_settings(dataset: str, data_root: str | None, classes: list | None, image_size: int) -> None:
    """Data settings an ``ExperimentConfig`` would otherwise ignore or fail on late: an
    empty class list, ``data_root`` with built-in data, an image size out of the source's
    range (:data:`SYNTHETIC_SIZES`, :data:`REAL_SIZES`)."""
    from ...base.validation import ConfigError

    if classes is not None and not classes:
        raise ConfigError("classes is empty: name at least one class, or leave it out for the data set's own")
    if classes is not None and any(not str(c).strip() for c in classes):
        raise ConfigError(f"classes holds an empty name: {classes}")
    if dataset in SYNTHETIC and data_root is not None:
        raise ConfigError(
            f"data_root does not apply to {dataset} (built-in generated data; nothing is read from "
            f"{data_root}): leave it out, or name the real data set to read (e.g. nih, ham10000)"
        )
    if dataset in SYNTHETIC or dataset.startswith("medmnist:") or dataset in _registry_names():
        try:
            check_image_size(dataset, image_size)
        except DataError as e:
            raise ConfigError(str(e)) from None


def _registry_names() -> tuple[str, ...]:
    from ..catalog import DATASETS

    return tuple(DATASETS)


def known_sources() -> list[str]:
    from ..catalog import DATASETS

    _plugins()
    return sorted(set(SOURCES) | set(DATASETS)) + ["medmnist:<flag>"]


__all__ = [
    "DataBundle",
    "SOURCES",
    "SOURCE_TASKS",
    "FIXED_CLASSES",
    "register_source",
    "source_task",
    "load_bundle",
    "known_sources",
    "check_source",
    "source_builder",
    "source_code",
    "check_data_settings",
    "check_image_size",
    "SYNTHETIC",
    "SYNTHETIC_SIZES",
    "REAL_SIZES",
]
