"""From a data set's published files and label tables to an ImageDataset.

Shared plumbing of the file-based loaders: finding the published files below a root
folder, reading their tables (CSV, split lists) with clear errors, parsing label
cells, selecting classes, subsampling rows, and turning a table of (image path,
labels, group) rows into an :class:`~fedpl_core.data.base.ImageDataset` through the
decode cache (:mod:`fedpl_core.data.cache`, which does the image decoding).  The
data-set modules (``nih``, ``ham10000``, ``csv_loader``, ``tb_covid``) only know their
own file formats.  (Formerly ``imageio.py``, a name that shadowed the ``imageio``
library although this module reads no images.)
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .base import MULTICLASS, MULTILABEL, DataError, ImageDataset
from .cache import DecodeOptions, decode_options, load_images_cached

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


# ------------------------------------------------------------------ finding files
def find_file(root: str | os.PathLike, names: Sequence[str], max_depth: int = 3) -> Path | None:
    """The first of ``names`` (in order of preference) at ``root`` or up to ``max_depth``
    folders below it; a shallower match wins over a preferred name found deeper."""
    root = Path(root)
    level = [root]
    for _ in range(max_depth + 1):
        for name in names:
            for d in level:
                p = d / name
                if p.is_file():
                    return p
        nxt: list[Path] = []
        for d in level:
            try:
                with os.scandir(d) as it:  # d_type: no stat per entry of big image folders
                    nxt += sorted(Path(e.path) for e in it if e.is_dir() and not e.name.startswith("."))
            except OSError:
                pass
        level = nxt
        if not level:
            break
    return None


def require_file(root: str | os.PathLike, names: Sequence[str], what: str, max_depth: int = 3) -> Path:
    """:func:`find_file` or a :class:`DataError` naming the expected file names."""
    if not Path(root).is_dir():
        raise DataError(f"{what}: data folder not found: {root}")
    p = find_file(root, names, max_depth)
    if p is None:
        raise DataError(f"{what}: none of {list(names)} found in {root} (searched {max_depth} levels deep)")
    return p


def index_files(
    root: str | os.PathLike, suffixes: Iterable[str] = IMAGE_SUFFIXES, key: str = "name"
) -> dict[str, str]:
    """``{file name (or stem): path}`` of every file with one of ``suffixes`` below
    ``root``, from one :func:`os.walk`.  Folders are walked in sorted order and the
    first occurrence of a name wins, so the result does not depend on the file system."""
    suffixes = tuple(s.lower() for s in suffixes)
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if f.lower().endswith(suffixes):
                k = f if key == "name" else os.path.splitext(f)[0]
                out.setdefault(k, os.path.join(dirpath, f))
    return out


def natural_key(s: str) -> list:
    """Sort key that orders ``Normal-2.png`` before ``Normal-10.png``."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", s)]


