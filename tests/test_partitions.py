"""Tests for fedpl_core.partitions on tiny fake data sets (images [N, 1, 8, 8] uint8)."""

import doctest
import random

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fedpl_core import partitions as P
from fedpl_core.data.base import MULTICLASS, DataError, ImageDataset, concat_datasets
from fedpl_core.partitions import ClientSpec, Partition

# ---------------------------------------------------------------- paper tables, as printed
# FedLSM Table 5 (NIH, K=8, s=3), rows as in the paper, clients A..H.
TABLE_5 = """
Consolidation 309 0 0 0 0 0 0 297
Pneumonia 0 88 0 0 0 0 0 0
Effusion 0 0 0 951 0 0 0 0
Emphysema 0 0 0 0 161 0 0 0
Edema 150 0 0 0 0 0 0 0
Atelectasis 0 0 0 918 0 0 0 0
Nodule 0 0 0 0 536 505 0 0
Mass 0 0 447 0 0 0 0 0
Thickening 0 0 229 0 0 231 0 0
Cardiomegaly 0 0 0 182 0 0 174 0
Fibrosis 0 141 0 0 0 139 0 0
Hernia 0 14 0 0 0 0 20 15
Pneumothorax 271 0 0 0 296 0 0 0
Infiltration 0 0 1512 0 0 0 1469 1534
"""
# FedLSM Table 6 (ISIC 2018, K=5, s=3), clients A..E.
TABLE_6 = """
MEL 0 0 156 0 0
NV 919 915 0 0 0
BCC 0 70 80 68 76
AKIEC 0 0 0 41 41
BKL 150 0 0 0 138
DF 0 16 16 13 0
VASC 25 0 0 0 0
"""


def parse_table(text):
    rows = [line.split() for line in text.strip().splitlines()]
    return {r[0]: [int(x) for x in r[1:]] for r in rows}


NIH_NAMES = [
    "Atelectasis",
    "Cardiomegaly",
    "Consolidation",
    "Edema",
    "Effusion",
    "Emphysema",
    "Fibrosis",
    "Hernia",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pleural_Thickening",
    "Pneumonia",
    "Pneumothorax",
]
ISIC_NAMES = ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]


def make_ds(n=200, names=6, p=0.3, seed=0, groups=None, name="fake"):
    names = [f"c{i}" for i in range(names)] if isinstance(names, int) else list(names)
    rng = np.random.default_rng(seed)
    y = (rng.random((n, len(names))) < p).astype(np.float32)
    return ImageDataset(np.zeros((n, 1, 8, 8), np.uint8), y, names, groups=groups, name=name)


def make_onehot(n, names, seed=0):
    rng = np.random.default_rng(seed)
    y = np.eye(len(names), dtype=np.float32)[rng.integers(len(names), size=n)]
    return ImageDataset(np.zeros((n, 3, 8, 8), np.uint8), y, names, task=MULTICLASS)


def as_sets(part):
    return [set(c) for c in P.assigned_classes(part)]


def canon(name):
    return "Thickening" if name == "Pleural_Thickening" else name


# ---------------------------------------------------------------- label hiding
def test_no_unannotated_label_reaches_a_client():
    ds = make_ds(300, 6, p=0.4)
    part = P.missing_classes(ds, 3, 4, seed=1)
    checked = 0
    for k, c in enumerate(part.clients):
        labels, known = part.client_labels(ds, k)
        truth = ds.labels[c.indices]
        for j in range(ds.num_classes):
            if c.class_mask[j]:
                np.testing.assert_array_equal(labels[:, j], truth[:, j])
                assert known[:, j].all()
            else:
                assert truth[:, j].sum() > 0  # the positives exist in truth ...
                assert labels[:, j].sum() == 0  # ... but the client sees none
                assert not known[:, j].any()
                checked += 1
    assert checked == 3 * 4


def test_label_mask_of_source_also_hides():
    a = make_ds(20, ["x", "y"], p=0.5, seed=1, name="A")
    b = make_ds(20, ["y", "z"], p=0.5, seed=2, name="B")
    u = concat_datasets([a, b])
    part = P.iid(u, 2, seed=0)  # both clients "annotate" all classes, yet sources lack some
    for k in range(2):
        labels, known = part.client_labels(u, k)
        idx = part.clients[k].indices
        np.testing.assert_array_equal(known, u.known[idx])
        assert (labels[~known] == 0).all()


