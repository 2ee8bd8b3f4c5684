"""RSNA Intracranial Hemorrhage Detection (Flanders et al. 2020), read from the Kaggle files.

Layout (as Kaggle ships ``rsna-intracranial-hemorrhage-detection``; any nesting below
``root`` works, the slices are found by file name)::

    root/
      stage_2_train.csv            (or stage_1_train.csv, either also as .csv.gz)
      stage_2_train/ID_000012eaf.dcm ...   (stage 1: stage_1_train_images/)

``stage_2_train.csv`` has the header ``ID,Label`` and six rows per slice,
``ID_<image>_<subtype>,<0|1>`` for the subtypes ``epidural``, ``intraparenchymal``,
``intraventricular``, ``subarachnoid``, ``subdural`` and ``any``.  The image
``ID_<image>`` is the file ``ID_<image>.dcm``.  The five subtypes are the classes
(:data:`ICH_SUBTYPES`, multi-label); ``any`` is not a class (it is the OR of the five
and is kept in ``extra["any"]``).  The published CSV repeats some rows: identical
repeats are dropped (counted in ``extra["duplicate_rows"]``); repeats that disagree
raise a :class:`DataError` unless ``on_conflict="max"`` (positive wins).  A slice
without a row for one of the five subtypes, an unknown subtype or a label other than
0 / 1 is a :class:`DataError` naming the row.

Pixels (:func:`window_dicom`): the stored values times ``RescaleSlope`` plus
``RescaleIntercept`` give Hounsfield units; a window of centre ``c`` and width ``w``
maps ``[c - w/2, c + w/2]`` linearly to ``[0, 255]`` and clips the rest.  The default
is the usual brain window, centre 40 HU, width 80 HU (0 to 80 HU: CSF dark, grey matter
mid-grey, acute blood bright, bone and air saturated).  ``windows=BSB_WINDOWS``
gives the common three-channel brain / subdural (80, 200) / bone (600, 2800) image.
The window is applied at full resolution, then each channel is resized to
``image_size`` with PIL's bilinear filter (area-averaging when down-scaling, as the
other loaders), rounded to uint8.  ``fix_pixel_representation`` (default on) repairs
the known defect of some RSNA slices stored as unsigned 12-bit with an intercept
above -100 HU: values + 1000 modulo 4096 with intercept -1000, the correction the
competition's public kernels apply.

Decoding needs pydicom (an optional extra: ``pip install pydicom``), imported only
when a slice has to be read; a decode-cache hit needs no pydicom.  The decoded array
goes to the same cache folder and key scheme as every loader
(:mod:`fedpl_core.data.cache`); the cache file name carries the windows and the
decoder version, so another window gives another entry.  Header ids (PatientID,
StudyInstanceUID, SeriesInstanceUID) are read in the same pass and cached next to it,
for ``groups="patient"`` / ``"study"`` (adjacent slices of one scan are nearly
identical, so splits should keep a patient together).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from ...base.fileio import atomic_write_text, remove_stale_temps
from ..base import MULTILABEL, DataError, DataWarning, ImageDataset
from ..cache import DecodeOptions, cache_path_for, decode_options, nonfinite_error, write_cache_array
from ..files import check_classes, index_files, read_table, require_file, subsample_index
from ..safeopen import not_regular, open_regular

#: The five hemorrhage subtypes, the Kaggle CSV's order (``any`` is dropped).
ICH_SUBTYPES = ["epidural", "intraparenchymal", "intraventricular", "subarachnoid", "subdural"]
#: Every subtype a CSV row may name.
CSV_SUBTYPES = ICH_SUBTYPES + ["any"]
CSV_NAMES = ("stage_2_train.csv", "stage_2_train.csv.gz", "stage_1_train.csv", "stage_1_train.csv.gz")
REQUIRED_COLUMNS = ("ID", "Label")
#: Named windows ``(centre, width)`` in HU.
WINDOWS = {"brain": (40.0, 80.0), "subdural": (80.0, 200.0), "bone": (600.0, 2800.0)}
#: The default: one channel, the brain window.
BRAIN_WINDOW = ("brain",)
#: Three channels: the brain, subdural and bone windows.
BSB_WINDOWS = ("brain", "subdural", "bone")
#: Part of the cache file name: bump when the DICOM decoding changes.
DICOM_DECODER_VERSION = "dcm1"
HEADER_FIELDS = ("PatientID", "StudyInstanceUID", "SeriesInstanceUID")
GROUPS = {"image": None, "patient": "PatientID", "study": "StudyInstanceUID"}
WHAT = "RSNA ICH"


def _pydicom():
    try:
        import pydicom
    except ImportError as e:
        raise ImportError(
            "reading the RSNA ICH DICOM slices needs pydicom, an optional extra of fedpl: pip install pydicom"
        ) from e
    return pydicom


# ------------------------------------------------------------------ labels
def parse_labels(
    df: pd.DataFrame, source: str = "stage_2_train.csv", on_conflict: str = "error"
) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """Rows ``ID_<image>_<subtype>,Label`` -> ``(image ids, labels [N, 5] over
    ICH_SUBTYPES, any [N], duplicate rows dropped)``; images in order of first
    appearance."""
    if on_conflict not in ("error", "max"):
        raise DataError(f"{WHAT}: on_conflict must be 'error' or 'max', got {on_conflict!r}")
    ids = df["ID"].str.strip()
    keep = (ids != "").to_numpy()
    df, ids = df[keep].reset_index(drop=True), ids[keep].reset_index(drop=True)
    rows = np.flatnonzero(keep) + 2  # CSV line numbers (header = line 1)
    split = [s.rpartition("_") for s in ids.tolist()]  # (image, "_", subtype); fast on 4.5M rows
    image = [t[0] for t in split]
    bad = [i for i, t in enumerate(split) if not (t[0].startswith("ID_") and len(t[0]) > 3 and t[2])]
    if bad:
        i = bad[0]
        raise DataError(f"{WHAT}: ID {ids[i]!r} on line {rows[i]} of {source} is not of the form ID_<image>_<subtype>")
    code = {s: j for j, s in enumerate(CSV_SUBTYPES)}
    sub_code = np.array([code.get(t[2].lower(), -1) for t in split], np.int64)
    unknown = sub_code < 0
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise DataError(
            f"{WHAT}: unknown subtype {split[i][2]!r} in ID {ids[i]!r} on line {rows[i]} of "
            f"{source}; known subtypes: {CSV_SUBTYPES}"
        )
    lab = df["Label"].str.strip()
    val = pd.to_numeric(lab, errors="coerce").to_numpy(np.float64)
    bad = ~np.isin(val, (0.0, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{WHAT}: Label {lab[i]!r} of {ids[i]!r} on line {rows[i]} of {source} is not 0 or 1")
    img_code, images = pd.factorize(pd.Series(image, dtype=object))
    n, val = len(images), val.astype(np.int64)
    hi = np.full((n, len(CSV_SUBTYPES)), -1, np.int64)
    lo = np.full((n, len(CSV_SUBTYPES)), 2, np.int64)
    np.maximum.at(hi, (img_code, sub_code), val)
    np.minimum.at(lo, (img_code, sub_code), val)
    conflict = (hi >= 0) & (lo != hi)
    if conflict.any() and on_conflict == "error":
        i, j = map(int, np.argwhere(conflict)[0])
        raise DataError(
            f"{WHAT}: {source} lists {images[i]}_{CSV_SUBTYPES[j]} more than once with labels 0 and 1 "
            "(on_conflict='max' takes the positive)"
        )
    duplicates = len(df) - int((hi >= 0).sum())
    if duplicates:
        rep = np.flatnonzero(pd.Series(img_code * len(CSV_SUBTYPES) + sub_code).duplicated().to_numpy())
        warnings.warn(
            f"{WHAT}: {source} repeats {duplicates} row{'' if duplicates == 1 else 's'} with the same "
            f"label (e.g. {ids[int(rep[0])]!r} on line {rows[int(rep[0])]}); each is counted once",
            DataWarning,
            stacklevel=2,
        )
    missing = hi[:, :5] < 0
    if missing.any():
        i, j = map(int, np.argwhere(missing)[0])
        raise DataError(
            f"{WHAT}: {source} has no row {images[i]}_{ICH_SUBTYPES[j]} (every slice needs a label "
            f"for each of {ICH_SUBTYPES}); {int(missing.any(1).sum())} slice(s) incomplete"
        )
    labels = hi[:, :5].astype(np.float32)
    any_ = np.where(hi[:, 5] >= 0, hi[:, 5], labels.max(1)).astype(np.float32)
    return [str(s) for s in images], labels, any_, duplicates


# ------------------------------------------------------------------ pixels
def parse_windows(windows) -> list[tuple[float, float]]:
    """``"brain"``, ``(40, 80)``, or a sequence of names / ``(centre, width)`` pairs."""
    if isinstance(windows, str) or (
        isinstance(windows, (tuple, list))
        and len(windows) == 2
        and all(isinstance(v, (int, float, np.number)) for v in windows)
    ):
        windows = [windows]
    out = []
    for w in windows:
        if isinstance(w, str):
            if w not in WINDOWS:
                raise DataError(f"{WHAT}: unknown window {w!r}; named windows: {list(WINDOWS)} or (centre, width)")
            w = WINDOWS[w]
        c, wd = (float(v) for v in w)
        if not wd > 0:
            raise DataError(f"{WHAT}: window width must be positive, got {w}")
        out.append((c, wd))
    if len(out) not in (1, 3):
        raise DataError(f"{WHAT}: give 1 window (grey image) or 3 (one per RGB channel), got {len(out)}")
    return out


def dicom_hu(ds, fix_pixel_representation: bool = True) -> np.ndarray:
    """Hounsfield units (float32 ``[H, W]``) of a pydicom data set: stored value x
    RescaleSlope + RescaleIntercept, after the 12-bit repair described in the module
    docstring."""
    raw = np.asarray(ds.pixel_array).astype(np.float64)
    slope = float(getattr(ds, "RescaleSlope", 1) or 1)
    intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
    if (
        fix_pixel_representation
        and int(getattr(ds, "BitsStored", 0)) == 12
        and int(getattr(ds, "PixelRepresentation", 1)) == 0
        and intercept > -100
    ):
        raw = raw + 1000
        raw[raw >= 4096] -= 4096
        intercept = -1000.0
    return (raw * slope + intercept).astype(np.float32)


def window(hu: np.ndarray, center: float, width: float) -> np.ndarray:
    """``[c - w/2, c + w/2]`` HU -> ``[0, 1]``, clipped (float32)."""
    return np.clip((hu - (center - width / 2)) / width, 0.0, 1.0).astype(np.float32)


def _window(
    path: str | os.PathLike,
    image_size: int | None,
    windows=BRAIN_WINDOW,
    channels: int = 1,
    fix_pixel_representation: bool = True,
) -> tuple[np.ndarray, dict[str, str], bool]:
    """:func:`window_dicom` and whether the slice's values were all finite (NaN / inf
    values are windowed as the window's low end; the caller refuses the slice)."""
    pydicom = _pydicom()
    wins = parse_windows(windows)
    try:
        with open_regular(path, f"{WHAT}: DICOM file") as f:
            ds = pydicom.dcmread(f)
            hu = dicom_hu(ds, fix_pixel_representation)
    except DataError:
        raise  # not a regular file
    except FileNotFoundError:
        raise DataError(f"{WHAT}: DICOM file not found: {path}") from None
    except Exception as e:  # pydicom raises many types for bad files (InvalidDicomError, missing pixel data ...)
        raise DataError(f"{WHAT}: cannot read DICOM file {path}: {type(e).__name__}: {e}") from None
    if hu.ndim != 2:
        raise DataError(f"{WHAT}: {path} holds pixel data of shape {hu.shape}, expected one 2-D slice")
    finite = bool(np.isfinite(hu).all())
    if not finite:
        hu = np.where(np.isfinite(hu), hu, -np.inf)
    planes = []
    for c, w in wins:
        p = window(hu, c, w)
        if image_size and p.shape != (image_size, image_size):
            p = np.asarray(
                Image.fromarray(np.ascontiguousarray(p, np.float32)).resize(
                    (image_size, image_size), Image.Resampling.BILINEAR
                )
            )
        planes.append(np.clip(np.rint(p * 255.0), 0, 255).astype(np.uint8))
    if channels == 3 and len(planes) == 1:
        planes *= 3
    return np.stack(planes), _header_ids(ds), finite


