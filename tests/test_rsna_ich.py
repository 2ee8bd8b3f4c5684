"""RSNA ICH loader on fixture DICOM slices in the Kaggle layout, its registry entry, and
the built-in ICH-like synthetic data (fedpl_core.data.loaders.rsna_ich, .synthetic.make_ich)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fedpl_core.data import catalog as registry
from fedpl_core.data import synthetic as syn
from fedpl_core.data.base import MULTILABEL, DataError
from fedpl_core.data.loaders.rsna_ich import BSB_WINDOWS, ICH_SUBTYPES, load_rsna_ich, parse_windows, window

# ============================================================================ fixture
SUBTYPES6 = ICH_SUBTYPES + ["any"]
#: image id, patient id, positive subtypes, HU pixel values (8x8, row-major cycle), slope, intercept
HU_VALUES = [-1000, 0, 10, 20, 33, 60, 79, 80, 1000, 46, -20]
SLICES = [
    ("ID_63eb1e259", "ID_a1b2c3d4", ["epidural"], 1, -1024),
    ("ID_2669954a7", "ID_a1b2c3d4", ["subarachnoid", "subdural"], 1, -1024),
    ("ID_52c9913b1", "ID_e5f6a7b8", [], 2, -2048),
    ("ID_4e6ff6126", "ID_e5f6a7b8", ["intraparenchymal", "intraventricular"], 1, -1024),
    ("ID_0a7f8c1d2", "ID_c9d0e1f2", [], 1, -1024),
    ("ID_b7e2f5aa0", "ID_f3a4b5c6", ["subdural"], 1, -1024),
]
#: brain window (centre 40, width 80 -> 0..80 HU to 0..255), by hand: (HU - 0) / 80 * 255, rounded
BRAIN = {-1000: 0, -20: 0, 0: 0, 10: 32, 20: 64, 33: 105, 46: 147, 60: 191, 79: 252, 80: 255, 1000: 255}


def hu_image(i: int, even: bool = False) -> np.ndarray:
    vals = [v for v in HU_VALUES if not even or v % 2 == 0]
    return np.resize(np.roll(np.array(vals), i), (8, 8)).astype(np.int64)


def write_dicom(
    path: Path,
    stored: np.ndarray,
    *,
    slope=1,
    intercept=-1024,
    patient="ID_x",
    study="1.2.3.4",
    bits_stored=16,
    signed=True,
) -> None:
    pydicom = pytest.importorskip("pydicom")
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = CTImageStorage, meta.MediaStorageSOPInstanceUID
    ds.Modality = "CT"
    ds.PatientID, ds.StudyInstanceUID, ds.SeriesInstanceUID = patient, study, study + ".1"
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, bits_stored, bits_stored - 1
    ds.PixelRepresentation = 1 if signed else 0
    ds.RescaleSlope, ds.RescaleIntercept = str(slope), str(intercept)
    ds.WindowCenter, ds.WindowWidth = "30", "80"
    ds.PixelData = stored.astype(np.int16 if signed else np.uint16).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    assert pydicom.dcmread(path).pixel_array.shape == stored.shape


def csv_lines(slices=SLICES, extra_rows=()) -> list[str]:
    lines = ["ID,Label"]
    for img, _, pos, _, _ in slices:
        for s in SUBTYPES6:
            lab = int(s in pos or (s == "any" and bool(pos)))
            lines.append(f"{img}_{s},{lab}")
    return lines + list(extra_rows)


def write_rsna(root: Path, slices=SLICES, lines=None, skip=()) -> Path:
    """``stage_2_train.csv`` (with the Kaggle CSV's repeated rows) and ``stage_2_train/ID_*.dcm``."""
    lines = csv_lines(slices) if lines is None else lines
    lines = lines + lines[1:7]  # the first slice listed twice, as in the published file
    (root).mkdir(parents=True, exist_ok=True)
    (root / "stage_2_train.csv").write_text("\n".join(lines) + "\n")
    for i, (img, patient, _, slope, icpt) in enumerate(slices):
        if img in skip:
            continue
        hu = hu_image(i, even=slope == 2)
        write_dicom(
            root / "stage_2_train" / f"{img}.dcm",
            (hu - icpt) // slope,
            slope=slope,
            intercept=icpt,
            patient=patient,
            study="1.2.3." + patient[3:].translate(str.maketrans("abcdef", "123456")),
        )
    return root


@pytest.fixture
def rsna(tmp_path):
    pytest.importorskip("pydicom")
    return write_rsna(tmp_path / "rsna-intracranial-hemorrhage-detection")


@pytest.fixture
def kw(tmp_path):
    return {"cache_dir": tmp_path / "cache", "progress": False}


def row_of(ds, image_id):
    hits = np.flatnonzero(ds.extra["image_id"] == image_id)
    assert len(hits) == 1
    return int(hits[0])


# ============================================================================ loader
def test_labels_duplicates_and_brain_window_by_hand(rsna, kw):
    ds = load_rsna_ich(rsna, image_size=None, **kw)
    assert ds.class_names == ICH_SUBTYPES == syn.ICH_CLASSES and ds.task == MULTILABEL
    assert ds.images.shape == (6, 1, 8, 8) and ds.images.dtype == np.uint8
    assert list(ds.extra["image_id"]) == [s[0] for s in SLICES]  # CSV order
    assert ds.extra["duplicate_rows"] == 6  # the repeated slice is counted once
    for i, (img, _, pos, slope, _) in enumerate(SLICES):
        r = row_of(ds, img)
        assert {c for c, v in zip(ds.class_names, ds.labels[r]) if v} == set(pos)
        assert ds.extra["any"][r] == float(bool(pos))
        want = np.vectorize(BRAIN.get)(hu_image(i, even=slope == 2))
        np.testing.assert_array_equal(ds.images[r, 0], want)  # slope 2 / intercept -2048 too
    assert list(ds.groups) == [s[0] for s in SLICES]  # groups="image": no header needed


def test_resize_three_windows_and_classes(rsna, kw):
    ds = load_rsna_ich(rsna, image_size=4, windows=BSB_WINDOWS, classes=["subdural", "epidural"], **kw)
    assert ds.images.shape == (6, 3, 4, 4) and ds.class_names == ["subdural", "epidural"]
    assert ds.labels[row_of(ds, "ID_2669954a7")].tolist() == [1, 0]
    assert ds.labels[row_of(ds, "ID_63eb1e259")].tolist() == [0, 1]
    assert parse_windows(BSB_WINDOWS) == [(40, 80), (80, 200), (600, 2800)]
    # a uniform 20 HU slice: brain (20-0)/80 -> 64, subdural (20+20)/200 -> 51, bone (20+800)/2800 -> 75
    root = write_rsna(rsna.parent / "uniform", slices=SLICES[:1])
    write_dicom(root / "stage_2_train" / "ID_63eb1e259.dcm", np.full((8, 8), 20 + 1024), patient="p")
    u = load_rsna_ich(root, image_size=4, windows=BSB_WINDOWS, **kw)
    assert [int(v) for v in np.unique(u.images[0], axis=None)] == sorted([64, 51, 75])
    assert (u.images[0, 0] == 64).all() and (u.images[0, 1] == 51).all() and (u.images[0, 2] == 75).all()
    assert window(np.array([20.0]), 80, 200)[0] == pytest.approx(0.2)
    grey3 = load_rsna_ich(root, image_size=4, channels=3, **kw)  # one window, repeated
    assert grey3.images.shape == (1, 3, 4, 4) and (grey3.images == 64).all()


def test_twelve_bit_repair(tmp_path, kw):
    pytest.importorskip("pydicom")
    root = write_rsna(tmp_path / "r12", slices=SLICES[:1])
    # stored unsigned 12 bit with intercept 0: air (-1000 HU) stored as 3096, brain 20 HU as 20
    stored = np.where(np.arange(64).reshape(8, 8) % 2 == 0, 3096, 20)
    write_dicom(root / "stage_2_train" / "ID_63eb1e259.dcm", stored, intercept=0, bits_stored=12, signed=False)
    fixed = load_rsna_ich(root, image_size=None, **kw).images[0, 0]
    np.testing.assert_array_equal(fixed, np.where(stored == 3096, 0, 64))  # air dark, brain 64
    raw = load_rsna_ich(root, image_size=None, fix_pixel_representation=False, **kw).images[0, 0]
    np.testing.assert_array_equal(raw, np.where(stored == 3096, 255, 64))  # air read as 3096 HU: white


def test_cache_reused_without_pydicom(rsna, kw, monkeypatch):
    plain = load_rsna_ich(rsna, image_size=4, **kw)
    assert len(list(Path(kw["cache_dir"]).glob("*.npy"))) == 1
    heads = list(Path(kw["cache_dir"]).glob("*.headers.json"))
    assert len(heads) == 1  # header ids are cached with the pixels of the first decode
    heads[0].unlink()  # an entry without them: read the headers only, then cache them
    first = load_rsna_ich(rsna, image_size=4, groups="patient", **kw)
    assert heads[0].exists() and len(list(Path(kw["cache_dir"]).glob("*.npy"))) == 1
    assert list(first.groups) == [s[1] for s in SLICES]
    np.testing.assert_array_equal(plain.images, first.images)
    assert first.extra["study_id"][0].startswith("1.2.3.")
    monkeypatch.setitem(sys.modules, "pydicom", None)  # a decode now raises ImportError
    again = load_rsna_ich(rsna, image_size=4, groups="patient", **kw)
    np.testing.assert_array_equal(first.images, again.images)
    np.testing.assert_array_equal(first.labels, again.labels)
    assert list(again.groups) == list(first.groups)
    with pytest.raises(ImportError, match="pip install pydicom"):  # another window: a new entry
        load_rsna_ich(rsna, image_size=4, windows=(80, 200), **kw)
    with pytest.raises(ImportError, match="pip install pydicom"):
        load_rsna_ich(rsna, image_size=4, use_cache=False, **kw)


def test_subsets(rsna, kw):
    pos = load_rsna_ich(rsna, image_size=4, max_negatives=0, **kw)
    assert sorted(pos.extra["image_id"]) == sorted(s[0] for s in SLICES if s[2])
    one = load_rsna_ich(rsna, image_size=4, max_negatives=1, **kw)
    assert len(one) == 5 and (one.extra["any"] == 0).sum() == 1
    a, b = (load_rsna_ich(rsna, image_size=4, max_images=3, seed=4, **kw) for _ in range(2))
    assert len(a) == 3 and list(a.extra["image_id"]) == list(b.extra["image_id"])
    sel = load_rsna_ich(rsna, image_size=4, image_ids=["ID_b7e2f5aa0", "ID_63eb1e259"], **kw)
    assert list(sel.extra["image_id"]) == ["ID_63eb1e259", "ID_b7e2f5aa0"]
    with pytest.raises(DataError, match="ID_nothere"):
        load_rsna_ich(rsna, image_ids=["ID_nothere"], **kw)


def test_bad_inputs(tmp_path, rsna, kw):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="stage_2_train.csv"):
        load_rsna_ich(tmp_path / "empty", **kw)
    with pytest.raises(DataError, match="unknown class.*'any'"):
        load_rsna_ich(rsna, classes=["any"], **kw)
    with pytest.raises(DataError, match="unknown window"):
        load_rsna_ich(rsna, windows="lung", **kw)
    with pytest.raises(DataError, match="groups"):
        load_rsna_ich(rsna, groups="hospital", **kw)

    def csv_error(lines, match, **more):
        root = tmp_path / f"bad{len(list(tmp_path.iterdir()))}"
        root.mkdir()
        (root / "stage_2_train.csv").write_text("\n".join(lines) + "\n")
        with pytest.raises(DataError, match=match):
            load_rsna_ich(root, **kw, **more)

    good = csv_lines(SLICES[:1])
    csv_error(["ID,Probability"] + good[1:], r"lacks column\(s\) \['Label'\]")
    csv_error(good + ["ID_63eb1e259_chronic,1"], "unknown subtype 'chronic'")
    csv_error(good + ["ID_63eb1e259_epidural,0"], "ID_63eb1e259_epidural more than once")
    csv_error([ln for ln in good if "subdural" not in ln], "no row ID_63eb1e259_subdural")
    csv_error(good + ["ID_ffeeddcc_epidural,2"], "Label '2'")
    csv_error(good + ["63eb1e259-epidural,1"], "ID_<image>_<subtype>")
    # a conflict resolved as positive, then the DICOM is missing
    root = tmp_path / "conflict"
    write_rsna(root, slices=SLICES[:2], lines=csv_lines(SLICES[:2]) + ["ID_63eb1e259_subdural,1"])
    ds = load_rsna_ich(root, on_conflict="max", image_size=4, **kw)
    assert ds.labels[row_of(ds, "ID_63eb1e259")].tolist() == [1, 0, 0, 0, 1]
    (root / "stage_2_train" / "ID_2669954a7.dcm").unlink()
    with pytest.raises(DataError, match=r"ID_2669954a7\.dcm .*not found"):
        load_rsna_ich(root, on_conflict="max", **kw)
    part = load_rsna_ich(root, on_conflict="max", skip_missing=True, image_size=4, **kw)
    assert list(part.extra["image_id"]) == ["ID_63eb1e259"] and part.extra["skipped_missing"] == 1
    (root / "stage_2_train" / "ID_63eb1e259.dcm").write_bytes(b"not a dicom file")
    with pytest.raises(DataError, match="cannot read DICOM file .*ID_63eb1e259"):
        load_rsna_ich(root, on_conflict="max", skip_missing=True, image_size=4, **kw)