# ---------------------------------------------------------------- FedLSM
@pytest.mark.parametrize("thickening", ["Pleural_Thickening", "Thickening"])
@pytest.mark.parametrize("reverse", [False, True])
def test_fedlsm_seed_523_reproduces_table_5(thickening, reverse):
    names = [thickening if n == "Pleural_Thickening" else n for n in NIH_NAMES]
    if reverse:  # the data set's own class order must not matter
        names = names[::-1]
    ds = make_ds(800, names, p=0.5, seed=3)
    part = P.label_set_mismatch(ds, 8, 3)  # seed 523 is the default
    table = parse_table(TABLE_5)
    assert [c.name for c in part.clients] == list("ABCDEFGH")
    for cls in names:
        row = table[canon(cls)]
        clients = {k for k in range(8) if part.clients[k].class_mask[names.index(cls)]}
        assert clients == {k for k in range(8) if row[k] > 0}, cls
    # the report has the table's zero pattern (counts differ: fake data)
    rep = P.label_report(part, ds)
    pattern = pd.DataFrame({canon(c): [v > 0 for v in table[canon(c)]] for c in names}).T
    np.testing.assert_array_equal((rep.values > 0), pattern.loc[[canon(c) for c in rep.index]].values)
    assert (part.masks.sum(1) == 3).all()


def test_fedlsm_seed_523_reproduces_table_6():
    ds = make_onehot(700, ISIC_NAMES, seed=4)
    part = P.label_set_mismatch(ds, 5, 3)
    table = parse_table(TABLE_6)
    expected = [{c for c in ISIC_NAMES if table[c][k] > 0} for k in range(5)]
    assert as_sets(part) == expected
    rep = P.label_report(part, ds)
    np.testing.assert_array_equal(rep.values > 0, np.array([table[c] for c in ISIC_NAMES]) > 0)


def test_fedlsm_isic_full_names_and_dataset_order():
    full = [
        "Melanoma",
        "Melanocytic nevi",
        "Basal cell carcinoma",
        "Actinic keratoses",
        "Benign keratosis-like lesions",
        "Dermatofibroma",
        "Vascular lesions",
    ]
    ds = make_onehot(70, full[::-1])
    part = P.label_set_mismatch(ds, 5, 3)
    short = dict(zip(full, ISIC_NAMES))
    table = parse_table(TABLE_6)
    assert [{short[c] for c in s} for s in as_sets(part)] == [
        {c for c in ISIC_NAMES if table[c][k] > 0} for k in range(5)
    ]
    # class_order="dataset" uses another order, hence (here) another assignment
    other = P.label_set_mismatch(ds, 5, 3, class_order="dataset")
    assert as_sets(other) != as_sets(part)


def test_fedlsm_assignment_is_the_released_script():
    # the authors' script, verbatim in logic, on the global random module
    def script(class_names, client_num, class_num, seed):
        random.seed(seed)
        class_names = list(class_names)
        random.shuffle(class_names)
        clients = [[] for _ in range(client_num)]
        for i in range(0, len(class_names)):
            clients[i % client_num].append(class_names[i])
        for client in clients:
            client += random.sample(class_names, class_num - len(client))
        return clients

    for seed in (0, 1, 523, 2024):
        for names, K in ((NIH_NAMES, 8), (ISIC_NAMES, 5)):
            ref = script(names, K, 3, seed)
            got, _ = P.fedlsm_assignment(names, K, 3, seed, dedupe=False)
            assert got == ref
            if all(len(set(c)) == 3 for c in ref):
                assert P.fedlsm_assignment(names, K, 3, seed)[0] == ref


def test_fedlsm_other_seed_differs_and_dedupe():
    ds = make_ds(160, NIH_NAMES, p=0.5)
    table = parse_table(TABLE_5)
    expected = [{c for c in NIH_NAMES if table[canon(c)][k] > 0} for k in range(8)]
    assert as_sets(P.label_set_mismatch(ds, 8, 3, seed=523)) == expected
    p524 = P.label_set_mismatch(ds, 8, 3, seed=524)  # released CXR config; repeats a class
    assert as_sets(p524) != expected
    assert p524.info["repeats_replaced"] == 1
    assert (p524.masks.sum(1) == 3).all()
    raw, _ = P.fedlsm_assignment(NIH_NAMES, 8, 3, 524, dedupe=False)
    assert min(len(set(c)) for c in raw) == 2


