"""How the package's warnings read: one line each, as its errors are.

Python prints a warning as ``<file>:<line>: <Category>: <message>`` followed by the source
line that raised it (``return fn(train, ...)``), which tells a user of the command line or
of a notebook nothing.  :func:`one_line_warnings` makes every warning one line,
``fedpl: warning: <message>`` (a warning of another library names its category:
``fedpl: warning: UserWarning: ...``), the form of the command line's ``fedpl: error:``
lines.  The command line turns it on for the length of a command; the notebooks' setup
(:func:`fedpl_core.studies.parameters.prepare`) for the kernel; the worker processes of a grid
inherit it from their driver (:mod:`fedpl_core.runs.grid`).

A warning is printed **once** a process: the same line again says nothing new.  Python's own
"once per location" rule does not hold here, because every ``warnings.catch_warnings`` block
(the metrics use one for each evaluation) resets it, so a grid printed a partition's warning
for every run.  A block that records warnings (``catch_warnings(record=True)``, pytest's
``warns``) still sees every one.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PREFIX = "fedpl: warning: "


def _own(category: type, filename: str) -> bool:
    """A warning of this package: its category is defined here, or package code raised it."""
    if (getattr(category, "__module__", "") or "").split(".")[0] == PACKAGE_DIR.name:
        return True
    try:
        return Path(filename).resolve().is_relative_to(PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def format_warning(message, category, filename, lineno, line=None) -> str:
    """``fedpl: warning: <message>`` on one line (the message's lines joined), for
    :data:`warnings.formatwarning`; another library's warning keeps its category name."""
    text = " ".join(str(message).split())
    return f"{PREFIX}{text}\n" if _own(category, filename) else f"{PREFIX}{category.__name__}: {text}\n"


_SHOWN: set[str] = set()  # the lines this process has printed


def show_once(message, category, filename, lineno, file=None, line=None) -> None:
    """:data:`warnings.showwarning` that prints each one-line warning once a process."""
    text = format_warning(message, category, filename, lineno, line)
    if text in _SHOWN:
        return
    _SHOWN.add(text)
    _ORIGINAL_SHOW(message, category, filename, lineno, file, line)


def one_line_warnings_on() -> bool:
    """Whether warnings print as one line now (a grid's workers do as their driver)."""
    return warnings.formatwarning is format_warning


def use_one_line_warnings(on: bool = True) -> None:
    """Print every warning of this process as one line (:func:`format_warning`), each once,
    or (``on=False``) in Python's own format again."""
    warnings.formatwarning = format_warning if on else _ORIGINAL
    warnings.showwarning = show_once if on else _ORIGINAL_SHOW


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """``with one_line_warnings():`` every warning of the block is one line, each printed
    once; the format before the block is restored after it."""
    before, before_show = warnings.formatwarning, warnings.showwarning
    warnings.formatwarning, warnings.showwarning = format_warning, show_once
    try:
        yield
    finally:
        warnings.formatwarning, warnings.showwarning = before, before_show


_ORIGINAL = warnings.formatwarning  # the format before this module changed it
_ORIGINAL_SHOW = warnings.showwarning

__all__ = [
    "format_warning",
    "show_once",
    "one_line_warnings",
    "use_one_line_warnings",
    "one_line_warnings_on",
    "PREFIX",
]
