"""What a data source is and the table of the named ones: :class:`DataBundle` (the training
set, the test set, extra evaluation sets, public images) and :func:`register_source`, the
decorator every builder of :mod:`fedpl_core.data.sources` registers itself with.  The size
rules of the built-in generator and of the real data sets live here too: one place for each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..base import DataError, ImageDataset

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


#: The builder of every data set no source registers by name: the real data sets of
#: :mod:`fedpl_core.data.catalog` (:func:`register_fallback_source` sets it).
FALLBACK: dict[str, Callable[..., DataBundle]] = {}


def register_fallback_source(fn: Callable[..., DataBundle]) -> Callable[..., DataBundle]:
    """Decorator making ``fn`` the builder of every name no source registers."""
    FALLBACK["source"] = fn
    return fn


def check_image_size(name: str, image_size: int) -> None:
    lo, hi = SYNTHETIC_SIZES if name in SYNTHETIC else REAL_SIZES
    if not lo <= image_size <= hi:
        kind = "the built-in generator draws" if name in SYNTHETIC else "real data sets are read at"
        raise DataError(f"image_size must be in {lo}..{hi} for {name} ({kind} {lo} to {hi} px), got {image_size}")


__all__ = [
    "DataBundle",
    "SOURCES",
    "FIXED_CLASSES",
    "SOURCE_TASKS",
    "register_source",
    "SYNTHETIC",
    "SYNTHETIC_SIZES",
    "REAL_SIZES",
    "check_image_size",
    "FALLBACK",
    "register_fallback_source",
]
