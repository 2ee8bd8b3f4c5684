"""Group-wise train / validation / test splits: no patient (or lesion) in two parts, no
image in two parts, and a word when a test part is too small to judge a class by."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np

from .base import DataError, DataWarning, ImageDataset

#: Fewer known positives of a class than this in a test split get a warning: its AUROC
#: (a rank statistic over the positives) then moves by 1/n or more when one positive
#: is ranked differently.  The papers report no such floor; 10 is the usual rule of thumb.
MIN_TEST_POSITIVES = 10


def group_split(
    groups: Sequence | np.ndarray | None,
    fractions: Sequence[float] = (0.7, 0.1, 0.2),
    seed: int = 0,
    n: int | None = None,
) -> tuple[np.ndarray, ...]:
    """Split sample indices into ``len(fractions)`` parts with no group in two parts.

    Groups are shuffled (``seed``) and laid end to end; a group goes to the part whose
    share of the samples contains the group's middle sample, so each part gets about
    ``fraction * N`` samples (exactly when all groups are single samples, up to
    rounding).  ``groups=None`` treats each of ``n`` samples as its own group.
    Returns sorted int64 index arrays, one per fraction (FedLSM's 7:1:2 by default).
    """
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or len(fr) < 1 or (fr < 0).any() or abs(fr.sum() - 1.0) > 1e-6:
        raise DataError(f"fractions must be non-negative and sum to 1, got {list(fractions)}")
    if groups is None:
        if n is None:
            raise DataError("group_split needs groups or n")
        groups = np.arange(n)
    groups = np.asarray(groups, dtype=object)
    if len(groups) == 0:
        return tuple(np.zeros(0, np.int64) for _ in fr)
    if any(g is None or (isinstance(g, float) and np.isnan(g)) for g in groups):
        raise DataError("group_split: groups contain missing values")
    _, inverse, counts = np.unique(groups.astype(str), return_inverse=True, return_counts=True)
    order = np.random.default_rng(seed).permutation(len(counts))
    ends = np.cumsum(counts[order])
    middles = (ends - counts[order] / 2.0) / ends[-1]
    bounds = np.cumsum(fr)[:-1]
    part_of_group = np.empty(len(counts), np.int64)
    part_of_group[order] = np.searchsorted(bounds, middles, side="right")
    part = part_of_group[inverse]
    return tuple(np.flatnonzero(part == k).astype(np.int64) for k in range(len(fr)))


def split_dataset(
    ds: ImageDataset,
    fractions: Sequence[float] = (0.7, 0.1, 0.2),
    seed: int = 0,
) -> tuple[ImageDataset, ...]:
    """``ds`` split by :func:`group_split` on ``ds.groups`` (each image its own group when
    None); the parts are named ``{name}-train`` / ``-val`` / ``-test`` for three parts,
    ``-train`` / ``-test`` for two, ``-0``, ``-1`` ... otherwise."""
    parts = group_split(ds.groups, fractions, seed, n=len(ds))
    suffixes = {2: ("train", "test"), 3: ("train", "val", "test")}.get(len(parts)) or tuple(map(str, range(len(parts))))
    out = []
    for idx, suf in zip(parts, suffixes):
        sub = ds.subset(idx)
        sub.name = f"{ds.name}-{suf}"
        for k, v in ds.extra.items():  # per-sample arrays follow the subset
            if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == len(ds):
                sub.extra[k] = v[idx]
        out.append(sub)
    return tuple(out)


def image_keys(ds: ImageDataset) -> np.ndarray | None:
    """What identifies each image of ``ds`` across splits: its file (``extra["paths"]``,
    normalised), else ``extra["image_id"]``; None when the data set has neither
    (generated data, MedMNIST arrays)."""
    if "paths" in ds.extra and len(ds.extra["paths"]) == len(ds):
        return np.asarray([os.path.normpath(str(p)) for p in ds.extra["paths"]], dtype=object)
    if "image_id" in ds.extra and len(ds.extra["image_id"]) == len(ds):
        return np.asarray([str(i) for i in ds.extra["image_id"]], dtype=object)
    return None


def drop_shared(train: ImageDataset, others: Sequence[ImageDataset | None], name: str = "") -> ImageDataset:
    """``train`` without the images that are also in one of ``others`` (the validation and
    test parts), with one :class:`DataWarning` naming how many and an example; ``train``
    itself when none is shared or the images cannot be told apart (:func:`image_keys`).

    An image in both the training and the test part is scored on data it was trained
    on.  Loaders keep each image once (:func:`fedpl_core.data.files.first_rows`) and
    group splits place each row once, so this catches what neither can: official split
    lists that name an image in two parts.  The test part stays as published."""
    keys = image_keys(train)
    if keys is None:
        return train
    held = set()
    for o in others:
        k = None if o is None else image_keys(o)
        if k is not None:
            held.update(k.tolist())
    shared = np.fromiter((k in held for k in keys), bool, len(keys))
    if not shared.any():
        return train
    n = int(shared.sum())
    warnings.warn(
        f"{name + ': ' if name else ''}{n} image{'' if n == 1 else 's'} of the training split "
        f"{'is' if n == 1 else 'are'} also in the test (or validation) split (e.g. "
        f"{keys[int(np.flatnonzero(shared)[0])]}); dropped from the training split",
        DataWarning,
        stacklevel=2,
    )
    out = train.subset(np.flatnonzero(~shared))
    out.name = train.name
    return out


def few_positives(ds: ImageDataset, minimum: int = MIN_TEST_POSITIVES) -> dict[str, int]:
    """``{class: known positives}`` of the classes of ``ds`` with fewer than ``minimum``."""
    pos = ds.positives()
    return {c: int(p) for c, p in zip(ds.class_names, pos) if p < minimum}


def warn_few_positives(ds: ImageDataset, minimum: int = MIN_TEST_POSITIVES, what: str = "test split") -> dict[str, int]:
    """One :class:`DataWarning` naming each class of ``ds`` (a run's test split) with fewer
    than ``minimum`` positives and its count: that class's AUROC (and AP) rests on too few
    images to mean much.  Returns :func:`few_positives`."""
    few = few_positives(ds, minimum)
    if few:
        listed = ", ".join(f"{c} {n}" for c, n in few.items())
        warnings.warn(
            f"{ds.name}: the {what} ({len(ds)} images) has fewer than {minimum} positives of "
            f"{len(few)} class{'' if len(few) == 1 else 'es'} ({listed}); "
            f"{'its' if len(few) == 1 else 'their'} AUROC means little",
            DataWarning,
            stacklevel=2,
        )
    return few
