"""Where a result came from, and whether the code that made it is still the code.

Every result JSON written by :func:`fedpl_core.runs.runner.run` carries a
``"provenance"`` mapping (:func:`provenance`): the package version, the git commit and a
dirty flag when the package runs from a git checkout (else null), the Python, torch and
numpy versions, the device, the date (UTC, ISO 8601), the host, the seconds of the run,
the numeric platform (:func:`numeric_platform`'s key, and apart the CPU kernels torch
picked and the torch thread count: they decide the last bits of a result), and the
**code fingerprint** of the run (:func:`code_fingerprint`) with its parts (``"code"``:
one digest per module).  A numeric platform's key ends in its thread count; two platforms are
compared without it (:func:`platform_base`), the threads apart.  ``reproduce`` collects the
platforms the notebooks' results report (:data:`PLATFORM_LOG_ENV`, :func:`note_platforms`) for
its run's record: the platforms that trained the runs, not that of the process executing them.

**The code fingerprint is the code that computes the run**, read by
:class:`~fedpl_core.runs.code_index.CodeIndex` as units (a function, a class, a module-level
value) with docstrings, comments, formatting and signature annotations left out: the
closure of the units the run's roots name (:func:`run_units`).  The roots:

* the engine: :data:`ENGINE_ROOTS` (building the run's data, partition, model, method and
  :class:`~fedpl_core.fl.simulation.Simulation` from its config, the round loop, and the two
  functions that turn its history into the numbers a result keeps);
* its method: the class of the built method and its bases, and the class of every block
  object it holds (its loss, head aggregation, clients, warm-up...: the ones it *uses*, not
  every block there is);
* its data: :func:`fedpl_core.data.sources.source_code`, the builder of its data source and,
  for a data set of the catalogue, its loader; its partition: the builder
  :func:`fedpl_core.runs.build.partition_builder` picks.

Not followed (:data:`NOT_FINGERPRINTED`): code that never changes a run's numbers:
validation of settings (a config's values are in the run id), files, locks, paths,
messages and plugins loading (:mod:`fedpl_core.base`), the cache, grid, option and
data-file checks, the result schema and provenance code (the rest of :mod:`fedpl_core.runs`), the guard that
watches what a plugin registers (:mod:`fedpl_core.methods.plugin_guard`), tables, figures, the findings and the
site (:mod:`fedpl_core.report`), the studies and the applications; a registry's list of
names; third-party code, recorded by its versions.  So a caption, a docstring, a study's
table or a new method in a module of its own leaves every cached run valid, and an edit of
one block invalidates the runs of the methods that hold it, and no others
(``tests/test_fingerprint.py`` checks the three, and traces every method's tiny run to
check that the fingerprint holds all the package code it executes).

The run id (the results file's name) still hashes the config only, so a file stays
addressable; a cached result whose fingerprint is not the current code's (or that has
none: written before results recorded it) is *stale*: it is recomputed with a warning,
unless ``keep_stale=True`` (``run`` / ``run_many``), ``$FEDPL_KEEP_STALE=1`` or
``--keep-stale`` asks to keep it.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .code_index import CodeIndex, module_digests

KEEP_STALE_ENV = "FEDPL_KEEP_STALE"

#: The units every run goes through: its data, partition, model, method and simulation built
#: from its config (and the config's derived settings), and the code that turns the
#: simulation's history into the numbers a result keeps.
ENGINE_ROOTS: tuple[str, ...] = (
    "fedpl_core.runs.build:build_simulation",
    "fedpl_core.runs.build:load_data",
    "fedpl_core.runs.build:build_partition",
    "fedpl_core.runs.experiment_config:ExperimentConfig",
    "fedpl_core.fl.simulation:Simulation",
    "fedpl_core.runs.results:final_record",
    "fedpl_core.runs.results:finite_or_none",
    "fedpl_core.runs.results:RunResult",
)

#: Modules whose code never changes a run's numbers, so never part of a fingerprint (module
#: docstring); a module name stands for its submodules too.
NOT_FINGERPRINTED: tuple[str, ...] = (
    "fedpl_core.base",
    "fedpl_core.runs.runner",
    "fedpl_core.runs.options",
    "fedpl_core.runs.data_checks",
    "fedpl_core.runs.schema",
    "fedpl_core.runs.grid",
    "fedpl_core.runs.study",
    "fedpl_core.runs.provenance",
    "fedpl_core.runs.code_index",
    "fedpl_core.report",
    "fedpl_core.studies",
    "fedpl_core.apps",
    "fedpl_core.methods.plugin_guard",
)

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def keep_stale_default(keep_stale: bool | None) -> bool:
    """``keep_stale`` when given, else ``$FEDPL_KEEP_STALE`` (``1``, ``true``, ``yes``, ``on``; ``0``,
    ``false``, ``no``, ``off`` or empty: no; anything else is a ``ConfigError``)."""
    if keep_stale is not None:
        return bool(keep_stale)
    raw = os.environ.get(KEEP_STALE_ENV, "").strip()
    if not raw:
        return False
    from ..base.validation import parse_bool

    return parse_bool(raw, f"${KEEP_STALE_ENV}")  # a misspelt value is refused, not read as "no"


@functools.lru_cache(maxsize=1)
def code_index() -> CodeIndex:
    """The index of this process's package code (read once: the code this process runs)."""
    return CodeIndex({"fedpl_core": PACKAGE_DIR}, exclude=NOT_FINGERPRINTED)