def test_fedlsm_sample_split_matches_pandas_sample():
    ds = make_onehot(103, ISIC_NAMES)
    part = P.label_set_mismatch(ds, 5, 3, seed=523)
    train = pd.DataFrame({"i": np.arange(103)})
    nums = [103 // 5] * 5
    nums[-1] += 103 - sum(nums)
    for k in range(5):
        chunk = train.sample(n=nums[k], random_state=523)
        train = train.drop(chunk.index)
        np.testing.assert_array_equal(part.clients[k].indices, np.sort(chunk["i"].values))
    c = P.label_set_mismatch(ds, 5, 3, sample_split="contiguous")
    assert c.sizes().tolist() == [20] * 5 and c.info["unassigned"] == [100, 101, 102]


def test_fedlsm_bad_input():
    ds = make_onehot(70, ISIC_NAMES)
    with pytest.raises(DataError, match="round robin"):
        P.label_set_mismatch(ds, 2, 3)  # 7 classes over 2 clients needs s >= 4
    with pytest.raises(DataError, match="classes_per_client"):
        P.label_set_mismatch(ds, 5, 8)
    with pytest.raises(DataError, match="unknown class"):
        P.label_set_mismatch(ds, 5, 3, class_order=["MEL", "XX", "BCC", "AKIEC", "BKL", "DF", "VASC"])


# ---------------------------------------------------------------- FedMLP missing classes
@pytest.mark.parametrize(
    "K,C,m",
    [(5, 5, 1), (5, 5, 2), (5, 5, 3), (5, 5, 4), (8, 8, 1), (8, 8, 3), (8, 8, 5), (8, 8, 7), (3, 6, 4), (10, 4, 3)],
)
@pytest.mark.parametrize("assignment", ["random", "cyclic"])
def test_missing_classes_invariants(K, C, m, assignment):
    ds = make_ds(120, C)
    part = P.missing_classes(ds, K, m, seed=7, assignment=assignment)
    masks = part.masks
    assert ((~masks).sum(1) == m).all()  # each client misses exactly m
    assert not masks.all(1).any()  # none has all
    assert masks.any(0).all()  # every class labelled somewhere
    idx = np.concatenate([c.indices for c in part.clients])
    assert len(np.unique(idx)) == len(idx) == len(ds)  # IID split covers the data
    assert max(part.sizes()) - min(part.sizes()) <= 1
    assert part.info["missing"] == m and part.info["clients_per_class"] == masks.sum(0).tolist()


def test_missing_classes_coverage_when_rare():
    # 5 clients x 2 of 8 classes: a random draw rarely covers all 8, the builder must
    ds = make_ds(50, 8)
    for seed in range(20):
        part = P.missing_classes(ds, 5, 6, seed=seed)
        assert part.masks.any(0).all() and (part.masks.sum(1) == 2).all()
    methods = set()
    for seed in range(10):  # one try only: most seeds need the constructive fallback
        part = P.missing_classes(ds, 5, 6, seed=seed, max_tries=1)
        assert part.masks.any(0).all() and (part.masks.sum(1) == 2).all()
        methods.add(part.info["assignment_method"])
    assert "cover-fallback" in methods


def test_missing_classes_one_class_per_client():
    ds = make_ds(80, 8)
    cyc = P.missing_classes(ds, 8, 7, seed=0, assignment="cyclic")
    np.testing.assert_array_equal(cyc.masks, np.eye(8, dtype=bool))  # FedMLP main.py: client i -> class i
    rnd = P.missing_classes(ds, 8, 7, seed=0)
    assert (rnd.masks.sum(0) == 1).all() and (rnd.masks.sum(1) == 1).all()


def test_missing_classes_hot_and_cool_emerge():
    ds = make_ds(100, 8)
    counts = [tuple(P.missing_classes(ds, 8, 3, seed=s).masks.sum(0)) for s in range(5)]
    assert any(max(c) > min(c) for c in counts)  # unequal: hot and cool classes
    assert len(set(counts)) > 1  # and they depend on the seed


def test_missing_classes_bad_input():
    ds = make_ds(50, 5)
    for m in (0, 5, 6):
        with pytest.raises(DataError, match="missing"):
            P.missing_classes(ds, 5, m)
    with pytest.raises(DataError, match="cannot cover"):
        P.missing_classes(ds, 2, 4)  # 2 clients x 1 class < 5 classes
    with pytest.raises(DataError, match="more clients"):
        P.missing_classes(ds, 51, 1)


# ---------------------------------------------------------------- iid / determinism / dirichlet
def test_iid_disjoint_cover():
    part = P.iid(make_ds(103, 4), 5, seed=3)
    idx = np.concatenate([c.indices for c in part.clients])
    assert sorted(idx.tolist()) == list(range(103))
    assert sorted(part.sizes().tolist()) == [20, 20, 21, 21, 21]
    assert part.masks.all()
    assert part.info["builder"] == "iid" and part.info["seed"] == 3
    p = P.iid(10, 3, seed=0, class_names=["a", "b"])
    assert p.class_names == ["a", "b"] and p.sizes().sum() == 10


def test_iid_group_aware():
    groups = np.repeat(np.arange(30), 4)
    part = P.iid(make_ds(120, 3, groups=groups), 4, seed=0, group_aware=True)
    owners = [set(groups[c.indices]) for c in part.clients]
    assert sum(len(o) for o in owners) == 30  # no patient in two clients
    assert sum(part.sizes()) == 120


def test_iid_with_explicit_classes_and_unlabelled():
    # formerly iid(..., class_mask=...): the IID split composed with explicit label sets
    ds = make_ds(40, 3)
    part = P.make_partition(ds, 2, "iid", P.ExplicitClasses([["c0", "c1"], ["c1", "c2"]]), seed=0)
    assert part.masks.astype(int).tolist() == [[1, 1, 0], [0, 1, 1]]
    with pytest.raises(DataError, match="no client labels"):
        P.make_partition(ds, 2, "iid", P.ExplicitClasses([True, True, False]), seed=0)
    ok = P.make_partition(ds, 2, "iid", P.ExplicitClasses([True, True, False]), seed=0, allow_unlabelled=True)
    assert not ok.masks[:, 2].any()


def test_more_clients_than_samples():
    with pytest.raises(DataError, match="more clients"):
        P.iid(make_ds(5, 2), 6)


@pytest.mark.parametrize(
    "build",
    [
        lambda ds, s: P.iid(ds, 4, seed=s),
        lambda ds, s: P.dirichlet(ds, 4, 0.5, seed=s, min_size=5),
        lambda ds, s: P.missing_classes(ds, 4, 2, seed=s),
        lambda ds, s: P.shared_classes_split(ds, 4, 2, seed=s),
        lambda ds, s: P.explicit(ds, [["c0", "c1"], ["c2", "c3"], ["c4"], ["c5"]], sizes=30, seed=s),
    ],
)
def test_determinism(build):
    ds = make_ds(200, 6)
    a, b, c = build(ds, 11), build(ds, 11), build(ds, 12)

    def key(p):
        return [c.indices.tolist() for c in p.clients], p.masks.tolist()

    assert key(a) == key(b)
    assert key(a) != key(c)


def _skew(part, keys):
    glob = np.bincount(keys, minlength=keys.max() + 1) / len(keys)
    tv = [
        0.5 * np.abs(np.bincount(keys[c.indices], minlength=len(glob)) / len(c.indices) - glob).sum()
        for c in part.clients
    ]
    return float(np.mean(tv))


def test_dirichlet_small_alpha_more_skewed():
    ds = make_onehot(1000, ISIC_NAMES, seed=5)
    keys = ds.labels.argmax(1)
    small = np.mean([_skew(P.dirichlet(ds, 5, 0.1, seed=s), keys) for s in range(3)])
    large = np.mean([_skew(P.dirichlet(ds, 5, 100.0, seed=s), keys) for s in range(3)])
    assert small > 0.3 > 0.1 > large
    part = P.dirichlet(ds, 5, 0.1, seed=0, min_size=50)
    assert part.sizes().min() >= 50
    idx = np.concatenate([c.indices for c in part.clients])
    assert sorted(idx.tolist()) == list(range(1000))


def test_dirichlet_keys():
    ds = make_ds(300, 4, p=0.3)
    for key in ("first_positive", "combination", "num_positives", np.arange(300) % 3):
        part = P.dirichlet(ds, 3, 1.0, seed=0, key=key, min_size=5)
        assert part.sizes().sum() == 300
    with pytest.raises(DataError, match="key"):
        P.dirichlet(ds, 3, 1.0, key="nope")
    with pytest.raises(DataError, match="alpha"):
        P.dirichlet(ds, 3, 0.0)


# ---------------------------------------------------------------- explicit / FedPSL
def test_fedpsl_tables_constants():
    assert P.FEDPSL_TABLE_I == {
        "1": ["Infiltration", "Effusion", "Atelectasis"],
        "2": ["Effusion", "Atelectasis", "Nodule"],
        "3": ["Atelectasis", "Nodule", "Consolidation"],
        "4": ["Nodule", "Consolidation", "Pneumothorax"],
    }
    assert P.FEDPSL_TABLE_III == {**P.FEDPSL_TABLE_I, "5": ["Tuberculosis"], "6": ["COVID-19"]}
    assert P.table_assignment(P.FEDPSL_TABLE_III_COUNTS) == list(P.FEDPSL_TABLE_III.values())
    assert P.table_assignment(P.FEDLSM_TABLE_5) == P.table_assignment(parse_table(TABLE_5))
    assert P.FEDLSM_TABLE_6 == parse_table(TABLE_6)


def test_explicit_fedpsl_table_iii_with_pools():
    nih = make_ds(60, P.FEDPSL_CLASSES_I, p=0.3, seed=1, name="NIH")
    tb = make_ds(12, ["Tuberculosis"], p=0.5, seed=2, name="TB")
    covid = make_ds(12, ["COVID-19"], p=0.5, seed=3, name="COVID")
    u = concat_datasets([nih, tb, covid])
    assert u.class_names == P.FEDPSL_CLASSES_III
    src = u.extra["source"]
    nih_idx = np.flatnonzero(src == 0)
    pools = [nih_idx[i * 15 : (i + 1) * 15] for i in range(4)] + [np.flatnonzero(src == 1), np.flatnonzero(src == 2)]
    part = P.explicit(u, P.FEDPSL_TABLE_III, sizes=[10, 10, 10, 10, 5, 5], seed=0, pools=pools)
    assert part.sizes().tolist() == [10, 10, 10, 10, 5, 5]
    assert [c.name for c in part.clients] == ["1", "2", "3", "4", "5", "6"]
    for k, c in enumerate(part.clients):
        assert set(c.indices) <= set(pools[k])
    assert (src[part.clients[4].indices] == 1).all() and (src[part.clients[5].indices] == 2).all()
    assert P.assigned_classes(part) == [sorted(v, key=P.FEDPSL_CLASSES_III.index) for v in P.FEDPSL_TABLE_III.values()]
    rep = P.label_report(part, u)
    assert (rep.values[:, 4] > 0).sum() <= 1 and rep.loc["Infiltration", "2"] == 0
    first = P.explicit(u, P.FEDPSL_TABLE_III, sizes=3, pools=pools, take="first")
    assert first.clients[0].indices.tolist() == pools[0][:3].tolist()


def test_explicit_sizes_and_errors():
    ds = make_ds(50, 3)
    part = P.explicit(ds, [["c0"], ["c1", "c2"]], sizes=[7, 40], seed=1)
    assert part.sizes().tolist() == [7, 40]
    assert len(set(part.clients[0].indices) & set(part.clients[1].indices)) == 0
    eq = P.explicit(ds, [["c0"], ["c1"], ["c2"]], seed=0)
    assert sorted(eq.sizes().tolist()) == [16, 17, 17]
    with pytest.raises(DataError, match="asks for"):
        P.explicit(ds, [["c0"], ["c1", "c2"]], sizes=[30, 30])
    with pytest.raises(DataError, match="unknown class name 'nope'"):
        P.explicit(ds, [["c0"], ["nope"]])
    with pytest.raises(DataError, match="no client labels"):
        P.explicit(ds, [["c0"], ["c1"]])
    assert P.explicit(ds, [["c0"], ["c1"]], allow_unlabelled=True).num_clients == 2
    # overlapping pools: the second client never takes the first one's samples
    ov = P.explicit(ds, [["c0"], ["c1", "c2"]], pools=[np.arange(20), np.arange(30)])
    assert ov.sizes().tolist() == [20, 10] and ov.clients[1].indices.min() == 20


# ---------------------------------------------------------------- Surgical Aggregation
def test_by_source_masks():
    nih = make_ds(30, ["x", "y", "z"], p=0.5, seed=1, name="NIH")
    chx = make_ds(20, ["y", "z", "w"], p=0.5, seed=2, name="CheXpert")
    u = concat_datasets([nih, chx])
    part = P.by_source(u)
    assert [c.name for c in part.clients] == ["NIH", "CheXpert"]
    assert part.masks.astype(int).tolist() == [[1, 1, 1, 0], [0, 1, 1, 1]]
    assert part.clients[0].indices.tolist() == list(range(30))
    labels, known = part.client_labels(u, 1)
    assert not known[:, 0].any() and labels[:, 0].sum() == 0
    two = P.by_source(u, clients_per_source=2, seed=0)
    assert [c.name for c in two.clients] == ["NIH-1", "NIH-2", "CheXpert-1", "CheXpert-2"]
    assert two.sizes().tolist() == [15, 15, 10, 10]
    assert two.masks.astype(int).tolist() == [[1, 1, 1, 0]] * 2 + [[0, 1, 1, 1]] * 2
    with pytest.raises(DataError, match="no source"):
        P.by_source(make_ds(10, 2))


@pytest.mark.parametrize("K,S", [(4, 3), (4, 0), (3, 14), (5, 7), (2, 13)])
def test_shared_classes_split_counts(K, S):
    ds = make_ds(140, NIH_NAMES)
    part = P.shared_classes_split(ds, K, S, seed=2)
    per_class = part.masks.sum(0)
    assert (per_class == K).sum() == S if K > 1 else True
    assert ((per_class == K) | (per_class == 1)).all()
    assert (per_class == 1).sum() == 14 - S
    unique = part.masks.sum(1) - S
    assert sorted(unique.tolist()) == sorted([(14 - S) // K + (k < (14 - S) % K) for k in range(K)])
    assert set(part.info["shared"]) == {n for n, c in zip(NIH_NAMES, per_class) if c == K}
    idx = np.concatenate([c.indices for c in part.clients])
    assert sorted(idx.tolist()) == list(range(140))


def test_shared_classes_split_named_and_errors():
    ds = make_ds(40, 5)
    part = P.shared_classes_split(ds, 2, None, seed=0, shared=["c0", "c3"])
    assert part.masks[:, [0, 3]].all() and (part.masks.sum(0)[[1, 2, 4]] == 1).all()
    with pytest.raises(DataError, match="no class"):
        P.shared_classes_split(ds, 6, 0)
    with pytest.raises(DataError, match="num_shared"):
        P.shared_classes_split(ds, 2, 6)


# ---------------------------------------------------------------- reports
def tiny():
    y = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]], dtype=np.float32)
    ds = ImageDataset(np.zeros((6, 1, 8, 8), np.uint8), y, ["a", "b", "c"])
    part = Partition(
        [ClientSpec([0, 1, 2], [True, False, True], "H1"), ClientSpec([3, 4, 5], [False, True, True], "H2")],
        ["a", "b", "c"],
        "tiny",
    )
    return ds, part


