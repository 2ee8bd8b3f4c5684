"""One in-memory representation for every data set of fedpl.

Images are stored once, as a uint8 array laid out channels-first ``[N, C, H, W]`` so
that the engine can batch them by index without a DataLoader.  Labels are float32
``[N, num_classes]``: multi-hot for multi-label tasks, one-hot for single-label
(multi-class) tasks.  ``label_mask`` marks which label entries are *known* for each
sample; it is all-True for a fully labelled data set and becomes False for the
classes a source data set never annotated when data sets with different label
spaces are joined (Surgical Aggregation's NIH + CheXpert union).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

#: The task of a multi-label data set: any number of positives a row, one sigmoid a class.
MULTILABEL = "multilabel"
#: The task of a multi-class data set: exactly one positive a row, one softmax.
MULTICLASS = "multiclass"


class DataError(ValueError):
    """Bad input data: a missing file, an unknown class name, a malformed table."""


class DataWarning(UserWarning):
    """Data that loads but deserves a look: skipped files, repeated table rows, split
    sizes other than the published ones, classes with too few test positives."""


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def available_memory() -> int | None:
    """Bytes of memory this process can still allocate, as far as the system says
    (Linux ``MemAvailable``, capped by a cgroup limit; elsewhere the free physical
    pages); None when unknown."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            import os

            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    limit, used = _read_int("/sys/fs/cgroup/memory.max"), _read_int("/sys/fs/cgroup/memory.current")
    if limit is not None and used is not None:
        avail = min(avail, max(0, limit - used))
    return avail


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000
    return f"{n:.3g} EB"  # pragma: no cover


def check_memory(nbytes: float, what: str, hint: str) -> None:
    """A :class:`DataError` before allocating when ``nbytes`` (an estimate) exceeds the
    memory available now, giving the estimate, what is available and ``hint``."""
    avail = available_memory()
    if avail is not None and nbytes > avail:
        raise DataError(f"{what} need about {fmt_bytes(nbytes)} of memory; {fmt_bytes(avail)} is available: {hint}")


@dataclass
class ImageDataset:
    """Images, labels and per-sample metadata of one data set.

    Attributes:
        images: uint8 array ``[N, C, H, W]`` (C = 1 grayscale or 3 colour).
        labels: float32 array ``[N, K]`` over ``class_names``.
        class_names: the K class names, in label-column order.
        task: ``"multilabel"`` or ``"multiclass"`` (exactly one positive per row).
        groups: optional ``[N]`` patient / lesion ids for group-wise splits.
        domains: optional ``[N]`` int domain (hospital, scanner, source) per sample.
        label_mask: optional ``[N, K]`` bool, True where the label is known.
        name: a short name for reports.
    """

    images: np.ndarray
    labels: np.ndarray
    class_names: list[str]
    task: str = MULTILABEL
    groups: np.ndarray | None = None
    domains: np.ndarray | None = None
    label_mask: np.ndarray | None = None
    name: str = "dataset"
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.class_names = [str(c) for c in self.class_names]
        if self.images.dtype != np.uint8:
            raise DataError(f"{self.name}: images must be uint8, got {self.images.dtype}")
        if self.images.ndim != 4 or self.images.shape[1] not in (1, 3):
            raise DataError(
                f"{self.name}: images must have shape [N, C, H, W] with C in (1, 3), got {tuple(self.images.shape)}"
            )
        self.labels = np.asarray(self.labels, dtype=np.float32)
        n = len(self.images)
        if self.labels.shape != (n, len(self.class_names)):
            raise DataError(
                f"{self.name}: labels have shape {self.labels.shape}, expected "
                f"({n}, {len(self.class_names)}) for {len(self.class_names)} classes"
            )
        if len(set(self.class_names)) != len(self.class_names):
            raise DataError(f"{self.name}: duplicate class names {self.class_names}")
        if self.task not in (MULTILABEL, MULTICLASS):
            raise DataError(f"{self.name}: unknown task {self.task!r}")
        for attr in ("groups", "domains"):
            v = getattr(self, attr)
            if v is not None and len(v) != n:
                raise DataError(f"{self.name}: {attr} has {len(v)} entries for {n} images")
        if self.label_mask is not None:
            self.label_mask = np.asarray(self.label_mask, dtype=bool)
            if self.label_mask.shape != self.labels.shape:
                raise DataError(f"{self.name}: label_mask shape {self.label_mask.shape} != labels")

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return len(self.images)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def channels(self) -> int:
        return int(self.images.shape[1])

    @property
    def image_size(self) -> int:
        return int(self.images.shape[-1])

    @property
    def known(self) -> np.ndarray:
        """``[N, K]`` bool mask of known labels (all True when no mask is set)."""
        if self.label_mask is None:
            return np.ones(self.labels.shape, dtype=bool)
        return self.label_mask

    def class_index(self, names: Sequence[str]) -> list[int]:
        """Indices of ``names`` in ``class_names``; a clear error for an unknown name."""
        out = []
        for n in names:
            if n not in self.class_names:
                raise DataError(f"{self.name}: unknown class name {n!r}; known classes: {self.class_names}")
            out.append(self.class_names.index(n))
        return out

    # ------------------------------------------------------------- derivation
    def subset(self, index: Sequence[int] | np.ndarray) -> ImageDataset:
        idx = np.asarray(index)
        return replace(
            self,
            images=self.images[idx],
            labels=self.labels[idx],
            groups=None if self.groups is None else np.asarray(self.groups)[idx],
            domains=None if self.domains is None else np.asarray(self.domains)[idx],
            label_mask=None if self.label_mask is None else self.label_mask[idx],
            extra={
                k: (v[idx] if isinstance(v, np.ndarray) and len(v) == len(self) else v) for k, v in self.extra.items()
            },
        )

    def select_classes(self, names: Sequence[str]) -> ImageDataset:
        """Keep (and reorder to) the given classes."""
        idx = self.class_index(names)
        return replace(
            self,
            labels=self.labels[:, idx],
            class_names=list(names),
            label_mask=None if self.label_mask is None else self.label_mask[:, idx],
            extra=dict(self.extra),
        )

    def positives(self) -> np.ndarray:
        """Number of known positives per class."""
        return (self.labels * self.known).sum(0)

    def summary(self) -> str:
        prev = self.labels.mean(0)
        top = ", ".join(f"{c} {p:.1%}" for c, p in sorted(zip(self.class_names, prev), key=lambda t: -t[1])[:5])
        return (
            f"{self.name}: {len(self)} images {tuple(self.images.shape[1:])}, "
            f"{self.num_classes} classes ({self.task}); most frequent: {top}"
        )


