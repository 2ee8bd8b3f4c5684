"""HAM10000 (Tschandl et al. 2018) / ISIC 2018 Task 3, seven-class dermoscopy.

Two published forms of the same training images are read:

* HAM10000 (Harvard Dataverse / Kaggle): ``HAM10000_metadata.csv`` with columns
  ``lesion_id, image_id, dx, dx_type, age, sex, localization`` (the 2023 Dataverse
  release adds ``dataset``); ``dx`` in ``akiec, bcc, bkl, df, mel, nv, vasc``; images
  ``{image_id}.jpg`` in ``HAM10000_images_part_1/`` and ``HAM10000_images_part_2/``
  (any folder below the root works).
* ISIC 2018 Task 3: ``ISIC2018_Task3_{Training,Validation,Test}_GroundTruth.csv``
  with columns ``image, MEL, NV, BCC, AKIEC, BKL, DF, VASC`` (one-hot ``1.0`` /
  ``0.0``), images in ``ISIC2018_Task3_{...}_Input/``, and lesion ids in
  ``ISIC2018_Task3_{Training,Test}_LesionGroupings.csv`` (``image, lesion_id,
  diagnosis_confirm_type``) where shipped.

Class order is ISIC's (:data:`HAM_CLASSES`); the task is single-label (one-hot);
images are RGB.  ``groups`` are lesion ids (several images show one lesion, so splits
must be grouped): from the metadata, else the ISIC lesion-groupings file, else the
image id itself.  An ``image_id`` (or ISIC ``image``) listed twice is kept once, with a
warning, so that it cannot land in two splits (twice with different diagnoses: an
error; :func:`fedpl_core.data.files.first_rows`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base import MULTICLASS, DataError, ImageDataset
from ..cache import DecodeOptions, decode_options
from ..files import build_dataset, find_file, first_rows, index_files, read_table, select_classes

#: ISIC 2018 Task 3 class order.
HAM_CLASSES = ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]
#: HAM10000 ``dx`` code -> class name.
DX_TO_CLASS = {c.lower(): c for c in HAM_CLASSES}
METADATA_NAMES = ("HAM10000_metadata.csv", "HAM10000_metadata", "HAM10000_metadata.tab")
METADATA_COLUMNS = ("lesion_id", "image_id", "dx")
ISIC_SPLITS = {"train": "Training", "validation": "Validation", "test": "Test"}


def isic_file(split: str, kind: str) -> str:
    """``ISIC2018_Task3_Training_GroundTruth.csv`` etc.; ``kind`` in GroundTruth,
    LesionGroupings, Input."""
    return f"ISIC2018_Task3_{ISIC_SPLITS[split]}_{kind}" + ("" if kind == "Input" else ".csv")


def _read_metadata(path: Path, what: str):
    df = read_table(path, METADATA_COLUMNS, what)
    df = df[df["image_id"].str.strip() != ""].reset_index(drop=True)
    dx = df["dx"].str.strip().str.lower()
    bad = ~dx.isin(DX_TO_CLASS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{what}: unknown dx {df['dx'].iloc[i]!r} for image {df['image_id'].iloc[i]!r} "
            f"(row {i + 2} of {path.name}); known: {sorted(DX_TO_CLASS)}"
        )
    labels = np.zeros((len(df), len(HAM_CLASSES)), np.float32)
    labels[np.arange(len(df)), [HAM_CLASSES.index(DX_TO_CLASS[d]) for d in dx]] = 1.0
    first = first_rows(df["image_id"].str.strip().tolist(), labels, HAM_CLASSES, what, path.name)
    return df[first].reset_index(drop=True), labels[first]


def _read_ground_truth(path: Path, what: str):
    df = read_table(path, ("image", *HAM_CLASSES), what)
    df = df[df["image"].str.strip() != ""].reset_index(drop=True)
    try:
        labels = df[HAM_CLASSES].apply(lambda c: c.str.strip().astype(float)).to_numpy(np.float32)
    except ValueError as e:
        raise DataError(f"{what}: non-numeric class value in {path.name}: {e}") from None
    bad = ~(np.isin(labels, (0.0, 1.0)).all(1) & (labels.sum(1) == 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{what}: row {i + 2} of {path.name} (image {df['image'].iloc[i]!r}) is not one-hot: "
            f"{dict(zip(HAM_CLASSES, labels[i].tolist()))}"
        )
    first = first_rows(df["image"].str.strip().tolist(), labels, HAM_CLASSES, what, path.name)
    return df[first].reset_index(drop=True), labels[first]


def load_ham10000(
    root: str | os.PathLike,
    split: str = "train",
    *,
    source: str = "auto",
    classes: Sequence[str] | None = None,
    max_images: int | None = None,
    seed: int = 0,
    name: str = "ham10000",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """HAM10000 / ISIC 2018 Task 3 as a 7-class single-label :class:`ImageDataset`.

    Args:
        root: folder holding the metadata / ground-truth CSVs and the image folders.
        split: ``"train"`` (HAM10000 = ISIC 2018 training set), ``"validation"`` or
            ``"test"`` (ISIC ground-truth files only).
        source: ``"metadata"`` (``HAM10000_metadata.csv``), ``"isic"`` (the ISIC
            ground-truth CSV) or ``"auto"`` (metadata when present and split is
            train, else ISIC).
        classes: keep / reorder classes (default :data:`HAM_CLASSES`); images of
            unselected classes are dropped.
        max_images, seed: random subset of this size, as in :func:`fedpl_core.data.loaders.nih.load_nih`.
        decode, ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions` or its
            fields as keywords; channels default to 3 (RGB).
    """
    decode = decode_options(decode, **decode_kw)
    what = "HAM10000"
    if split not in ISIC_SPLITS:
        raise DataError(f"{what}: split must be one of {list(ISIC_SPLITS)}, got {split!r}")
    if source not in ("auto", "metadata", "isic"):
        raise DataError(f"{what}: source must be 'auto', 'metadata' or 'isic', got {source!r}")
    if not Path(root).is_dir():
        raise DataError(f"{what}: data folder not found: {root}")
    meta_path = find_file(root, METADATA_NAMES)
    asked = source
    if source == "auto":
        source = "metadata" if meta_path is not None and split == "train" else "isic"
    if source == "metadata" and split != "train":
        raise DataError(
            f"{what}: HAM10000_metadata.csv describes the training images only; use source='isic' for split {split!r}"
        )

    meta: dict[str, list] = {}
    if source == "metadata":
        if meta_path is None:
            raise DataError(f"{what}: none of {list(METADATA_NAMES)} found in {root}")
        df, labels = _read_metadata(meta_path, what)
        ids = df["image_id"].str.strip().tolist()
        groups = df["lesion_id"].str.strip().tolist()
        for c in ("dx_type", "age", "sex", "localization", "dataset"):
            if c in df.columns:
                meta[c] = df[c].tolist()
        table = meta_path
    else:
        gt = isic_file(split, "GroundTruth")
        table = find_file(root, [gt])
        if table is None:
            if asked == "isic" or split != "train":
                raise DataError(f"{what} {split}: {gt} (ISIC 2018 layout) not found in {root} (searched 3 levels deep)")
            raise DataError(
                f"{what}: neither the HAM10000 layout ({' / '.join(METADATA_NAMES)} with "
                f"HAM10000_images_part_1/, _2/) nor the ISIC 2018 layout ({gt} with "
                f"{isic_file(split, 'Input')}/) found in {root} (searched 3 levels deep)"
            )
        df, labels = _read_ground_truth(table, what)
        ids = df["image"].str.strip().tolist()
        lesion: dict[str, str] = {}
        grp_path = find_file(root, [isic_file(split, "LesionGroupings")])
        if grp_path is not None:
            g = read_table(grp_path, ("image", "lesion_id"), what)
            lesion = dict(zip(g["image"].str.strip(), g["lesion_id"].str.strip()))
        elif meta_path is not None:
            g = read_table(meta_path, ("image_id", "lesion_id"), what)
            lesion = dict(zip(g["image_id"].str.strip(), g["lesion_id"].str.strip()))
        groups = [lesion.get(i) or i for i in ids]

    labels, _, names, rows = select_classes(labels, None, HAM_CLASSES, classes, MULTICLASS, what)
    ids, groups = [ids[i] for i in rows], [groups[i] for i in rows]
    meta = {k: [v[i] for i in rows] for k, v in meta.items()}
    index = index_files(root, (".jpg", ".jpeg"), key="stem", what=what)
    missing = [i for i in ids if i not in index]
    if missing:
        raise DataError(
            f"{what}: image file {missing[0]}.jpg (listed in {table.name}) not found below {root}"
            + (f"; {len(missing)} images missing in all" if len(missing) > 1 else "")
        )
    meta["image_id"] = ids
    return build_dataset(
        [index[i] for i in ids],
        labels,
        names,
        task=MULTICLASS,
        groups=groups,
        meta=meta,
        name=name,
        root=root,
        max_images=max_images,
        seed=seed,
        decode=decode,
        channels=3,
        info={"table": str(table), "source": source, "split": split},
    )
