"""Sample splits: which samples each client holds (the label sets are another axis).

A split rule is a small object; :func:`~fedpl_core.partitions.compose.make_partition`
calls ``rule(dataset, num_clients, draws)`` and gets a :class:`SampleSplit`.  Rules that
fix the number of clients themselves (one client per source, one per pool) say so in
:meth:`SplitRule.fixed_clients`.  Client indices are returned sorted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..data.base import DataError, ImageDataset
from .partition import Draws, check_num_clients, need_labels


@dataclass
class SampleSplit:
    """What a split rule returns: one index array per client, optional client names,
    the samples left to no client, and what to record in ``Partition.info``."""

    parts: list[np.ndarray]
    names: list[str] | None = None
    unassigned: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    info: dict = field(default_factory=dict)


class SplitRule:
    """Base of the sample splits; subclasses implement ``__call__``."""

    name: ClassVar[str] = "split"

    def fixed_clients(self, dataset) -> int | None:
        """The number of clients this rule implies (None: the caller's ``num_clients``)."""
        return None

    def check(self, dataset, num_clients: int) -> None:
        """Raise :class:`DataError` for arguments that cannot work, before anything is drawn."""

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        raise NotImplementedError


def equal_split(
    indices: np.ndarray, num_clients: int, rng: np.random.Generator, groups: np.ndarray | None = None
) -> list[np.ndarray]:
    """Random split of ``indices`` into ``num_clients`` parts of (nearly) equal size.

    Without groups the sizes differ by at most one.  With ``groups`` (patient ids) whole
    groups are dealt, in random order, to the currently smallest client, so no group
    is shared between clients and the sizes stay close.
    """
    indices = np.asarray(indices, dtype=np.int64)
    if groups is None:
        return [np.sort(p) for p in np.array_split(rng.permutation(indices), num_clients)]
    g = np.asarray(groups)[indices]
    uniq, inv = np.unique(g, return_inverse=True)
    if len(uniq) < num_clients:
        raise DataError(f"more clients ({num_clients}) than groups ({len(uniq)})")
    members = [[] for _ in range(len(uniq))]
    for pos, gi in enumerate(inv):
        members[gi].append(indices[pos])
    parts: list[list[int]] = [[] for _ in range(num_clients)]
    sizes = np.zeros(num_clients, dtype=np.int64)
    for gi in rng.permutation(len(uniq)):
        k = int(np.argmin(sizes))
        parts[k].extend(members[gi])
        sizes[k] += len(members[gi])
    return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]


# ============================================================================ IID
@dataclass
class IID(SplitRule):
    """Equal random split; sizes differ by at most one.

    FedMLP: "an equal distribution of training data among clients".  With
    ``group_aware=True`` no group (``dataset.groups``, a patient) is in two clients, as
    in Surgical Aggregation's IID subsets of NIH; the paper does not say how groups
    are dealt, here whole groups in random order to the currently smallest client.
    Draws one permutation from the shared stream.

    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> [len(p) for p in IID()(Unlabelled(10, ["a"]), 3, Draws(0)).parts]
    [4, 3, 3]
    """

    group_aware: bool = False
    name: ClassVar[str] = "iid"

    def check(self, dataset, num_clients: int) -> None:
        if self.group_aware and getattr(dataset, "groups", None) is None:
            raise DataError("group_aware=True needs a data set with groups")

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        groups = dataset.groups if self.group_aware else None
        parts = equal_split(np.arange(len(dataset)), num_clients, draws.rng, groups)
        return SampleSplit(parts, info={"group_aware": self.group_aware})


# ============================================================================ Dirichlet
def dirichlet_keys(ds: ImageDataset, key) -> np.ndarray:
    """The discrete key per sample that :class:`Dirichlet` splits by."""
    if isinstance(key, np.ndarray) or isinstance(key, (list, tuple)):
        k = np.asarray(key)
        if len(k) != len(ds):
            raise DataError(f"key has {len(k)} entries for {len(ds)} samples")
        return np.unique(k, return_inverse=True)[1].ravel()
    y = (ds.labels * ds.known) > 0.5
    if key == "first_positive":
        # samples with no positive (e.g. "No Finding") form their own group C
        return np.where(y.any(1), y.argmax(1), ds.num_classes)
    if key == "combination":
        return np.unique(y, axis=0, return_inverse=True)[1].ravel()
    if key == "num_positives":
        return y.sum(1)
    raise DataError(f"unknown dirichlet key {key!r}; use 'first_positive', 'combination', 'num_positives' or an array")


