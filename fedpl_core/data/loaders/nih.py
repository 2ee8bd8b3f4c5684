"""NIH ChestX-ray14 (Wang et al. 2017), read from the files as NIH ships them.

Layout (any nesting below ``root`` works; the images are found by file name)::

    root/
      Data_Entry_2017_v2020.csv   (or Data_Entry_2017.csv, either also as .csv.gz)
      train_val_list.txt          official split (optional)
      test_list.txt
      images_001/images/00000001_000.png ... images_012/images/*.png

``Data_Entry_2017.csv`` header (trailing comma, so pandas adds an ``Unnamed: 11``
column; the bracketed names hold commas, so they read as two columns each)::

    Image Index,Finding Labels,Follow-up #,Patient ID,Patient Age,Patient Gender,
    View Position,OriginalImage[Width,Height],OriginalImagePixelSpacing[x,y],

with ages like ``058Y``.  ``Data_Entry_2017_v2020.csv`` says ``Patient Sex`` instead
of ``Patient Gender`` and stores ages as integers.  Only ``Image Index``, ``Finding
Labels`` and ``Patient ID`` are required (``View Position`` when filtering views).
``Finding Labels`` joins findings with ``|``; ``No Finding`` is the all-zero row.
An ``Image Index`` listed twice is kept once, with a warning (twice with different
findings: an error; :func:`fedpl_core.data.files.first_rows`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import numpy as np

from ..base import MULTILABEL, DataError, ImageDataset
from ..cache import DecodeOptions, decode_options
from ..files import build_dataset, check_classes, first_rows, index_files, read_name_list, read_table, require_file

#: The 14 findings in the standard order (Wang et al.; MedMNIST's ChestMNIST order).
NIH_CLASSES = [
    "Atelectasis",
    "Cardiomegaly",
    "Effusion",
    "Infiltration",
    "Mass",
    "Nodule",
    "Pneumonia",
    "Pneumothorax",
    "Consolidation",
    "Edema",
    "Emphysema",
    "Fibrosis",
    "Pleural_Thickening",
    "Hernia",
]
NO_FINDING = "No Finding"
NIH_CSV_NAMES = (
    "Data_Entry_2017_v2020.csv",
    "Data_Entry_2017_v2020.csv.gz",
    "Data_Entry_2017.csv",
    "Data_Entry_2017.csv.gz",
)
SPLIT_FILES = {"train_val": "train_val_list.txt", "test": "test_list.txt"}
REQUIRED_COLUMNS = ("Image Index", "Finding Labels", "Patient ID")


def parse_finding_labels(findings: Sequence[str], image_names: Sequence[str], what: str = "NIH") -> np.ndarray:
    """``Finding Labels`` strings -> float32 multi-hot ``[N, 14]`` over :data:`NIH_CLASSES`."""
    col = {c: j for j, c in enumerate(NIH_CLASSES)}
    out = np.zeros((len(findings), len(NIH_CLASSES)), np.float32)
    for i, s in enumerate(findings):
        for tok in str(s).split("|"):
            tok = tok.strip()
            if tok == NO_FINDING:
                continue
            if tok not in col:
                raise DataError(
                    f"{what}: unknown finding label {tok!r} in 'Finding Labels' = {s!r} of image "
                    f"{image_names[i]!r} (CSV row {i + 2}); known labels: {NIH_CLASSES + [NO_FINDING]}"
                )
            out[i, col[tok]] = 1.0
    return out


def _age_years(v: str) -> float:
    m = re.fullmatch(r"\s*0*(\d+)\s*([YMD]?)\s*", str(v))
    if not m:
        return float("nan")
    n, unit = int(m.group(1)), m.group(2)
    return n / 12 if unit == "M" else n / 365 if unit == "D" else float(n)


def load_nih(
    root: str | os.PathLike,
    *,
    csv: str | os.PathLike | None = None,
    split: str | None = None,
    classes: Sequence[str] | None = None,
    views: Sequence[str] | None = None,
    max_images: int | None = None,
    seed: int = 0,
    skip_missing: bool = False,
    name: str = "nih",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """NIH ChestX-ray14 as a multi-label :class:`ImageDataset`.

    Args:
        root: folder holding the label CSV and (somewhere below) the PNG images.
        csv: the label CSV; default: the first of :data:`NIH_CSV_NAMES` found in
            ``root`` (up to 3 levels down), the corrected v2020 file first.
        split: ``"train_val"`` / ``"test"`` keeps the images listed in
            ``train_val_list.txt`` / ``test_list.txt``; None keeps all.
        classes: classes to keep, in this order (default :data:`NIH_CLASSES`).
        views: keep rows whose ``View Position`` is one of these (e.g. ``("PA",)``).
        max_images: keep a random subset of this size (after the filters; ``seed``).
        skip_missing: drop rows whose image file is absent (a partial download)
            instead of raising; the count is in ``extra["skipped_missing"]``.
        decode, ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions` (image
            size, channels (default 1), cache, mmap, progress) or its fields as keywords.

    ``groups`` are the patient ids; ``extra`` holds per-image ``paths``, ``image_index``,
    ``view``, ``age`` (years), ``sex`` and ``follow_up``.
    """
    decode = decode_options(decode, **decode_kw)
    what = "NIH ChestX-ray14"
    classes = check_classes(classes, NIH_CLASSES, what) if classes is not None else list(NIH_CLASSES)
    csv_path = csv if csv is not None else require_file(root, NIH_CSV_NAMES, what)
    df = read_table(csv_path, REQUIRED_COLUMNS + (("View Position",) if views else ()), what)
    df = df[df["Image Index"].str.strip() != ""].reset_index(drop=True)
    df["Image Index"] = df["Image Index"].str.strip()

    labels = parse_finding_labels(df["Finding Labels"].tolist(), df["Image Index"].tolist(), what)
    first = first_rows(df["Image Index"].tolist(), labels, NIH_CLASSES, what, os.path.basename(str(csv_path)))
    df, labels = df[first].reset_index(drop=True), labels[first]
    keep = np.ones(len(df), bool)
    if split is not None:
        if split not in SPLIT_FILES:
            raise DataError(f"{what}: split must be one of {list(SPLIT_FILES)} or None, got {split!r}")
        listed = set(read_name_list(require_file(root, [SPLIT_FILES[split]], f"{what} split {split!r}")))
        keep &= df["Image Index"].isin(listed).to_numpy()
    if views:
        wanted = {v.strip().upper() for v in views}
        keep &= df["View Position"].str.strip().str.upper().isin(wanted).to_numpy()
    rows = np.flatnonzero(keep)
    df = df.iloc[rows].reset_index(drop=True)
    labels = labels[rows][:, [NIH_CLASSES.index(c) for c in classes]]

    index = index_files(root, (".png",), what=what)
    present = df["Image Index"].isin(index.keys()).to_numpy()
    if not present.all() and not skip_missing:
        missing = df["Image Index"][~present].tolist()
        raise DataError(
            f"{what}: image file {missing[0]!r} (from {os.path.basename(str(csv_path))}) not found "
            f"below {root}"
            + (f"; {len(missing)} images missing in all" if len(missing) > 1 else "")
            + " (skip_missing=True drops them)"
        )
    df, labels = df[present].reset_index(drop=True), labels[present]
    names = df["Image Index"].tolist()
    sex_col = next((c for c in ("Patient Sex", "Patient Gender") if c in df.columns), None)
    pid = df["Patient ID"].str.strip()
    groups = [str(int(p)) if p.isdigit() else p for p in pid]
    meta = {
        "image_index": names,
        "view": df["View Position"].str.strip().tolist() if "View Position" in df.columns else [""] * len(df),
        "age": [_age_years(a) for a in df["Patient Age"]] if "Patient Age" in df.columns else [np.nan] * len(df),
        "sex": df[sex_col].str.strip().tolist() if sex_col else [""] * len(df),
        "follow_up": df["Follow-up #"].tolist() if "Follow-up #" in df.columns else [""] * len(df),
    }
    return build_dataset(
        [index[n] for n in names],
        labels,
        classes,
        task=MULTILABEL,
        groups=groups,
        meta=meta,
        name=name,
        root=root,
        max_images=max_images,
        seed=seed,
        decode=decode,
        channels=1,
        info={
            "csv": str(csv_path),
            "split": split,
            "views": None if views is None else list(views),
            "skipped_missing": int((~present).sum()),
        },
    )
