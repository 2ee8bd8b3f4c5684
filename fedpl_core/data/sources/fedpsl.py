"""The ``fedpsl`` data source: the federations of FedPSL's Table I (``table="II"``) and
Table III (``table="IV"``), on the built-in synthetic chest X-rays or on the real data.

* **Table II** (``table="II"``): K = 4 clients of ChestX-ray14-like images (one source,
  no domain shift), C = 6 classes, the class sets of Table I
  (:data:`~fedpl_core.partitions.FEDPSL_TABLE_I`), 1,000 images per client.
* **Table IV** (``table="IV"``): plus two one-class clients from other sources with a
  domain shift (Tuberculosis, COVID-19), K = 6, C = 8 (Table III).
* Test set: for every class an independent balanced block of 300 positive and 300
  negative images from the class's own source; class c is evaluated on its block only
  (``label_mask`` of the test set), as the paper's "balanced test set".

Synthetic data (our choices, the paper uses real data): the ChestX-ray14 clients are drawn
by :func:`~fedpl_core.data.synthetic.make_cxr` with the class prevalences of Table I (the
mean positive rate of each class over the clients that label it), one contiguous pool per
client (the paper's "batches"); the one-class clients are drawn in the synthetic
``tb-source`` / ``covid-source`` hospital styles with the prevalences of Table III (16.7 %
Tuberculosis, 26.2 % COVID-19, which are also the shares of the real databases).  A
client of size n takes the *first* n images of its pool (Fig. 3: "we sample the first n
examples in each batch"), so the sweeps are nested.

Real data (``data_root``): NIH ChestX-ray14 batches 2-5 (folders ``images_002`` ...
``images_005``, or the same ranges of image indices) for the four multi-class clients and
test blocks from the other batches; the TB Chest X-ray Database and the COVID-19
Radiography Database for the one-class clients (a seeded random share of each, test
blocks from the rest).  Dataset kwargs: ``table``, ``pool``, ``test_pos``, ``test_neg``,
``strength``, ``nih_root``, ``tb_root``, ``covid_root``.
"""

from __future__ import annotations

import numpy as np

from ... import partitions as P
from ..base import DataError, ImageDataset, concat_datasets
from .base import DataBundle, register_source

CLASSES_II = list(P.FEDPSL_CLASSES_I)
CLASSES_IV = list(P.FEDPSL_CLASSES_III)
ONE_CLASS = {"Tuberculosis": 0.167, "COVID-19": 0.262}  # Table III: 167 / 262 positives per 1,000


def table1_prevalence() -> dict[str, float]:
    """Mean positive rate of each class of Table I over the clients that label it."""
    return {c: float(np.mean([v for v in counts if v > 0]) / 1000.0) for c, counts in P.FEDPSL_TABLE_I_COUNTS.items()}


def client_classes(table: str) -> dict[str, list[str]]:
    """Clients and their classes: Table I (``"II"``, K = 4) or Table III (``"IV"``, K = 6)."""
    if table not in ("II", "IV"):
        raise ValueError(f"table must be 'II' or 'IV', got {table!r}")
    return dict(P.FEDPSL_TABLE_I if table == "II" else P.FEDPSL_TABLE_III)


def _bundle(train: ImageDataset, test: ImageDataset, pools: list[np.ndarray], table: str) -> DataBundle:
    """The training set carries its clients' pools and classes for the ``explicit``
    partition (a client of size n takes the first n images of its pool)."""
    train.extra.update(pools=[p.tolist() for p in pools], client_classes=client_classes(table))
    return DataBundle(train, test)


def _block_mask(ds: ImageDataset) -> np.ndarray:
    """Known = class c on its own balanced block only."""
    m = np.zeros(ds.labels.shape, bool)
    for c, idx in ds.extra["blocks"].items():
        m[np.asarray(idx), ds.class_names.index(c)] = True
    return m


