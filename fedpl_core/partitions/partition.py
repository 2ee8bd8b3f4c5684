"""The result types (:class:`ClientSpec`, :class:`Partition`) and what every build shares.

A :class:`Partition` gives each client its sample indices into a training
:class:`~fedpl_core.data.base.ImageDataset` and its *annotated-class mask*.  A client's
copy of the labels (:meth:`Partition.client_labels`) has every unannotated entry set to
0, as the papers store them, and the per-sample mask travels with it, so each method
decides whether an unannotated entry means "negative" (FedAvg) or "unknown" (partial
loss).  No true label of an unannotated class reaches a client.

:class:`Draws` is the randomness of one build and :func:`finish` its last step (checks
and warnings); both are used by :func:`~fedpl_core.partitions.compose.make_partition`.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..data.base import DataError, ImageDataset


class PartitionWarning(UserWarning):
    """A partition that is allowed but probably not intended (a client or class without labels)."""


@dataclass
class ClientSpec:
    """One client's share: sample indices and the classes it annotates."""

    indices: np.ndarray
    class_mask: np.ndarray  # [C] bool
    name: str = ""

    def __post_init__(self) -> None:
        self.indices = np.asarray(self.indices, dtype=np.int64)
        self.class_mask = np.asarray(self.class_mask, dtype=bool)


def default_client_name(k: int) -> str:
    return chr(ord("A") + k) if k < 26 else f"client{k}"


