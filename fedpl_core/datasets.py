"""Named data sources of experiments: ``ExperimentConfig.dataset`` -> a :class:`DataBundle`.

A source returns everything a run needs besides the partition: the training set, the
test set, extra evaluation sets (scored every evaluation round as
``<name>/<metric>``) and optional public images (never a client's data; used to
calibrate BatchNorm statistics of a randomly initialised model).

* ``synthetic-cxr`` / ``synthetic-skin`` / ``synthetic-ich``: the built-in generator
  (:mod:`fedpl_core.data.synthetic`); ``n_train`` / ``n_test`` images, ``data_seed``.
* a real data set of :mod:`fedpl_core.data.registry` (``nih``, ``ham10000``,
  ``medmnist:<flag>``, ...): read from ``data_root``; ``n_train`` / ``n_test`` do not
  apply (a log line says so).
* sources registered by the studies with :func:`register_source` (``fedpsl``: the
  FedPSL Table I / III federations; ``surgical-ablation`` / ``surgical-noniid``).

Bundles are cached per process by the fields that define them, so every method and
seed of a grid sees the very same arrays, decoded or generated once.

A bundle of real data (read from ``data_root``) whose test split has fewer than 10
positives of a class gets one warning naming those classes and their counts, when it is
built (:func:`fedpl_core.data.splits.warn_few_positives`).  Generated data is left out:
its test size is the user's own ``n_test``, and the small smoke runs would print it on
every run.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .data.base import DataError, ImageDataset, check_memory

log = logging.getLogger("fedpl")

SYNTHETIC = ("synthetic-cxr", "synthetic-skin", "synthetic-ich")
#: Image sizes the generator draws (``synthetic._check``) and the real loaders accept in an
#: experiment: 16 px (the small CNN's least) to 1024 px (NIH ChestX-ray14's own size, the
#: largest published size here); library calls of the loaders take any size that fits in memory.
SYNTHETIC_SIZES = (28, 224)
REAL_SIZES = (16, 1024)


@dataclass
class DataBundle:
    train: ImageDataset
    test: ImageDataset | None
    extra: dict[str, ImageDataset] = field(default_factory=dict)
    public: np.ndarray | None = None


#: ``name -> builder(data_root, classes, image_size, n_train, n_test, data_seed, **dataset_kwargs)``
SOURCES: dict[str, Callable[..., DataBundle]] = {}
#: sources whose tables fix the classes (the studies' ``fedpsl``, ``surgical-*``): ``classes`` is refused
FIXED_CLASSES: set[str] = set()
#: the task of a source's data (``"multilabel"`` / ``"multiclass"``) where its registration
#: declares it, so that a grid can refuse a method not defined for it without loading the data
SOURCE_TASKS: dict[str, str] = {}


def register_source(name: str, fixed_classes: bool = False, task: str | None = None) -> Callable:
    """Decorator registering a data source builder under ``name``.  ``fixed_classes``: the
    source's own tables fix its classes, so a ``classes`` setting is refused, not ignored.
    ``task``: the task of every bundle it builds, when it is always the same (see
    :func:`source_task`)."""
    def deco(fn: Callable[..., DataBundle]) -> Callable[..., DataBundle]:
        SOURCES[name] = fn
        if fixed_classes:
            FIXED_CLASSES.add(name)
        else:
            FIXED_CLASSES.discard(name)
        if task is None:
            SOURCE_TASKS.pop(name, None)
        else:
            SOURCE_TASKS[name] = task
        return fn
    return deco


def source_task(name: str) -> str | None:
    """The task of source ``name``'s data as its registration declares it; None where it
    is known only once the data are loaded (the real data sets, a source that declares none)."""
    if name not in SOURCES and name not in SYNTHETIC:
        _load_study_sources()
    return SOURCE_TASKS.get(name)


def _load_study_sources() -> None:
    """The sources the studies register, then those of the user's plugin modules named in
    ``$FEDPL_PLUGINS`` (:mod:`fedpl_core.plugins`): a worker process finds them by name."""
    import importlib

    from .plugins import load_env_plugins

    for mod in ("fedpsl", "surgical"):
        importlib.import_module(f"fedpl_core.studies.{mod}")
    load_env_plugins()


@register_source("synthetic-cxr", task="multilabel")
@register_source("synthetic-skin", task="multiclass")
@register_source("synthetic-ich", task="multilabel")
def _synthetic(name: str, data_root, classes, image_size, n_train, n_test, data_seed, **kw) -> DataBundle:
    from .data import synthetic as S

    make = {"synthetic-cxr": S.make_cxr, "synthetic-skin": S.make_skin, "synthetic-ich": S.make_ich}[name]
    external = kw.pop("external_domain", None)
    train_domains = kw.pop("train_domains", None)
    channels = kw.get("channels", 3 if name == "synthetic-skin" else 1)
    n_img = n_train + n_test * (2 if external is not None else 1)
    # the uint8 images, a quarter more for the chunks being drawn, ids, domains and labels
    check_memory(n_img * (1.25 * channels * image_size ** 2 + 64 + 8 * len(classes or range(14))),
                 f"{name}: {n_train} training and {n_test} test images at {image_size} px",
                 "lower n_train / n_test / image_size")
    keep = None
    if name == "synthetic-skin":  # one class per image: the classes asked for are the only ones drawn
        ckw = {}
        if classes is not None:
            from .data.files import check_classes

            keep = check_classes(classes, S.SKIN_CLASSES, name)
            priors = dict(kw.pop("priors", None) or S.HAM10000_PRIORS)
            other = [c for c, p in priors.items() if c not in keep and p]
            if other and "priors" in kw:
                raise DataError(f"{name}: dataset_kwargs priors name {other}, which classes={keep} leaves out")
            ckw["priors"] = {c: priors.get(c, 0.0) for c in keep}
    else:
        ckw = {"classes": classes}
    ckw.update(kw)
    tr_kw = dict(ckw)
    if train_domains is not None:
        tr_kw["domains"] = np.resize(np.asarray(train_domains), n_train)
    train = make(n_train, image_size=image_size, seed=data_seed, **tr_kw)
    test = make(n_test, image_size=image_size, seed=data_seed + 10_000, **ckw)
    extra = {}
    if external is not None:
        extra["external"] = make(n_test, image_size=image_size, seed=data_seed + 20_000, **dict(ckw, domain=external))
    if keep is not None:
        train, test = train.select_classes(keep), test.select_classes(keep)
        extra = {k: v.select_classes(keep) for k, v in extra.items()}
    return DataBundle(train, test, extra)


def _registry(name: str, data_root, classes, image_size, n_train, n_test, data_seed, **kw) -> DataBundle:
    from .data import registry

    check_image_size(name, image_size)
    splits = registry.load_split(name, data_root, classes=classes, image_size=image_size, seed=data_seed, **kw)
    train, test = splits[0], splits[-1]
    log.info("%s: %d training / %d test images from %s; n_train / n_test do not apply (the data set's own "
             "splits are used)", name, len(train), len(test), data_root)
    extra = {}
    if len(splits) == 3 and splits[1] is not None:
        extra["val"] = splits[1]
    return DataBundle(train, test, extra)


@lru_cache(maxsize=4)
def _load(key: str, progress: bool) -> DataBundle:
    name, root, classes, size, n_train, n_test, seed, kw = json.loads(key)
    if name not in SOURCES and name not in SYNTHETIC:
        _load_study_sources()
    check_source(name)
    if name in SOURCES:
        if name in FIXED_CLASSES and classes is not None:
            raise DataError(f"classes do not apply to data set {name!r}: its tables fix the classes; leave them out")
        bundle = SOURCES[name](name, root, classes, size, n_train, n_test, seed, **dict(kw))
    else:
        bundle = _registry(name, root, classes, size, n_train, n_test, seed, **{"progress": progress, **kw})
    if root is not None and bundle.test is not None:  # real data: once per bundle, i.e. per run and process
        from .data.splits import warn_few_positives

        warn_few_positives(bundle.test)
    return bundle


def load_bundle(dataset: str, data_root: str | None = None, classes: list[str] | None = None, image_size: int = 32,
                n_train: int = 8000, n_test: int = 2000, data_seed: int = 0,
                dataset_kwargs: dict[str, Any] | None = None, progress: bool = True) -> DataBundle:
    """The :class:`DataBundle` of a source (cached per process); ``progress`` shows the
    decode progress bar of real data sets."""
    key = json.dumps([dataset, data_root, classes, image_size, n_train, n_test, data_seed, dataset_kwargs or {}],
                     sort_keys=True, default=str)
    return _load(key, bool(progress))


def check_source(name: str) -> None:
    """A :class:`DataError` listing the data sets there are for an unknown ``name``."""
    from .data.medmnist import MEDMNIST_INFO
    from .data.registry import DATASETS

    if name.startswith("medmnist:"):
        flag = name.split(":", 1)[1]
        if flag.lower() not in MEDMNIST_INFO:
            raise DataError(f"unknown MedMNIST flag {flag!r} in data set {name!r}; 2-D flags: "
                            f"{', '.join(sorted(MEDMNIST_INFO))}")
        return
    if name not in SOURCES and name not in DATASETS:
        _load_study_sources()  # the studies' and the plugins' sources register on import
    if name not in SOURCES and name not in DATASETS:
        raise DataError(f"unknown data set {name!r}; available: {', '.join(known_sources())}")


def check_image_size(name: str, image_size: int) -> None:
    lo, hi = SYNTHETIC_SIZES if name in SYNTHETIC else REAL_SIZES
    if not lo <= image_size <= hi:
        kind = "the built-in generator draws" if name in SYNTHETIC else "real data sets are read at"
        raise DataError(f"image_size must be in {lo}..{hi} for {name} ({kind} {lo} to {hi} px), got {image_size}")


def check_data_settings(dataset: str, data_root: str | None, classes: list | None, image_size: int) -> None:
    """Data settings an ``ExperimentConfig`` would otherwise ignore or fail on late: an
    empty class list, ``data_root`` with built-in data, an image size out of the source's
    range (:data:`SYNTHETIC_SIZES`, :data:`REAL_SIZES`)."""
    from .config import ConfigError

    if classes is not None and not classes:
        raise ConfigError("classes is empty: name at least one class, or leave it out for the data set's own")
    if classes is not None and any(not str(c).strip() for c in classes):
        raise ConfigError(f"classes holds an empty name: {classes}")
    if dataset in SYNTHETIC and data_root is not None:
        raise ConfigError(f"data_root does not apply to {dataset} (built-in generated data; nothing is read from "
                          f"{data_root}): leave it out, or name the real data set to read (e.g. nih, ham10000)")
    if dataset in SYNTHETIC or dataset.startswith("medmnist:") or dataset in _registry_names():
        try:
            check_image_size(dataset, image_size)
        except DataError as e:
            raise ConfigError(str(e)) from None


def _registry_names() -> tuple[str, ...]:
    from .data.registry import DATASETS

    return tuple(DATASETS)


def known_sources() -> list[str]:
    from .data.registry import DATASETS

    _load_study_sources()
    return sorted(set(SOURCES) | set(DATASETS)) + ["medmnist:<flag>"]


__all__ = ["DataBundle", "SOURCES", "SOURCE_TASKS", "register_source", "source_task", "load_bundle", "known_sources", "check_source",
           "check_data_settings", "SYNTHETIC_SIZES", "REAL_SIZES"]