def test_registry_rsna_ich_split_by_patient(rsna, tmp_path):
    parts = registry.load_split("rsna_ich", str(rsna), image_size=4, cache_dir=tmp_path / "c", progress=False)
    assert parts.val is None and len(parts.train) + len(parts.test) == len(SLICES)
    assert all(p.class_names == ICH_SUBTYPES for p in parts if p is not None)
    assert not set(parts.train.groups) & set(parts.test.groups)  # a patient's slices stay together
    assert set(parts.train.groups) | set(parts.test.groups) == {s[1] for s in SLICES}
    assert "rsna_ich" in registry.DATASETS and "isic2018" in registry.DATASETS


# ============================================================================ synthetic
def test_ich_prevalence_constants():
    assert syn.ICH_CLASSES == ["epidural", "intraparenchymal", "intraventricular", "subarachnoid", "subdural"]
    assert syn.ICH_PREVALENCE == {
        "epidural": 0.05,
        "intraparenchymal": 0.192,
        "intraventricular": 0.1392,
        "subarachnoid": 0.1896,
        "subdural": 0.2508,
    }  # RSNA x 4, epidural 5 %


def test_make_ich_deterministic_shape_dtype():
    a, b, c = syn.make_ich(60, seed=3), syn.make_ich(60, seed=3), syn.make_ich(60, seed=4)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.groups, b.groups)
    assert not np.array_equal(a.images, c.images)
    assert a.images.shape == (60, 1, 32, 32) and a.images.dtype == np.uint8 and a.labels.dtype == np.float32
    assert a.class_names == syn.ICH_CLASSES and a.task == MULTILABEL and a.name == "synthetic-ich"
    assert a.images.std() > 20
    big = syn.make_ich(4, image_size=64, seed=1, channels=3)
    assert big.images.shape == (4, 3, 64, 64) and (big.images[:, 0] == big.images[:, 2]).all()
    sub = syn.make_ich(60, seed=3, classes=["subdural", "epidural"])
    np.testing.assert_array_equal(sub.labels, a.labels[:, [4, 0]])  # a class's labels ignore the others
    with pytest.raises(DataError, match="chronic"):
        syn.make_ich(4, classes=["chronic"])
    with pytest.raises(DataError, match="28..224"):
        syn.make_ich(4, image_size=16)


