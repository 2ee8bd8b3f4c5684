"""Tiny copies of the published data-set layouts, written into a test's ``tmp_path``.

File names, CSV headers, folder nesting and compression follow the releases; the
rows reuse real examples where they are known (first CheXpert / NIH rows).  Every
image is filled with one distinct value (gray) or colour, so a test can tell which
file ended up in which row of the array whatever the resize.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from PIL import Image


def write_png(path: Path, size: tuple[int, int], value: int, mode: str = "L") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "L":
        img = Image.new("L", size, value)
    elif mode == "RGBA":
        img = Image.new("RGBA", size, (value, value, value, 255))
    elif mode == "I;16":
        img = Image.fromarray(np.full(size[::-1], value * 256, np.uint16))
    else:
        img = Image.new("RGB", size, (value, value, value))
    img.save(path)


def write_jpg(path: Path, size: tuple[int, int], rgb: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, rgb).save(path, quality=95)


def write_text(path: Path, text: str, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wt", encoding="utf-8", newline="") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


# ---------------------------------------------------------------------------- NIH
NIH_HEADER_2017 = (
    "Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Gender,"
    "View Position,OriginalImage[Width,Height],OriginalImagePixelSpacing[x,y],"
)
NIH_HEADER_2020 = (
    "Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Sex,"
    "View Position,OriginalImage[Width,Height],OriginalImagePixelSpacing[x,y]"
)
# image, findings, follow-up, patient, age, sex, view, (image w, h) in the fixture
NIH_ROWS = [
    ("00000001_000.png", "Cardiomegaly", 0, 1, 58, "M", "PA", (40, 40)),
    ("00000001_001.png", "Cardiomegaly|Emphysema", 1, 1, 58, "M", "PA", (36, 30)),
    ("00000002_000.png", "No Finding", 0, 2, 81, "M", "AP", (24, 24)),
    ("00000003_000.png", "Hernia|Pleural_Thickening|Effusion", 0, 3, 74, "F", "PA", (50, 44)),
    ("00000004_000.png", "Mass|Nodule", 0, 4, 82, "M", "AP", (40, 40)),
    ("00000005_000.png", "Infiltration", 0, 5, 69, "F", "PA", (32, 48)),
    ("00000005_001.png", "Atelectasis|Pneumothorax", 1, 5, 69, "F", "PA", (40, 40)),
    ("00000006_000.png", "No Finding", 0, 6, 60, "M", "PA", (28, 28)),
]
NIH_TEST_LIST = ["00000002_000.png", "00000005_000.png", "00000005_001.png"]


def nih_value(i: int) -> int:
    return 20 + 25 * i


def write_nih(
    root: Path,
    version: str = "2017",
    gz: bool = False,
    split_files: bool = True,
    rows=NIH_ROWS,
    skip_images: tuple[str, ...] = (),
) -> Path:
    """``Data_Entry_2017.csv`` (or ``_v2020``), images spread over ``images_001/images``
    and ``images_002/images``, ``train_val_list.txt`` / ``test_list.txt``."""
    lines = [NIH_HEADER_2017 if version == "2017" else NIH_HEADER_2020]
    for i, (img, find, fu, pid, age, sex, view, (w, h)) in enumerate(rows):
        a = f"{age:03d}Y" if version == "2017" else str(age)
        line = f"{img},{find},{fu},{pid},{a},{sex},{view},{w * 64},{h * 64},0.143,0.143"
        lines.append(line + ("," if version == "2017" else ""))
        if img not in skip_images:
            folder = "images_001" if i < 4 else "images_002"
            write_png(root / folder / "images" / img, (w, h), nih_value(i), "RGBA" if i == 3 else "L")
    name = "Data_Entry_2017.csv" if version == "2017" else "Data_Entry_2017_v2020.csv"
    write_text(root / name, "\n".join(lines) + "\n", gz=gz)
    if split_files:
        names = [r[0] for r in rows]
        write_text(root / "train_val_list.txt", "\n".join(n for n in names if n not in NIH_TEST_LIST) + "\n")
        write_text(root / "test_list.txt", "\n".join(NIH_TEST_LIST) + "\n")
    return root


# ------------------------------------------------------------------------- MedMNIST
def write_medmnist(
    root: Path, flag: str, size: int = 28, n=(6, 2, 3), seed: int = 0, drop_key: str | None = None
) -> dict[str, np.ndarray]:
    """``{flag}.npz`` / ``{flag}_{size}.npz`` with the six published arrays."""
    rng = np.random.default_rng(seed)
    rgb = flag in ("dermamnist", "pathmnist", "bloodmnist", "retinamnist")
    arrays = {}
    for split, m in zip(("train", "val", "test"), n):
        shape = (m, size, size, 3) if rgb else (m, size, size)
        arrays[f"{split}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        if flag == "chestmnist":
            arrays[f"{split}_labels"] = rng.integers(0, 2, (m, 14)).astype(np.uint8)
        else:
            k = {"dermamnist": 7, "pneumoniamnist": 2, "pathmnist": 9}[flag]
            arrays[f"{split}_labels"] = (np.arange(m) % k).reshape(m, 1).astype(np.uint8)
    if drop_key:
        arrays.pop(drop_key)
    root.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(root / (f"{flag}.npz" if size == 28 else f"{flag}_{size}.npz"), **arrays)
    return arrays


# ------------------------------------------------------------------------ HAM10000
HAM_ROWS = [  # lesion_id, image_id, dx, dx_type, age, sex, localization
    ("HAM_0000118", "ISIC_0027419", "bkl", "histo", "80.0", "male", "scalp"),
    ("HAM_0000118", "ISIC_0025030", "bkl", "histo", "80.0", "male", "scalp"),
    ("HAM_0002730", "ISIC_0026769", "bkl", "histo", "80.0", "male", "scalp"),
    ("HAM_0001466", "ISIC_0031633", "nv", "histo", "75.0", "male", "ear"),
    ("HAM_0002761", "ISIC_0029176", "mel", "histo", "60.0", "male", "face"),
    ("HAM_0005132", "ISIC_0025837", "bcc", "histo", "70.0", "female", "back"),
    ("HAM_0001396", "ISIC_0025276", "akiec", "histo", "55.0", "female", "trunk"),
    ("HAM_0004234", "ISIC_0029396", "df", "consensus", "50.0", "female", "lower extremity"),
    ("HAM_0001949", "ISIC_0025767", "vasc", "consensus", "45.0", "male", "abdomen"),
    ("HAM_0001949", "ISIC_0032417", "vasc", "consensus", "45.0", "male", "abdomen"),
]
ISIC_ORDER = ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]


def ham_rgb(i: int) -> tuple[int, int, int]:
    return (10 + 20 * i, 200 - 15 * i, 60 + 10 * i)


def ham_rows(n_lesions: int, seed: int = 0) -> list[tuple[str, ...]]:
    """Metadata rows of ``n_lesions`` lesions with 1 to 3 images each (HAM10000 has
    about 1.35 images per lesion), diagnoses cycling through the seven codes."""
    rng = np.random.default_rng(seed)
    dx = [c.lower() for c in ISIC_ORDER]
    rows, k = [], 0
    for lesion in range(n_lesions):
        for _ in range(int(rng.choice([1, 1, 2, 3]))):
            rows.append((f"HAM_{lesion:07d}", f"ISIC_{k:07d}", dx[lesion % 7], "histo", "50.0", "male", "back"))
            k += 1
    return rows


def write_ham10000(
    root: Path,
    metadata: bool = True,
    isic: bool = False,
    groupings: bool = False,
    rows=HAM_ROWS,
    dataset_column: bool = False,
    size: tuple[int, int] | None = None,
) -> Path:
    """HAM10000 (metadata + ``HAM10000_images_part_{1,2}``) and/or ISIC 2018 Task 3
    (``ISIC2018_Task3_Training_GroundTruth.csv`` + ``ISIC2018_Task3_Training_Input/``).
    Image ``i`` is ``(30 + i) x 24`` px (wider than tall, as HAM10000's 600x450) unless
    ``size`` is given."""
    if metadata:
        head = "lesion_id,image_id,dx,dx_type,age,sex,localization" + (",dataset" if dataset_column else "")
        lines = [head] + [",".join(r) + (",vidir_modern" if dataset_column else "") for r in rows]
        write_text(root / "HAM10000_metadata.csv", "\n".join(lines) + "\n")
        for i, r in enumerate(rows):
            part = "HAM10000_images_part_1" if i % 2 == 0 else "HAM10000_images_part_2"
            write_jpg(root / part / f"{r[1]}.jpg", size or (30 + i, 24), ham_rgb(i % 10))
    if isic:
        inp = root / "ISIC2018_Task3_Training_Input"
        lines = ["image," + ",".join(ISIC_ORDER)]
        for i, r in enumerate(rows):
            onehot = ["1.0" if c.lower() == r[2] else "0.0" for c in ISIC_ORDER]
            lines.append(f"{r[1]}," + ",".join(onehot))
            write_jpg(inp / f"{r[1]}.jpg", size or (30 + i, 24), ham_rgb(i % 10))
        write_text(inp / "ATTRIBUTION.txt", "fixture\n")
        write_text(inp / "LICENSE.txt", "fixture\n")
        write_text(
            root / "ISIC2018_Task3_Training_GroundTruth" / "ISIC2018_Task3_Training_GroundTruth.csv",
            "\n".join(lines) + "\n",
        )
        if groupings:
            g = ["image,lesion_id,diagnosis_confirm_type"] + [f"{r[1]},{r[0]},{r[3]}" for r in rows]
            write_text(root / "ISIC2018_Task3_Training_LesionGroupings.csv", "\n".join(g) + "\n")
    return root


# ------------------------------------------------------------------------ CheXpert
CHEXPERT_HEADER = (
    "Path,Sex,Age,Frontal/Lateral,AP/PA,No Finding,Enlarged Cardiomediastinum,"
    "Cardiomegaly,Lung Opacity,Lung Lesion,Edema,Consolidation,Pneumonia,Atelectasis,"
    "Pneumothorax,Pleural Effusion,Pleural Other,Fracture,Support Devices"
)
CHEXPERT_TRAIN_ROWS = [
    # the first two rows of the published train.csv
    "CheXpert-v1.0-small/train/patient00001/study1/view1_frontal.jpg,Female,68,Frontal,AP,1.0,,,,,,,,,0.0,,,,1.0",
    "CheXpert-v1.0-small/train/patient00002/study2/view1_frontal.jpg,Female,87,Frontal,AP,,,-1.0,1.0,,-1.0,-1.0,,-1.0,,-1.0,,1.0,",
    "CheXpert-v1.0-small/train/patient00002/study1/view1_frontal.jpg,Female,83,Frontal,AP,,,,1.0,,,-1.0,,,,,,1.0,",
    "CheXpert-v1.0-small/train/patient00002/study1/view2_lateral.jpg,Female,83,Lateral,,,,,1.0,,,,,,,,,1.0,",
    "CheXpert-v1.0-small/train/patient00003/study1/view1_frontal.jpg,Male,41,Frontal,AP,,,,,,1.0,,,,0.0,,,,",
    "CheXpert-v1.0-small/train/patient00004/study1/view1_frontal.jpg,Female,20,Frontal,PA,1.0,0.0,,,,,,,,0.0,0.0,,,",
]
CHEXPERT_VALID_ROWS = [
    "CheXpert-v1.0-small/valid/patient64541/study1/view1_frontal.jpg,Male,73,Frontal,AP,0.0,1.0,1.0,1.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0",
    "CheXpert-v1.0-small/valid/patient64542/study1/view1_frontal.jpg,Male,70,Frontal,PA,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0",
    "CheXpert-v1.0-small/valid/patient64542/study1/view2_lateral.jpg,Male,70,Lateral,,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0",
]


def write_chexpert(
    root: Path, folder: str = "CheXpert-v1.0-small", train_rows=CHEXPERT_TRAIN_ROWS, header: str = CHEXPERT_HEADER
) -> Path:
    """``{root}/{folder}/train.csv``, ``valid.csv`` and the JPGs their ``Path`` names
    (relative to ``root``).  Returns the data-set folder."""
    for csv_name, rows in (("train.csv", train_rows), ("valid.csv", CHEXPERT_VALID_ROWS)):
        rows = [r.replace("CheXpert-v1.0-small/", f"{folder}/", 1) for r in rows]
        write_text(root / folder / csv_name, "\n".join([header, *rows]) + "\n")
        for i, r in enumerate(rows):
            write_jpg(root / r.split(",")[0], (32 + 4 * i, 40), (30 * i + 20,) * 3)
    return root / folder


# --------------------------------------------------------------------- MIMIC-CXR-JPG
MIMIC_LABEL_HEADER = (
    "subject_id,study_id,Atelectasis,Cardiomegaly,Consolidation,Edema,"
    "Enlarged Cardiomediastinum,Fracture,Lung Lesion,Lung Opacity,No Finding,"
    "Pleural Effusion,Pleural Other,Pneumonia,Pneumothorax,Support Devices"
)
MIMIC_LABEL_ROWS = [
    "10000032,50414267,,,,,,,,,1.0,,,,,",
    "10000032,53189527,,,,,,,,,1.0,,,,,",
    "10000764,57375967,,,1.0,,,,,,,,,-1.0,,",
    "10000898,50771383,,,,,,,,,1.0,,,,,",
]
MIMIC_META_HEADER = (
    "dicom_id,subject_id,study_id,PerformedProcedureStepDescription,ViewPosition,"
    "Rows,Columns,StudyDate,StudyTime,ProcedureCodeSequence_CodeMeaning,"
    "ViewCodeSequence_CodeMeaning,PatientOrientationCodeSequence_CodeMeaning"
)
MIMIC_META_ROWS = [  # dicom_id, subject, study, view
    ("02aa804e-bde0afdd-112c0b34-7bc16630-4e384014", "10000032", "50414267", "PA"),
    ("174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962", "10000032", "50414267", "LATERAL"),
    ("2a2277a9-b0ded155-c0de8eb9-c124d10e-82c5caab", "10000032", "53189527", "AP"),
    ("096052b7-d256dc40-453a102b-fa7d01c6-1b22c6b4", "10000764", "57375967", "AP"),
    ("b79e55c3-735ce5ac-64412506-cdc9ea79-f1af521f", "10000764", "57375967", "LL"),
    ("dcfeeac7-4af9c3ac-f8d6d6e5-0e9c9c0a-0c8b2d46", "10000935", "51178377", "PA"),  # study without labels
]
MIMIC_SPLIT_ROWS = {
    "02aa804e-bde0afdd-112c0b34-7bc16630-4e384014": "train",
    "174413ec-4ec4c1f7-34ea26b7-c5f994f8-79ef1962": "train",
    "2a2277a9-b0ded155-c0de8eb9-c124d10e-82c5caab": "train",
    "096052b7-d256dc40-453a102b-fa7d01c6-1b22c6b4": "test",
    "b79e55c3-735ce5ac-64412506-cdc9ea79-f1af521f": "test",
    "dcfeeac7-4af9c3ac-f8d6d6e5-0e9c9c0a-0c8b2d46": "validate",
}


def mimic_value(i: int) -> int:
    return 40 + 30 * i


def write_mimic(root: Path, gz: bool = True) -> Path:
    """PhysioNet layout ``mimic-cxr-jpg/2.0.0/`` with the three ``.csv.gz`` tables and
    ``files/pXX/pSUBJECT/sSTUDY/DICOM.jpg``.  Returns the release folder."""
    rel = root / "mimic-cxr-jpg" / "2.0.0"
    write_text(rel / "mimic-cxr-2.0.0-chexpert.csv", "\n".join([MIMIC_LABEL_HEADER, *MIMIC_LABEL_ROWS]) + "\n", gz)
    meta = [MIMIC_META_HEADER]
    for i, (d, s, st, v) in enumerate(MIMIC_META_ROWS):
        meta.append(
            f"{d},{s},{st},CHEST (PA AND LAT),{v},3056,2544,21800506,213014.531,"
            f"CHEST (PA AND LAT),postero-anterior,Erect"
        )
        write_jpg(rel / "files" / f"p{s[:2]}" / f"p{s}" / f"s{st}" / f"{d}.jpg", (30, 36), (mimic_value(i),) * 3)
    write_text(rel / "mimic-cxr-2.0.0-metadata.csv", "\n".join(meta) + "\n", gz)
    split = ["dicom_id,study_id,subject_id,split"] + [
        f"{d},{st},{s},{MIMIC_SPLIT_ROWS[d]}" for d, s, st, _ in MIMIC_META_ROWS
    ]
    write_text(rel / "mimic-cxr-2.0.0-split.csv", "\n".join(split) + "\n", gz)
    return rel


# ------------------------------------------------------------------------ TB / COVID
def write_tb(root: Path, n_normal: int = 11, n_tb: int = 3) -> Path:
    d = root / "TB_Chest_Radiography_Database"
    for i in range(1, n_normal + 1):
        write_png(d / "Normal" / f"Normal-{i}.png", (30, 30), 5 * i)
    for i in range(1, n_tb + 1):
        write_png(d / "Tuberculosis" / f"Tuberculosis-{i}.png", (34, 30), 200 + 10 * i, "RGB")
    (d / "Normal.metadata.xlsx").write_bytes(b"PK\x03\x04 not read")
    (d / "Tuberculosis.metadata.xlsx").write_bytes(b"PK\x03\x04 not read")
    return d


def write_covid(root: Path, images_subfolder: bool = True) -> Path:
    d = root / "COVID-19_Radiography_Dataset"
    counts = {"COVID": 3, "Normal": 4, "Lung_Opacity": 2, "Viral Pneumonia": 2}
    values = {"COVID": 220, "Normal": 30, "Lung_Opacity": 100, "Viral Pneumonia": 150}
    for cls, n in counts.items():
        for i in range(1, n + 1):
            sub = d / cls / "images" if images_subfolder else d / cls
            write_png(sub / f"{cls}-{i}.png", (30, 30), values[cls] + i)
            if images_subfolder:
                write_png(d / cls / "masks" / f"{cls}-{i}.png", (16, 16), 255)
        (d / f"{cls}.metadata.xlsx").write_bytes(b"PK\x03\x04 not read")
    (d / "README.md.txt").write_text("fixture\n")
    return d