def _key(obj: Any) -> str | None:
    """``module:top-level name`` of a class or function, or None for one without a source
    file of its own (built in, third-party, or defined in a notebook's ``__main__``)."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", "").split(".")[0]
    if not module or not name or module.split(".")[0] in ("builtins", "torch", "numpy", "__main__", "typing"):
        return None
    return f"{module}:{name}"


def _held_classes(obj: Any, depth: int = 3, seen: set | None = None) -> set[type]:
    """The classes of ``obj`` and of the objects it holds (attributes, containers), ``depth``
    levels down, that are defined outside the standard library, torch and numpy."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return set()
    seen.add(id(obj))
    out: set[type] = set()
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = list(obj)
    else:
        cls = type(obj)
        if _key(cls) is not None and cls.__module__ not in sys.builtin_module_names:
            out |= {c for c in cls.__mro__ if _key(c) is not None}
        items = list(vars(obj).values()) if hasattr(obj, "__dict__") and not isinstance(obj, type) else []
    for v in items:
        if isinstance(v, (str, bytes, int, float, bool)) or v is None:
            continue
        out |= _held_classes(v, depth - 1, seen)
    return out


def _method_roots(cfg) -> set[str]:
    """The units of the run's method: its class and bases, and the blocks it holds (classes of
    the package, or of the module that defines the method: a plugin's)."""
    from ..methods import METHODS, get_method

    cls = METHODS.get(cfg.method)
    home = "fedpl_core" if cls is None else cls.__module__
    try:
        classes = _held_classes(get_method(cfg.method, **cfg.method_kwargs))
    except Exception:  # a method that no longer takes these options: its registered class
        classes = set() if cls is None else set(cls.__mro__)
    return {
        k
        for c in classes
        if (k := _key(c)) is not None and (c.__module__.split(".")[0] == "fedpl_core" or c.__module__ == home)
    }


def _data_roots(cfg) -> set[str]:
    from ..data.sources import source_code

    try:
        return {k for fn in source_code(cfg.dataset) if (k := _key(fn)) is not None}
    except Exception:  # an unknown source: the run cannot be built either
        return set()


def _partition_roots(cfg) -> set[str]:
    from .build import partition_builder

    try:
        key = _key(partition_builder(cfg))
    except AttributeError:  # an unknown partition: the run cannot be built either
        return set()
    return set() if key is None else {key}


def run_roots(cfg) -> list[str]:
    """The root units of the run ``cfg`` (module docstring)."""
    return sorted(set(ENGINE_ROOTS) | _method_roots(cfg) | _data_roots(cfg) | _partition_roots(cfg))


def _index_for(keys: Iterable[str]) -> CodeIndex:
    """The index, told the source file of any root outside the package (a plugin's method)."""
    index = code_index()
    for key in keys:
        module = key.split(":")[0]
        if module.split(".")[0] != "fedpl_core" and module not in index.extra_files:
            mod = sys.modules.get(module)
            src = inspect.getsourcefile(mod) if mod is not None else None
            if src and os.path.isfile(src):
                index.extra_files[module] = Path(src)
    return index