def concat_datasets(datasets: Sequence[ImageDataset], name: str = "union") -> ImageDataset:
    """Join data sets with possibly different label spaces into their union.

    The union's class order is the first data set's classes followed by each later
    data set's new classes in their own order.  A sample's label for a class its source
    data set does not have is stored as 0 and marked unknown in ``label_mask``.
    ``domains`` gets the source index when a source has no domain of its own.
    """
    if not datasets:
        raise DataError("concat_datasets needs at least one data set")
    shapes = {d.images.shape[1:] for d in datasets}
    if len(shapes) != 1:
        raise DataError(f"cannot join data sets with different image shapes: {sorted(shapes)}")
    tasks = {d.task for d in datasets}
    if len(tasks) != 1:
        raise DataError(f"cannot join data sets of different tasks: {sorted(tasks)}")
    names: list[str] = []
    for d in datasets:
        names += [c for c in d.class_names if c not in names]
    labels, masks, domains, groups = [], [], [], []
    for s, d in enumerate(datasets):
        lab = np.zeros((len(d), len(names)), np.float32)
        msk = np.zeros((len(d), len(names)), bool)
        cols = [names.index(c) for c in d.class_names]
        lab[:, cols] = d.labels
        msk[:, cols] = d.known
        labels.append(lab)
        masks.append(msk)
        domains.append(np.full(len(d), s) if d.domains is None else np.asarray(d.domains))
        groups.append(
            np.array([f"{d.name}:{i}" for i in range(len(d))], dtype=object)
            if d.groups is None
            else np.array([f"{d.name}:{g}" for g in d.groups], dtype=object)
        )
    return ImageDataset(
        images=np.concatenate([d.images for d in datasets]),
        labels=np.concatenate(labels),
        class_names=names,
        task=datasets[0].task,
        groups=np.concatenate(groups),
        domains=np.concatenate(domains),
        label_mask=np.concatenate(masks),
        name=name,
        extra={
            "sources": [d.name for d in datasets],
            "source": np.concatenate([np.full(len(d), s) for s, d in enumerate(datasets)]),
        },
    )
