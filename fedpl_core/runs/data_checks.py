"""Checks of a run's data files made around the loaders: before a run loads its data,
after it has loaded it, and when loading it failed.

The loaders (:mod:`fedpl_core.data`) are part of the code that computes a run, so they are
in its code fingerprint (:mod:`fedpl_core.runs.provenance`); these checks change no number
of a run, and live here, called by :func:`fedpl_core.runs.runner.run`:

* **images far from the size they are resized to** (:func:`warn_far_sizes`): a file whose
  shorter side is under a quarter of the run's ``image_size``, or whose one side is more
  than four times the other (:data:`FAR_FACTOR`), is almost surely not an image of the
  data set (a 1x1 thumbnail, a 3x5000 strip among 64x64 images) yet would be resized and
  trained on like the others.  Such files are named in one warning per data set and
  process (the first three and how many in all); they are not refused, since a data set
  may hold a few of them on purpose.  Only each file's header is read.
* **an ``.npz`` larger than the memory** (:func:`check_npz_fits`): the shapes its arrays
  declare are read from their ``.npy`` headers through the zip members (a few hundred
  bytes decompressed), and a file whose arrays would not fit in the memory available, or
  that declares more bytes than it stores, is refused before anything is decompressed.
* **folders nested too deep** (:func:`deep_folder_error`): a data folder holding a chain of
  more than :data:`MAX_FOLDER_DEPTH` nested folders makes the loaders' folder scan fail
  with Python's "maximum recursion depth exceeded", naming nothing; the folder is found
  (iteratively, each real folder once) and named in one line.
* **links in the decode cache folder** (:func:`cache_links`): the cache holds files this
  package wrote; a symbolic link named like one of them is refused, never followed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: An image is far from the ``image_size`` it is resized to when its shorter side is under
#: ``image_size / FAR_FACTOR`` or its longer side is over ``FAR_FACTOR`` times its shorter.
FAR_FACTOR = 4

#: File suffixes whose header PIL cannot read (DICOM slices): not checked for their size.
_NOT_PIL = (".dcm",)

#: Data sets (a hash of their files and image size) already checked in this process.
_CHECKED: set[str] = set()


def far_from_size(width: int, height: int, image_size: int) -> bool:
    """Whether a ``width x height`` image is far from the ``image_size`` square it is
    resized to (see :data:`FAR_FACTOR`)."""
    short, long = min(width, height), max(width, height)
    return short * FAR_FACTOR < image_size or long > FAR_FACTOR * max(short, 1)


def image_header_size(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(width, height)`` of an image file, read from its header (nothing decoded), or None
    when it cannot be read (decoding has reported such a file already)."""
    from PIL import Image

    from ..data.safeopen import open_regular

    try:
        with open_regular(path, "image file") as f, Image.open(f) as img:
            return img.size
    except Exception:  # noqa: BLE001 - any unreadable file: the loader's own message covers it
        return None


def far_sizes(paths: Iterable[str], image_size: int) -> list[tuple[str, int, int]]:
    """``(path, width, height)`` of each of ``paths`` far from ``image_size``
    (:func:`far_from_size`), in order."""
    out = []
    for p in paths:
        if str(p).lower().endswith(_NOT_PIL):
            continue
        size = image_header_size(p)
        if size is not None and far_from_size(size[0], size[1], image_size):
            out.append((str(p), size[0], size[1]))
    return out


def warn_far_sizes(paths: Sequence[str], image_size: int | None, what: str) -> list[tuple[str, int, int]]:
    """One ``DataWarning`` naming the image files of ``paths`` far from ``image_size``
    (:func:`far_sizes`: the first three with their sizes, and how many in all); the list of
    them.  A data set (its files and size) is checked once per process."""
    from ..data.base import DataWarning

    if not image_size or not paths:
        return []
    key = hashlib.sha256(f"{image_size}\n".encode() + "\n".join(map(str, paths)).encode("utf-8", "replace"))
    digest = key.hexdigest()
    if digest in _CHECKED:
        return []
    far = far_sizes(paths, image_size)
    _CHECKED.add(digest)
    if far:
        n = len(far)
        shown = ", ".join(f"{p} ({w}x{h})" for p, w, h in far[:3]) + (f" and {n - 3} more" if n > 3 else "")
        warnings.warn(
            f"{what}: {n} of {len(paths)} image files {'is' if n == 1 else 'are'} far from the {image_size} px "
            f"square {'it is' if n == 1 else 'they are'} resized to (a side under {image_size / FAR_FACTOR:g} px, "
            f"or one side over {FAR_FACTOR} times the other) and {'is' if n == 1 else 'are'} trained on all the "
            f"same: {shown}; check {'it' if n == 1 else 'them'}, or remove {'it' if n == 1 else 'them'} from the "
            "data set",
            DataWarning,
            stacklevel=2,
        )
    return far


