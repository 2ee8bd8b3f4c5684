"""From a data set's published files and label tables to an ImageDataset.

Shared plumbing of the file-based loaders: finding the published files below a root
folder, reading their tables (CSV, split lists) with clear errors, parsing label
cells, selecting classes, subsampling rows, and turning a table of (image path,
labels, group) rows into an :class:`~fedpl_core.data.base.ImageDataset` through the
decode cache (:mod:`fedpl_core.data.cache`, which does the image decoding).  The
data-set modules (``nih``, ``ham10000``, ``csv_loader``, ``tb_covid``) only know their
own file formats.  (Formerly ``imageio.py``, a name that shadowed the ``imageio``
library although this module reads no images.)

What a listing reads (:func:`scan_files`, behind :func:`index_files`): regular files
(and links to them) whose names end in one of the data set's suffixes, in every folder
below the root, linked folders included (images on another disk linked into the data
folder are the usual case; each folder is visited once, so a link back up cannot loop).
An entry named like an image that is not a regular file (a FIFO, socket, device, a
folder named ``x.png``, a link to nothing) is skipped and named in one
:class:`~fedpl_core.data.base.DataWarning`.  Tables and lists are read only when they
are regular files.  A label table that lists an image more than once
(:func:`first_rows`) keeps its first row, with one warning naming how many and an
example; repeats that disagree about the labels are a :class:`DataError`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .base import MULTICLASS, MULTILABEL, DataError, DataWarning, ImageDataset
from .cache import DecodeOptions, decode_options, load_images_cached
from .safeopen import not_regular

#: The file names (their endings, in any case) read as images.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


# ------------------------------------------------------------------ finding files
def find_file(
    root: str | os.PathLike, names: Sequence[str], max_depth: int = 3, passed: list[Path] | None = None
) -> Path | None:
    """The first of ``names`` (in order of preference) at ``root`` or up to ``max_depth``
    folders below it that is a regular file (or a link to one); a shallower match wins
    over a preferred name found deeper.  Entries of those names that are something else
    (a FIFO, a folder, a link to nothing) are passed over and, when ``passed`` is a
    list, appended to it."""
    root = Path(root)
    level = [root]
    for _ in range(max_depth + 1):
        for name in names:
            for d in level:
                p = d / name
                if p.is_file():
                    return p
                if passed is not None and (p.exists() or p.is_symlink()):
                    passed.append(p)
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
    passed: list[Path] = []
    p = find_file(root, names, max_depth, passed)
    if p is None:
        odd = f"; {passed[0]} is {not_regular(passed[0])}, not a regular file" if passed else ""
        raise DataError(f"{what}: none of {list(names)} found in {root} (searched {max_depth} levels deep){odd}")
    return p


def scan_files(
    root: str | os.PathLike,
    suffixes: Iterable[str] = IMAGE_SUFFIXES,
    recursive: bool = True,
) -> tuple[list[str], list[tuple[str, str]]]:
    """``(files, skipped)``: the paths of the regular files (links to regular files
    included) below ``root`` whose names end in one of ``suffixes`` (any case), and
    ``(path, what it is)`` of each entry with such a name that is not a regular file (a
    FIFO, socket, device, folder, a link to nothing).  Nothing is opened.

    Order: a folder's files by name, then its subfolders by name, depth first (the order
    of a sorted :func:`os.walk`), so the result does not depend on the file system.
    Linked folders are followed (``recursive``), each real folder once (a link to a
    folder above cannot loop); folders that cannot be listed are passed over.  The walk
    recurses, so a chain of folders nested deeper than Python's recursion limit fails; a
    run then names the folder (:func:`fedpl_core.runs.data_checks.deep_folder_error`)."""
    suffixes = tuple(s.lower() for s in suffixes)
    files: list[str] = []
    skipped: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()

    def visit(folder: str) -> None:
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir()  # follows links; d_type: no stat for a plain entry
                is_file = not is_dir and e.is_file()
            except OSError:
                is_dir = is_file = False
            if is_dir:
                subdirs.append(e.path)
            if e.name.lower().endswith(suffixes):
                if is_file:
                    files.append(e.path)
                else:
                    skipped.append((e.path, not_regular(e.path) or "not a regular file"))
        if recursive:
            for d in subdirs:
                visit(d)

    visit(os.fspath(root))
    return files, skipped


def warn_skipped(skipped: Sequence[tuple[str, str]], root: str | os.PathLike, what: str = "") -> None:
    """One :class:`DataWarning` naming the entries :func:`scan_files` skipped (the first
    three and how many in all); nothing when there are none."""
    if not skipped:
        return
    shown = "; ".join(f"{p} ({kind})" for p, kind in skipped[:3])
    more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    n = len(skipped)
    warnings.warn(
        f"{what + ': ' if what else ''}skipped {n} entr{'y' if n == 1 else 'ies'} below {root} named "
        f"like image files but {'not a regular file' if n == 1 else 'not regular files'} (never opened): "
        f"{shown}{more}",
        DataWarning,
        stacklevel=3,
    )


def index_files(
    root: str | os.PathLike,
    suffixes: Iterable[str] = IMAGE_SUFFIXES,
    key: str = "name",
    what: str = "",
) -> dict[str, str]:
    """``{file name (or stem): path}`` of every regular file with one of ``suffixes``
    below ``root`` (:func:`scan_files`: linked folders followed, entries that are not
    regular files skipped and named in a warning).  The first occurrence of a name in
    the sorted walk wins, so the result does not depend on the file system."""
    files, skipped = scan_files(root, suffixes)
    warn_skipped(skipped, root, what)
    out: dict[str, str] = {}
    for path in files:
        f = os.path.basename(path)
        out.setdefault(f if key == "name" else os.path.splitext(f)[0], path)
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
    kind = not_regular(path)
    if kind not in (None, "missing"):
        raise DataError(f"{what}: {path} is {kind}, not a regular file")
    try:
        df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, compression="infer")
    except FileNotFoundError:
        raise DataError(f"{what}: file not found: {path}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError, EOFError) as e:
        raise DataError(f"{what}: cannot parse {path}: {e}") from None
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{what}: {path} lacks column(s) {missing}; found columns {list(df.columns)}")
    return df


def read_name_list(path: str | os.PathLike) -> list[str]:
    """Non-empty stripped lines of a text file (official split lists); a regular file only."""
    kind = not_regular(path)
    if kind not in (None, "missing"):
        raise DataError(f"{path} is {kind}, not a regular file")
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
                f"{what}: column {col!r} has value {df[col].iloc[i]!r} for {who} (expected 1.0, 0.0, -1.0 or blank)"
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


# ------------------------------------------------------------------ repeated rows
def first_rows(
    keys: Sequence[str],
    labels: np.ndarray,
    class_names: Sequence[str],
    what: str,
    source: str,
    mask: np.ndarray | None = None,
    item: str = "image",
) -> np.ndarray:
    """Which rows of a label table to keep so that each image (``keys[i]``: its id or
    path) is there once: a bool mask, True for the first row of each key.

    A table that lists an image more than once would put it in the data set twice, and
    a split could then place it in both the training and the test part.  Repeats with
    the same labels (and ``mask``) are dropped with one :class:`DataWarning` naming how
    many images repeat and an example; repeats whose labels disagree are a
    :class:`DataError` naming the image and both label sets (which row is right is not
    for the loader to guess)."""
    n = len(keys)
    codes, uniques = pd.factorize(pd.Series(list(keys), dtype=object))
    if len(uniques) == n:
        return np.ones(n, bool)
    first_index = np.unique(codes, return_index=True)[1]  # codes number keys in order of first appearance
    ref = first_index[codes]
    keep = ref == np.arange(n)
    labels = np.asarray(labels)
    differ = (labels != labels[ref]).any(axis=1)
    if mask is not None:
        differ |= (np.asarray(mask) != np.asarray(mask)[ref]).any(axis=1)
    if differ.any():
        i = int(np.flatnonzero(differ)[0])

        def show(r: int) -> str:
            pos = [c for c, v in zip(class_names, labels[r]) if v]
            return "|".join(pos) or "no positive class"

        raise DataError(
            f"{what}: {source} lists {item} {keys[i]!r} more than once with different labels "
            f"({show(int(ref[i]))} and {show(i)}); keep one row of it"
        )
    repeated = np.bincount(codes)
    example = int(np.flatnonzero(repeated > 1)[0])
    k = int((repeated > 1).sum())
    warnings.warn(
        f"{what}: {source} lists {k} {item}{'' if k == 1 else 's'} more than once "
        f"({n - len(uniques)} repeated row{'' if n - len(uniques) == 1 else 's'}, e.g. "
        f"{uniques[example]!r} {int(repeated[example])} times); each is kept once (its first row)",
        DataWarning,
        stacklevel=3,
    )
    return keep


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
