"""Label-set assignment: which classes each client annotates (the samples are another axis).

A label-set rule is a small object; :func:`~fedpl_core.partitions.compose.make_partition`
calls ``rule(dataset, num_clients, draws, parts)`` and gets ``(masks, info)``, a
``[K, C]`` bool array and what to record in ``Partition.info``.  ``before_split`` says
whether the rule draws before the sample split (its draws then come first on the shared
stream, and ``parts`` is None); a rule that looks at the clients' samples
(:class:`SourceClasses`) runs after it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..data.base import DataError, ImageDataset
from .paper_tables import FEDLSM_ISIC_CLASS_ORDER, FEDLSM_NIH_CLASS_ORDER
from .partition import Draws, class_index, default_client_name, need_labels
from .sample_splits import sources


class LabelRule:
    """Base of the label-set rules; subclasses implement ``__call__``."""

    name: ClassVar[str] = "labels"
    before_split: ClassVar[bool] = True

    def fixed_clients(self, dataset) -> int | None:
        """The number of clients this rule implies (None: the caller's ``num_clients``)."""
        return None

    def client_names(self) -> list[str] | None:
        return None

    def check(self, dataset, num_clients: int) -> None:
        """Raise :class:`DataError` for arguments that cannot work, before anything is drawn."""

    def __call__(
        self, dataset, num_clients: int, draws: Draws, parts: list[np.ndarray] | None
    ) -> tuple[np.ndarray, dict]:
        raise NotImplementedError


def most_frequent_classes(dataset: ImageDataset, n: int) -> list[str]:
    """The ``n`` classes with the most known positives, most frequent first.

    FedMLP keeps the 8 most frequent ChestXray14 classes:
    ``dataset.select_classes(most_frequent_classes(dataset, 8))``.
    """
    if not 1 <= n <= dataset.num_classes:
        raise DataError(f"n must be in [1, {dataset.num_classes}], got {n}")
    order = np.argsort(-dataset.positives(), kind="stable")[:n]
    return [dataset.class_names[i] for i in order]


# ============================================================================ all / explicit
@dataclass
class AllClasses(LabelRule):
    """Every client annotates every class (the fully labelled baseline)."""

    name: ClassVar[str] = "all"

    def __call__(self, dataset, num_clients, draws, parts):
        return np.ones((num_clients, dataset.num_classes), dtype=bool), {}


def _is_name_lists(spec) -> bool:
    if isinstance(spec, np.ndarray) or not isinstance(spec, (list, tuple)) or not spec:
        return False
    if any(isinstance(s, str) for s in spec):
        return True  # a flat list of names: rejected by ExplicitClasses as malformed
    if not all(isinstance(s, (list, tuple)) for s in spec):
        return False
    flat = [x for s in spec for x in s]
    return not flat or any(isinstance(x, str) for x in flat)


@dataclass
class ExplicitClasses(LabelRule):
    """Given label sets: FedPSL Tables I and III, or any table of one's own.

    ``classes`` is a dict client name -> class names (:data:`FEDPSL_TABLE_I`; the keys
    become the client names), a list of class-name lists (one per client), a ``[K, C]``
    bool mask, or a ``[C]`` bool mask shared by all clients.  All but the last fix the
    number of clients.  Draws nothing.

    >>> import numpy as np
    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> rule = ExplicitClasses({"x": ["a"], "y": ["a", "b"]})
    >>> rule.client_names(), rule(Unlabelled(4, ["a", "b"]), 2, Draws(0), None)[0].astype(int).tolist()
    (['x', 'y'], [[1, 0], [1, 1]])
    """

    classes: object
    name: ClassVar[str] = "explicit"

    def __post_init__(self) -> None:
        spec, self._names, self._lists, self._mask = self.classes, None, None, None
        if isinstance(spec, dict):
            self._names, spec = [str(k) for k in spec], list(spec.values())
        if self._names is not None or _is_name_lists(spec):
            for v in spec:
                if isinstance(v, str) or any(not isinstance(c, str) for c in v):
                    raise DataError("client_classes must hold one list of class names per client")
            self._lists = [list(v) for v in spec]
        else:
            self._mask = np.asarray(spec, dtype=bool)
            if self._mask.ndim not in (1, 2):
                raise DataError(f"class masks must be [C] or [K, C], got shape {self._mask.shape}")

    def fixed_clients(self, dataset) -> int | None:
        if self._lists is not None:
            return len(self._lists)
        return len(self._mask) if self._mask.ndim == 2 else None

    @property
    def class_lists(self) -> list[list[str]] | None:
        """The per-client class names, when given as names (None for bool masks)."""
        return self._lists

    def client_names(self) -> list[str] | None:
        return self._names

    def __call__(self, dataset, num_clients, draws, parts):
        K, C = num_clients, dataset.num_classes
        if self._lists is not None:
            m = np.zeros((K, C), dtype=bool)
            for k, names in enumerate(self._lists):
                m[k, class_index(dataset.class_names, names)] = True
            return m, {"client_classes": self._lists}
        if self._mask.shape == (C,):
            return np.repeat(self._mask[None, :], K, axis=0), {"class_mask": self._mask.tolist()}
        if self._mask.shape != (K, C):
            raise DataError(f"class masks must have shape ({C},) or ({K}, {C}), got {self._mask.shape}")
        return self._mask.copy(), {"class_mask": self._mask.tolist()}


# ============================================================================ FedMLP
@dataclass
class MissingClasses(LabelRule):
    """FedMLP (MICCAI 2024, Sec. 3 "Partial Label Generation"): each client misses ``missing`` classes.

    Every client annotates ``a = C - missing`` classes, so none has all labels
    (``1 <= missing <= C - 1``), and every class is annotated by at least one client
    (FedMLP's S_i != {} ).  ``missing = C - 1`` gives one class per client (FedMLP's
    extreme case, with K = C).  Draws before the sample split, on the shared stream.

    ``assignment``:
      * ``"random"`` (default): as FedMLP's released code (``DatasetSplit``:
        ``random.sample(range(C), annotation_num)`` independently per client), each
        client draws its ``a`` classes uniformly at random; the draw is repeated
        until the union covers every class (the paper requires coverage but does not
        say how), so hot classes (labelled by many clients) and cool classes (by
        few) emerge at random.  If no covering draw is found in ``max_tries``, the
        classes are dealt constructively: a random permutation round robin, then a
        random top-up.  When K * a == C a covering draw is a random partition of the
        classes into blocks of a, drawn directly (same distribution as the rejection
        loop, which would rarely succeed).  ``info["assignment_method"]`` says which
        happened.
      * ``"cyclic"``: client k annotates ``a`` consecutive classes starting at
        ``floor(k * C / K)`` (mod C); balanced, deterministic.  With K = C and
        ``missing = C - 1`` client k annotates class k, as FedMLP's ``main.py``
        (``active_class_list=[i]``).

    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> m, info = MissingClasses(2, "cyclic")(Unlabelled(8, list("abc")), 3, Draws(0), None)
    >>> m.astype(int).tolist(), info["clients_per_class"]
    ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [1, 1, 1])
    """

    missing: int
    assignment: str = "random"
    max_tries: int = 10000
    name: ClassVar[str] = "missing_classes"

    def check(self, dataset, num_clients: int) -> None:
        C, m = dataset.num_classes, self.missing
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
            raise DataError(f"missing must be an integer, got {m!r}")
        if not 1 <= m <= C - 1:
            raise DataError(
                f"missing must be in [1, C-1] = [1, {C - 1}] (no client has all classes, every client has one), got {m}"
            )
        if num_clients * (C - m) < C:
            raise DataError(f"{num_clients} clients x {C - m} classes each cannot cover all {C} classes")
        if self.assignment not in ("random", "cyclic"):
            raise DataError(f"unknown assignment {self.assignment!r}; use 'random' or 'cyclic'")

    def __call__(self, dataset, num_clients, draws, parts):
        K, C = num_clients, dataset.num_classes
        a = C - self.missing
        rng = draws.rng
        masks = np.zeros((K, C), dtype=bool)
        method, tries = self.assignment, 0
        if self.assignment == "random" and K * a == C:
            # a covering draw then uses every class exactly once: a uniformly random
            # partition of the classes into blocks of a, same law as the rejection loop
            method, tries = "exact-partition", 1
            perm = rng.permutation(C)
            for k in range(K):
                masks[k, perm[k * a : (k + 1) * a]] = True
        elif self.assignment == "random":
            for tries in range(1, self.max_tries + 1):  # noqa: B007  (its last value is reported)
                masks[:] = False
                for k in range(K):
                    masks[k, rng.choice(C, a, replace=False)] = True
                if masks.any(0).all():
                    method = "rejection"
                    break
            else:
                method = "cover-fallback"
                masks[:] = False
                perm = rng.permutation(C)
                for j, c in enumerate(perm):
                    masks[j % K, c] = True
                for k in range(K):
                    need = a - masks[k].sum()
                    if need > 0:
                        masks[k, rng.choice(np.flatnonzero(~masks[k]), need, replace=False)] = True
        else:  # cyclic
            for k in range(K):
                start = (k * C) // K
                masks[k, [(start + j) % C for j in range(a)]] = True
        return masks, {
            "missing": self.missing,
            "assignment": self.assignment,
            "assignment_method": method,
            "tries": tries,
            "clients_per_class": masks.sum(0).tolist(),
        }


# ============================================================================ FedLSM
_ALIASES = {
    "pleuralthickening": "thickening",
    "pleural": "thickening",
    "melanoma": "mel",
    "melanocyticnevi": "nv",
    "melanocyticnevus": "nv",
    "nevus": "nv",
    "basalcellcarcinoma": "bcc",
    "actinickeratoses": "akiec",
    "actinickeratosis": "akiec",
    "actinickeratosesandintraepithelialcarcinoma": "akiec",
    "benignkeratosis": "bkl",
    "benignkeratosislikelesions": "bkl",
    "dermatofibroma": "df",
    "vascularlesions": "vasc",
    "vascularlesion": "vasc",
}


def _canon(name: str) -> str:
    k = re.sub(r"[^a-z0-9]", "", str(name).lower())
    return _ALIASES.get(k, k)


def fedlsm_class_order(class_names: list[str], class_order="auto") -> tuple[list[str], str]:
    """The class order FedLSM's assignment shuffles, and where it came from."""
    if isinstance(class_order, str):
        if class_order == "dataset":
            return list(class_names), "dataset"
        if class_order != "auto":
            raise DataError(f"class_order must be 'auto', 'dataset' or a list of class names, got {class_order!r}")
        by_canon = {_canon(c): c for c in class_names}
        for label, ref in (("FedLSM NIH", FEDLSM_NIH_CLASS_ORDER), ("FedLSM ISIC", FEDLSM_ISIC_CLASS_ORDER)):
            if len(by_canon) == len(class_names) and set(by_canon) == {_canon(r) for r in ref}:
                return [by_canon[_canon(r)] for r in ref], label
        return list(class_names), "dataset"
    order = [str(c) for c in class_order]
    class_index(class_names, order)
    if sorted(order) != sorted(class_names):
        raise DataError(f"class_order must be a permutation of the data set's classes {class_names}")
    return order, "given"


def fedlsm_assignment(
    class_order: list[str], num_clients: int, classes_per_client: int, seed: int = 523, dedupe: bool = True
) -> tuple[list[list[str]], int]:
    """FedLSM's class assignment, call for call as in the authors' released scripts.

    ``scripts/chestxray14_prepare_fl.py`` and ``scripts/isic2018_prepare_fl.py`` of
    https://github.com/dzp2095/FedLSM do, with Python's ``random`` module::

        random.seed(seed); random.shuffle(class_names)
        clients[i % K].append(class_names[i]) for every i       # round robin
        client += random.sample(class_names, s - len(client))   # top-up, per client

    The top-up samples from *all* classes, so it can repeat a class the client already
    has (the released CXR config's seed 524 does).  With ``dedupe=True`` such clients
    are topped up afterwards, in client order, from the classes they lack (extra
    draws only after all of the authors' draws, so an assignment without repeats is
    unchanged); the paper is silent on repeats.  Returns the per-client class lists
    and the number of repeats replaced.

    >>> fedlsm_assignment(FEDLSM_ISIC_CLASS_ORDER, 5, 3, seed=523)[0][0]
    ['BKL', 'VASC', 'NV']
    """
    C = len(class_order)
    if num_clients < 1:
        raise DataError(f"num_clients must be at least 1, got {num_clients}")
    if not 1 <= classes_per_client <= C:
        raise DataError(f"classes_per_client must be in [1, {C}], got {classes_per_client}")
    if -(-C // num_clients) > classes_per_client:
        raise DataError(
            f"round robin gives some client {-(-C // num_clients)} classes > "
            f"classes_per_client={classes_per_client}; use more clients or classes"
        )
    r = random.Random(seed)  # same stream as random.seed(seed) on the module-level generator
    names = list(class_order)
    r.shuffle(names)
    clients: list[list[str]] = [[] for _ in range(num_clients)]
    for i in range(C):
        clients[i % num_clients].append(names[i])
    for client in clients:
        client += r.sample(names, classes_per_client - len(client))
    repeats = 0
    if dedupe:
        for k, client in enumerate(clients):
            uniq = list(dict.fromkeys(client))
            lack = classes_per_client - len(uniq)
            if lack:
                repeats += lack
                uniq += r.sample([c for c in names if c not in uniq], lack)
            clients[k] = uniq
    return clients, repeats


@dataclass
class LabelSetMismatch(LabelRule):
    """FedLSM (MICCAI 2023, Sec. 3.2, Tables 5 and 6): ``s`` identified classes per client.

    The classes are assigned by :func:`fedlsm_assignment`, the authors' round robin +
    random top-up reproduced call for call (Python's ``random`` reseeded from
    ``draws.seed``; the shared numpy stream is not used), so that seed 523 gives the
    paper's Table 5 (NIH 14 classes, K=8, s=3) and Table 6 (ISIC 7 classes, K=5, s=3)
    exactly.  That needs the authors' class order before shuffling;
    ``class_order="auto"`` uses it when the data set's classes are the NIH 14
    (``Pleural_Thickening`` / ``Thickening`` both accepted) or the ISIC 7 (short or
    full names), and otherwise the data set's order.  ``class_order="dataset"`` or an
    explicit list overrides.  The authors' sample splits are the split rules
    :class:`~fedpl_core.partitions.sample_splits.FedLSMSplit` (ISIC script) and
    :class:`~fedpl_core.partitions.sample_splits.Contiguous` (CXR script).
    """

    classes_per_client: int
    class_order: object = "auto"
    dedupe: bool = True
    name: ClassVar[str] = "label_set_mismatch"

    def __call__(self, dataset, num_clients, draws, parts):
        order, source = fedlsm_class_order(dataset.class_names, self.class_order)
        assignment, repeats = fedlsm_assignment(order, num_clients, self.classes_per_client, draws.seed, self.dedupe)
        masks = np.zeros((num_clients, dataset.num_classes), dtype=bool)
        for k, names in enumerate(assignment):
            masks[k, class_index(dataset.class_names, names)] = True
        return masks, {
            "classes_per_client": self.classes_per_client,
            "class_order": order,
            "class_order_source": source,
            "dedupe": self.dedupe,
            "repeats_replaced": repeats,
            "assignment": assignment,
        }


# ============================================================================ Surgical Aggregation
@dataclass
class SharedClasses(LabelRule):
    """Surgical Aggregation's ablation "effect of the number of shared classes".

    ``num_shared`` classes, drawn at random (or given by name in ``shared``), are
    annotated by every client.  The other ``C - num_shared`` classes are put in a
    random order and dealt round robin: the j-th goes to client ``j % K`` only, so
    each is unique to one client, the union covers all C classes, and clients get
    ``floor`` or ``ceil`` of ``(C - num_shared) / K`` unique classes (the paper does
    not say how the unique classes are dealt).  A client left with no class at all
    (``num_shared == 0`` and ``C < K``) is an error.  Draws after the sample split,
    on the shared stream.
    """

    num_shared: int | None = None
    shared: list[str] | None = None
    name: ClassVar[str] = "shared_classes"
    before_split: ClassVar[bool] = False

    def _shared_idx(self, dataset) -> tuple[list[int] | None, int]:
        if self.shared is None:
            if self.num_shared is None:
                raise DataError("give num_shared or the shared class names")
            return None, self.num_shared
        idx = class_index(dataset.class_names, self.shared)
        if self.num_shared is not None and self.num_shared != len(idx):
            raise DataError(f"num_shared={self.num_shared} but {len(idx)} shared classes given")
        return idx, len(idx)

    def check(self, dataset, num_clients: int) -> None:
        C = dataset.num_classes
        _, s = self._shared_idx(dataset)
        if not 0 <= s <= C:
            raise DataError(f"num_shared must be in [0, {C}], got {s}")

    def __call__(self, dataset, num_clients, draws, parts):
        K, C = num_clients, dataset.num_classes
        shared_idx, num_shared = self._shared_idx(dataset)
        rng = draws.rng
        if shared_idx is None:
            shared_idx = sorted(rng.choice(C, num_shared, replace=False).tolist())
        rest = [int(c) for c in rng.permutation(C) if c not in set(shared_idx)]
        masks = np.zeros((K, C), dtype=bool)
        masks[:, shared_idx] = True
        for j, c in enumerate(rest):
            masks[j % K, c] = True
        empty = np.flatnonzero(~masks.any(1))
        if len(empty):
            raise DataError(
                f"{len(empty)} client(s) would annotate no class ({C} classes, {num_shared} shared, {K} clients)"
            )
        return masks, {
            "num_shared": num_shared,
            "shared": [dataset.class_names[c] for c in shared_idx],
            "unique": {
                default_client_name(k) if K <= 26 else f"client{k}": [dataset.class_names[c] for c in rest[k::K]]
                for k in range(K)
            },
        }


@dataclass
class RandomCover(LabelRule):
    """Random label sets whose union is every class (Surgical Aggregation's ablation on K).

    The paper varies the number of clients with random label sets but does not say
    how they are drawn; this repository's choice: each class is given to one random
    client (coverage), then every client takes each other class with probability
    ``extra``; a client with fewer than ``min_classes`` gets random extra ones.
    Draws from a generator of its own, ``np.random.default_rng(seed)`` (not the
    shared stream), as ``studies.surgical.random_label_sets(C, K, seed)`` does.

    >>> from fedpl_core.partitions.partition import Draws, Unlabelled
    >>> m, _ = RandomCover()(Unlabelled(8, list("abcde")), 3, Draws(0), None)
    >>> bool(m.any(0).all()), bool((m.sum(1) >= 2).all())
    (True, True)
    """

    extra: float = 0.25
    min_classes: int = 2
    name: ClassVar[str] = "random_cover"

    def __call__(self, dataset, num_clients, draws, parts):
        K, C = num_clients, dataset.num_classes
        rng = np.random.default_rng(draws.seed)
        m = rng.random((K, C)) < self.extra
        m[rng.integers(0, K, C), np.arange(C)] = True
        for k in range(K):
            while m[k].sum() < min(self.min_classes, C):
                m[k, rng.integers(C)] = True
        return m, {"extra": self.extra, "min_classes": self.min_classes}


@dataclass
class SourceClasses(LabelRule):
    """Each client annotates its sources' label spaces (Surgical Aggregation, non-IID).

    A client annotates every class known (``dataset.label_mask``) for at least one
    sample of a source it holds samples from (NIH 14 + CheXpert 13 -> 20 classes:
    the NIH client annotates the NIH 14, the CheXpert client the CheXpert 13).
    Sources as in :class:`~fedpl_core.partitions.sample_splits.BySource`.  Looks at the
    clients' samples, so runs after the split; draws nothing.
    """

    name: ClassVar[str] = "by_source"
    before_split: ClassVar[bool] = False

    def check(self, dataset, num_clients: int) -> None:
        sources(need_labels(dataset, "source label sets"))

    def __call__(self, dataset, num_clients, draws, parts):
        src, _ = sources(dataset)
        known = dataset.known
        masks = np.stack([known[np.isin(src, np.unique(src[p]))].any(0) for p in parts])
        return masks, {}


__all__ = [
    "LabelRule",
    "AllClasses",
    "ExplicitClasses",
    "MissingClasses",
    "LabelSetMismatch",
    "SharedClasses",
    "RandomCover",
    "SourceClasses",
    "fedlsm_assignment",
    "fedlsm_class_order",
    "most_frequent_classes",
]