def window_dicom(
    path: str | os.PathLike,
    image_size: int | None,
    windows=BRAIN_WINDOW,
    channels: int = 1,
    fix_pixel_representation: bool = True,
) -> tuple[np.ndarray, dict[str, str]]:
    """One DICOM slice as uint8 ``[C, S, S]`` (see the module docstring) and its header ids.
    Only a regular file is opened; a slice whose values are not all finite is a
    :class:`DataError`."""
    arr, heads, finite = _window(path, image_size, windows, channels, fix_pixel_representation)
    if not finite:
        raise nonfinite_error([os.fspath(path)], 1, f"{WHAT} DICOM file")
    return arr, heads


def _header_ids(ds) -> dict[str, str]:
    return {k: str(getattr(ds, k, "") or "").strip() for k in HEADER_FIELDS}


def _read_header_ids(path: str) -> dict[str, str]:
    pydicom = _pydicom()
    try:
        with open_regular(path, f"{WHAT}: DICOM file") as f:
            return _header_ids(pydicom.dcmread(f, stop_before_pixels=True, specific_tags=list(HEADER_FIELDS)))
    except DataError:
        raise
    except Exception as e:
        raise DataError(f"{WHAT}: cannot read DICOM header of {path}: {type(e).__name__}: {e}") from None


