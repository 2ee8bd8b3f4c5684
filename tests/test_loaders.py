"""Real-data loaders on tiny fixtures written in the published formats."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import ImageFile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixtures_data as fx  # noqa: E402

from fedpl_core.data import cache  # noqa: E402
from fedpl_core.data import catalog as registry
from fedpl_core.data.base import MULTICLASS, MULTILABEL, DataError  # noqa: E402
from fedpl_core.data.cache import DECODE_FIELDS, DecodeOptions  # noqa: E402
from fedpl_core.data.dataset_splits import group_split, split_dataset  # noqa: E402
from fedpl_core.data.loaders.csv_loader import (
    CHEXPERT_CLASSES,
    CHEXPERT_TO_NIH,
    load_chexpert,
    load_csv,
    load_mimic_cxr,
)
from fedpl_core.data.loaders.ham10000 import HAM_CLASSES, load_ham10000  # noqa: E402
from fedpl_core.data.loaders.medmnist import MEDMNIST_INFO, load_medmnist  # noqa: E402
from fedpl_core.data.loaders.nih import NIH_CLASSES, load_nih  # noqa: E402
from fedpl_core.data.loaders.tb_covid import load_covid, load_tb  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """Default cache folder inside the test's tmp dir (never ~/.cache)."""
    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "default_cache"))


@pytest.fixture
def kw(tmp_path):
    return {"cache_dir": tmp_path / "cache", "image_size": 16}


def row_of(ds, key: str, value: str) -> int:
    hits = np.flatnonzero(np.asarray(ds.extra[key]) == value)
    assert len(hits) == 1, (key, value, hits)
    return int(hits[0])


def labels_of(ds, i: int) -> set[str]:
    return {c for c, v in zip(ds.class_names, ds.labels[i]) if v == 1}


# ============================================================================ NIH
@pytest.mark.parametrize("version,gz", [("2017", False), ("2020", False), ("2017", True)])
def test_nih_labels_groups_images(tmp_path, kw, version, gz):
    root = fx.write_nih(tmp_path / "nih", version=version, gz=gz)
    ds = load_nih(root, **kw)
    assert ds.class_names == NIH_CLASSES and ds.task == MULTILABEL
    assert ds.images.shape == (len(fx.NIH_ROWS), 1, 16, 16) and ds.images.dtype == np.uint8
    assert ds.labels.dtype == np.float32
    for i, (img, find, _, pid, age, sex, view, _) in enumerate(fx.NIH_ROWS):
        r = row_of(ds, "image_index", img)
        want = set() if find == "No Finding" else set(find.split("|"))
        assert labels_of(ds, r) == want
        assert ds.groups[r] == str(pid)
        assert ds.extra["view"][r] == view and ds.extra["sex"][r] == sex
        assert ds.extra["age"][r] == age
        assert (ds.images[r] == fx.nih_value(i)).all()  # the right file, resized (RGBA row too)
    r = row_of(ds, "image_index", "00000003_000.png")
    assert ds.labels[r].tolist() == [0, 0, 1] + [0] * 9 + [1, 1]  # Effusion, Pleural_Thickening, Hernia


