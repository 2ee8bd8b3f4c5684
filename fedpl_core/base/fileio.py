"""Files in a results folder that other processes, users and hosts may share.

Every file the package writes there, but run locks (:mod:`fedpl_core.base.locks`: opened with
``O_NOFOLLOW``, written in place by their holder), goes through :func:`atomic_write`: the content is
written to a fresh temporary file made with :func:`tempfile.mkstemp` (``O_CREAT |
O_EXCL``, so a file or link planted under the temporary name is never opened, truncated
or written through) in the target's folder, flushed and ``fsync``-ed, then moved into
place with :func:`os.replace`, which replaces a link planted at the target instead of
writing through it.  A reader sees the old file or the new one, never a half-written one.

With ``root`` (the output folder a user named: a site, a folder of executed notebooks, a
results folder), :func:`atomic_write` and :func:`safe_dir` also refuse a target outside
``root`` and a symbolic link at any depth between ``root`` and the target (``root``
included), with :class:`UnsafePath`: a link planted in the output folder or in any folder
below it is never written through.  Nothing is deleted that the package did not make.

Temporary names are ``.<target name>.<pid>@<host>.<random>.tmp``: the writer's process and
host are in the name, so :func:`remove_stale_temps` removes only temporaries of this
package whose process is gone (this host) or that nobody touched for
:func:`stale_after` seconds (another host); it never follows a link and leaves anything
that is not a regular file alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

STALE_ENV = "FEDPL_LOCK_STALE_S"
DEFAULT_STALE_S = 300.0

_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)(?:@(?P<host>[A-Za-z0-9_-]+)\.[A-Za-z0-9_]+)?\.tmp$")


def stale_after() -> float:
    """Seconds after which another host's untouched temporary file counts as abandoned
    (``$FEDPL_LOCK_STALE_S``, default 300; this host's are judged by their process).
    Run locks need no age limit: :mod:`fedpl_core.base.locks`."""
    raw = os.environ.get(STALE_ENV, "")
    if not raw.strip():
        return DEFAULT_STALE_S
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"{STALE_ENV} must be a number of seconds, got {raw!r}") from None
    if not (v > 0 and v == v and v != float("inf")):
        raise ValueError(f"{STALE_ENV} must be a positive number of seconds, got {raw!r}")
    return v


def host_tag() -> str:
    """This host's name as it stands in temporary names (letters, digits, ``-``, ``_``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:64] or "host"


def temp_prefix(target: str | Path) -> str:
    """The prefix of this process's temporary files for ``target``."""
    return f".{Path(target).name}.{os.getpid()}@{host_tag()}."


class UnsafePath(OSError):
    """A place the package will not write to: outside its output folder, or reached
    through a symbolic link (one line naming both)."""


def _lexical(p: Path) -> Path:
    """``p`` absolute with ``.`` and ``..`` removed by text, no link followed."""
    return Path(os.path.normpath(os.path.abspath(p)))


def check_inside(root: str | Path, target: str | Path) -> Path:
    """``target`` (absolute, no link followed) when it lies inside ``root`` and no
    existing component from ``root`` down to ``target``'s folder is a symbolic link or
    a file; else :class:`UnsafePath`.  ``root`` itself must not be a link.  Missing
    folders are fine (:func:`safe_dir` makes them)."""
    r, t = _lexical(Path(root)), _lexical(Path(target))
    if t != r and not t.is_relative_to(r):
        raise UnsafePath(f"{target} is outside the output folder {root}; the package writes only inside it")
    here = r
    for part in [None, *t.relative_to(r).parts[:-1]] if t != r else [None]:
        if part is not None:
            here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(f"{here} is a symbolic link; the package never writes through a link (in {root})")
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{here} is a file, not a folder (in {root})")
    return t


def check_replaceable(target: str | Path) -> Path:
    """``target`` when a file may be put there: nothing there yet, a regular file, or a
    link (replaced, never followed); a folder, a device, a pipe or a socket is refused with
    :class:`UnsafePath` (``os.replace`` would put a file in place of ``/dev/full``)."""
    p = Path(target)
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        return p
    if stat.S_ISDIR(mode):
        raise UnsafePath(f"{p} is a folder; give a file name")
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise UnsafePath(f"{p} is not a regular file (a device, pipe or socket); the package writes only files")
    return p


def safe_dir(root: str | Path, rel: str | Path = ".") -> Path:
    """The folder ``root/rel``, made if missing, each folder on the way checked by
    :func:`check_inside` (no link, inside ``root``) before and after it is made.  The
    folders above ``root`` are the user's path: they are made if missing, as ``mkdir -p``."""
    target = _lexical(Path(root) / rel)
    check_inside(root, target / "x")
    r = _lexical(Path(root))
    if not os.path.lexists(r):
        r.parent.mkdir(parents=True, exist_ok=True)
    here = r
    for part in [None, *target.relative_to(r).parts]:
        if part is not None:
            here = here / part
        try:
            os.mkdir(here)
        except FileExistsError:
            pass
        st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise UnsafePath(f"{here} is not a plain folder (a link or a file); the package never writes through it")
    return target


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def make_temp(target: str | Path, mode: str = "w") -> tuple[Path, IO]:
    """A new temporary file beside ``target`` (``O_EXCL``: never an existing file or
    link), open for writing with ``mode``, with the permissions a plain ``open`` would
    give (mkstemp's 0600 would hide shared results from the other users of a folder)."""
    target = Path(target)
    fd, name = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        return Path(name), os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise


#: The errors of a full disk or an exhausted quota.
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def no_space_error(e: OSError, target: str | Path) -> OSError:
    """``e`` (a full disk, :data:`NO_SPACE`) said with the folder it happened in: "no
    space left in <folder> to write <name>"; its errno kept."""
    target = Path(target)
    why = "the disk quota is used up" if e.errno == errno.EDQUOT else "no space left"
    out = OSError(f"{why} in {target.parent} to write {target.name}; free some space there")
    out.errno = e.errno
    return out


@contextlib.contextmanager
def atomic_write(
    target: str | Path, mode: str = "w", fsync: bool = True, root: str | Path | None = None
) -> Iterator[IO]:
    """``with atomic_write(path) as f: f.write(...)``: the content lands at ``path`` in
    one :func:`os.replace` when the block ends without an error; on an error the target
    is left as it was and the temporary file is removed (a full disk is said as such,
    naming the folder: :func:`no_space_error`).  A link at ``path`` is replaced, never
    written through; with ``root``, ``path`` must lie inside ``root`` with no link on the
    way (:func:`check_inside`)."""
    target = check_replaceable(target)
    if root is not None:
        check_inside(root, target)
        safe_dir(root, _lexical(target.parent).relative_to(_lexical(Path(root))))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp, f = make_temp(target, mode)
    except OSError as e:
        if isinstance(e, UnsafePath):
            raise
        if e.errno in NO_SPACE:
            raise no_space_error(e, target) from None
        raise
    try:
        with f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, target)
        if fsync:
            _fsync_dir(target.parent)
    except OSError as e:
        if e.errno in NO_SPACE:
            raise no_space_error(e, target) from None
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """``with atomic_path(path) as tmp: writer(tmp)`` for writers that need a file name
    (``numpy.lib.format.open_memmap``): ``tmp`` is a fresh file made by :func:`make_temp`
    (``O_EXCL``) beside ``path``, moved into place when the block ends without an error,
    removed otherwise."""
    target = check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp, f = make_temp(target, "wb")
    f.close()
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def open_log(path: Path, append: bool = False) -> IO[bytes]:
    """``path`` open for writing bytes (``append``: at its end), for a log that a process
    writes as it runs (not atomic: the process holds the file): a link at the name is
    removed first (the log replaces it, never written through) and the file is opened with
    ``O_NOFOLLOW``; a folder, a device or a pipe there is refused (:func:`check_replaceable`)."""
    check_replaceable(path)
    if path.is_symlink():
        path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | (os.O_APPEND if append else os.O_TRUNC)
    return os.fdopen(os.open(path, flags, 0o666), "ab" if append else "wb")