def _parallel(fn, n: int, workers: int | None, desc: str, progress: bool) -> None:
    from tqdm.auto import tqdm

    workers = workers or min(16, os.cpu_count() or 1)
    with tqdm(total=n, desc=desc, unit="img", mininterval=1.0, disable=not progress) as bar:
        if workers <= 1:
            for i in range(n):
                fn(i)
                bar.update(1)
        else:
            with ThreadPoolExecutor(workers) as pool:
                for _ in pool.map(fn, range(n)):
                    bar.update(1)


def _decode_all(paths, opt: DecodeOptions, windows, channels, fix, name, out=None):
    first, h0, ok = _window(paths[0], opt.image_size, windows, channels, fix)
    bad: dict[int, str] = {} if ok else {0: paths[0]}
    if out is None:
        out = np.empty((len(paths), *first.shape), np.uint8)
    heads: list = [None] * len(paths)
    out[0], heads[0] = first, h0

    def work(i: int) -> None:
        a, heads[i], finite = _window(paths[i], opt.image_size, windows, channels, fix)
        if a.shape != first.shape:
            raise DataError(
                f"{WHAT}: slice {paths[i]} has shape {a.shape}, {paths[0]} has {first.shape}; "
                "pass image_size to resize all slices to one size"
            )
        if not finite:
            bad[i] = paths[i]
        out[i] = a

    _parallel(lambda i: work(i + 1), len(paths) - 1, opt.num_workers, f"decoding {name}", opt.progress)
    if bad:
        raise nonfinite_error([bad[i] for i in sorted(bad)], len(paths), f"{WHAT} DICOM file")
    return out, {k: [h[k] for h in heads] for k in HEADER_FIELDS}


