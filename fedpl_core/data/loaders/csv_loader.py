"""Image data sets described by a table of (image path, label columns): a generic
loader, CheXpert and MIMIC-CXR-JPG.

Label cells follow the CheXpert convention, also used by MIMIC-CXR-JPG: ``1.0``
positive, ``0.0`` negative, ``-1.0`` uncertain, blank = not mentioned.  ``uncertain``
chooses the U-Zeros / U-Ones policy or ``"ignore"`` (entry marked unknown in
``label_mask``); blank cells count as negatives (``blank="zeros"``, the usual choice)
or as unknown (``blank="ignore"``).

CheXpert (``CheXpert-v1.0-small/`` or ``CheXpert-v1.0/``; ``train.csv``, ``valid.csv``)::

    Path,Sex,Age,Frontal/Lateral,AP/PA,No Finding,Enlarged Cardiomediastinum,Cardiomegaly,
    Lung Opacity,Lung Lesion,Edema,Consolidation,Pneumonia,Atelectasis,Pneumothorax,
    Pleural Effusion,Pleural Other,Fracture,Support Devices
    CheXpert-v1.0-small/train/patient00001/study1/view1_frontal.jpg,Female,68,Frontal,AP,1.0,,,,,,,,,0.0,,,,1.0

``Path`` is relative to the folder that *contains* the data-set folder.

MIMIC-CXR-JPG 2.0.0 (PhysioNet): ``mimic-cxr-2.0.0-chexpert.csv.gz`` (``subject_id,
study_id`` + the 14 labels, one row per study), ``mimic-cxr-2.0.0-metadata.csv.gz``
(``dicom_id, subject_id, study_id, PerformedProcedureStepDescription, ViewPosition,
Rows, Columns, ...``, one row per image), ``mimic-cxr-2.0.0-split.csv.gz``
(``dicom_id, study_id, subject_id, split`` with train / validate / test) and images
``files/p10/p10000032/s50414267/{dicom_id}.jpg``.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import MULTICLASS, MULTILABEL, DataError, DataWarning, ImageDataset
from ..cache import DecodeOptions, decode_options
from ..files import build_dataset, check_classes, first_rows, parse_label_values, read_table, require_file
from ..safeopen import not_regular

#: The 14 CheXpert observations, in the column order of CheXpert's CSVs.
CHEXPERT_CLASSES = [
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
]
#: CheXpert names of the NIH findings they share (the other shared ones are spelled alike).
CHEXPERT_TO_NIH = {"Pleural Effusion": "Effusion"}
CHEXPERT_DIRS = ("CheXpert-v1.0-small", "CheXpert-v1.0")
MIMIC_LABEL_FILES = {"chexpert": "mimic-cxr-2.0.0-chexpert.csv", "negbio": "mimic-cxr-2.0.0-negbio.csv"}
MIMIC_METADATA = "mimic-cxr-2.0.0-metadata.csv"
MIMIC_SPLIT = "mimic-cxr-2.0.0-split.csv"
MIMIC_SPLITS = ("train", "validate", "test")


def _with_gz(name: str) -> list[str]:
    return [name, name + ".gz"]


def _keep_values(df: pd.DataFrame, column: str, values: Sequence[str]) -> pd.DataFrame:
    wanted = {str(v).strip().upper() for v in values}
    return df[df[column].str.strip().str.upper().isin(wanted)].reset_index(drop=True)


def _from_table(
    df: pd.DataFrame,
    paths: list[str],
    label_columns: Sequence[str],
    *,
    what: str,
    name: str,
    root: str | os.PathLike,
    classes: Sequence[str] | None,
    task: str,
    uncertain: str,
    blank: str,
    groups: Sequence | None,
    rename: Mapping[str, str] | None,
    meta: dict[str, list] | None,
    skip_missing: bool,
    info: dict,
    **build,
) -> ImageDataset:
    """Labels from ``label_columns`` of ``df`` (row i <-> ``paths[i]``) -> dataset."""
    label_columns = list(label_columns)
    classes = check_classes(classes, label_columns, what) if classes is not None else label_columns
    labels, mask = parse_label_values(df, classes, uncertain, blank, what, row_names=paths)
    keep = np.ones(len(df), bool)
    if task == MULTICLASS:
        bad = labels.sum(1) != 1
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{what}: {paths[i]} has {int(labels[i].sum())} positive classes; a multi-class table needs exactly one"
            )
    source = os.path.basename(str(info.get("csv") or info.get("metadata") or "the label table"))
    keep &= first_rows([os.path.normpath(p) for p in paths], labels, classes, what, source, mask=mask)
    exists = np.fromiter((os.path.isfile(p) for p in paths), bool, len(paths)) | ~keep
    if not exists.all():
        missing = [p for p, e in zip(paths, exists) if not e]
        odd = [(p, k) for p in missing if (k := not_regular(p)) != "missing"]
        if not skip_missing:
            if odd:
                raise DataError(
                    f"{what}: listed image file {odd[0][0]} is {odd[0][1]}, not a regular file"
                    + (f" ({len(odd)} such files)" if len(odd) > 1 else "")
                    + "; skip_missing=True drops "
                    + ("it" if len(odd) == 1 else "them")
                )
            raise DataError(
                f"{what}: image file not found: {missing[0]}"
                + (f" ({len(missing)} of {len(paths)} listed images missing)" if len(missing) > 1 else "")
                + "; skip_missing=True drops them"
            )
        if odd:
            warnings.warn(
                f"{what}: skipped {len(odd)} listed image file{'' if len(odd) == 1 else 's'} that "
                f"{'is' if len(odd) == 1 else 'are'} not regular (never opened): "
                + "; ".join(f"{p} ({k})" for p, k in odd[:3])
                + (" ..." if len(odd) > 3 else ""),
                DataWarning,
                stacklevel=3,
            )
        keep &= exists
    rows = np.flatnonzero(keep)
    names = [rename.get(c, c) for c in classes] if rename else classes
    return build_dataset(
        [paths[i] for i in rows],
        labels[rows],
        names,
        task=task,
        groups=None if groups is None else [groups[i] for i in rows],
        label_mask=None if mask[rows].all() else mask[rows],
        meta={k: [v[i] for i in rows] for k, v in (meta or {}).items()},
        name=name,
        root=root,
        info={**info, "skipped_missing": int((~exists).sum())},
        channels=1,
        **build,
    )


def load_csv(
    csv_path: str | os.PathLike,
    root: str | os.PathLike,
    path_column: str,
    label_columns: Sequence[str],
    *,
    classes: Sequence[str] | None = None,
    task: str = MULTILABEL,
    uncertain: str = "zeros",
    blank: str = "zeros",
    group_column: str | None = None,
    filters: Mapping[str, Sequence[str]] | None = None,
    rename: Mapping[str, str] | None = None,
    skip_missing: bool = False,
    max_images: int | None = None,
    seed: int = 0,
    name: str | None = None,
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """Any table with an image-path column and 0/1 (CheXpert-coded) label columns.

    Args:
        csv_path: the table (``.csv`` or ``.csv.gz``).
        root: folder the paths in ``path_column`` are relative to.
        label_columns: the label columns, in class order.
        classes: subset / order of ``label_columns`` to keep.
        task: ``"multilabel"`` or ``"multiclass"`` (one-hot columns; checked).
        uncertain, blank: policies for ``-1.0`` and blank cells (module docstring).
        group_column: column of patient / lesion ids for ``groups``.
        filters: ``{column: allowed values}`` (case-insensitive) row filters.
        rename: ``{column name: class name}`` for the returned ``class_names``.
        skip_missing: drop rows whose image is absent instead of raising.
        max_images, seed: random subset of this size (after the filters).
        decode, ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions` or its
            fields as keywords (channels default to 1, here and in the loaders below).
    """
    decode = decode_options(decode, **decode_kw)
    what = Path(csv_path).name
    df = read_table(
        csv_path, [path_column, *label_columns, *([group_column] if group_column else []), *(filters or {})], what
    )
    for col, values in (filters or {}).items():
        df = _keep_values(df, col, values)
    paths = [os.path.join(root, p.strip()) for p in df[path_column]]
    return _from_table(
        df,
        paths,
        label_columns,
        what=what,
        name=name or Path(csv_path).name.split(".")[0],
        root=root,
        classes=classes,
        task=task,
        uncertain=uncertain,
        blank=blank,
        groups=None if group_column is None else df[group_column].str.strip().tolist(),
        rename=rename,
        meta=None,
        skip_missing=skip_missing,
        info={"csv": str(csv_path), "uncertain": uncertain},
        max_images=max_images,
        seed=seed,
        decode=decode,
    )


# ------------------------------------------------------------------ CheXpert
def _chexpert_dir(root: Path, csv_name: str) -> Path:
    for d in (root, *(root / n for n in CHEXPERT_DIRS)):
        if (d / csv_name).is_file():
            return d
    raise DataError(f"CheXpert: {csv_name} not found in {root} nor in {root}/{{{','.join(CHEXPERT_DIRS)}}}")


def load_chexpert(
    root: str | os.PathLike,
    split: str = "train",
    *,
    classes: Sequence[str] | None = None,
    uncertain: str = "zeros",
    blank: str = "zeros",
    frontal_only: bool = True,
    views: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    csv_name: str | None = None,
    skip_missing: bool = False,
    max_images: int | None = None,
    seed: int = 0,
    name: str = "chexpert",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """CheXpert v1.0 (small or full) as a multi-label :class:`ImageDataset`.

    Args:
        root: the data-set folder (``CheXpert-v1.0-small/``) or the folder holding it.
        split: ``"train"`` or ``"valid"`` (reads ``{split}.csv``; ``csv_name`` overrides).
        classes: subset / order of :data:`CHEXPERT_CLASSES` (default all 14).
        uncertain: ``"zeros"`` (U-Zeros), ``"ones"`` (U-Ones) or ``"ignore"``.
        blank: not-mentioned cells as ``"zeros"`` or ``"ignore"``.
        frontal_only: keep ``Frontal/Lateral == "Frontal"`` images.
        views: keep rows whose ``AP/PA`` is one of these (e.g. ``("PA",)``).
        rename: class renames, e.g. :data:`CHEXPERT_TO_NIH` to share names with NIH.

    ``groups`` are the patient ids (``patient00001``) taken from the path; ``extra``
    holds ``sex``, ``age``, ``frontal_lateral`` and ``ap_pa``.
    """
    decode = decode_options(decode, **decode_kw)
    what = f"CheXpert {split}"
    if csv_name is None and split not in ("train", "valid"):
        raise DataError(f"CheXpert split must be 'train' or 'valid', got {split!r}")
    classes = check_classes(classes, CHEXPERT_CLASSES, what) if classes is not None else list(CHEXPERT_CLASSES)
    csv_name = csv_name or f"{split}.csv"
    ds_dir = _chexpert_dir(Path(root), csv_name)
    required = ["Path", *(["Frontal/Lateral"] if frontal_only else []), *(["AP/PA"] if views else [])]
    df = read_table(ds_dir / csv_name, required + classes, what)
    df = df[df["Path"].str.strip() != ""].reset_index(drop=True)
    if frontal_only:
        df = _keep_values(df, "Frontal/Lateral", ["Frontal"])
    if views:
        df = _keep_values(df, "AP/PA", views)
    rel = [p.strip() for p in df["Path"]]
    # Path starts with the data-set folder's published name; accept a renamed folder too.
    base = ds_dir.parent
    if rel and not (base / rel[0]).is_file() and (ds_dir / Path(*Path(rel[0]).parts[1:])).is_file():
        paths = [str(ds_dir / Path(*Path(p).parts[1:])) for p in rel]
    else:
        paths = [str(base / p) for p in rel]
    groups = [m.group(0) if (m := re.search(r"patient\d+", p)) else p for p in rel]
    meta = {
        out: df[col].tolist()
        for out, col in (("sex", "Sex"), ("age", "Age"), ("frontal_lateral", "Frontal/Lateral"), ("ap_pa", "AP/PA"))
        if col in df.columns
    }
    return _from_table(
        df,
        paths,
        classes,
        what=what,
        name=name,
        root=ds_dir,
        classes=None,
        task=MULTILABEL,
        uncertain=uncertain,
        blank=blank,
        groups=groups,
        rename=rename,
        meta=meta,
        skip_missing=skip_missing,
        info={"csv": str(ds_dir / csv_name), "uncertain": uncertain, "frontal_only": frontal_only},
        max_images=max_images,
        seed=seed,
        decode=decode,
    )


# ------------------------------------------------------------------ MIMIC-CXR-JPG
def load_mimic_cxr(
    root: str | os.PathLike,
    split: str | None = None,
    *,
    classes: Sequence[str] | None = None,
    uncertain: str = "zeros",
    blank: str = "zeros",
    views: Sequence[str] | None = ("PA", "AP"),
    labeler: str = "chexpert",
    rename: Mapping[str, str] | None = None,
    skip_missing: bool = False,
    max_images: int | None = None,
    seed: int = 0,
    name: str = "mimic_cxr",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """MIMIC-CXR-JPG as a multi-label :class:`ImageDataset` over the CheXpert classes.

    Args:
        root: the release folder (``mimic-cxr-jpg/2.0.0/``) holding the label files and
            ``files/``.
        split: ``"train"``, ``"validate"`` or ``"test"`` from ``mimic-cxr-2.0.0-split.csv``;
            None keeps all.
        classes: subset / order of :data:`CHEXPERT_CLASSES` (default all 14).
        views: keep images whose ``ViewPosition`` is one of these (None keeps all,
            lateral views included).
        labeler: ``"chexpert"`` or ``"negbio"`` label file.
        uncertain, blank, rename, skip_missing: as in :func:`load_chexpert`.

    Study labels are joined to every image (``dicom_id``) of the study; images of
    studies without a label row are dropped.  ``groups`` are the ``subject_id`` values.
    """
    decode = decode_options(decode, **decode_kw)
    what = "MIMIC-CXR-JPG"
    if labeler not in MIMIC_LABEL_FILES:
        raise DataError(f"{what}: labeler must be one of {list(MIMIC_LABEL_FILES)}, got {labeler!r}")
    classes = check_classes(classes, CHEXPERT_CLASSES, what) if classes is not None else list(CHEXPERT_CLASSES)
    label_path = require_file(root, _with_gz(MIMIC_LABEL_FILES[labeler]), what)
    ds_dir = label_path.parent
    meta_path = require_file(ds_dir, _with_gz(MIMIC_METADATA), what, max_depth=0)
    keys = ["subject_id", "study_id"]
    lab = read_table(label_path, keys + classes, what)
    meta = read_table(meta_path, ["dicom_id", *keys, *(["ViewPosition"] if views else [])], what)
    for t in (lab, meta):
        for k in keys:
            t[k] = t[k].str.strip()
    try:
        df = meta.merge(lab[keys + classes], on=keys, how="inner", validate="many_to_one")
    except pd.errors.MergeError:
        dup = lab[lab.duplicated(keys, keep=False)].iloc[0]
        raise DataError(
            f"{what}: {label_path.name} has several rows for subject {dup['subject_id']} study {dup['study_id']}"
        ) from None
    if split is not None:
        if split not in MIMIC_SPLITS:
            raise DataError(f"{what}: split must be one of {MIMIC_SPLITS} or None, got {split!r}")
        sp = read_table(require_file(ds_dir, _with_gz(MIMIC_SPLIT), what, max_depth=0), ["dicom_id", "split"], what)
        chosen = set(sp.loc[sp["split"].str.strip() == split, "dicom_id"].str.strip())
        df = df[df["dicom_id"].str.strip().isin(chosen)].reset_index(drop=True)
    if views:
        df = _keep_values(df, "ViewPosition", views)
    paths = [
        str(ds_dir / "files" / f"p{s[:2]}" / f"p{s}" / f"s{st}" / f"{d.strip()}.jpg")
        for s, st, d in zip(df["subject_id"], df["study_id"], df["dicom_id"])
    ]
    extra_cols = {"dicom_id": "dicom_id", "study_id": "study_id", "view": "ViewPosition"}
    return _from_table(
        df,
        paths,
        classes,
        what=what,
        name=name,
        root=ds_dir,
        classes=None,
        task=MULTILABEL,
        uncertain=uncertain,
        blank=blank,
        groups=df["subject_id"].tolist(),
        rename=rename,
        meta={k: df[c].tolist() for k, c in extra_cols.items() if c in df.columns},
        skip_missing=skip_missing,
        info={
            "labels": str(label_path),
            "metadata": str(meta_path),
            "split": split,
            "uncertain": uncertain,
            "views": None if views is None else list(views),
        },
        max_images=max_images,
        seed=seed,
        decode=decode,
    )