@dataclass
class Dirichlet(SplitRule):
    """Non-IID split by label distribution (Dirichlet, Hsu et al. 2019 / NIID-Bench).

    Each sample gets a discrete *key*; for every key value the samples are shuffled
    and divided among clients in proportions ``p ~ Dir(alpha * 1_K)`` (a client
    that already holds ``N / K`` samples gets no more), and the whole draw is
    repeated until every client has at least ``min_size`` samples.  Small ``alpha``
    gives very skewed clients, large ``alpha`` approaches IID.

    Keys for multi-label data (``key``), a choice the papers leave open:
      * ``"first_positive"`` (default): the first positive class in ``class_names``
        order; samples with no positive (No Finding) are a key of their own.  For
        single-label data this is the class.
      * ``"combination"``: the whole multi-hot row (every label combination a key).
      * ``"num_positives"``: the number of positive classes, as FedMLP's released
        ``non_iid_dirichlet_sampling`` does.
      * an ``[N]`` array of any discrete values (e.g. a domain).

    Draws from :meth:`Draws.child`: the shared stream when it is the first rule to
    draw, else a generator seeded from it (the retry loop takes a variable number of
    draws).
    """

    alpha: float = 0.5
    key: object = "first_positive"
    min_size: int = 10
    max_tries: int = 1000
    name: ClassVar[str] = "dirichlet"

    def check(self, dataset, num_clients: int) -> None:
        need_labels(dataset, "the dirichlet split")
        if not self.alpha > 0:
            raise DataError(f"alpha must be positive, got {self.alpha}")
        if self.min_size * num_clients > len(dataset):
            raise DataError(f"min_size {self.min_size} x {num_clients} clients exceeds {len(dataset)} samples")
        dirichlet_keys(dataset, self.key)

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        K, n = num_clients, len(dataset)
        keys = dirichlet_keys(dataset, self.key)
        rng = draws.child()
        for attempt in range(1, self.max_tries + 1):  # noqa: B007  (its last value is reported)
            batches: list[list[int]] = [[] for _ in range(K)]
            for v in np.unique(keys):
                idx = rng.permutation(np.flatnonzero(keys == v))
                with np.errstate(all="ignore"):  # a tiny alpha: the draw may underflow to 0 / 0
                    p = rng.dirichlet(np.full(K, float(self.alpha)))
                p = p * np.array([len(b) < n / K for b in batches])
                total = p.sum()
                if not (np.isfinite(total) and total > 0):  # every client with mass is full: a failed try
                    batches = []
                    break
                p = p / total
                cuts = (np.cumsum(p) * len(idx)).astype(int)[:-1]
                for b, part in zip(batches, np.split(idx, cuts)):
                    b.extend(part.tolist())
            if batches and min(len(b) for b in batches) >= self.min_size:
                break
        else:
            raise DataError(
                f"dirichlet: no split with min_size {self.min_size} in {self.max_tries} "
                f"tries (alpha={self.alpha}); lower min_size or raise alpha"
            )
        parts = [np.sort(np.asarray(b, dtype=np.int64)) for b in batches]
        return SampleSplit(
            parts,
            info={
                "alpha": self.alpha,
                "min_size": self.min_size,
                "tries": attempt,
                "key": self.key if isinstance(self.key, str) else "array",
            },
        )


