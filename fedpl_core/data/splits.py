"""Group-wise train / validation / test splits: no patient (or lesion) in two parts."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import DataError, ImageDataset


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