def _with_block_mask(parts: list[ImageDataset], name: str) -> ImageDataset:
    """Join balanced test sets (each with ``extra["blocks"]``) and keep each class known
    on its own block only."""
    masks = [_block_mask(p) for p in parts]
    test = concat_datasets(parts, name=name) if len(parts) > 1 else parts[0]
    full = np.zeros(test.labels.shape, bool)
    off = 0
    for p, m in zip(parts, masks):
        cols = [test.class_names.index(c) for c in p.class_names]
        full[off : off + len(p)][:, cols] = m
        off += len(p)
    test.label_mask = full
    test.name = name
    return test


def synthetic_data(
    table: str = "II",
    pool: int = 1000,
    image_size: int = 32,
    test_pos: int = 300,
    test_neg: int = 300,
    seed: int = 0,
    strength: float = 1.0,
) -> DataBundle:
    """The synthetic federation of Table I (``"II"``) or Table III (``"IV"``)."""
    from .. import synthetic as S

    client_classes(table)
    prev = table1_prevalence()
    k_nih = 4
    size = image_size
    nih = S.make_cxr(
        k_nih * pool, CLASSES_II, size, seed=seed, domain=0, prevalence=prev, strength=strength, name="chestxray14-like"
    )
    parts, pools = [nih], [np.arange(k * pool, (k + 1) * pool) for k in range(k_nih)]
    tests = [
        S.make_balanced_test(
            CLASSES_II,
            test_pos,
            test_neg,
            size,
            seed=seed + 10_000,
            domain=0,
            prevalence=prev,
            strength=strength,
            name="test-cxr14",
        )
    ]
    if table == "IV":
        off = len(nih)
        for j, (c, p) in enumerate(ONE_CLASS.items()):
            dom = S.TB_DOMAIN if c == "Tuberculosis" else S.COVID_DOMAIN
            src = S.make_cxr(
                pool, [c], size, seed=seed + 1 + j, domain=dom, prevalence={c: p}, strength=strength, name=c.lower()
            )
            parts.append(src)
            pools.append(np.arange(off, off + pool))
            off += pool
            tests.append(
                S.make_balanced_test(
                    [c],
                    test_pos,
                    test_neg,
                    size,
                    seed=seed + 20_000 + j,
                    domain=dom,
                    strength=strength,
                    name=f"test-{c.lower()}",
                )
            )
    train = concat_datasets(parts, name=f"fedpsl-{table}-train") if len(parts) > 1 else nih
    test = _with_block_mask(tests, f"fedpsl-{table}-test")
    return _bundle(train, test, pools, table)