# ------------------------------------------------------------------ .npz headers
def _read_npy_header(f) -> tuple[tuple[int, ...], Any]:
    import numpy as np

    fmt = np.lib.format
    version = fmt.read_magic(f)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(f)
    else:  # (2, 0), and (3, 0) (UTF-8 field names; read as 2.0 for an ASCII header, else skipped)
        shape, _, dtype = fmt.read_array_header_2_0(f)
    return tuple(int(n) for n in shape), dtype


def npz_declared(path: str | os.PathLike, keys: Iterable[str]) -> dict[str, tuple[tuple[int, ...], int, int]]:
    """``{key: (shape, bytes declared, bytes stored)}`` of the arrays ``keys`` of the
    ``.npz`` file ``path``, read from each member's ``.npy`` header (nothing else of the
    member is decompressed); ``bytes stored`` is the member's uncompressed size in the zip
    directory.  Keys the file lacks are left out; a file that is no zip archive or whose
    headers cannot be read gives what could be read (the loader reports the rest)."""
    import numpy as np

    from ..data.safeopen import open_regular

    out: dict[str, tuple[tuple[int, ...], int, int]] = {}
    try:
        with open_regular(path, "array file") as raw, zipfile.ZipFile(raw) as z:
            for key in keys:
                try:
                    info = z.getinfo(f"{key}.npy")
                except KeyError:
                    continue
                try:
                    with z.open(info) as member:
                        shape, dtype = _read_npy_header(member)
                except (
                    ValueError,
                    OSError,
                    EOFError,
                    zipfile.BadZipFile,
                    SyntaxError,
                    RuntimeError,
                    NotImplementedError,
                ):
                    continue
                nbytes = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
                out[key] = (shape, nbytes, info.file_size)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        pass
    return out


def check_npz_fits(path: str | os.PathLike, keys: Sequence[str], what: str, advice: str) -> None:
    """A ``DataError`` (one line naming ``what`` and ``path``) before anything of the
    ``.npz`` is decompressed, when an array of ``keys`` declares more bytes than the
    archive stores for it (a damaged or forged file), or when the arrays together declare
    more bytes than the memory available now (:func:`fedpl_core.data.base.available_memory`);
    ``advice`` ends the second message."""
    from ..data import base as data_base

    declared = npz_declared(path, keys)
    for key, (shape, nbytes, stored) in declared.items():
        if nbytes > stored:
            raise data_base.DataError(
                f"{what} {path}: its array {key} declares shape {list(shape)} "
                f"({data_base.fmt_bytes(nbytes)}) but the archive stores {data_base.fmt_bytes(stored)} for it: "
                "the file is damaged; download it again"
            )
    total = sum(nbytes for _, nbytes, _ in declared.values())
    avail = data_base.available_memory()
    if avail is not None and total > avail:
        shapes = ", ".join(f"{k} {list(s)}" for k, (s, _, _) in declared.items())
        raise data_base.DataError(
            f"{what} {path}: its arrays declare {data_base.fmt_bytes(total)} ({shapes}), more than the "
            f"{data_base.fmt_bytes(avail)} of memory available; refused before reading them: {advice}"
        )


# ------------------------------------------------------------------ nested folders
#: Folders nested deeper than this below a data folder are reported when its scan fails.
MAX_FOLDER_DEPTH = 256