def test_nih_classes_views_split(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    ds = load_nih(root, classes=["Hernia", "Cardiomegaly"], **kw)
    assert ds.class_names == ["Hernia", "Cardiomegaly"]
    assert ds.labels[row_of(ds, "image_index", "00000003_000.png")].tolist() == [1, 0]
    assert ds.labels[row_of(ds, "image_index", "00000001_001.png")].tolist() == [0, 1]

    ap = load_nih(root, views=("AP",), **kw)
    assert sorted(ap.extra["image_index"]) == ["00000002_000.png", "00000004_000.png"]
    assert set(load_nih(root, views=["pa"], **kw).extra["view"]) == {"PA"}

    test = load_nih(root, split="test", **kw)
    assert sorted(test.extra["image_index"]) == sorted(fx.NIH_TEST_LIST)
    train = load_nih(root, split="train_val", **kw)
    assert len(train) == len(fx.NIH_ROWS) - len(fx.NIH_TEST_LIST)
    assert not set(train.groups) & set(test.groups)  # the official split is patient-wise


def test_nih_max_images_seeded_and_channels(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    a = load_nih(root, max_images=3, seed=1, **kw)
    b = load_nih(root, max_images=3, seed=1, **kw)
    c = load_nih(root, max_images=3, seed=2, **{**kw, "use_cache": False})
    assert len(a) == 3 and list(a.extra["image_index"]) == list(b.extra["image_index"])
    assert set(a.extra["image_index"]) <= {r[0] for r in fx.NIH_ROWS}
    assert list(a.extra["image_index"]) != list(c.extra["image_index"])
    rgb = load_nih(root, channels=3, image_size=8, cache_dir=kw["cache_dir"])
    assert rgb.images.shape == (len(fx.NIH_ROWS), 3, 8, 8)
    assert (rgb.images[0] == fx.nih_value(0)).all()


def test_nih_errors(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    with pytest.raises(DataError, match="Pneumonitis"):
        load_nih(root, classes=["Effusion", "Pneumonitis"], **kw)

    bad = list(fx.NIH_ROWS)
    bad[2] = ("00000002_000.png", "Effusion|Covid", 0, 2, 81, "M", "AP", (24, 24))
    root2 = fx.write_nih(tmp_path / "bad_label", rows=bad)
    with pytest.raises(DataError, match=r"'Covid'.*00000002_000\.png"):
        load_nih(root2, **kw)

    root3 = fx.write_nih(tmp_path / "missing", skip_images=("00000004_000.png",))
    with pytest.raises(DataError, match=r"00000004_000\.png"):
        load_nih(root3, **kw)
    part = load_nih(root3, skip_missing=True, **kw)
    assert len(part) == len(fx.NIH_ROWS) - 1 and part.extra["skipped_missing"] == 1

    root4 = tmp_path / "malformed"
    root4.mkdir()
    (root4 / "Data_Entry_2017.csv").write_text("Image Index,Labels,Patient ID\n00000001_000.png,Mass,1\n")
    with pytest.raises(DataError, match="Finding Labels"):
        load_nih(root4, **kw)
    with pytest.raises(DataError, match="Data_Entry_2017"):
        load_nih(tmp_path / "missing" / "images_001", **kw)
    root5 = fx.write_nih(tmp_path / "nosplit", split_files=False)
    with pytest.raises(DataError, match="test_list.txt"):
        load_nih(root5, split="test", **kw)


# ============================================================================ cache
def test_cache_second_load_does_not_decode(tmp_path, kw, monkeypatch):
    root = fx.write_nih(tmp_path / "nih")
    first = load_nih(root, **kw)
    files = list(Path(kw["cache_dir"]).glob("*.npy"))
    assert len(files) == 1 and not list(Path(kw["cache_dir"]).glob("*.tmp*"))

    def boom(*a, **k):
        raise AssertionError("decoded again")

    monkeypatch.setattr(ImageFile.ImageFile, "load", boom)  # headers may be read, pixels not
    second = load_nih(root, **kw)
    np.testing.assert_array_equal(first.images, second.images)
    np.testing.assert_array_equal(first.labels, second.labels)
    with pytest.raises(AssertionError, match="decoded again"):  # another size: a new entry
        load_nih(root, cache_dir=kw["cache_dir"], image_size=12)


def test_cache_invalidated_by_changed_file(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    load_nih(root, **kw)
    p = root / "images_001" / "images" / "00000001_000.png"
    fx.write_png(p, (40, 40), 111)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    ds = load_nih(root, **kw)
    assert (ds.images[row_of(ds, "image_index", "00000001_000.png")] == 111).all()
    assert len(list(Path(kw["cache_dir"]).glob("*.npy"))) == 2


def test_cache_default_dir_env_and_decode(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "envcache"))
    assert cache.default_cache_dir() == tmp_path / "envcache"
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    fx.write_png(a, (20, 10), 7)
    fx.write_png(b, (12, 12), 90, "I;16")  # 16-bit: min-max scaled
    arr = cache.load_images_cached([a, b], image_size=6, channels=3)
    assert arr.shape == (2, 3, 6, 6) and arr.dtype == np.uint8
    assert (arr[0] == 7).all()
    assert len(list((tmp_path / "envcache").glob("*.npy"))) == 1
    with pytest.raises(DataError, match="shape"):  # native size needs equal sizes
        cache.load_images_cached([a, b], image_size=None, channels=1, use_cache=False)
    with pytest.raises(DataError, match="nope.png"):
        cache.load_images_cached([a, tmp_path / "nope.png"], image_size=6, channels=1)


# ============================================================================ MedMNIST
def test_medmnist_chest_multilabel(tmp_path):
    arrays = fx.write_medmnist(tmp_path, "chestmnist")
    ds = load_medmnist(tmp_path, "chestmnist", "val")
    assert ds.class_names == NIH_CLASSES and ds.task == MULTILABEL
    assert ds.images.shape == (2, 1, 28, 28)
    np.testing.assert_array_equal(ds.images[:, 0], arrays["val_images"])
    np.testing.assert_array_equal(ds.labels, arrays["val_labels"])
    both = load_medmnist(tmp_path, "chestmnist", None)
    assert len(both) == 11 and list(both.extra["split"]).count("test") == 3
    sel = load_medmnist(tmp_path, "chestmnist", "train", classes=["Hernia", "Atelectasis"])
    np.testing.assert_array_equal(sel.labels, arrays["train_labels"][:, [13, 0]])


def test_medmnist_derma_onehot_rgb_and_sizes(tmp_path):
    arrays = fx.write_medmnist(tmp_path, "dermamnist", n=(8, 2, 2))
    ds = load_medmnist(tmp_path, "dermamnist", "train")
    assert ds.task == MULTICLASS and ds.class_names == list(MEDMNIST_INFO["dermamnist"].class_names)
    assert ds.images.shape == (8, 3, 28, 28)
    np.testing.assert_array_equal(ds.images.transpose(0, 2, 3, 1), arrays["train_images"])
    assert ds.labels.argmax(1).tolist() == arrays["train_labels"][:, 0].tolist()
    assert (ds.labels.sum(1) == 1).all()
    isic = load_medmnist(tmp_path, "dermamnist", "train", classes=HAM_CLASSES)
    assert isic.class_names == HAM_CLASSES
    assert [isic.class_names[j] for j in isic.labels.argmax(1)] == [ds.class_names[j] for j in ds.labels.argmax(1)]
    two = load_medmnist(tmp_path, "dermamnist", "train", classes=["MEL", "NV"])  # MEL=4, NV=5
    assert len(two) == 2 and two.labels.tolist() == [[1, 0], [0, 1]]
    gray = load_medmnist(tmp_path, "dermamnist", "test", channels=1, image_size=14)
    assert gray.images.shape == (2, 1, 14, 14)

    fx.write_medmnist(tmp_path, "pneumoniamnist", size=64)
    p = load_medmnist(tmp_path, "pneumoniamnist", "train", size=64)
    assert p.images.shape == (6, 1, 64, 64) and p.class_names == ["normal", "pneumonia"]
    one = load_medmnist(tmp_path, "pneumoniamnist", "train", size=64, one_class=True)
    assert one.task == MULTILABEL and one.class_names == ["pneumonia"]
    assert one.labels[:, 0].tolist() == [0, 1, 0, 1, 0, 1]


def test_medmnist_errors(tmp_path, monkeypatch):
    with pytest.raises(DataError, match=r"chestmnist_128\.npz"):
        load_medmnist(tmp_path, "chestmnist", size=128)
    fx.write_medmnist(tmp_path, "chestmnist", drop_key="test_labels")
    assert len(load_medmnist(tmp_path, "chestmnist", "train")) == 6
    with pytest.raises(DataError, match="test_labels"):
        load_medmnist(tmp_path, "chestmnist", "test")
    with pytest.raises(DataError, match="unknown MedMNIST flag"):
        load_medmnist(tmp_path, "brainmnist")
    with pytest.raises(DataError, match="unknown class"):
        load_medmnist(tmp_path, "chestmnist", classes=["Pleural"])
    monkeypatch.setitem(sys.modules, "medmnist", None)  # package absent: clear message
    with pytest.raises(DataError, match="medmnist.*not installed"):
        load_medmnist(tmp_path, "dermamnist", download=True)


# ============================================================================ HAM10000
def test_ham10000_metadata(tmp_path, kw):
    root = fx.write_ham10000(tmp_path / "ham", dataset_column=True)
    ds = load_ham10000(root, **kw)
    assert ds.class_names == HAM_CLASSES == fx.ISIC_ORDER and ds.task == MULTICLASS
    assert ds.images.shape == (len(fx.HAM_ROWS), 3, 16, 16)
    for i, (lesion, image, dx, *_rest) in enumerate(fx.HAM_ROWS):
        r = row_of(ds, "image_id", image)
        assert labels_of(ds, r) == {dx.upper()}
        assert ds.groups[r] == lesion
        assert np.abs(ds.images[r].reshape(3, -1).mean(1) - fx.ham_rgb(i)).max() < 4  # JPEG colour
    assert ds.extra["localization"][row_of(ds, "image_id", "ISIC_0031633")] == "ear"
    sub = load_ham10000(root, classes=["NV", "MEL"], **kw)
    assert sorted(sub.extra["image_id"]) == ["ISIC_0029176", "ISIC_0031633"]
    assert labels_of(sub, row_of(sub, "image_id", "ISIC_0029176")) == {"MEL"}


def test_ham10000_isic_ground_truth(tmp_path, kw):
    root = fx.write_ham10000(tmp_path / "isic", metadata=False, isic=True)
    ds = load_ham10000(root, **kw)
    assert ds.extra["source"] == "isic"
    for _lesion, image, dx, *_ in fx.HAM_ROWS:
        r = row_of(ds, "image_id", image)
        assert labels_of(ds, r) == {dx.upper()} and ds.groups[r] == image  # no lesion ids shipped
    root2 = fx.write_ham10000(tmp_path / "isic2", metadata=False, isic=True, groupings=True)
    ds2 = load_ham10000(root2, **kw)
    assert ds2.groups[row_of(ds2, "image_id", "ISIC_0025030")] == "HAM_0000118"
    root3 = fx.write_ham10000(tmp_path / "both", metadata=True, isic=True)
    ds3 = load_ham10000(root3, source="isic", **kw)
    assert ds3.groups[row_of(ds3, "image_id", "ISIC_0032417")] == "HAM_0001949"  # joined with metadata


def test_ham10000_errors(tmp_path, kw):
    bad = list(fx.HAM_ROWS)
    bad[3] = ("HAM_0001466", "ISIC_0031633", "scc", "histo", "75.0", "male", "ear")
    with pytest.raises(DataError, match=r"'scc'.*ISIC_0031633"):
        load_ham10000(fx.write_ham10000(tmp_path / "a", rows=bad), **kw)
    root = fx.write_ham10000(tmp_path / "b")
    (root / "HAM10000_images_part_2" / "ISIC_0031633.jpg").unlink()
    with pytest.raises(DataError, match=r"ISIC_0031633\.jpg"):
        load_ham10000(root, **kw)
    root = fx.write_ham10000(tmp_path / "c", metadata=False, isic=True)
    gt = root / "ISIC2018_Task3_Training_GroundTruth" / "ISIC2018_Task3_Training_GroundTruth.csv"
    lines = gt.read_text().splitlines()
    lines[1] = lines[1].replace("0.0", "1.0", 1)
    gt.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="not one-hot"):
        load_ham10000(root, **kw)
    gt.write_text(gt.read_text().replace(",VASC", ",VASCULAR"))
    with pytest.raises(DataError, match="VASC"):
        load_ham10000(root, **kw)
    with pytest.raises(DataError, match="Validation_GroundTruth"):
        load_ham10000(root, split="validation", **kw)
    with pytest.raises(DataError, match="unknown class"):
        load_ham10000(fx.write_ham10000(tmp_path / "d"), classes=["SCC"], **kw)


# ============================================================================ CheXpert
def _chexpert_label(ds, path_part: str, cls: str) -> float:
    r = [i for i, p in enumerate(ds.extra["paths"]) if path_part in p]
    assert len(r) == 1
    return float(ds.labels[r[0], ds.class_names.index(cls)])


def test_chexpert_uncertain_policies_and_frontal(tmp_path, kw):
    fx.write_chexpert(tmp_path)
    z = load_chexpert(tmp_path, **kw)
    assert z.class_names == CHEXPERT_CLASSES and z.label_mask is None
    assert len(z) == 5  # the lateral view is dropped
    assert not any("lateral" in p for p in z.extra["paths"])
    assert _chexpert_label(z, "patient00001/study1/view1", "No Finding") == 1
    assert _chexpert_label(z, "patient00001/study1/view1", "Support Devices") == 1
    assert _chexpert_label(z, "patient00001/study1/view1", "Pneumothorax") == 0
    assert _chexpert_label(z, "patient00002/study2", "Cardiomegaly") == 0  # -1 -> 0
    assert _chexpert_label(z, "patient00002/study2", "Lung Opacity") == 1
    assert _chexpert_label(z, "patient00002/study2", "Fracture") == 1
    o = load_chexpert(tmp_path, uncertain="ones", **kw)
    assert _chexpert_label(o, "patient00002/study2", "Cardiomegaly") == 1
    assert _chexpert_label(o, "patient00002/study2", "Pneumonia") == 0  # blank stays 0
    ig = load_chexpert(tmp_path, uncertain="ignore", **kw)
    r = [i for i, p in enumerate(ig.extra["paths"]) if "patient00002/study2" in p][0]
    unknown = {c for c, m in zip(ig.class_names, ig.label_mask[r]) if not m}
    assert unknown == {"Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion"}
    assert ig.label_mask.sum() == ig.label_mask.size - 6  # + Consolidation of patient00002/study1
    assert list(z.groups) == ["patient00001", "patient00002", "patient00002", "patient00003", "patient00004"]
    allv = load_chexpert(tmp_path, frontal_only=False, **kw)
    assert len(allv) == 6
    pa = load_chexpert(tmp_path, views=["PA"], **kw)
    assert list(pa.groups) == ["patient00004"]


def test_chexpert_root_variants_valid_classes(tmp_path, kw):
    ds_dir = fx.write_chexpert(tmp_path)
    a = load_chexpert(ds_dir, **kw)  # root = the data-set folder itself
    b = load_chexpert(tmp_path, **kw)
    np.testing.assert_array_equal(a.images, b.images)
    assert (a.images[0] == 20).all()  # first row's image
    v = load_chexpert(
        tmp_path, split="valid", classes=["Support Devices", "Pleural Effusion"], rename=CHEXPERT_TO_NIH, **kw
    )
    assert v.class_names == ["Support Devices", "Effusion"] and len(v) == 2
    assert v.labels.tolist() == [[0, 0], [1, 0]]
    full = tmp_path / "full"
    fx.write_chexpert(full, folder="CheXpert-v1.0")
    assert len(load_chexpert(full, **kw)) == 5
    renamed = tmp_path / "kaggle"  # data-set folder renamed, Path column unchanged
    fx.write_chexpert(renamed)
    (renamed / "CheXpert-v1.0-small").rename(renamed / "archive")
    assert len(load_chexpert(renamed / "archive", **kw)) == 5


def test_chexpert_errors(tmp_path, kw):
    fx.write_chexpert(tmp_path)
    with pytest.raises(DataError, match="Lung Nodule"):
        load_chexpert(tmp_path, classes=["Edema", "Lung Nodule"], **kw)
    (tmp_path / "CheXpert-v1.0-small/train/patient00003/study1/view1_frontal.jpg").unlink()
    with pytest.raises(DataError, match="patient00003"):
        load_chexpert(tmp_path, **kw)
    bad = tmp_path / "bad"
    rows = [r.replace(",1.0,,,,,,,,,0.0", ",2.0,,,,,,,,,0.0") for r in fx.CHEXPERT_TRAIN_ROWS]
    fx.write_chexpert(bad, train_rows=rows)
    with pytest.raises(DataError, match=r"No Finding.*2\.0.*patient00001"):
        load_chexpert(bad, **kw)
    nocol = tmp_path / "nocol"
    fx.write_chexpert(nocol, header=fx.CHEXPERT_HEADER.replace("Frontal/Lateral", "View"))
    with pytest.raises(DataError, match="Frontal/Lateral"):
        load_chexpert(nocol, **kw)
    with pytest.raises(DataError, match="train.csv"):
        load_chexpert(tmp_path / "nowhere", **kw)


# ============================================================================ MIMIC / generic CSV
def test_mimic_cxr_join_views_split(tmp_path, kw):
    rel = fx.write_mimic(tmp_path)
    ds = load_mimic_cxr(tmp_path / "mimic-cxr-jpg" / "2.0.0", **kw)
    assert ds.class_names == CHEXPERT_CLASSES
    # PA/AP images of labelled studies: rows 0, 2, 3 of the metadata
    assert list(ds.extra["dicom_id"]) == [fx.MIMIC_META_ROWS[i][0] for i in (0, 2, 3)]
    assert list(ds.groups) == ["10000032", "10000032", "10000764"]
    for r, i in enumerate((0, 2, 3)):
        assert abs(float(ds.images[r].mean()) - fx.mimic_value(i)) < 3
    r = row_of(ds, "dicom_id", fx.MIMIC_META_ROWS[3][0])
    assert labels_of(ds, r) == {"Consolidation"}  # Pneumonia -1 -> 0
    ones = load_mimic_cxr(rel, uncertain="ones", classes=["Pneumonia", "No Finding"], **kw)
    assert ones.labels.tolist() == [[0, 1], [0, 1], [1, 0]]
    allv = load_mimic_cxr(rel, views=None, **kw)
    assert len(allv) == 5  # the unlabelled study's image is dropped
    test = load_mimic_cxr(rel, split="test", views=None, **kw)
    assert set(test.groups) == {"10000764"} and len(test) == 2
    with pytest.raises(DataError, match="split"):
        load_mimic_cxr(rel, split="valid", **kw)


def test_generic_csv(tmp_path, kw):
    for i in range(4):
        fx.write_png(tmp_path / "img" / f"{i}.png", (20, 20), 50 * i)
    (tmp_path / "labels.csv").write_text(
        "file,site,patient,a,b\nimg/0.png,x,p1,1,0\nimg/1.png,y,p1,0,1\nimg/2.png,x,p2,1,1\nimg/3.png,x,p3,-1,\n"
    )
    ds = load_csv(
        tmp_path / "labels.csv",
        tmp_path,
        "file",
        ["a", "b"],
        group_column="patient",
        filters={"site": ["X"]},
        uncertain="ignore",
        blank="ignore",
        **kw,
    )
    assert ds.labels.tolist() == [[1, 0], [1, 1], [0, 0]]
    assert ds.label_mask.tolist() == [[True, True], [True, True], [False, False]]
    assert list(ds.groups) == ["p1", "p2", "p3"]
    assert [int(ds.images[i].mean()) for i in range(3)] == [0, 100, 150]
    mc = load_csv(
        tmp_path / "labels.csv", tmp_path, "file", ["a", "b"], task=MULTICLASS, filters={"patient": ["p1"]}, **kw
    )
    assert mc.task == MULTICLASS and mc.labels.tolist() == [[1, 0], [0, 1]]
    with pytest.raises(DataError, match="exactly one"):
        load_csv(tmp_path / "labels.csv", tmp_path, "file", ["a", "b"], task=MULTICLASS, **kw)
    with pytest.raises(DataError, match="'c'"):
        load_csv(tmp_path / "labels.csv", tmp_path, "file", ["a", "c"], **kw)


# ============================================================================ TB / COVID
def test_tb_one_class(tmp_path, kw):
    d = fx.write_tb(tmp_path)
    for root in (tmp_path, d):
        ds = load_tb(root, **kw)
        assert ds.class_names == ["Tuberculosis"] and ds.task == MULTILABEL
        assert ds.labels[:, 0].tolist() == [1] * 3 + [0] * 11
        names = [Path(p).name for p in ds.extra["paths"]]
        assert names[:4] == ["Tuberculosis-1.png", "Tuberculosis-2.png", "Tuberculosis-3.png", "Normal-1.png"]
        assert names[-2:] == ["Normal-10.png", "Normal-11.png"]  # natural order
        assert ds.images[3].mean() == 5 and ds.images[0].mean() == 210
        assert len(set(ds.groups)) == len(ds)
    with pytest.raises(DataError, match="Tuberculosis"):
        load_tb(tmp_path / "TB_Chest_Radiography_Database" / "Normal", **kw)


@pytest.mark.parametrize("images_subfolder", [True, False])
def test_covid_one_class(tmp_path, kw, images_subfolder):
    fx.write_covid(tmp_path, images_subfolder=images_subfolder)
    ds = load_covid(tmp_path, **kw)
    assert ds.class_names == ["COVID-19"]
    assert ds.labels[:, 0].tolist() == [1, 1, 1, 0, 0, 0, 0]
    assert set(ds.extra["folder"]) == {"COVID", "Normal"}
    assert ds.images[0].mean() == 221  # COVID-1 image, not its mask
    other = load_covid(tmp_path, include_other=True, **kw)
    assert len(other) == 11 and other.labels.sum() == 3
    assert list(other.extra["folder"]).count("Viral Pneumonia") == 2


# ============================================================================ splits
def test_group_split_disjoint_and_fractions():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 300, 2000).astype(str)
    tr, va, te = group_split(groups, (0.7, 0.1, 0.2), seed=3)
    assert len(tr) + len(va) + len(te) == 2000
    assert len(np.unique(np.concatenate([tr, va, te]))) == 2000
    sets = [set(groups[i]) for i in (tr, va, te)]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert abs(len(tr) / 2000 - 0.7) < 0.05 and abs(len(te) / 2000 - 0.2) < 0.05
    again = group_split(groups, (0.7, 0.1, 0.2), seed=3)
    assert all((a == b).all() for a, b in zip((tr, va, te), again))
    other = group_split(groups, (0.7, 0.1, 0.2), seed=4)
    assert not (other[0].shape == tr.shape and (other[0] == tr).all())
    single = group_split(None, (0.7, 0.1, 0.2), n=10)
    assert [len(s) for s in single] == [7, 1, 2]
    with pytest.raises(DataError, match="sum to 1"):
        group_split(groups, (0.7, 0.2, 0.2))


def test_split_dataset_by_patient(tmp_path, kw):
    ds = load_nih(fx.write_nih(tmp_path / "nih"), **kw)
    parts = split_dataset(ds, (0.5, 0.25, 0.25), seed=0)
    assert [p.name for p in parts] == ["nih-train", "nih-val", "nih-test"]
    assert sum(len(p) for p in parts) == len(ds)
    for a in range(3):
        for b in range(a + 1, 3):
            assert not set(parts[a].groups) & set(parts[b].groups)
        p = parts[a]
        for i, name in enumerate(p.extra["image_index"]):  # per-image extras follow the subset
            j = row_of(ds, "image_index", name)
            np.testing.assert_array_equal(p.images[i], ds.images[j])
            np.testing.assert_array_equal(p.labels[i], ds.labels[j])


# ============================================================================ decode options
def _write_all(tmp_path: Path) -> dict:
    """One fixture per loader: ``{label: (loader call taking decode kwargs, channels by default)}``."""
    fx.write_nih(tmp_path / "nih")
    fx.write_ham10000(tmp_path / "ham")
    fx.write_chexpert(tmp_path / "chx")
    rel = fx.write_mimic(tmp_path / "mimic")
    fx.write_tb(tmp_path / "tb")
    fx.write_covid(tmp_path / "covid")
    fx.write_medmnist(tmp_path / "mm", "chestmnist")
    for i in range(2):
        fx.write_png(tmp_path / "csv" / f"{i}.png", (20, 20), 50 * i)
    (tmp_path / "csv" / "t.csv").write_text("file,a\n0.png,1\n1.png,0\n")
    return {
        "nih": (lambda **d: load_nih(tmp_path / "nih", **d), 1),
        "ham10000": (lambda **d: load_ham10000(tmp_path / "ham", **d), 3),
        "chexpert": (lambda **d: load_chexpert(tmp_path / "chx", **d), 1),
        "mimic": (lambda **d: load_mimic_cxr(rel, **d), 1),
        "csv": (lambda **d: load_csv(tmp_path / "csv" / "t.csv", tmp_path / "csv", "file", ["a"], **d), 1),
        "tb": (lambda **d: load_tb(tmp_path / "tb", **d), 1),
        "covid": (lambda **d: load_covid(tmp_path / "covid", **d), 1),
        "medmnist": (lambda **d: load_medmnist(tmp_path / "mm", "chestmnist", **d), 1),
    }


LOADERS = [load_nih, load_ham10000, load_chexpert, load_mimic_cxr, load_csv, load_tb, load_covid, load_medmnist]


@pytest.mark.parametrize("fn", LOADERS, ids=lambda f: f.__name__)
def test_decode_options_defined_once(fn):
    params = inspect.signature(fn).parameters
    assert "decode" in params and params["decode"].default is None
    assert not set(DECODE_FIELDS) & set(params), "decode options belong in DecodeOptions only"
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_loaders_honour_decode_options(tmp_path):
    cache_dir = tmp_path / "c"
    for label, (load, own_channels) in _write_all(tmp_path).items():
        flip = 4 - own_channels  # 1 <-> 3
        ds = load(decode=DecodeOptions(image_size=8, channels=flip, cache_dir=cache_dir, progress=False))
        assert ds.images.shape[1:] == (flip, 8, 8), label
        kw = load(image_size=8, channels=flip, cache_dir=cache_dir, progress=False)  # plain keywords
        np.testing.assert_array_equal(kw.images, ds.images, err_msg=label)
        # a keyword next to decode replaces that field only
        mixed = load(decode=DecodeOptions(image_size=8, cache_dir=cache_dir), image_size=6, progress=False)
        assert mixed.images.shape[1:] == (own_channels, 6, 6), label
        with pytest.raises(TypeError, match="image_sze"):
            load(image_sze=8)
    # everything but MedMNIST (nothing to decode) went through the cache folder given
    assert len(list(cache_dir.glob("*.npy"))) == 2 * (len(LOADERS) - 1)
    assert not list((tmp_path / "default_cache").glob("*.npy"))


def test_decode_options_validated():
    with pytest.raises(DataError, match="channels"):
        DecodeOptions(channels=2)
    with pytest.raises(DataError, match="image_size"):
        DecodeOptions(image_size=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        DecodeOptions().image_size = 3  # shared defaults cannot be changed by one caller


def test_mmap_returns_memmap_with_same_content(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    mapped_first = load_nih(root, mmap=True, **kw)  # cache miss: decoded, then mapped
    plain = load_nih(root, **kw)
    mapped = load_nih(root, decode=DecodeOptions(mmap=True, **kw))  # cache hit
    for m in (mapped_first, mapped):
        assert isinstance(m.images, np.memmap) and not m.images.flags.writeable
        assert Path(m.images.filename).parent == Path(kw["cache_dir"])
        np.testing.assert_array_equal(np.asarray(m.images), plain.images)
    assert not isinstance(plain.images, np.memmap)
    np.testing.assert_array_equal(mapped.labels, plain.labels)


def test_progress_false_prints_nothing(tmp_path, kw, capfd):
    root = fx.write_nih(tmp_path / "nih")
    load_nih(root, use_cache=False, num_workers=1, **kw)
    assert "decoding nih" in capfd.readouterr().err  # shown by default
    load_nih(root, use_cache=False, progress=False, **kw)
    load_nih(root, progress=False, **kw)  # cache miss
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""


def test_upscale_and_squeeze_logged_once(tmp_path, kw, caplog):
    caplog.set_level(logging.INFO, logger="fedpl.data")
    root = fx.write_nih(tmp_path / "nih")  # first image 40x40
    load_nih(root, image_size=64, cache_dir=kw["cache_dir"])
    up = [r.getMessage() for r in caplog.records if "upscaling" in r.getMessage()]
    assert len(up) == 1 and "upscaling 40 px images to 64 px" in up[0]
    assert not any("aspect ratio" in r.getMessage() for r in caplog.records)  # square source
    caplog.clear()
    load_nih(root, **kw)  # 40 px -> 16 px, square: nothing to say
    assert not [r for r in caplog.records if r.name == "fedpl.data"]

    ham = fx.write_ham10000(tmp_path / "ham")  # first image 30x24
    load_ham10000(ham, **kw)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fedpl.data"]
    assert len(msgs) == 1 and "30x24" in msgs[0] and "16x16" in msgs[0] and "aspect ratio not kept" in msgs[0]
    caplog.clear()
    load_ham10000(ham, **kw)  # from the cache: still stated, still once
    assert sum("aspect ratio not kept" in r.getMessage() for r in caplog.records) == 1

    caplog.clear()
    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist", size=64)
    load_medmnist(tmp_path / "mm", "pneumoniamnist", size=64, image_size=224)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fedpl.data"]
    assert len(msgs) == 1 and "upscaling 64 px images to 224 px" in msgs[0]


# ============================================================================ registry
def test_registry_isic2018_layout(tmp_path):
    root = fx.write_ham10000(tmp_path / "isic", metadata=False, isic=True, groupings=True)
    parts = registry.load_split("isic2018", str(root), image_size=8, cache_dir=tmp_path / "c", progress=False)
    assert isinstance(parts, registry.DataSplits) and parts._fields == ("train", "val", "test")
    assert parts.val is not None
    ids = [i for p in parts for i in p.extra["image_id"]]
    assert sorted(ids) == sorted(r[1] for r in fx.HAM_ROWS)
    assert all(p.extra["source"] == "isic" and p.class_names == HAM_CLASSES for p in parts)
    assert all(p.images.shape[1:] == (3, 8, 8) for p in parts)
    lesions = [set(p.groups) for p in parts]
    assert "HAM_0000118" in set.union(*lesions)  # lesion ids from the LesionGroupings file
    assert not (lesions[0] & lesions[1] or lesions[0] & lesions[2] or lesions[1] & lesions[2])
    # with HAM10000's metadata next to the ISIC files, isic2018 still reads the ISIC table
    both = fx.write_ham10000(tmp_path / "both", metadata=True, isic=True)
    tr = registry.load_split("isic2018", str(both), image_size=8, cache_dir=tmp_path / "c", progress=False).train
    assert tr.extra["source"] == "isic" and "ISIC2018_Task3_Training_GroundTruth.csv" in tr.extra["table"]


def test_registry_ham10000_lesion_split_7_1_2(tmp_path):
    rows = fx.ham_rows(150, seed=1)
    root = fx.write_ham10000(tmp_path / "ham", rows=rows, size=(6, 4))
    train, val, test = registry.load_split("ham10000", str(root), image_size=4, use_cache=False, progress=False, seed=5)
    n = len(rows)
    assert len(train) + len(val) + len(test) == n
    assert sorted(np.concatenate([p.extra["image_id"] for p in (train, val, test)])) == [r[1] for r in rows]
    lesions = [set(p.groups) for p in (train, val, test)]
    assert not (lesions[0] & lesions[1] or lesions[0] & lesions[2] or lesions[1] & lesions[2])
    biggest = max(sum(r[0] == g for r in rows) for g in {r[0] for r in rows})  # 3 images
    for part, frac in zip((train, val, test), (0.7, 0.1, 0.2)):
        assert abs(len(part) - frac * n) <= biggest, (len(part), frac * n)
    assert [p.name for p in (train, val, test)] == ["ham10000-train", "ham10000-val", "ham10000-test"]
    dx = {r[1]: r[2].upper() for r in rows}
    for p in (train, val, test):  # labels and groups follow their rows through the split
        assert [HAM_CLASSES[j] for j in p.labels.argmax(1)] == [dx[i] for i in p.extra["image_id"]]
        assert list(p.groups) == [r[0] for i in p.extra["image_id"] for r in rows if r[1] == i]


def test_registry_official_and_group_without_val(tmp_path):
    root = fx.write_nih(tmp_path / "nih")
    off = registry.load_split("nih-official", str(root), image_size=8, cache_dir=tmp_path / "c", progress=False)
    assert off.val is None and sorted(off.test.extra["image_index"]) == sorted(fx.NIH_TEST_LIST)
    grp = registry.load_split("nih", str(root), image_size=8, cache_dir=tmp_path / "c", progress=False)
    assert grp.val is None and len(grp.train) + len(grp.test) == len(fx.NIH_ROWS)
    assert not set(grp.train.groups) & set(grp.test.groups)
    fx.write_medmnist(tmp_path / "mm", "chestmnist")
    mm = registry.load_split("medmnist:chestmnist", str(tmp_path / "mm"), image_size=8)
    assert mm.val is None and mm.train.images.shape == (6, 1, 8, 8) and len(mm.test) == 3
    with pytest.raises(ValueError, match="isic2018"):  # the error lists the registered names
        registry.load_split("isic", str(root))