# ------------------------------------------------------------------ tables
def read_table(path: str | os.PathLike, required: Sequence[str] = (), what: str = "") -> pd.DataFrame:
    """A CSV (``.csv`` or ``.csv.gz``; ``.tab`` is tab-separated) as strings, blank
    cells as ``""``; a :class:`DataError` naming any missing ``required`` column."""
    path = Path(path)
    what = what or path.name
    sep = "\t" if path.name.endswith((".tab", ".tab.gz", ".tsv", ".tsv.gz")) else ","
    try:
        df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, compression="infer")
    except FileNotFoundError:
        raise DataError(f"{what}: file not found: {path}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError, EOFError) as e:
        raise DataError(f"{what}: cannot parse {path}: {e}") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(
            f"{what}: {path} lacks column(s) {missing}; found columns {list(df.columns)}"
        )
    return df


def read_name_list(path: str | os.PathLike) -> list[str]:
    """Non-empty stripped lines of a text file (official split lists)."""
    with open(path, encoding="utf-8") as f:
        return [s.strip() for s in f if s.strip()]


def parse_label_values(
    df: pd.DataFrame,
    columns: Sequence[str],
    uncertain: str = "zeros",
    blank: str = "zeros",
    what: str = "",
    row_names: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """CheXpert-style label cells (``1.0`` positive, ``0.0`` negative, ``-1.0``
    uncertain, blank not mentioned) as ``(labels, mask)``.

    ``uncertain``: ``"zeros"`` / ``"ones"`` map -1 to 0 / 1; ``"ignore"`` stores 0
    and marks the entry unknown.  ``blank``: ``"zeros"`` (not mentioned = negative)
    or ``"ignore"`` (unknown).  Any other value is a :class:`DataError` naming the
    cell.
    """
    if uncertain not in ("zeros", "ones", "ignore"):
        raise DataError(f"uncertain must be 'zeros', 'ones' or 'ignore', got {uncertain!r}")
    if blank not in ("zeros", "ignore"):
        raise DataError(f"blank must be 'zeros' or 'ignore', got {blank!r}")
    n = len(df)
    labels = np.zeros((n, len(columns)), np.float32)
    mask = np.ones((n, len(columns)), bool)
    for j, col in enumerate(columns):
        s = df[col].astype(str).str.strip()
        empty = s.isin(["", "nan", "NaN"])
        v = pd.to_numeric(s.where(~empty, "0"), errors="coerce").to_numpy(np.float64)
        bad = np.isnan(v) | ~np.isin(v, (-1.0, 0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            who = row_names[i] if row_names is not None else f"row {i + 2}"
            raise DataError(
                f"{what}: column {col!r} has value {df[col].iloc[i]!r} for {who} "
                "(expected 1.0, 0.0, -1.0 or blank)"
            )
        unc = v == -1.0
        labels[:, j] = v == 1.0
        if uncertain == "ones":
            labels[unc, j] = 1.0
        elif uncertain == "ignore":
            mask[unc, j] = False
        if blank == "ignore":
            mask[empty.to_numpy(), j] = False
    return labels, mask


# ------------------------------------------------------------------ classes / rows
def check_classes(classes: Sequence[str], known: Sequence[str], what: str) -> list[str]:
    classes = list(classes)
    unknown = [c for c in classes if c not in known]
    if unknown:
        raise DataError(f"{what}: unknown class name(s) {unknown}; known classes: {list(known)}")
    if len(set(classes)) != len(classes):
        raise DataError(f"{what}: duplicate class names in {classes}")
    if not classes:
        raise DataError(f"{what}: empty class list")
    return classes


def select_classes(
    labels: np.ndarray,
    mask: np.ndarray | None,
    class_names: Sequence[str],
    classes: Sequence[str] | None,
    task: str,
    what: str,
) -> tuple[np.ndarray, np.ndarray | None, list[str], np.ndarray]:
    """Keep (and reorder to) ``classes``.  Returns ``(labels, mask, names, rows)``:
    for a multi-class task the rows whose class is not selected are dropped (``rows``
    are the kept row indices); for a multi-label task every row is kept."""
    rows = np.arange(len(labels))
    if classes is None:
        return labels, mask, list(class_names), rows
    classes = check_classes(classes, class_names, what)
    cols = [list(class_names).index(c) for c in classes]
    labels = labels[:, cols]
    mask = None if mask is None else mask[:, cols]
    if task == MULTICLASS:
        rows = np.flatnonzero(labels.sum(1) > 0)
        labels = labels[rows]
        mask = None if mask is None else mask[rows]
    return labels, mask, classes, rows


def subsample_index(n: int, max_images: int | None, seed: int = 0) -> np.ndarray:
    """Sorted random ``max_images`` of ``range(n)`` (all when ``max_images`` is None
    or at least ``n``); the same seed gives the same subset."""
    if max_images is None or max_images >= n:
        return np.arange(n)
    if max_images < 1:
        raise DataError(f"max_images must be positive, got {max_images}")
    return np.sort(np.random.default_rng(seed).choice(n, size=max_images, replace=False))


# ------------------------------------------------------------------ assembling
def build_dataset(
    paths: Sequence[str],
    labels: np.ndarray,
    class_names: Sequence[str],
    *,
    task: str = MULTILABEL,
    groups: Sequence | None = None,
    label_mask: np.ndarray | None = None,
    meta: dict[str, Sequence] | None = None,
    name: str = "dataset",
    root: str | os.PathLike | None = None,
    max_images: int | None = None,
    seed: int = 0,
    decode: DecodeOptions | None = None,
    channels: int = 1,
    info: dict | None = None,
) -> ImageDataset:
    """Subsample the rows (``max_images``, ``seed``), decode (or read from cache) their
    images with ``decode``, and return the :class:`ImageDataset`.  ``channels`` is the
    data set's own channel count, used where ``decode.channels`` is None.  ``meta``
    holds per-row columns (view, age, ...) that go to ``extra`` next to ``paths``;
    ``info`` holds data-set level facts."""
    decode = decode_options(decode)
    if decode.channels is None:
        decode = decode_options(decode, channels=channels)
    n = len(paths)
    if n == 0:
        raise DataError(f"{name}: no images left after the requested filters")
    keep = subsample_index(n, max_images, seed)
    paths = [paths[i] for i in keep]
    images = load_images_cached(paths, decode, root=root, name=name)
    extra: dict = dict(info or {})
    extra["paths"] = np.asarray(paths, dtype=object)
    for k, v in (meta or {}).items():
        extra[k] = np.asarray(v, dtype=object)[keep]
    return ImageDataset(
        images=images,
        labels=np.asarray(labels, np.float32)[keep],
        class_names=list(class_names),
        task=task,
        groups=None if groups is None else np.asarray(groups, dtype=object)[keep],
        label_mask=None if label_mask is None else np.asarray(label_mask, bool)[keep],
        name=name,
        extra=extra,
    )
