"""Decode image files once, keep the result as one ``.npy`` array on disk.

:class:`DecodeOptions` is the one definition of the decode and cache settings that
every loader accepts (``decode=DecodeOptions(...)`` or the same names as keywords).

Every file-based loader ends with :func:`load_images_cached`: it decodes a list of
image files into one uint8 array ``[N, C, S, S]`` and stores it in the cache folder
under a key made of the (root-relative) file list in its order, each file's size and
modification time, the image size, the channel count and the decoder version.  The
next call with the same files reads that array back instead of decoding again
(``mmap=True`` maps it without reading it: see ``benchmarks/decode_cache_reload.py``);
touching, replacing or adding a file gives a new key.

Cache folder: the ``cache_dir`` argument, else the environment variable
``FEDPL_CACHE``, else ``~/.cache/fedpl``.  Files are written to a temporary name and
moved into place with :func:`os.replace`, so a crashed or concurrent run never
leaves a half-written array under the final name; a temporary left by a process that
died is removed by the next load that uses the folder
(:func:`fedpl_core.base.fileio.remove_stale_temps`).  The array is written through a memory
map (:func:`write_cache_array`), and a write into a memory map that finds no room on
the disk is a bus error (SIGBUS), which kills the process with no message.  So the
whole file is reserved first (:func:`os.posix_fallocate`, which fails cleanly with
ENOSPC; where it is not supported, the free space is compared with the file's size):
a cache folder without room for the array ends in one :class:`CacheSpaceError` ("no
space left in <folder> ..."), before any image but the first is decoded, and the
temporary is removed.

Only regular files are opened (:func:`fedpl_core.data.safeopen.open_regular`): a FIFO,
socket, device or folder named like an image is a :class:`DataError` naming it, never a
hang.  An image with NaN or infinite pixel values (a float TIFF, whatever its suffix)
is refused: every such file of the load is named in one :class:`DataError` (a min-max
scaling of NaN would give a black image that trains like a real one).

Decoding (:func:`decode_image`): PIL, converted to ``"L"`` (1 channel) or ``"RGB"``
(3 channels) and resized to ``image_size x image_size`` with bilinear filtering
(PIL's bilinear filter widens with the scale factor, so down-scaling averages
areas).  Aspect ratio is not kept (chest X-rays are nearly square; HAM10000's 600x450
is squeezed, as MedMNIST does).  JPEG files are decoded at a reduced DCT scale
(``Image.draft``) when that scale is still at least ``image_size``.  16-bit and
float images are min-max scaled to 0..255 per image.  Files are decoded in a thread
pool (PIL releases the GIL while decoding and resizing).

Upscaling (a source smaller than ``image_size``) and squeezing a non-square image to
a square are logged once per load at INFO level on the ``fedpl.data`` logger, from
the size of the first file (read from its header, not decoded).  A run also names, in
one warning, every file far from ``image_size`` (a side under a quarter of it, or one
side over four times the other: :func:`fedpl_core.runs.data_checks.warn_far_sizes`), and
refuses a symbolic link in the cache folder named like a cache file before loading
(:func:`fedpl_core.runs.runner.check_data_files`); those checks change no number of a
run, so they are made outside this module, which is part of a run's code fingerprint.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..base.fileio import atomic_path, remove_stale_temps
from .base import DataError, DataWarning, check_memory, fmt_bytes
from .safeopen import not_regular, open_regular

#: Bump when decoding changes so that old cache entries are not reused.
DECODER_VERSION = "pil-bilinear-draft-v1"

_HIGH_DEPTH_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")

log = logging.getLogger("fedpl.data")


@dataclass(frozen=True)
class DecodeOptions:
    """How a loader turns image files into its uint8 ``[N, C, S, S]`` array.

    Every loader takes ``decode=DecodeOptions(...)`` or the same names as keywords
    (``load_nih(root, image_size=64)`` equals ``load_nih(root,
    decode=DecodeOptions(image_size=64))``; keywords given next to ``decode``
    replace its fields).

    Attributes:
        image_size: output side length; None keeps the files' size (all must agree).
            Images are squeezed to a square (aspect ratio not kept).
        channels: 1 (grayscale) or 3 (RGB); None: the data set's own (1 for the
            chest X-ray sets, 3 for HAM10000, the flag's own for MedMNIST).
        cache_dir: decode cache folder (default ``$FEDPL_CACHE`` or ``~/.cache/fedpl``).
        use_cache: False decodes into memory and writes nothing.
        mmap: return the cached array memory-mapped (read-only, pages read on
            first touch) instead of reading it into memory.
        num_workers: decoding threads (default ``min(16, cpu_count)``).
        progress: show the decoding progress bar (tqdm, on stderr).

    MedMNIST (``.npz`` arrays, nothing to decode) uses ``image_size`` and
    ``channels`` only, and keeps the file's size unless ``image_size`` is given.
    """

    image_size: int | None = 224
    channels: int | None = None
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
    mmap: bool = False
    num_workers: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.channels not in (None, 1, 3):
            raise DataError(f"channels must be 1 or 3 (or None: the data set's own), got {self.channels}")
        if self.image_size is not None and (not isinstance(self.image_size, (int, np.integer)) or self.image_size < 1):
            raise DataError(f"image_size must be a positive int or None, got {self.image_size!r}")


#: Names of the :class:`DecodeOptions` fields (keywords a loader passes on to them).
DECODE_FIELDS = tuple(f.name for f in fields(DecodeOptions))


def decode_options(decode: DecodeOptions | None = None, /, **kw) -> DecodeOptions:
    """``decode`` (default ``DecodeOptions()``) with the fields named in ``kw`` replaced;
    a ``TypeError`` naming the valid fields for any other keyword."""
    unknown = sorted(set(kw) - set(DECODE_FIELDS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {unknown}; decode options are {list(DECODE_FIELDS)}")
    if decode is not None and not isinstance(decode, DecodeOptions):
        raise TypeError(f"decode must be a DecodeOptions, got {type(decode).__name__}")
    return replace(decode or DecodeOptions(), **kw)


def log_resize(name: str, width: int, height: int, image_size: int | None, source: str = "") -> None:
    """INFO log lines for upscaling (source side < ``image_size``) and for squeezing a
    non-square ``width x height`` source to a square."""
    if not image_size:
        return
    where = f" ({source})" if source else ""
    if min(width, height) < image_size:
        src = f"{width}" if width == height else f"{width}x{height}"
        log.info("%s: upscaling %s px images to %d px%s", name, src, image_size, where)
    if width != height:
        log.info(
            "%s: squeezing %dx%d px images to %dx%d: aspect ratio not kept%s",
            name,
            width,
            height,
            image_size,
            image_size,
            where,
        )


def _log_source_size(name: str, path: str, image_size: int | None) -> None:
    if not image_size:
        return
    try:
        with open_regular(path, "image file") as f, Image.open(f) as img:  # reads the header only
            w, h = img.size
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError):
        return  # decoding reports the bad file (DataError is a ValueError)
    log_resize(name, w, h, image_size, f"first image {path}")


def default_cache_dir() -> Path:
    """``$FEDPL_CACHE`` if set, else ``~/.cache/fedpl``."""
    env = os.environ.get("FEDPL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "fedpl"


# ---------------------------------------------------------------- decoding
def _to_mode(img: Image.Image, channels: int) -> tuple[Image.Image, bool]:
    """``img`` in mode L or RGB, and whether all its pixel values were finite (a float
    image's NaN / inf values are set to its least finite value so that the shape can
    still be checked; the caller refuses the image)."""
    finite = True
    if img.mode in _HIGH_DEPTH_MODES:
        a = np.asarray(img, dtype=np.float64)
        ok = np.isfinite(a)
        if not ok.all():
            finite = False
            a = np.where(ok, a, a[ok].min() if ok.any() else 0.0)
        lo, hi = float(a.min()), float(a.max())
        a = (a - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(a)
        img = Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "L")
    if img.mode == "P" and "transparency" in img.info:
        img = img.convert("RGBA")
    return img.convert("L" if channels == 1 else "RGB"), finite


def nonfinite_error(paths: Sequence[str], total: int, what: str = "image file") -> DataError:
    """One :class:`DataError` naming the files whose pixels hold NaN or infinite values
    (the first three and how many in all)."""
    shown = ", ".join(str(p) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    n = len(paths)
    return DataError(
        f"{n} of {total} {what}s {'holds' if n == 1 else 'hold'} NaN or infinite pixel values "
        f"(no grey level to scale to: such an image would train as a black one): {shown}; fix or "
        f"remove {'it' if n == 1 else 'them'}"
    )


def _bomb_message(path, e: Exception) -> str:
    import re

    m = re.search(r"\((\d+) pixels\) exceeds limit of (\d+)", str(e))
    size = f"{int(m[1]):,} pixels, more than PIL's limit of {int(m[2]):,}" if m else "too large for PIL"
    return (
        f"image file {path} is {size} (a guard against decompression bombs, PIL.Image.MAX_IMAGE_PIXELS): "
        "shrink the image or remove it from the data set"
    )


def _decode(path: str | os.PathLike, image_size: int | None, channels: int) -> tuple[np.ndarray, bool]:
    """:func:`decode_image` without the check for NaN: the array and whether its pixel
    values were all finite."""
    if channels not in (1, 3):
        raise DataError(f"channels must be 1 or 3, got {channels}")
    try:
        with open_regular(path, "image file") as f, Image.open(f) as img:
            if image_size and img.format == "JPEG":
                img.draft("L" if channels == 1 else "RGB", (image_size, image_size))
            img, finite = _to_mode(img, channels)
            if image_size and img.size != (image_size, image_size):
                img = img.resize((image_size, image_size), Image.Resampling.BILINEAR)
            arr = np.asarray(img, dtype=np.uint8)
    except DataError:
        raise  # not a regular file (open_regular's message)
    except FileNotFoundError:
        raise DataError(f"image file not found: {path}") from None
    except Image.DecompressionBombError as e:
        raise DataError(_bomb_message(path, e)) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise DataError(f"cannot decode image file {path}: {e}") from None
    except MemoryError:
        raise DataError(f"image file {path} does not fit in memory when decoded at image_size {image_size}") from None
    return (arr[None] if arr.ndim == 2 else np.ascontiguousarray(arr.transpose(2, 0, 1))), finite


def decode_image(path: str | os.PathLike, image_size: int | None, channels: int) -> np.ndarray:
    """One image file as uint8 ``[C, S, S]`` (``[C, H, W]`` when ``image_size`` is None).

    Only a regular file is opened (:func:`~fedpl_core.data.safeopen.open_regular`); an
    image whose pixel values are not all finite is a :class:`DataError`."""
    arr, finite = _decode(path, image_size, channels)
    if not finite:
        raise nonfinite_error([os.fspath(path)], 1)
    return arr


def decode_images(
    paths: Sequence[str | os.PathLike],
    image_size: int | None,
    channels: int,
    out: np.ndarray | None = None,
    num_workers: int | None = None,
    desc: str = "decoding images",
    progress: bool = True,
) -> np.ndarray:
    """Decode ``paths`` in order into ``out`` (or a new array); uint8 ``[N, C, S, S]``.

    Files whose pixel values are not all finite are decoded to the end and then named
    together in one :class:`DataError` (:func:`nonfinite_error`)."""
    n = len(paths)
    if n == 0:
        raise DataError("no image files to decode")
    first, ok = _decode(paths[0], image_size, channels)
    bad: dict[int, str] = {} if ok else {0: os.fspath(paths[0])}
    if out is None:
        out = np.empty((n, *first.shape), np.uint8)
    out[0] = first
    workers = num_workers or min(16, os.cpu_count() or 1)

    def work(i: int) -> None:
        a, finite = _decode(paths[i], image_size, channels)
        if a.shape != first.shape:
            raise DataError(
                f"image {paths[i]} has shape {a.shape}, {paths[0]} has {first.shape}; "
                "pass image_size to resize all images to one size"
            )
        if not finite:
            bad[i] = os.fspath(paths[i])
        out[i] = a

    from tqdm.auto import tqdm

    with tqdm(total=n, desc=desc, unit="img", mininterval=1.0, disable=not progress) as bar:
        bar.update(1)
        if workers <= 1:
            for i in range(1, n):
                work(i)
                bar.update(1)
        else:
            with ThreadPoolExecutor(workers) as pool:
                for _ in pool.map(work, range(1, n)):
                    bar.update(1)
    if bad:
        raise nonfinite_error([bad[i] for i in sorted(bad)], n)
    return out


# ------------------------------------------------------------------ caching
def _stat_entries(paths: Sequence[str | os.PathLike], root: str | os.PathLike | None) -> list[str]:
    abs_paths = [os.path.abspath(p) for p in paths]
    base = os.path.abspath(root) if root is not None else os.path.commonpath(abs_paths)
    if os.path.isfile(base):
        base = os.path.dirname(base)
    prefix = base.rstrip(os.sep) + os.sep
    entries = []
    for p in abs_paths:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise DataError(f"image file not found: {p}") from None
        rel = p[len(prefix) :] if p.startswith(prefix) else os.path.relpath(p, base)
        entries.append(f"{rel}\t{st.st_size}\t{st.st_mtime_ns}")
    return entries


def cache_key(
    paths: Sequence[str | os.PathLike],
    image_size: int | None,
    channels: int,
    root: str | os.PathLike | None = None,
) -> str:
    """Hex digest over the ordered relative file list, sizes, mtimes and decode settings."""
    h = hashlib.sha256()
    h.update(f"{DECODER_VERSION}|{image_size}|{channels}|{len(paths)}\n".encode())
    for e in _stat_entries(paths, root):
        h.update(e.encode("utf-8", "surrogateescape"))
        h.update(b"\n")
    return h.hexdigest()[:20]


def cache_path_for(
    paths: Sequence[str | os.PathLike],
    image_size: int | None,
    channels: int,
    cache_dir: str | os.PathLike | None = None,
    root: str | os.PathLike | None = None,
    name: str = "images",
) -> Path:
    """Where :func:`load_images_cached` keeps (or would keep) the array for these files."""
    d = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "images"
    size = "native" if image_size is None else f"{image_size}px"
    key = cache_key(paths, image_size, channels, root)
    return d / f"{safe}-{len(paths)}-{size}-{channels}c-{key}.npy"


class CacheSpaceError(OSError):
    """The decode cache's folder has no room for an array (errno ENOSPC): one line
    naming the folder, the size needed and the space free."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return str(self.strerror)


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
#: errors of posix_fallocate meaning "not supported here" (then the free space is compared)
_NO_FALLOCATE = (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.ENODEV, errno.ESPIPE)