def test_ich_prevalences_within_tolerance():
    n = 40_000
    groups = syn._patients(n, np.random.default_rng(0))
    for prevalence, target in ((None, syn.ICH_PREVALENCE), ("rsna", syn.RSNA_ICH_PREVALENCE)):
        y = syn.sample_ich_labels(n, seed=0, prevalence=prevalence, groups=groups)
        for j, c in enumerate(syn.ICH_CLASSES):
            p = target[c]
            assert abs(y[:, j].mean() - p) < 6 * np.sqrt(p * (1 - p) / n) + 0.001, (prevalence, c)
    y = syn.sample_ich_labels(n, seed=0)
    assert (y.sum(1) >= 2).mean() > 0.08  # subtypes co-occur (correlation 0.5)
    small = syn.make_ich(300, seed=0)
    assert (small.labels.sum(0) >= 5).all()  # a few hundred images carry every class
    y0 = syn.sample_ich_labels(n, seed=1, prevalence={"epidural": 0.3}, correlation=0.0)
    assert abs(y0[:, 0].mean() - 0.3) < 0.015 and abs(np.corrcoef(y0.T)[0, 4]) < 0.03


def test_ich_bleeds_are_drawn_where_labelled():
    lab = np.zeros((6, 5), np.float32)
    lab[np.arange(1, 6), np.arange(5)] = 1
    rows = [syn.render_ich(lab[i : i + 1], image_size=64, seed=2)[0, 0].astype(int) for i in range(6)]
    base = rows[0]
    for j in range(5):  # same anatomy; each subtype brightens its pixels towards blood
        diff = rows[j + 1] - base
        assert diff.max() > 40 and (diff > 20).sum() >= 4, syn.ICH_CLASSES[j]
    lesion = np.abs(rows[3] - base) > 20  # intraventricular: within the ventricles, near the middle
    ys, xs = np.nonzero(lesion)
    assert abs(xs.mean() - 32) < 10
    invisible = [syn.render_ich(lab[i : i + 1], image_size=32, seed=2, strength=0.0) for i in range(6)]
    assert all(np.array_equal(invisible[0], x) for x in invisible)