def test_label_report_hand_counts():
    ds, part = tiny()
    rep = P.label_report(part, ds, sizes_row=True)
    # H1 (rows 0-2): a = 1+1+0 = 2, b hidden (truth 2), c = 1+0+1 = 2
    # H2 (rows 3-5): a hidden (truth 2), b = 1+0+0 = 1, c = 1+1+0 = 2
    expected = pd.DataFrame({"H1": [2, 0, 2, 3], "H2": [0, 1, 2, 3]}, index=["a", "b", "c", "n (images)"])
    np.testing.assert_array_equal(rep.values, expected.values)
    assert list(rep.index) == list(expected.index) and list(rep.columns) == ["H1", "H2"]
    assert P.client_sizes(part).tolist() == [3, 3]


def test_plots_return_figures():
    import matplotlib.pyplot as plt

    ds, part = tiny()
    fig = P.plot_label_report(part, ds)
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert len(hatched) >= 2  # the two unannotated cells
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sorted(texts) == ["1", "2", "2", "2"]  # only annotated cells are written
    fig2 = P.plot_mask(part)
    assert fig2.axes[0].get_yticklabels()[0].get_text() == "a (1)"
    fig3, ax = plt.subplots()
    assert P.plot_label_report(part, ds, ax=ax, annotate=False) is fig3
    plt.close("all")