def _free_bytes(folder: Path) -> int | None:
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def no_space(folder: Path, needed: int, what: str) -> CacheSpaceError:
    """The :class:`CacheSpaceError` for ``what`` needing ``needed`` bytes in ``folder``."""
    free = _free_bytes(folder)
    have = f", {fmt_bytes(free)} free" if free is not None else ""
    return CacheSpaceError(
        f"no space left in {folder} for the decode cache ({what} need {fmt_bytes(needed)}{have}): free some "
        "space there, set FEDPL_CACHE to a folder with room, or decode without the cache (use_cache=False; "
        'in a run: dataset_kwargs {"use_cache": false})'
    )


def _reserve(fd: int, size: int, folder: Path, what: str) -> None:
    """Allocate ``size`` bytes of the open file ``fd`` on disk now, so that writing
    through a memory map of it cannot meet a full disk (SIGBUS); a
    :class:`CacheSpaceError` when the disk has no room."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except AttributeError:  # no posix_fallocate on this platform (macOS)
        pass
    except OSError as e:
        if e.errno in _NO_SPACE:
            raise no_space(folder, size, what) from None
        if e.errno not in _NO_FALLOCATE:
            raise
    free = _free_bytes(folder)
    if free is not None and free < size:
        raise no_space(folder, size, what)


def write_cache_array(target: str | os.PathLike, shape: tuple[int, ...], fill, what: str = "the array"):
    """Write a uint8 ``.npy`` array of ``shape`` to ``target`` through a memory map, with
    nothing lost on a full disk; returns ``fill(array)``.

    The array file is made under a temporary name (:func:`fedpl_core.base.fileio.atomic_path`:
    ``O_EXCL``, never a link), its header written and its whole size reserved on disk
    (:func:`os.posix_fallocate`; where that is not supported, the file system's free space
    is compared with the size) before it is mapped; ``fill`` writes the values; the file
    is flushed and moved to ``target``.  A disk without room is one
    :class:`CacheSpaceError` (also when it strikes creating or extending the file), the
    temporary is removed, and the folder's other entries are untouched.  Temporaries of
    processes that died are removed from the folder first."""
    target = Path(target)
    folder = target.parent
    nbytes = int(np.prod(shape, dtype=np.int64))
    remove_stale_temps(folder)
    try:
        with atomic_path(target) as tmp:
            header = {
                "descr": np.lib.format.dtype_to_descr(np.dtype(np.uint8)),
                "fortran_order": False,
                "shape": tuple(int(n) for n in shape),
            }
            fd = os.open(tmp, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
            with os.fdopen(fd, "r+b") as f:
                np.lib.format.write_array_header_1_0(f, header)
                f.flush()
                _reserve(f.fileno(), f.tell() + nbytes, folder, what)
            out = np.lib.format.open_memmap(tmp, mode="r+")
            try:
                result = fill(out)
                out.flush()
            finally:
                del out
    except CacheSpaceError:
        raise
    except OSError as e:
        if e.errno in _NO_SPACE:
            raise no_space(folder, nbytes, what) from None
        raise
    return result


def load_images_cached(
    paths: Sequence[str | os.PathLike],
    decode: DecodeOptions | None = None,
    *,
    root: str | os.PathLike | None = None,
    name: str = "images",
    **decode_kw,
) -> np.ndarray:
    """Images of ``paths`` (in that order) as uint8 ``[N, C, S, S]``, decoded at most once.

    Args:
        paths: image files.
        decode: :class:`DecodeOptions` (or its fields as keywords); ``channels=None``
            means 1 here.
        root: folder the key's relative paths are taken from (default: the files'
            common folder), so that a data set moved as a whole keeps its cache entry.
        name: a readable prefix of the cache file name, and of log lines.

    With ``mmap=True`` a cache hit costs the key (one ``stat`` per file) and the
    ``.npy`` header; pages are read when first touched.  ``mmap`` has no effect with
    ``use_cache=False``.
    """
    opt = decode_options(decode, **decode_kw)
    image_size, channels = opt.image_size, opt.channels or 1
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise DataError(f"{name}: no image files to load")
    if image_size:  # memory-mapped, only the image being decoded is in memory at once
        n_mem = 2 if opt.mmap and opt.use_cache else len(paths)
        check_memory(
            n_mem * channels * image_size**2,
            f"{name}: {n_mem} images at {image_size} px",
            "lower image_size" + ("" if n_mem == 2 else " (or read the decode cache memory-mapped: mmap=True)"),
        )
    _log_source_size(name, paths[0], image_size)
    dkw = dict(num_workers=opt.num_workers, desc=f"decoding {name}", progress=opt.progress)
    mmap_mode = "r" if opt.mmap else None
    if not opt.use_cache:
        _stat_entries(paths, root)  # clear error for a missing file before decoding
        return decode_images(paths, image_size, channels, **dkw)
    target = cache_path_for(paths, image_size, channels, opt.cache_dir, root, name)
    remove_stale_temps(target.parent)  # a temporary of a process that died
    odd = not_regular(target)
    if odd not in (None, "missing"):  # a folder or FIFO where the array belongs: never opened nor replaced
        warnings.warn(f"cache file {target} is {odd}, not a regular file; decoding without the cache", DataWarning)
        return decode_images(paths, image_size, channels, **dkw)
    if odd is None:
        try:
            arr = np.load(target, mmap_mode=mmap_mode)
            if arr.dtype == np.uint8 and arr.ndim == 4 and len(arr) == len(paths) and arr.shape[1] == channels:
                return arr
        except (OSError, ValueError):
            pass
        warnings.warn(f"ignoring unreadable cache file {target}; decoding again", DataWarning)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        warnings.warn(f"cache folder {target.parent} is not writable ({e}); decoding without cache", DataWarning)
        return decode_images(paths, image_size, channels, **dkw)
    first, _ = _decode(paths[0], image_size, channels)  # its shape (a NaN image is named by decode_images)
    write_cache_array(
        target,
        (len(paths), *first.shape),
        lambda out: decode_images(paths, image_size, channels, out=out, **dkw),
        f"{len(paths)} images of {name}",
    )
    return np.load(target, mmap_mode=mmap_mode)