def atomic_write_text(target: str | Path, text: str, fsync: bool = True, root: str | Path | None = None) -> None:
    with atomic_write(target, "w", fsync=fsync, root=root) as f:
        f.write(text)


def atomic_write_bytes(target: str | Path, data: bytes, fsync: bool = True, root: str | Path | None = None) -> None:
    with atomic_write(target, "wb", fsync=fsync, root=root) as f:
        f.write(data)


#: Bytes :func:`check_writable` reserves for a moment: a disk without them is full.
PROBE_BYTES = 4096


def check_writable(target: str | Path) -> Path:
    """Raise ``OSError`` now when :func:`atomic_write` could not write ``target``: a
    folder there, a place this process may not write, or a disk without
    :data:`PROBE_BYTES` free (reserved with ``posix_fallocate`` in a temporary file, then
    released: an empty file can still be made on a full disk)."""
    p = Path(target)
    if p.is_dir():
        raise IsADirectoryError(f"{p} is a folder; give a file name")
    check_replaceable(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp, f = make_temp(p, "wb")
        try:
            with f:
                if hasattr(os, "posix_fallocate"):
                    try:
                        os.posix_fallocate(f.fileno(), 0, PROBE_BYTES)
                    except OSError as e:
                        if e.errno in NO_SPACE:
                            raise
                        # EOPNOTSUPP, EINVAL: the file system cannot say in advance
        finally:
            os.unlink(tmp)
    except OSError as e:
        if e.errno in NO_SPACE:
            raise no_space_error(e, p) from None
        raise
    return p


def parse_temp_name(name: str) -> tuple[int, str | None] | None:
    """``(pid, host tag or None for the older host-less form)`` of a temporary name of
    this package, else None."""
    m = _TEMP.match(name)
    if not m:
        return None
    return int(m["pid"]), m["host"]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def remove_stale_temps(folder: str | Path, stale_s: float | None = None) -> list[Path]:
    """Remove this package's temporary files in ``folder`` that are abandoned: the writing
    process (on this host) no longer runs, or (another host's file) it was last modified
    more than ``stale_s`` seconds ago (default :func:`stale_after`).  Links and anything
    else that is not a regular file are never removed, nor followed."""
    stale_s = stale_after() if stale_s is None else stale_s
    here, removed = host_tag(), []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        parsed = parse_temp_name(e.name)
        if parsed is None:
            continue
        try:
            st = os.lstat(e.path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        pid, host = parsed
        if host in (None, here):
            stale = not pid_alive(pid)
        else:
            stale = time.time() - st.st_mtime > stale_s
        if stale:
            try:
                os.unlink(e.path)
            except FileNotFoundError:
                continue
            except OSError:
                continue
            removed.append(Path(folder) / e.name)
    return sorted(removed)


__all__ = [
    "UnsafePath",
    "check_inside",
    "safe_dir",
    "check_replaceable",
    "open_log",
    "atomic_write",
    "atomic_write_text",
    "atomic_write_bytes",
    "make_temp",
    "check_writable",
    "no_space_error",
    "NO_SPACE",
    "remove_stale_temps",
    "parse_temp_name",
    "stale_after",
    "host_tag",
    "temp_prefix",
    "pid_alive",
    "STALE_ENV",
    "DEFAULT_STALE_S",
]
