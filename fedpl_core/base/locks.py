"""Run locks: ``<run_id>.lock`` in a results folder, so that two processes never train the
same run.

A lock is a :class:`filelock.FileLock`: an OS lock (``flock``) on the file, which the kernel
lets go when its holder exits or is killed, so a lock of a dead process is free at once,
whatever its file says and whoever reuses its process id.  Once it holds the lock, the
holder writes ``<host> <pid> <time>`` into the file (filelock opens it without truncating;
the text is for the messages of those who wait, never for deciding who holds the lock:
the kernel does), and removes the file when it lets go, while it still holds the lock
(filelock's waiters notice a lock on a removed file and try again on the new one).

A file system without ``flock`` raises ``OSError`` (ENOSYS) instead of falling back to a
marker file that a killed run would leave behind for ever.

>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "r.lock"
>>> with run_lock(path) as lock:
...     try_lock(path) is None, holder(path).startswith("host ")
(True, True)
>>> path.exists()
False
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger("fedpl")


class RunLock:
    """The lock of one run, held by this process: :meth:`release` lets it go (once)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._inode: tuple[int, int] | None = None
        self._lock = FileLock(self.path, on_acquired=self._mark)

    def _mark(self, fd: int) -> None:
        """Called by filelock with the lock's descriptor once the lock is held: the
        holder's host, pid and time replace what an earlier holder wrote."""
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{socket.gethostname()} {os.getpid()} {time.time():.0f}\n".encode(), 0)
        except OSError as e:  # a full disk (ENOSPC), a quota: no lock left behind, and the path named
            self._remove_own_file()
            raise _named(e, f"cannot write the run lock {self.path}") from None

    def _remove_own_file(self) -> None:
        """Remove the lock's file if it is still the one this process locked."""
        try:
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._inode:
                os.unlink(self.path)
        except OSError:
            pass

    def acquire(self, timeout: float = 0) -> bool:
        """True once held; False when another process still holds it after ``timeout``
        seconds (0: one try; negative: wait as long as it takes)."""
        _clear_non_file(self.path)
        try:
            self._lock.acquire(timeout=timeout)
        except Timeout:
            return False
        except OSError as e:
            if str(self.path) in str(e):  # said by _mark
                raise
            raise _named(e, f"cannot take the run lock {self.path}") from None
        return True

    def release(self) -> None:
        """Remove the lock's file (if it is still the one locked) and let the lock go."""
        if not self._lock.is_locked:
            return
        try:
            self._remove_own_file()
        finally:
            self._lock.release()

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _named(e: OSError, what: str) -> OSError:
    """``e`` said as ``<what>: <why>`` (a full disk: "no space left on the device"), its
    errno kept."""
    why = {
        errno.ENOSPC: "no space left on the device; free some space",
        errno.EDQUOT: "the disk quota is used up; free some space",
    }.get(e.errno if e.errno is not None else -1, e.strerror or str(e))
    out = OSError(f"{what}: {why}")
    out.errno = e.errno
    return out


def _clear_non_file(path: Path) -> None:
    """A link or other non-file planted at a lock's name is no lock: removed (a link is
    removed, never followed), with a warning; filelock opens lock files with
    ``O_NOFOLLOW`` and would refuse it.  A folder there is not removed (it may hold
    someone's files): ``IsADirectoryError``, one line saying to move it away."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{path} is a folder, where a run's lock file goes; move it away and run again")
    if stat.S_ISREG(st.st_mode):
        return
    log.warning("removing %s: a lock is a regular file, this is not one", path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def try_lock(path: str | Path, timeout: float = 0) -> RunLock | None:
    """The lock at ``path`` held by this process, or None when another process holds it
    (after waiting up to ``timeout`` seconds).  Keep the returned object until
    :meth:`RunLock.release`: once garbage-collected, its lock is let go."""
    lock = RunLock(path)
    return lock if lock.acquire(timeout) else None


@contextlib.contextmanager
def run_lock(path: str | Path) -> Iterator[RunLock]:
    """``with run_lock(path):`` holds the lock for the block, waiting for it as long as
    another process holds it."""
    lock = RunLock(path)
    lock.acquire(timeout=-1)
    try:
        yield lock
    finally:
        lock.release()


def holder(path: str | Path) -> str:
    """Who holds the lock at ``path``, from what its holder wrote into it: ``host H pid P,
    for N s``; a vaguer phrase while the file is unreadable, empty or gone (its holder has
    just taken it or let it go)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return "a process that has just let it go"
    except OSError:
        return "a process (its lock file cannot be read)"
    try:
        host, pid, since = os.read(fd, 4096).decode("utf-8", "replace").split()[:3]
        return f"host {host} pid {int(pid)}, for {max(0.0, time.time() - float(since)):.0f} s"
    except (OSError, ValueError):
        return "a process that has just taken it"
    finally:
        os.close(fd)


__all__ = ["RunLock", "holder", "run_lock", "try_lock"]