def too_deep_folder(root: str | os.PathLike, max_depth: int = MAX_FOLDER_DEPTH) -> tuple[str, int] | None:
    """The first folder more than ``max_depth`` levels below ``root`` and its depth, or
    None.  Iterative (no recursion), linked folders followed as the loaders' scan follows
    them, each real folder visited once (a link back up cannot loop)."""
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, int]] = [(os.fspath(root), 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > max_depth:
            return folder, depth
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                subs = [e.path for e in it if _is_dir(e)]
        except OSError:
            continue
        stack.extend((s, depth + 1) for s in sorted(subs, reverse=True))
    return None


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _short(path: str, root: str) -> str:
    """``path`` as ``root/a/b/c/.../y/z`` when it is too long to read in one line."""
    if len(path) <= 160:
        return path
    rel = os.path.relpath(path, root).split(os.sep)
    return os.path.join(root, *rel[:3], "...", *rel[-2:])


def deep_folder_error(root: str | os.PathLike | None, max_depth: int = MAX_FOLDER_DEPTH) -> Exception | None:
    """The ``DataError`` to raise when scanning the data folder ``root`` ran out of
    recursion depth: it names the first folder nested more than ``max_depth`` levels below
    ``root``; None when ``root`` is not a folder or holds no such chain (then the error
    came from elsewhere and stands as it is)."""
    from ..data.base import DataError

    if root is None or not os.path.isdir(root):
        return None
    found = too_deep_folder(root, max_depth)
    if found is None:
        return None
    folder, _ = found
    return DataError(
        f"data folder {root} holds folders nested more than {max_depth} levels deep "
        f"({_short(folder, os.fspath(root))}), too deep for the scan for image files (Python's recursion "
        "limit); move the images up, or remove the nested folders (a copy that copied itself?)"
    )


# ------------------------------------------------------------------ the decode cache
#: Names of the files the decode cache writes (arrays, DICOM header indexes).
CACHE_SUFFIXES = (".npy", ".json")


def cache_links(folder: str | os.PathLike) -> list[Path]:
    """The symbolic links in the cache folder ``folder`` named like its files
    (:data:`CACHE_SUFFIXES`), sorted; none of them is followed (``lstat`` only).  A
    missing or unreadable folder has none."""
    out = []
    try:
        with os.scandir(os.fspath(folder)) as it:
            for e in it:
                if e.name.endswith(CACHE_SUFFIXES) and not e.name.startswith("."):
                    try:
                        if stat.S_ISLNK(e.stat(follow_symlinks=False).st_mode):
                            out.append(Path(e.path))
                    except OSError:
                        continue
    except OSError:
        return []
    return sorted(out)


def cache_link_error(folder: str | os.PathLike, links: Sequence[Path]) -> Exception:
    """The ``DataError`` for :func:`cache_links` found in ``folder``."""
    from ..data.base import DataError

    n = len(links)
    more = f" and {n - 1} more" if n > 1 else ""
    return DataError(
        f"decode cache folder {folder} holds {n} symbolic link{'' if n == 1 else 's'} named like "
        f"cache files ({links[0].name}{more}): the cache reads only files it wrote, and a link there is "
        f"refused, not followed; remove {'it' if n == 1 else 'them'} (or set FEDPL_CACHE to another folder)"
    )


# ------------------------------------------------------------------ weights files
def check_weights_path(model_kwargs: dict | None) -> None:
    """A ``ConfigError`` naming ``model_kwargs weights_path`` when it names something that is
    there but is not a regular file (a device such as ``/dev/zero``, a FIFO, a folder, a
    link to nothing): said as such, not as "not found".  Nothing is opened (``stat`` only);
    a missing file is left to the model's own check."""
    from ..base.validation import ConfigError
    from ..data.safeopen import not_regular

    wp = (model_kwargs or {}).get("weights_path") if isinstance(model_kwargs, dict) else None
    if not isinstance(wp, (str, os.PathLike)):
        return
    kind = not_regular(wp)
    if kind not in (None, "missing"):
        raise ConfigError(
            f"model_kwargs weights_path: {os.fspath(wp)} is {kind}, not a regular file; give a weights file "
            "(a state dict written by torch.save)"
        )


__all__ = [
    "check_weights_path",
    "FAR_FACTOR",
    "MAX_FOLDER_DEPTH",
    "cache_link_error",
    "cache_links",
    "check_npz_fits",
    "deep_folder_error",
    "far_from_size",
    "far_sizes",
    "npz_declared",
    "too_deep_folder",
    "warn_far_sizes",
]
