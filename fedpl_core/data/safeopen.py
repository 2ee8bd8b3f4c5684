"""Which files a loader opens: regular files only.

A name that looks like an image or a table can stand for something else: a FIFO (an
``open`` waits for a writer that never comes, so the run hangs), a socket, a device, a
folder named ``x.png``, or a link to nothing.  The loaders open every image, label table
and array file through :func:`open_regular`, which looks at the file with ``os.stat``
first and opens only a regular file (a link to one included); the open itself uses
``O_NONBLOCK`` and checks the opened file again with ``fstat``, so a file swapped for a
FIFO between the look and the open cannot block either.  Folder listings
(:func:`fedpl_core.data.files.scan_files`) skip such entries and name them.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from .base import DataError

#: The kinds of file :func:`describe_mode` names, by their ``stat`` test.
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def describe_mode(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO (named pipe)", "a folder", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str | os.PathLike) -> str | None:
    """None when ``path`` is a regular file or a link to one; else what it is instead:
    ``"missing"`` (nothing there), ``"a link to a missing file"``, ``"a FIFO (named
    pipe)"``, ``"a folder"``, ... .  Only ``stat`` is called: nothing is opened."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a link to a missing file" if os.path.islink(path) else "missing"
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    return None if stat.S_ISREG(st.st_mode) else describe_mode(st.st_mode)


def open_regular(path: str | os.PathLike, what: str = "file") -> BinaryIO:
    """``path`` opened for binary reading, if it is a regular file (or a link to one).

    A missing path raises ``FileNotFoundError`` (callers word their own "not found");
    anything else that is not a regular file raises a :class:`DataError` ``"{what}
    {path} is a FIFO (named pipe), not a regular file"`` without being opened.  The
    file is opened with ``O_NONBLOCK`` and checked again with ``fstat`` (a FIFO put in
    its place after the ``stat`` cannot block the open), then switched back to blocking
    reads."""
    reason = not_regular(path)
    if reason == "missing":
        raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
    if reason is not None:
        raise DataError(f"{what} {os.fspath(path)} is {reason}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DataError(f"{what} {os.fspath(path)} is {describe_mode(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


__all__ = ["describe_mode", "not_regular", "open_regular"]