@dataclass
class Partition:
    """Clients' indices and annotated-class masks over ``class_names``."""

    clients: list[ClientSpec]
    class_names: list[str]
    name: str = "partition"
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, c in enumerate(self.clients):
            if not c.name:
                c.name = default_client_name(k)
            if c.class_mask.shape != (len(self.class_names),):
                raise DataError(
                    f"client {c.name}: class mask has {c.class_mask.shape[0]} entries "
                    f"for {len(self.class_names)} classes"
                )

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    @property
    def masks(self) -> np.ndarray:
        """``[K, C]`` bool matrix of annotated classes."""
        return np.stack([c.class_mask for c in self.clients])

    def sizes(self) -> np.ndarray:
        return np.array([len(c.indices) for c in self.clients])

    def check(self, allow_unlabelled: bool = False) -> Partition:
        """Raise when a class is annotated by no client (unless explicitly allowed)."""
        if not allow_unlabelled:
            missing = [n for n, m in zip(self.class_names, self.masks.any(0)) if not m]
            if missing:
                raise DataError(f"no client labels class(es) {missing}; pass allow_unlabelled=True if this is intended")
        return self

    def client_labels(self, dataset: ImageDataset, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Client k's labels with unannotated entries zeroed, and its ``[n, C]`` known mask.

        The known mask is the client's class mask AND the data set's own label mask
        (a sample from a source that never annotated a class is unknown there too).
        """
        spec = self.clients[k]
        if dataset.class_names != self.class_names:
            raise DataError(f"partition classes {self.class_names} do not match data set classes {dataset.class_names}")
        mask = dataset.known[spec.indices] & spec.class_mask[None, :]
        labels = np.where(mask, dataset.labels[spec.indices], 0.0).astype(np.float32)
        return labels, mask


def assigned_classes(partition: Partition) -> list[list[str]]:
    """Each client's annotated class names, in ``class_names`` order."""
    return [[n for n, m in zip(partition.class_names, c.class_mask) if m] for c in partition.clients]


# ============================================================================ build helpers
class Draws:
    """The randomness of one partition build: its ``seed`` and one shared numpy stream.

    ``rng`` is ``np.random.default_rng(seed)``, created when a rule first asks for it;
    the rules of one build draw from it in the order
    :func:`~fedpl_core.partitions.compose.make_partition` calls them.  Rules that
    replay a released script (FedLSM) or an independent draw reseed from ``seed``.

    >>> d = Draws(0)
    >>> d.started, int(d.rng.integers(10)), d.started
    (False, 8, True)
    """

    def __init__(self, seed) -> None:
        self.seed = seed
        self._rng: np.random.Generator | None = None

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    @property
    def started(self) -> bool:
        """Whether a rule has taken the shared stream already."""
        return self._rng is not None

    def child(self) -> np.random.Generator:
        """A generator for a rule with a variable number of draws (a retry loop).

        The shared stream itself when nobody has drawn yet, else a new generator seeded
        by one 31-bit integer drawn from the shared stream.
        """
        if not self.started:
            return self.rng
        return np.random.default_rng(int(self.rng.integers(2**31)))


class Unlabelled:
    """Stands in for a data set when only a number of samples is known (``iid(100, ...)``)."""

    labels = None
    groups = None
    domains = None

    def __init__(self, n: int, class_names: list[str]) -> None:
        self.n, self.class_names, self.extra = n, list(class_names), {}

    def __len__(self) -> int:
        return self.n

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def as_dataset(data, class_names=None) -> ImageDataset | Unlabelled:
    """An :class:`ImageDataset` as it is, or a number of samples with ``class_names``."""
    if isinstance(data, ImageDataset):
        return data
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        if data < 1:
            raise DataError(f"n_samples must be positive, got {data}")
        if class_names is None:
            raise DataError("a number of samples needs class_names")
        return Unlabelled(int(data), [str(c) for c in class_names])
    raise DataError(f"expected an ImageDataset or a number of samples, got {type(data).__name__}")


def need_labels(dataset, what: str) -> ImageDataset:
    if not isinstance(dataset, ImageDataset):
        raise DataError(f"{what} needs an ImageDataset (labels), not a number of samples")
    return dataset


def check_num_clients(num_clients, n: int) -> int:
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
        raise DataError(f"num_clients must be an integer, got {num_clients!r}")
    if num_clients < 1:
        raise DataError(f"num_clients must be at least 1, got {num_clients}")
    if num_clients > n:
        raise DataError(f"more clients ({num_clients}) than samples ({n}): every client needs data")
    return int(num_clients)


def class_index(class_names: list[str], names) -> list[int]:
    out = []
    for n in names:
        if n not in class_names:
            raise DataError(f"unknown class name {n!r}; known classes: {class_names}")
        out.append(class_names.index(n))
    return out


def _names(items: list[str]) -> str:
    return ("client " if len(items) == 1 else "clients ") + ", ".join(items)


def label_warnings(part: Partition, dataset) -> list[str]:
    """The problems :func:`finish` warns about: clients without classes, assigned classes
    without positives (in the client's samples, or in the whole training set)."""
    out = []
    empty = [c.name for c in part.clients if not c.class_mask.any()]
    if empty:
        out.append(f"{_names(empty)} annotate(s) no class")
    if getattr(dataset, "labels", None) is None:
        return out
    pos = (dataset.labels > 0) & dataset.known
    total = pos.sum(0)
    per_client = np.stack([pos[c.indices].sum(0) for c in part.clients])  # [K, C]
    for j, cls in enumerate(part.class_names):
        holders = [k for k, c in enumerate(part.clients) if c.class_mask[j]]
        if not holders:
            continue
        if total[j] == 0:
            who = [part.clients[k].name for k in holders]
            out.append(f"class {cls!r} has 0 positives in the whole training set (assigned to {_names(who)})")
            continue
        zero = [part.clients[k].name for k in holders if per_client[k, j] == 0]
        if zero:
            out.append(f"class {cls!r} has 0 positives among the samples of {_names(zero)}")
    return out


def finish(
    clients: list[ClientSpec], class_names: list[str], name: str, info: dict, allow_unlabelled: bool, dataset=None
) -> Partition:
    """Build the :class:`Partition`: no client without samples, every class annotated
    (unless ``allow_unlabelled``), then one :class:`PartitionWarning` listing the
    clients without classes and the assigned classes without positives."""
    for c in clients:
        if len(c.indices) == 0:
            raise DataError(f"{name}: client {c.name or '?'} would get no samples")
    part = Partition(clients=clients, class_names=list(class_names), name=name, info=info)
    part.check(allow_unlabelled=allow_unlabelled)
    problems = label_warnings(part, dataset)
    if problems:
        warnings.warn(f"partition {name!r}: " + "; ".join(problems), PartitionWarning, stacklevel=_outside_level())
    return part


def _outside_level() -> int:
    """The ``stacklevel`` of the first caller outside this package (for the caller of finish)."""
    here = os.path.dirname(__file__)
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    return level