# ============================================================================ explicit sizes / pools
@dataclass
class Pools(SplitRule):
    """Explicit local sizes and candidate pools (FedPSL Tables I and III, Fig. 3).

    ``pools`` gives each client its candidate indices (one ChestX-ray14 batch per
    client, or ``np.flatnonzero(ds.extra["source"] == s)`` for FedPSL's Tuberculosis
    and COVID-19 clients); it fixes the number of clients, as does a list of
    ``sizes``.  ``sizes`` is None, one int for all clients, or one int per client.
    Clients are filled in order and never share a sample (a pool's indices already
    taken by an earlier client are skipped).  Without ``sizes``: nearly equal sizes
    drawn from all samples when there are no pools, otherwise each client takes all
    of its (free) pool.  ``take="random"`` draws at random (one permutation per
    client from the shared stream), ``take="first"`` takes the first ``n`` free
    indices of the pool in its order (FedPSL: "we sample the first n examples in
    each batch").

    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> s = Pools(pools=[[5, 6, 7, 8], [6, 7, 8, 9]], sizes=2, take="first")
    >>> [p.tolist() for p in s(Unlabelled(10, ["a"]), 2, Draws(0)).parts]
    [[5, 6], [7, 8]]
    """

    pools: list | None = None
    sizes: int | list[int] | None = None
    take: str = "random"
    name: ClassVar[str] = "pools"

    def __post_init__(self) -> None:
        if self.take not in ("random", "first"):
            raise DataError(f"take must be 'random' or 'first', got {self.take!r}")
        if self.pools is not None:
            self.pools = [np.asarray(p, dtype=np.int64).ravel() for p in self.pools]

    def fixed_clients(self, dataset) -> int | None:
        if self.pools is not None:
            return len(self.pools)
        if self.sizes is not None and not isinstance(self.sizes, (int, np.integer)):
            return len(self.sizes)
        return None

    def _size_list(self, n: int, K: int) -> list[int | None]:
        if self.sizes is None:
            return [None] * K if self.pools is not None else [len(p) for p in np.array_split(np.arange(n), K)]
        if isinstance(self.sizes, (int, np.integer)):
            return [int(self.sizes)] * K
        return [int(s) for s in self.sizes]

    def check(self, dataset, num_clients: int) -> None:
        n, K = len(dataset), num_clients
        if self.pools is not None:
            if len(self.pools) != K:
                raise DataError(f"{len(self.pools)} pools for {K} clients")
            for k, p in enumerate(self.pools):
                if len(p) and (p.min() < 0 or p.max() >= n):
                    raise DataError(f"pool of client {k} has indices outside [0, {n})")
        sizes = self._size_list(n, K)
        if len(sizes) != K:
            raise DataError(f"{len(sizes)} sizes for {K} clients")
        if any(s is not None and s < 1 for s in sizes):
            raise DataError(f"sizes must be positive, got {sizes}")

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        n, K = len(dataset), num_clients
        sizes = self._size_list(n, K)
        used = np.zeros(n, dtype=bool)
        parts = []
        for k in range(K):
            cand = np.arange(n) if self.pools is None else self.pools[k]
            cand = cand[~used[cand]]
            cand = cand[np.sort(np.unique(cand, return_index=True)[1])]  # drop repeats, keep order
            if self.take == "random":
                cand = draws.rng.permutation(cand)
            want = len(cand) if sizes[k] is None else sizes[k]
            if want > len(cand):
                raise DataError(f"client {k}: asks for {want} samples, only {len(cand)} free in its pool")
            chosen = cand[:want]
            used[chosen] = True
            parts.append(np.sort(chosen))
        return SampleSplit(
            parts,
            info={
                "sizes": sizes,
                "take": self.take,
                "pools": None if self.pools is None else [len(p) for p in self.pools],
            },
        )


# ============================================================================ by source
def sources(dataset: ImageDataset) -> tuple[np.ndarray, list[str]]:
    """Per-sample source and the source names of a :func:`concat_datasets` union."""
    src = dataset.extra.get("source")
    if src is None:
        src = dataset.domains
    if src is None:
        raise DataError(
            f"{getattr(dataset, 'name', 'data')}: no source information (extra['source'] "
            "or domains); join data sets with concat_datasets"
        )
    src = np.asarray(src)
    if len(src) != len(dataset):
        raise DataError(f"{dataset.name}: source array has {len(src)} entries for {len(dataset)} samples")
    values = np.unique(src)
    labels = dataset.extra.get("sources")
    if labels is not None and len(labels) == len(values) and np.array_equal(values, np.arange(len(values))):
        names = [str(s) for s in labels]
    else:
        names = [f"source{v}" for v in values]
    return src, names