def nih_batches(ds: ImageDataset) -> np.ndarray:
    """ChestX-ray14 batch (1..12) of every image: the ``images_0XX`` folder of its path,
    else its rank in image-index order (batch 1 holds 4,999 images, the others 10,000)."""
    paths = ds.extra.get("paths")
    if paths is not None:
        import re

        got = [re.search(r"images_0*(\d+)", str(p)) for p in paths]
        if all(got):
            return np.array([int(g.group(1)) for g in got])
    names = ds.extra.get("image_index")
    order = np.argsort(np.asarray(names if names is not None else np.arange(len(ds)), dtype=str), kind="stable")
    batch = np.empty(len(ds), np.int64)
    batch[order] = np.where(np.arange(len(ds)) < 4999, 1, 2 + (np.arange(len(ds)) - 4999) // 10_000)
    return batch


def _balanced_blocks(
    labels: np.ndarray, classes: list[str], cand: np.ndarray, pos: int, neg: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Pick, class by class, ``pos`` positives and ``neg`` negatives from ``cand``
    (no image twice); returns the picked indices and each class's block positions."""
    free = np.ones(len(labels), bool)
    picked, blocks = [], {}
    for j, c in enumerate(classes):
        c_idx = cand[free[cand]]
        p = rng.permutation(c_idx[labels[c_idx, j] > 0.5])[:pos]
        n = rng.permutation(c_idx[labels[c_idx, j] < 0.5])[:neg]
        if len(p) < pos or len(n) < neg:
            raise DataError(f"not enough images for a balanced test block of {c!r}")
        start = sum(len(x) for x in picked)
        picked.append(np.concatenate([p, n]))
        blocks[c] = np.arange(start, start + pos + neg)
        free[picked[-1]] = False
    return np.concatenate(picked), blocks


def real_data(
    data_root: str,
    table: str = "II",
    pool: int = 1000,
    image_size: int = 224,
    test_pos: int = 300,
    test_neg: int = 300,
    seed: int = 0,
    nih_root: str | None = None,
    tb_root: str | None = None,
    covid_root: str | None = None,
) -> DataBundle:
    """NIH ChestX-ray14 (+ TB, COVID-19 for Table IV) as in Sec. VII-E/F (needs the data)."""
    from ..loaders.nih import load_nih

    client_classes(table)
    rng = np.random.default_rng(seed)
    nih = load_nih(nih_root or data_root, classes=CLASSES_II, image_size=image_size)
    batch = nih_batches(nih)
    pools_nih = []
    for b in (2, 3, 4, 5):
        idx = np.flatnonzero(batch == b)
        if len(idx) < pool:
            raise DataError(f"ChestX-ray14 batch {b} has {len(idx)} images, fewer than pool={pool}")
        pools_nih.append(idx[:pool])
    used = np.concatenate(pools_nih)
    rest = np.setdiff1d(np.flatnonzero(~np.isin(batch, (2, 3, 4, 5))), used)
    t_idx, t_blocks = _balanced_blocks(nih.labels, CLASSES_II, rest, test_pos, test_neg, rng)
    train_parts = [nih.subset(used)]
    t = nih.subset(t_idx)
    t.extra["blocks"] = t_blocks
    test_parts = [t]
    if table == "IV":
        from ..loaders.tb_covid import load_covid, load_tb

        for c, loader, root in (("Tuberculosis", load_tb, tb_root), ("COVID-19", load_covid, covid_root)):
            src = loader(root or data_root, image_size=image_size)
            perm = rng.permutation(len(src))
            train_parts.append(src.subset(perm[:pool]))
            idx, blocks = _balanced_blocks(src.labels, [c], perm[pool:], test_pos, test_neg, rng)
            t = src.subset(idx)
            t.extra["blocks"] = blocks
            test_parts.append(t)
    train = concat_datasets(train_parts, name=f"fedpsl-{table}-train") if len(train_parts) > 1 else train_parts[0]
    sizes = [len(p) for p in train_parts]
    pools = [np.arange(k * pool, (k + 1) * pool) for k in range(4)]
    off = sizes[0]
    for s in sizes[1:]:
        pools.append(np.arange(off, off + s))
        off += s
    return _bundle(train, _with_block_mask(test_parts, f"fedpsl-{table}-test"), pools, table)


@register_source("fedpsl", fixed_classes=True, task="multilabel")
def source(
    name: str,
    data_root,
    classes,
    image_size,
    n_train,
    n_test,
    data_seed,
    table: str = "II",
    pool: int = 1000,
    test_pos: int = 300,
    test_neg: int = 300,
    strength: float = 1.0,
    nih_root: str | None = None,
    tb_root: str | None = None,
    covid_root: str | None = None,
) -> DataBundle:
    """The runner's ``"fedpsl"`` data source: synthetic unless ``data_root`` is set
    (``classes``, ``n_train`` and ``n_test`` do not apply: the tables fix them)."""
    if data_root:
        return real_data(
            data_root, table, pool, image_size, test_pos, test_neg, data_seed, nih_root, tb_root, covid_root
        )
    return synthetic_data(table, pool, image_size, test_pos, test_neg, data_seed, strength)


__all__ = [
    "CLASSES_II",
    "CLASSES_IV",
    "ONE_CLASS",
    "table1_prevalence",
    "client_classes",
    "synthetic_data",
    "nih_batches",
    "real_data",
    "source",
]