def run_units(cfg) -> dict[str, str]:
    """``{unit key: digest}`` of every unit of code the run ``cfg`` computes with."""
    roots = run_roots(cfg)
    return _index_for(roots).closure(roots)


def code_hashes(cfg) -> dict[str, str]:
    """``{module: digest}`` of :func:`run_units` (one digest a module over its units): the
    ``"code"`` a result records."""
    return module_digests(run_units(cfg))


def fingerprint_of(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{m}:{h}\n" for m, h in sorted(hashes.items())).encode()).hexdigest()[:16]


def code_fingerprint(cfg) -> str:
    """The code fingerprint of the run ``cfg`` (16 hex digits, see the module docstring)."""
    return fingerprint_of(code_hashes(cfg))


def package_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("fedpl")
    except Exception:
        # the package's own number when it is not installed (read, not imported: the
        # package imports the runner, which imports this module)
        return getattr(sys.modules.get("fedpl_core"), "__version__", None)


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout the package runs from; ``(None, None)`` when
    it is not one, or git is missing or slow (5 s).  Read once per process."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None, None
    try:

        def git(*args: str) -> str:
            return subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=True
            ).stdout.strip()

        commit = git("rev-parse", "HEAD") or None
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


def _simd_flags() -> list[str]:
    """The CPU's vector-instruction flags (``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    line = next((ln for ln in text.splitlines() if ln.startswith(("flags", "Features"))), "")
    return sorted(
        f
        for f in line.split(":", 1)[-1].split()
        if f.startswith(("avx", "amx", "fma", "f16c", "sse", "asimd", "sve", "neon"))
    )


def numeric_platform() -> dict[str, Any]:
    """What decides the last bits of a CPU run besides the code and its config: the torch
    version, the vector kernels torch picked (``torch.backends.cpu.get_cpu_capability``),
    the CPU's vector-instruction flags (oneDNN and MKL pick their kernels by them; a
    digest), the machine and the torch thread count.  The same code and config on two
    platforms agree to about 1e-6 after a round and can drift apart over many rounds;
    on one platform they agree bit for bit.  ``key`` joins them in one string."""
    import torch

    cap = torch.backends.cpu.get_cpu_capability()
    simd = hashlib.sha256(" ".join(_simd_flags()).encode()).hexdigest()[:8]
    threads = torch.get_num_threads()
    return {
        "torch": torch.__version__,
        "cpu_capability": cap,
        "cpu_simd": simd,
        "machine": platform.machine(),
        "torch_threads": threads,
        "key": f"torch {torch.__version__}, {platform.machine()} {cap} (simd {simd}), {threads} thread(s)",
    }


_THREADS = re.compile(r", (\d+) thread\(s\)$")
#: The form of a numeric platform's key that a record or a log keeps: printable text, one line.
_PLATFORM_TEXT = re.compile(r"[ -~]{1,200}")


def is_platform_text(value: Any) -> bool:
    """Whether ``value`` has the form of a numeric platform's key (printable text, one line, at
    most 200 characters): the only form that a record, a log or a message shows."""
    return isinstance(value, str) and _PLATFORM_TEXT.fullmatch(value) is not None


def platform_base(key: str) -> str:
    """A numeric platform's key without its thread count (``"torch 2.14.1, x86_64 AVX512 (simd
    0544177b)"``): what the machine and its torch decide.  The thread count is the process's
    choice (a profile sets one thread a run; a worker process of a grid its share of the
    cores), so two platforms are compared by this part, the threads apart."""
    return _THREADS.sub("", key)


def platform_threads(key: str) -> int | None:
    """The torch thread count of a numeric platform's key; None when it names none."""
    m = _THREADS.search(key)
    return int(m.group(1)) if m else None