def test_doctests():
    import importlib

    attempted = 0
    for mod in ("partition", "sample_splits", "label_sets", "paper_tables", "compose", "report"):
        res = doctest.testmod(importlib.import_module(f"fedpl_core.partitions.{mod}"), optionflags=doctest.ELLIPSIS)
        assert res.failed == 0, mod
        attempted += res.attempted
    assert attempted >= 30


# ---------------------------------------------------------------- composition: split x label sets
def parts_of(part):
    return [c.indices.tolist() for c in part.clients]


def test_removed_keywords_are_gone():
    ds = make_ds(40, 3)
    with pytest.raises(TypeError):
        P.iid(ds, 2, seed=0, class_mask=[True, True, True])
    with pytest.raises(TypeError):
        P.dirichlet(ds, 2, 0.5, class_mask=[True, True, True])
    with pytest.raises(TypeError):
        P.missing_classes(ds, 3, 1, split="dirichlet", alpha=0.5)


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_composed_iid_x_masks_is_iid_indices_plus_masks(seed):
    # formerly iid(ds, K, seed, class_mask=M, group_aware=True)
    groups = np.repeat(np.arange(40), 3)
    ds = make_ds(120, 5, groups=groups)
    M = np.array([[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 1]], dtype=bool)
    comp = P.make_partition(
        ds,
        3,
        split="iid",
        split_kwargs={"group_aware": True},
        labels="explicit",
        label_kwargs={"classes": M},
        seed=seed,
    )
    assert parts_of(comp) == parts_of(P.iid(ds, 3, seed, group_aware=True))
    np.testing.assert_array_equal(comp.masks, M)