def _read_all_headers(paths, opt: DecodeOptions, name) -> dict[str, list[str]]:
    heads: list = [None] * len(paths)

    def work(i: int) -> None:
        heads[i] = _read_header_ids(paths[i])

    _parallel(work, len(paths), opt.num_workers, f"reading {name} headers", opt.progress)
    return {k: [h[k] for h in heads] for k in HEADER_FIELDS}


def _window_tag(wins) -> str:
    return "w" + "_".join(f"{c:g}x{w:g}" for c, w in wins)


def load_dicoms_cached(
    paths: Sequence[str],
    decode: DecodeOptions | None = None,
    *,
    windows=BRAIN_WINDOW,
    fix_pixel_representation: bool = True,
    need_headers: bool = False,
    root: str | os.PathLike | None = None,
    name: str = "rsna_ich",
    **decode_kw,
) -> tuple[np.ndarray, dict[str, list[str]] | None]:
    """Windowed slices of ``paths`` as uint8 ``[N, C, S, S]``, decoded at most once
    (the cache scheme of :func:`fedpl_core.data.cache.load_images_cached`), and their
    header ids (None unless ``need_headers`` or the slices had to be decoded).

    ``channels``: 3 for three windows; for one window ``decode.channels`` (None = 1;
    3 repeats the grey image)."""
    opt = decode_options(decode, **decode_kw)
    wins = parse_windows(windows)
    if len(wins) == 3 and opt.channels == 1:
        raise DataError(f"{WHAT}: three windows make three channels; channels=1 was asked for")
    channels = 3 if len(wins) == 3 else (opt.channels or 1)
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise DataError(f"{name}: no DICOM files to load")
    fix = bool(fix_pixel_representation)
    if not opt.use_cache:
        for p in paths:  # a clear error for a missing file before decoding
            if not os.path.isfile(p):
                raise DataError(f"{WHAT}: DICOM file not found: {p}")
        return _decode_all(paths, opt, wins, channels, fix, name)
    tag = f"{name}-{_window_tag(wins)}{'-fix12' if fix else ''}-{DICOM_DECODER_VERSION}"
    target = cache_path_for(paths, opt.image_size, channels, opt.cache_dir, root, tag)
    meta_path = target.with_name(target.stem + ".headers.json")
    mmap_mode = "r" if opt.mmap else None
    arr = None
    remove_stale_temps(target.parent)  # a temporary of a process that died
    odd = "a symbolic link" if os.path.islink(target) else not_regular(target)  # a link is never followed
    if odd not in (None, "missing"):  # never opened nor replaced
        warnings.warn(f"cache file {target} is {odd}, not a regular file; decoding without the cache", DataWarning)
        return _decode_all(paths, opt, wins, channels, fix, name)
    if odd is None:
        try:
            arr = np.load(target, mmap_mode=mmap_mode)
            if not (arr.dtype == np.uint8 and arr.ndim == 4 and len(arr) == len(paths) and arr.shape[1] == channels):
                arr = None
        except (OSError, ValueError):
            arr = None
        if arr is None:
            warnings.warn(f"ignoring unreadable cache file {target}; decoding again", DataWarning)
    if arr is not None:
        heads = _read_header_cache(meta_path, len(paths))
        if heads is None and need_headers:
            heads = _read_all_headers(paths, opt, name)
            _write_atomic(meta_path, json.dumps(heads))
        return arr, heads
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        warnings.warn(f"cache folder {target.parent} is not writable ({e}); decoding without cache", DataWarning)
        return _decode_all(paths, opt, wins, channels, fix, name)
    first, _, _ = _window(paths[0], opt.image_size, wins, channels, fix)

    def fill(out):
        _, heads = _decode_all(paths, opt, wins, channels, fix, name, out=out)
        _write_atomic(meta_path, json.dumps(heads))
        return heads

    heads = write_cache_array(target, (len(paths), *first.shape), fill, f"{len(paths)} slices of {name}")
    return np.load(target, mmap_mode=mmap_mode), heads