#: Set by ``reproduce`` (:func:`fedpl_core.report.record.platform_log`) to a file of its own: every
#: grid (:func:`fedpl_core.runs.grid.run_grid`) the executed notebooks run (their kernels inherit
#: the variable) adds to it the numeric platforms its results report, one a line, so that the
#: run's record names the platforms that *trained* the notebooks' runs (with their thread count),
#: not only the platform of the process that executed the notebooks.
PLATFORM_LOG_ENV = "FEDPL_PLATFORM_LOG"
#: The largest platform log read or added to (a log holds each platform once: a few lines).
PLATFORM_LOG_MAX_BYTES = 64 << 10


def read_platform_log(path: str | Path) -> list[str]:
    """The distinct numeric platforms in the log ``path`` (:data:`PLATFORM_LOG_ENV`), sorted;
    lines that are not a platform's key are left out.  A missing log holds none; one that
    cannot be read (a link, a device, too large) is ``ValueError`` (one line)."""
    from ..base.config_files import read_bytes_bounded

    try:
        raw = read_bytes_bounded(path, "platform log", PLATFORM_LOG_MAX_BYTES)
    except FileNotFoundError:
        return []
    lines = raw.decode("utf-8", errors="replace").splitlines()
    return sorted({ln for ln in lines if is_platform_text(ln)})


def note_platforms(provenances: Iterable[dict[str, Any] | None]) -> None:
    """Add the numeric platforms that ``provenances`` (of the results a grid returns) report to
    the log :data:`PLATFORM_LOG_ENV` names, each platform once in the log; nothing without the
    variable.  The log is never written through a link, and a log that cannot be written is one
    warning, never a failed grid."""
    path = os.environ.get(PLATFORM_LOG_ENV)
    if not path:
        return
    found = {
        p["numeric_platform"]
        for p in provenances
        if isinstance(p, dict) and is_platform_text(p.get("numeric_platform"))
    }
    try:
        new = sorted(found - set(read_platform_log(path)))
        if not new:
            return
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write("".join(f"{key}\n" for key in new))
    except (OSError, ValueError) as e:
        import warnings

        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        warnings.warn(
            f"the runs' numeric platforms were not noted in ${PLATFORM_LOG_ENV} ({path}): {why}",
            RuntimeWarning,
            stacklevel=2,
        )


def provenance(cfg, device: str | None = None, seconds: float | None = None) -> dict[str, Any]:
    """The ``"provenance"`` mapping of a result of the run ``cfg``."""
    import numpy
    import torch

    commit, dirty = git_state()
    hashes = code_hashes(cfg)
    plat = numeric_platform()
    return {
        "package_version": package_version(),
        "git_commit": commit,
        "git_dirty": dirty,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "device": device,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "seconds": seconds,
        **{k: plat[k] for k in ("cpu_capability", "torch_threads")},
        "numeric_platform": plat["key"],
        "code_fingerprint": fingerprint_of(hashes),
        "code": hashes,
    }


def stale_reason(prov: dict[str, Any] | None, cfg) -> str | None:
    """Why a cached result with provenance ``prov`` is stale for the current code, or None
    when its code fingerprint is the current one."""
    if not prov or not isinstance(prov.get("code_fingerprint"), str):
        return "written before results recorded their code"
    hashes = code_hashes(cfg)
    if prov["code_fingerprint"] == fingerprint_of(hashes):
        return None
    old = prov.get("code") if isinstance(prov.get("code"), dict) else {}
    changed = sorted(m for m in set(old) | set(hashes) if old.get(m) != hashes.get(m))
    if not changed:
        return "its code fingerprint differs"
    shown = ", ".join(m.removeprefix("fedpl_core.") for m in changed[:4]) + (" ..." if len(changed) > 4 else "")
    return f"code changed since: {shown}"


__all__ = [
    "ENGINE_ROOTS",
    "NOT_FINGERPRINTED",
    "KEEP_STALE_ENV",
    "keep_stale_default",
    "code_index",
    "run_roots",
    "run_units",
    "code_hashes",
    "code_fingerprint",
    "fingerprint_of",
    "package_version",
    "git_state",
    "numeric_platform",
    "is_platform_text",
    "platform_base",
    "platform_threads",
    "PLATFORM_LOG_ENV",
    "read_platform_log",
    "note_platforms",
    "provenance",
    "stale_reason",
]