@pytest.mark.parametrize("seed", [0, 5])
def test_composed_dirichlet_x_missing(seed):
    # formerly missing_classes(ds, K, m, seed, split="dirichlet", alpha=a).  With the
    # cyclic rule (no draws) the split's generator is seeded by the first 31-bit draw of
    # default_rng(seed), as the old keyword form did.
    ds = make_onehot(400, ISIC_NAMES, seed=1)
    comp = P.make_partition(
        ds,
        5,
        split="dirichlet",
        split_kwargs={"alpha": 0.3, "min_size": 5},
        labels="missing_classes",
        label_kwargs={"missing": 4, "assignment": "cyclic"},
        seed=seed,
    )
    child = int(np.random.default_rng(seed).integers(2**31))
    assert parts_of(comp) == parts_of(P.dirichlet(ds, 5, 0.3, seed=child, min_size=5))
    np.testing.assert_array_equal(comp.masks, P.missing_classes(ds, 5, 4, seed, assignment="cyclic").masks)
    # the random rule draws the classes first, from default_rng(seed): same masks as on an IID split
    rnd = P.make_partition(ds, 5, P.Dirichlet(0.3, min_size=5), P.MissingClasses(4), seed=seed)
    np.testing.assert_array_equal(rnd.masks, P.missing_classes(ds, 5, 4, seed).masks)
    assert rnd.info["split"] == "dirichlet" and rnd.info["labels"] == "missing_classes"
    assert rnd.info["label_info"]["missing"] == 4 and rnd.info["split_info"]["alpha"] == 0.3


