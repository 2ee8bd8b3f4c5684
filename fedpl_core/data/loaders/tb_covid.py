"""One-class chest X-ray data sets of Rahman, Chowdhury et al. (Kaggle), read from folders.

* Tuberculosis (TB) Chest X-ray Database::

      TB_Chest_Radiography_Database/
        Normal/Normal-1.png ...          Normal.metadata.xlsx
        Tuberculosis/Tuberculosis-1.png  Tuberculosis.metadata.xlsx

* COVID-19 Radiography Database (v4 and later; earlier versions keep the PNGs
  directly in the class folders, which is read too)::

      COVID-19_Radiography_Dataset/
        COVID/images/COVID-1.png            COVID/masks/...   COVID.metadata.xlsx
        Normal/images/Normal-1.png
        Lung_Opacity/images/Lung_Opacity-1.png
        Viral Pneumonia/images/Viral Pneumonia-1.png

Each becomes a multi-label data set with one class (``Tuberculosis`` / ``COVID-19``):
the disease folder is positive, ``Normal`` negative (FedPSL's one-class clients).
The ``.metadata.xlsx`` files only list sources and sizes and are not read.  The
databases carry no patient ids, so each image is its own group.  Files are ordered
naturally (``Normal-2`` before ``Normal-10``).  Only regular files (and links to them)
are read; an entry named like an image that is not one (a FIFO, a folder, a link to
nothing) is skipped and named in a warning.  A class folder that is a link (images on
another disk) is followed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base import MULTILABEL, DataError, ImageDataset
from ..cache import DecodeOptions, decode_options
from ..files import IMAGE_SUFFIXES, build_dataset, natural_key, scan_files, warn_skipped

TB_DIR = "TB_Chest_Radiography_Database"
COVID_DIR = "COVID-19_Radiography_Dataset"
COVID_OTHER = ("Lung_Opacity", "Viral Pneumonia")


def _dataset_dir(root: Path, folder: str, needed: Sequence[str], what: str) -> Path:
    for d in (root, root / folder):
        if all((d / n).is_dir() for n in needed):
            return d
    raise DataError(f"{what}: folders {list(needed)} not found in {root} nor in {root / folder}")


def _class_images(d: Path, what: str) -> list[str]:
    src = d / "images" if (d / "images").is_dir() else d
    found, skipped = scan_files(src, IMAGE_SUFFIXES, recursive=False)
    warn_skipped(skipped, src, what)
    files = sorted((os.path.basename(p) for p in found), key=natural_key)
    if not files:
        raise DataError(f"{what}: no PNG/JPG images in {src}")
    return [str(src / f) for f in files]


def _one_class(
    root: str | os.PathLike,
    folder: str,
    positive: str,
    negatives: Sequence[str],
    class_name: str,
    what: str,
    name: str,
    **build,
) -> ImageDataset:
    d = _dataset_dir(Path(root), folder, [positive, *negatives], what)
    paths, labels, source = [], [], []
    for sub in (positive, *negatives):
        files = _class_images(d / sub, what)
        paths += files
        labels += [float(sub == positive)] * len(files)
        source += [sub] * len(files)
    rel = [os.path.relpath(p, d) for p in paths]
    return build_dataset(
        paths,
        np.asarray(labels, np.float32)[:, None],
        [class_name],
        task=MULTILABEL,
        groups=rel,
        meta={"folder": source},
        name=name,
        root=d,
        info={"positive": positive, "negatives": list(negatives)},
        channels=1,
        **build,
    )


def load_tb(
    root: str | os.PathLike,
    *,
    max_images: int | None = None,
    seed: int = 0,
    name: str = "tb",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """TB Chest X-ray Database: class ``Tuberculosis``, positives ``Tuberculosis/``,
    negatives ``Normal/``.  ``root`` is ``TB_Chest_Radiography_Database/`` or its parent.
    ``decode`` / ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions`
    (channels default to 1)."""
    decode = decode_options(decode, **decode_kw)
    return _one_class(
        root,
        TB_DIR,
        "Tuberculosis",
        ("Normal",),
        "Tuberculosis",
        "TB Chest X-ray Database",
        name,
        max_images=max_images,
        seed=seed,
        decode=decode,
    )


def load_covid(
    root: str | os.PathLike,
    *,
    include_other: bool = False,
    max_images: int | None = None,
    seed: int = 0,
    name: str = "covid",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """COVID-19 Radiography Database: class ``COVID-19``, positives ``COVID/``,
    negatives ``Normal/`` (plus ``Lung_Opacity/`` and ``Viral Pneumonia/`` with
    ``include_other=True``).  ``root`` is ``COVID-19_Radiography_Dataset/`` or its parent.
    ``decode`` / ``**decode_kw``: as in :func:`load_tb`."""
    decode = decode_options(decode, **decode_kw)
    negatives = ("Normal", *COVID_OTHER) if include_other else ("Normal",)
    return _one_class(
        root,
        COVID_DIR,
        "COVID",
        negatives,
        "COVID-19",
        "COVID-19 Radiography Database",
        name,
        max_images=max_images,
        seed=seed,
        decode=decode,
    )
