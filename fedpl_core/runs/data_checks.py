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
* **image files of one name** (:func:`check_same_names`): the loaders that find images by
  name below the data folder (NIH, HAM10000 / ISIC 2018, RSNA ICH: :data:`INDEXED_IMAGES`)
  keep the first file of a name in their sorted walk, so a stray ``old/ISIC_0000000.jpg``
  next to ``part_1/ISIC_0000000.jpg`` would silently stand for it or be passed over.  Files
  that share a name and differ in content are refused, naming them; copies of one file
  (the same bytes: some publishers ship an image folder twice) are named in one warning.
  Only the sizes of files that share a name are read, and only same-size ones are hashed.
* **compressed tables that unpack to more than the memory allows**
  (:func:`check_compressed_tables`): a ``.csv.gz`` (``.bz2``, ``.xz``, ``.zip``) label
  table is unpacked whole by the loader, and its text then takes several times its size
  in memory as strings; a small file that unpacks to gigabytes (a damaged or forged file)
  would exhaust the memory.  It is unpacked here first as a stream, counting bytes, and
  refused once it passes :func:`table_bound`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
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
    None (:func:`_walk`: iterative, linked folders followed as the loaders' scan follows
    them, each real folder once, so a link back up cannot loop)."""
    for folder, depth, _ in _walk(root, lambda entry, depth: depth <= max_depth):
        if depth > max_depth:
            return folder, depth
    return None


def _walk(
    root: str | os.PathLike, enter: Callable[[os.DirEntry, int], bool]
) -> Iterator[tuple[str, int, list[os.DirEntry]]]:
    """``(folder, depth, its entries)`` for ``root`` and every folder below it that
    ``enter(entry, depth of its parent)`` lets in, in name order: iterative (no recursion),
    links to folders followed, each real folder once; a folder that cannot be read is passed
    over."""
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, int]] = [(os.fspath(root), 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        yield folder, depth, entries
        stack.extend((e.path, depth + 1) for e in reversed(entries) if _is_dir(e) and enter(e, depth))


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


# ------------------------------------------------------------------ image files of one name
#: The real data sets whose loader finds images by name below the data folder
#: (:func:`fedpl_core.data.files.index_files`): ``(suffixes, "name" or "stem")``, the
#: loader's own.  The others read the paths their tables give, or one folder per class.
INDEXED_IMAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "nih": ((".png",), "name"),
    "nih-official": ((".png",), "name"),
    "ham10000": ((".jpg", ".jpeg"), "stem"),
    "isic2018": ((".jpg", ".jpeg"), "stem"),
    "rsna_ich": ((".dcm",), "stem"),
}

#: Data folders (their path, suffixes and file listing) already checked in this process.
_SAME_CHECKED: set[str] = set()


def _file_hash(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def same_names(
    root: str | os.PathLike, suffixes: Sequence[str], key: str = "stem"
) -> tuple[list[list[str]], list[list[str]]]:
    """``(different, copies)``: the groups of image files below ``root`` (the files the
    loaders' walk lists, :func:`fedpl_core.data.files.scan_files`) that share a name
    (``key="name"``) or a name without its suffix (``"stem"``), split into groups whose
    files differ in content and groups of copies of one file (the same bytes, or one file
    reached twice through links).  Each group in the loader's order (its first file is the
    one the loader uses).  Only the sizes of files that share a name are read; files of
    the same size are hashed.  A folder the walk cannot finish (nested too deep) gives
    nothing: the loader names it."""
    from ..data.files import scan_files

    try:
        files, _ = scan_files(root, suffixes)
    except RecursionError:
        return [], []
    groups: dict[str, list[str]] = {}
    for path in files:
        f = os.path.basename(path)
        groups.setdefault(f if key == "name" else os.path.splitext(f)[0], []).append(path)
    different: list[list[str]] = []
    copies: list[list[str]] = []
    for paths in groups.values():
        if len(paths) < 2:
            continue
        ids: dict[tuple[int, int], int] = {}
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                continue
            ids[(st.st_dev, st.st_ino)] = st.st_size
        sizes = set(ids.values())
        if len(ids) < 2:
            copies.append(paths)  # one file, reached twice
        elif len(sizes) > 1 or len({_file_hash(p) for p in paths}) > 1:
            different.append(paths)
        else:
            copies.append(paths)
    return different, copies


def _shown_groups(groups: Sequence[Sequence[str]]) -> str:
    shown = "; ".join(" and ".join(g[:3]) + (f" (and {len(g) - 3} more)" if len(g) > 3 else "") for g in groups[:3])
    return shown + (f"; and {len(groups) - 3} more name(s)" if len(groups) > 3 else "")


def check_same_names(root: str | os.PathLike, indexed: tuple[Sequence[str], str], what: str) -> None:
    """Before a loader that finds images by name (:data:`INDEXED_IMAGES`) reads the data
    folder ``root``: a ``DataError`` naming the image files that share a name and differ in
    content (:func:`same_names`: the first three names and how many in all), since the
    loader would use the first and pass over the others; one ``DataWarning`` naming the
    copies of one file found under two paths (harmless: any of them is the same image).
    The warning is given once per folder and process."""
    from ..data.base import DataError, DataWarning

    suffixes, key = indexed
    different, copies = same_names(root, suffixes, key)
    word = "name" if key == "name" else "name (without its suffix)"
    if different:
        n = len(different)
        raise DataError(
            f"{what}: {n} image file name{'' if n == 1 else 's'} below {root} stand{'s' if n == 1 else ''} for "
            f"different files ({_shown_groups(different)}): the loader finds images by {word} and would use the "
            "first of each only; remove or rename the stray file(s)"
        )
    if copies:
        digest = hashlib.sha256("\n".join(["\0".join(g) for g in copies]).encode("utf-8", "replace")).hexdigest()
        if digest in _SAME_CHECKED:
            return
        _SAME_CHECKED.add(digest)
        n = len(copies)
        warnings.warn(
            f"{what}: {n} image file{'' if n == 1 else 's'} below {root} {'is' if n == 1 else 'are'} there more "
            f"than once with the same bytes ({_shown_groups(copies)}); each is read once (its first path)",
            DataWarning,
            stacklevel=2,
        )


# ------------------------------------------------------------------ compressed tables
#: Suffixes of the compressed files pandas unpacks by their name (``compression="infer"``)
#: that are checked here, with how to open each as a stream.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zip")

#: Names of table files that may be compressed (without the compression suffix).
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")

#: How deep below the data folder the loaders look for their tables
#: (:func:`fedpl_core.data.files.require_file`'s ``max_depth``).
TABLE_DEPTH = 3

#: The bound on a compressed table's unpacked size when the memory available is unknown.
TABLE_BOUND_FALLBACK = 2 << 30

#: The share of the available memory a table's unpacked text may take: its cells are read
#: as Python strings, several times the text's size (about 5x for MIMIC's metadata), and
#: the rest of the run needs room too.
TABLE_MEMORY_SHARE = 8


def table_bound() -> int:
    """The most bytes a compressed table may unpack to: the memory available now
    (:func:`fedpl_core.data.base.available_memory`) divided by :data:`TABLE_MEMORY_SHARE`
    (a table's text takes several times its size once read), or
    :data:`TABLE_BOUND_FALLBACK` (2 GiB) when the memory available is unknown.  The
    published tables are far below it (MIMIC-CXR's largest unpacks to about 60 MB)."""
    from ..data.base import available_memory

    avail = available_memory()
    return TABLE_BOUND_FALLBACK if avail is None else max(avail // TABLE_MEMORY_SHARE, 1 << 20)


def _bound_reason() -> str:
    from ..data.base import available_memory

    if available_memory() is None:
        return "the memory available is unknown, so at most 2 GiB"
    return f"1/{TABLE_MEMORY_SHARE} of the memory available"


def _is_compressed_table(name: str) -> bool:
    low = name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if low.endswith(suffix):
            return low[: -len(suffix)].endswith(TABLE_SUFFIXES)
    return False


def compressed_tables(root: str | os.PathLike, max_depth: int = TABLE_DEPTH) -> list[Path]:
    """The compressed table files (:data:`TABLE_SUFFIXES` + :data:`COMPRESSED_SUFFIXES`,
    regular files or links to them) at ``root`` or up to ``max_depth`` folders below it,
    where the loaders look for their tables; hidden folders are passed over as the loaders
    pass them over.  Iterative, each real folder once."""
    out: list[Path] = []
    for _, _, entries in _walk(root, lambda e, depth: depth < max_depth and not e.name.startswith(".")):
        for e in entries:
            try:
                if not _is_dir(e) and _is_compressed_table(e.name) and e.is_file():
                    out.append(Path(e.path))
            except OSError:
                continue
    return sorted(out)


def _open_stream(path: Path, raw):
    """The unpacked stream of the compressed file ``path`` (opened as ``raw``), or None
    for a zip archive that does not hold exactly one file (pandas refuses it itself)."""
    import bz2
    import gzip
    import lzma

    low = path.name.lower()
    if low.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if low.endswith(".bz2"):
        return bz2.BZ2File(raw, "rb")
    if low.endswith(".xz"):
        return lzma.LZMAFile(raw, "rb")
    z = zipfile.ZipFile(raw)
    names = [n for n in z.namelist() if not n.endswith("/")]
    return z.open(names[0]) if len(names) == 1 else None


def unpacked_size(path: str | os.PathLike, bound: int) -> int | None:
    """The unpacked size of the compressed file ``path`` counted while streaming it (1 MiB
    at a time, nothing kept), stopping once it passes ``bound`` (then a number over
    ``bound``); None when it cannot be unpacked (the loader reports a damaged file)."""
    import lzma

    from ..data.safeopen import open_regular

    path = Path(path)
    total = 0
    try:
        with open_regular(path, "table file") as raw:
            stream = _open_stream(path, raw)
            if stream is None:
                return None
            with stream:
                while chunk := stream.read(1 << 20):
                    total += len(chunk)
                    if total > bound:
                        return total
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, lzma.LZMAError, NotImplementedError, RuntimeError):
        return None
    return total


#: Compressed tables (path, size, mtime) already found within the bound in this process.
_TABLES_CHECKED: set[tuple[str, int, int]] = set()


def check_compressed_tables(
    root: str | os.PathLike, extra: Iterable[str | os.PathLike] = (), bound: int | None = None
) -> None:
    """A ``DataError`` naming the first compressed table (:func:`compressed_tables` below
    ``root``, and the table files ``extra`` a run names) whose unpacked text passes
    ``bound`` bytes (default :func:`table_bound`), found by streaming it
    (:func:`unpacked_size`) before the loader unpacks it whole.  A file found within the
    bound is not unpacked again in this process while its size and time stay."""
    from ..data.base import DataError, fmt_bytes

    limit = table_bound() if bound is None else bound
    why = "the bound given" if bound is not None else _bound_reason()
    paths = compressed_tables(root)
    for t in extra:
        p = Path(t).expanduser()
        if not p.is_absolute():
            p = Path(root) / p
        if _is_compressed_table(p.name) or p.name.lower().endswith(COMPRESSED_SUFFIXES):
            if p.is_file() and p not in paths:
                paths.append(p)
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        key = (os.fspath(p), st.st_size, st.st_mtime_ns)
        if key in _TABLES_CHECKED:
            continue
        n = unpacked_size(p, limit)
        if n is not None and n > limit:
            raise DataError(
                f"table file {p} ({fmt_bytes(st.st_size)}) unpacks to more than {fmt_bytes(limit)}, more than the "
                f"memory allows for a table ({why}); refused before reading it: the file is damaged or not the "
                "published one; download it again"
            )
        _TABLES_CHECKED.add(key)


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
    "INDEXED_IMAGES",
    "check_compressed_tables",
    "check_same_names",
    "compressed_tables",
    "same_names",
    "table_bound",
    "unpacked_size",
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