def test_composed_dirichlet_x_all_is_dirichlet():
    ds = make_ds(300, 4, p=0.3)
    a = P.make_partition(ds, 3, "dirichlet", "all", seed=7, split_kwargs={"alpha": 0.5, "min_size": 5})
    b = P.dirichlet(ds, 3, 0.5, seed=7, min_size=5)
    assert parts_of(a) == parts_of(b) and a.masks.all()


def test_shared_classes_draw_after_the_split():
    groups = np.repeat(np.arange(35), 4)
    ds = make_ds(140, NIH_NAMES, groups=groups)
    comp = P.make_partition(ds, 4, P.IID(group_aware=True), "shared_classes", seed=9, label_kwargs={"num_shared": 3})
    named = P.shared_classes_split(ds, 4, 3, seed=9, group_aware=True)
    assert parts_of(comp) == parts_of(named) == parts_of(P.iid(ds, 4, 9, group_aware=True))
    np.testing.assert_array_equal(comp.masks, named.masks)


def test_label_set_mismatch_composes_with_any_split():
    ds = make_onehot(103, ISIC_NAMES)
    comp = P.make_partition(ds, 5, "iid", "label_set_mismatch", seed=523, label_kwargs={"classes_per_client": 3})
    assert parts_of(comp) == parts_of(P.iid(ds, 5, seed=523))
    table = parse_table(TABLE_6)
    assert as_sets(comp) == [{c for c in ISIC_NAMES if table[c][k] > 0} for k in range(5)]
    assert parts_of(comp) == parts_of(P.label_set_mismatch(ds, 5, 3, sample_split="iid"))


def test_random_cover_is_surgical_random_label_sets():
    from fedpl_core.studies.surgical import random_label_sets

    groups = np.repeat(np.arange(50), 2)
    ds = make_ds(100, 7, groups=groups)
    for K, seed in ((2, 0), (4, 1001), (6, 7)):
        comp = P.make_partition(ds, K, P.IID(group_aware=True), "random_cover", seed=seed)
        np.testing.assert_array_equal(comp.masks, random_label_sets(7, K, seed=seed))
        assert parts_of(comp) == parts_of(P.iid(ds, K, seed, group_aware=True))
        assert comp.masks.any(0).all() and (comp.masks.sum(1) >= 2).all()


def test_source_classes_follow_the_clients_samples():
    nih = make_ds(30, ["x", "y", "z"], p=0.5, seed=1, name="NIH")
    chx = make_ds(20, ["y", "z", "w"], p=0.5, seed=2, name="CheXpert")
    u = concat_datasets([nih, chx])
    src = u.extra["source"]
    # pools: client 0 only NIH, client 1 both sources -> the union of both label spaces
    pools = [np.flatnonzero(src == 0)[:20], np.concatenate([np.flatnonzero(src == 0)[20:], np.flatnonzero(src == 1)])]
    part = P.make_partition(u, split=P.Pools(pools), labels="by_source", seed=0)
    assert part.masks.astype(int).tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    # by source, the number of clients is fixed by the sources
    bs = P.make_partition(u, None, "by_source", "by_source", seed=0)
    assert [c.name for c in bs.clients] == ["NIH", "CheXpert"]
    assert bs.masks.tolist() == P.by_source(u).masks.tolist()