def _read_header_cache(path: Path, n: int) -> dict | None:
    """The header ids cached at ``path`` for ``n`` slices, or None (no file; a link, which is
    never followed; a device, an over-size or unreadable file, or one of other slices).
    Read as any file the package reads back (:func:`fedpl_core.base.config_files.read_structured_file`:
    bounded, no link, no device)."""
    from ...base.config_files import read_structured_file

    try:
        heads = read_structured_file(path, "DICOM header cache", max_bytes=2**20 + 2048 * n)
    except (OSError, ValueError):  # ConfigError is a ValueError; FileNotFoundError
        return None
    if not isinstance(heads, dict) or any(
        not isinstance(heads.get(k), list) or len(heads[k]) != n for k in HEADER_FIELDS
    ):
        return None
    return heads


def _write_atomic(path: Path, text: str) -> None:
    """The header cache beside the images' (:func:`fedpl_core.base.fileio.atomic_write_text`); a
    folder that cannot be written is a warning, not an error."""
    try:
        atomic_write_text(path, text)
    except OSError as e:
        warnings.warn(f"could not write {path}: {e}", DataWarning)


# ------------------------------------------------------------------ loader
def load_rsna_ich(
    root: str | os.PathLike,
    *,
    csv: str | os.PathLike | None = None,
    classes: Sequence[str] | None = None,
    image_ids: Sequence[str] | None = None,
    max_negatives: int | None = None,
    max_images: int | None = None,
    seed: int = 0,
    windows=BRAIN_WINDOW,
    fix_pixel_representation: bool = True,
    groups: str = "image",
    on_conflict: str = "error",
    skip_missing: bool = False,
    name: str = "rsna_ich",
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """RSNA ICH slices as a multi-label :class:`ImageDataset` over the five subtypes.

    Args:
        root: folder holding ``stage_2_train.csv`` and (somewhere below) the ``.dcm`` slices.
        csv: the label CSV; default: the first of :data:`CSV_NAMES` found in ``root``
            (up to 3 levels down).
        classes: subtypes to keep, in this order (default :data:`ICH_SUBTYPES`).
        image_ids: keep only these slices (``ID_<image>``, as in the CSV), in CSV order.
        max_negatives: keep every slice with a hemorrhage and a random ``max_negatives``
            of those without (FedMLP's "all lesion samples and partial healthy
            samples"); seeded by ``seed``.
        max_images: then keep a random subset of this size (``seed``), as the other loaders.
        windows: ``"brain"`` (centre 40, width 80 HU; the default), ``(centre, width)``,
            or three of them for a three-channel image (:data:`BSB_WINDOWS`).
        fix_pixel_representation: repair the 12-bit slices (module docstring).
        groups: ``"image"`` (each slice its own group; no header read), ``"patient"``
            (DICOM PatientID) or ``"study"`` (StudyInstanceUID); the header ids are
            read with the pixels and cached.
        on_conflict: ``"error"`` or ``"max"`` for repeated CSV rows that disagree.
        skip_missing: drop slices whose ``.dcm`` file is absent (a partial download)
            instead of raising; the count is in ``extra["skipped_missing"]``.
        decode, ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions` or its
            fields (image size, channels (default 1), cache, mmap, progress).

    ``extra`` holds ``paths``, ``image_id``, ``any`` (the CSV's ``any`` label) and,
    when the headers were read, ``patient_id``, ``study_id``, ``series_id``.
    """
    decode = decode_options(decode, **decode_kw)
    classes = check_classes(classes, ICH_SUBTYPES, WHAT) if classes is not None else list(ICH_SUBTYPES)
    if groups not in GROUPS:
        raise DataError(f"{WHAT}: groups must be one of {list(GROUPS)}, got {groups!r}")
    parse_windows(windows)  # bad windows fail before anything is read
    csv_path = Path(csv) if csv is not None else require_file(root, CSV_NAMES, WHAT)
    df = read_table(csv_path, REQUIRED_COLUMNS, WHAT)
    ids, labels, any_, duplicates = parse_labels(df, csv_path.name, on_conflict)
    rows = np.arange(len(ids))
    if image_ids is not None:
        pos = {s: i for i, s in enumerate(ids)}
        wanted = [str(s).strip() for s in image_ids]
        unknown = [s for s in wanted if s not in pos]
        if unknown:
            raise DataError(
                f"{WHAT}: image id(s) {unknown[:5]} not in {csv_path.name}"
                + (f" ({len(unknown)} in all)" if len(unknown) > 5 else "")
            )
        rows = np.array(sorted({pos[s] for s in wanted}), np.int64)
    if max_negatives is not None:
        if max_negatives < 0:
            raise DataError(f"{WHAT}: max_negatives must be >= 0, got {max_negatives}")
        neg = rows[any_[rows] == 0]
        drop = np.setdiff1d(neg, neg[subsample_index(len(neg), max_negatives, seed + 1)]) if max_negatives else neg
        rows = np.setdiff1d(rows, drop)

    index = index_files(root, (".dcm",), key="stem", what=WHAT)
    present = np.array([ids[i] in index for i in rows], bool)
    if not present.all() and not skip_missing:
        missing = [ids[i] for i in rows[~present]]
        raise DataError(
            f"{WHAT}: DICOM file {missing[0]}.dcm (listed in {csv_path.name}) not found below {root}"
            + (f"; {len(missing)} slices missing in all" if len(missing) > 1 else "")
            + " (skip_missing=True drops them)"
        )
    rows = rows[present]
    if len(rows) == 0:
        raise DataError(f"{name}: no slices left after the requested filters")
    rows = rows[subsample_index(len(rows), max_images, seed)]
    sel = [ids[i] for i in rows]
    paths = [index[s] for s in sel]
    images, heads = load_dicoms_cached(
        paths,
        decode,
        windows=windows,
        fix_pixel_representation=fix_pixel_representation,
        need_headers=groups != "image",
        root=root,
        name=name,
    )
    extra: dict = {
        "csv": str(csv_path),
        "duplicate_rows": duplicates,
        "skipped_missing": int((~present).sum()),
        "windows": parse_windows(windows),
        "paths": np.asarray(paths, dtype=object),
        "image_id": np.asarray(sel, dtype=object),
        "any": any_[rows],
    }
    if heads is not None:
        for key, field in (
            ("patient_id", "PatientID"),
            ("study_id", "StudyInstanceUID"),
            ("series_id", "SeriesInstanceUID"),
        ):
            extra[key] = np.asarray(heads[field], dtype=object)
    if groups == "image":
        grp = np.asarray(sel, dtype=object)
    else:
        ids_h = heads[GROUPS[groups]]
        grp = np.asarray([g or s for g, s in zip(ids_h, sel)], dtype=object)  # an empty id: the slice alone
    cols = [ICH_SUBTYPES.index(c) for c in classes]
    return ImageDataset(
        images=images,
        labels=labels[rows][:, cols],
        class_names=classes,
        task=MULTILABEL,
        groups=grp,
        name=name,
        extra=extra,
    )