@dataclass
class BySource(SplitRule):
    """One client per source of a :func:`concat_datasets` union (Surgical Aggregation, non-IID).

    Sources come from ``dataset.extra["source"]`` (else ``dataset.domains``); the
    clients are the sources, so this rule fixes the number of clients.  With
    ``clients_per_source > 1`` (an int, or one per source) a source is split IID
    (:func:`equal_split` on the shared stream, source by source; ``group_aware``:
    no patient in two clients) among that many clients, named ``"<source>-1"``,
    ``"<source>-2"``, ...; the paper has one client per source.
    """

    clients_per_source: int | list[int] = 1
    group_aware: bool = False
    name: ClassVar[str] = "by_source"

    def _per_source(self, dataset) -> list[int]:
        values = np.unique(sources(dataset)[0])
        cps = self.clients_per_source
        cps = [cps] * len(values) if isinstance(cps, (int, np.integer)) else list(cps)
        if len(cps) != len(values):
            raise DataError(f"{len(cps)} clients_per_source entries for {len(values)} sources")
        return [int(c) for c in cps]

    def fixed_clients(self, dataset) -> int | None:
        return sum(self._per_source(dataset))

    def check(self, dataset, num_clients: int) -> None:
        src, _ = sources(dataset)
        for v, c in zip(np.unique(src), self._per_source(dataset)):
            check_num_clients(c, int((src == v).sum()))

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        src, names = sources(dataset)
        cps = self._per_source(dataset)
        groups = dataset.groups if self.group_aware else None
        parts, client_names = [], []
        for v, nm, c in zip(np.unique(src), names, cps):
            idx = np.flatnonzero(src == v)
            for j, p in enumerate(equal_split(idx, c, draws.rng, groups) if c > 1 else [idx]):
                parts.append(p)
                client_names.append(nm if c == 1 else f"{nm}-{j + 1}")
        return SampleSplit(
            parts, client_names, info={"sources": names, "clients_per_source": cps, "group_aware": self.group_aware}
        )


# ============================================================================ FedLSM's scripts
@dataclass
class FedLSMSplit(SplitRule):
    """FedLSM's released ISIC script's sample split (``scripts/isic2018_prepare_fl.py``).

    Sizes ``N // K`` (the last client takes the remainder), drawn client by client
    from the remaining samples as ``DataFrame.sample(n, random_state=seed)``, i.e.
    ``np.random.RandomState(seed).choice(len(remaining), n, replace=False)``, with
    the same ``seed`` for every client.  Reseeds from ``draws.seed`` (the shared
    stream is not used).
    """

    name: ClassVar[str] = "fedlsm"

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        n, K = len(dataset), num_clients
        counts = [n // K] * K
        counts[-1] += n - sum(counts)
        remaining = np.arange(n)
        parts = []
        for c in counts:
            pick = np.random.RandomState(draws.seed).choice(len(remaining), c, replace=False)
            parts.append(np.sort(remaining[pick]))
            remaining = np.delete(remaining, pick)
        return SampleSplit(parts)


@dataclass
class Contiguous(SplitRule):
    """Consecutive chunks of ``N // K`` samples in data set order (FedLSM's CXR script).

    The remainder (which FedLSM's authors moved to the validation set) goes to no
    client and is recorded as ``info["unassigned"]``.  Draws nothing.

    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> s = Contiguous()(Unlabelled(7, ["a"]), 2, Draws(0))
    >>> [p.tolist() for p in s.parts], s.unassigned.tolist()
    ([[0, 1, 2], [3, 4, 5]], [6])
    """

    name: ClassVar[str] = "contiguous"

    def __call__(self, dataset, num_clients: int, draws: Draws) -> SampleSplit:
        n, K = len(dataset), num_clients
        step = n // K
        return SampleSplit([np.arange(k * step, (k + 1) * step) for k in range(K)], unassigned=np.arange(K * step, n))


__all__ = [
    "SampleSplit",
    "SplitRule",
    "IID",
    "Dirichlet",
    "Pools",
    "BySource",
    "FedLSMSplit",
    "Contiguous",
    "equal_split",
    "dirichlet_keys",
    "sources",
]