def test_registries_and_argument_errors():
    assert set(P.SPLITS) >= {"iid", "dirichlet", "pools", "by_source", "fedlsm", "contiguous"}
    assert set(P.LABEL_SETS) >= {
        "all",
        "explicit",
        "missing_classes",
        "label_set_mismatch",
        "shared_classes",
        "random_cover",
        "by_source",
    }
    for name, cls in {**P.SPLITS, **P.LABEL_SETS}.items():
        assert cls.name == name
    ds = make_ds(60, 4)
    with pytest.raises(DataError, match="unknown split"):
        P.make_partition(ds, 2, split="nope")
    with pytest.raises(DataError, match="unknown labels"):
        P.make_partition(ds, 2, labels="nope")
    with pytest.raises(DataError, match="kwargs"):
        P.make_partition(ds, 2, split=P.IID(), split_kwargs={"group_aware": True})
    with pytest.raises(DataError, match="num_clients is needed"):
        P.make_partition(ds)
    with pytest.raises(DataError, match="disagrees"):
        P.make_partition(ds, 3, labels=P.ExplicitClasses([["c0", "c1"], ["c2", "c3"]]))
    # a table fixes (and names) the clients
    t = P.make_partition(ds, labels=P.ExplicitClasses({"h1": ["c0", "c1"], "h2": ["c2", "c3"]}), seed=0)
    assert [c.name for c in t.clients] == ["h1", "h2"] and t.sizes().tolist() == [30, 30]


def test_contiguous_split_leaves_the_remainder():
    ds = make_ds(23, 2, p=0.9)
    part = P.make_partition(ds, 4, "contiguous", "all")
    assert parts_of(part) == [list(range(k * 5, k * 5 + 5)) for k in range(4)]
    assert part.info["unassigned"] == [20, 21, 22]


def test_draws_child_stream():
    d = P.Draws(4)
    first = d.child()  # nobody drew yet: the shared stream itself
    assert first is d.rng
    e = P.Draws(4)
    _ = e.rng.integers(10)
    second = e.child()
    assert second is not e.rng
    ref = np.random.default_rng(4)
    ref.integers(10)
    expected = np.random.default_rng(int(ref.integers(2**31))).random(3)
    np.testing.assert_array_equal(second.random(3), expected)


# ---------------------------------------------------------------- warnings
def warn_ds():
    # c0 everywhere; c1 positives only in samples 0-9; c2 never positive
    y = np.zeros((20, 3), np.float32)
    y[:, 0] = 1
    y[:10, 1] = 1
    return ImageDataset(np.zeros((20, 1, 8, 8), np.uint8), y, ["c0", "c1", "c2"])


def test_warns_once_about_classes_without_positives():
    ds = warn_ds()
    with pytest.warns(P.PartitionWarning) as rec:
        P.explicit(ds, {"H1": ["c0", "c1"], "H2": ["c1", "c2"]}, pools=[np.arange(10), np.arange(10, 20)])
    msgs = [str(r.message) for r in rec if issubclass(r.category, P.PartitionWarning)]
    assert len(msgs) == 1
    assert "class 'c1' has 0 positives among the samples of client H2" in msgs[0]
    assert "class 'c2' has 0 positives in the whole training set (assigned to client H2)" in msgs[0]
    assert "H1" not in msgs[0]


def test_warns_about_a_client_without_classes():
    ds = warn_ds()
    with pytest.warns(P.PartitionWarning, match="client B annotate") as rec:
        P.make_partition(ds, 2, "iid", P.ExplicitClasses([[True, True, True], [False, False, False]]), seed=0)
    assert sum(issubclass(r.category, P.PartitionWarning) for r in rec) == 1


def test_no_warning_when_every_assigned_class_has_positives():
    import warnings

    ds = warn_ds()
    with warnings.catch_warnings():
        warnings.simplefilter("error", P.PartitionWarning)
        part = P.explicit(ds, [["c0", "c1"], ["c0"]], pools=[np.arange(10), np.arange(10, 20)], allow_unlabelled=True)
    assert part.sizes().tolist() == [10, 10]


def test_known_mask_counts_for_positives():
    # a positive in a sample whose label is unknown there is no positive
    a = make_ds(10, ["x", "y"], p=1.0, seed=1, name="A")
    b = make_ds(10, ["y", "z"], p=1.0, seed=2, name="B")
    u = concat_datasets([a, b])
    src = u.extra["source"]
    with pytest.warns(P.PartitionWarning, match="class 'z' has 0 positives among the samples of client A"):
        P.make_partition(u, 2, P.Pools([np.flatnonzero(src == 0), np.flatnonzero(src == 1)]), "all", seed=0)
