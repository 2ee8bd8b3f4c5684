"""Where a result came from, and whether the code that made it is still the code.

Every result JSON written by :func:`fedpl_core.runs.runner.run` carries a
``"provenance"`` mapping (:func:`provenance`): the package version, the git commit and a
dirty flag when the package runs from a git checkout (else null), the Python, torch and
numpy versions, the device, the date (UTC, ISO 8601), the host, the seconds of the run,
the numeric platform (:func:`numeric_platform`'s key, and apart the CPU kernels torch
picked and the torch thread count: they decide the last bits of a result), and the
**code fingerprint** of the run (:func:`code_fingerprint`).

The code fingerprint is a SHA-256 over the source files of the modules a run uses:

* :data:`FINGERPRINT_MODULES`, the modules every run goes through (every file of the
  federated core :mod:`fedpl_core.fl`: simulation, sites, server, federation types,
  evaluation, preprocess, views, checkpoint, selection; losses, aggregation, models,
  metrics, datasets, the ``methods`` registry, its interface and building blocks
  (:mod:`fedpl_core.methods.base`, :mod:`fedpl_core.methods.blocks`, which every method
  composes without inheriting them), :mod:`fedpl_core.runs.build` that
  builds a run's data, partition, model and simulation from its config, and every file
  of the ``data`` and ``partitions`` packages);
* the modules of the run's method class and all its bases (``type(method).__mro__``);
* the module that registered the run's data source, when it is not one of the above;
* (``calibrate_bn``'s BatchNorm calibration is a block: covered above.)

The run id (the results file's name) still hashes the config only, so a file stays
addressable; a cached result whose fingerprint is not the current code's (or that has
none: written before results recorded it) is *stale*: it is recomputed with a warning,
unless ``keep_stale=True`` (``run`` / ``run_many``), ``$FEDPL_KEEP_STALE=1`` or
``--keep-stale`` asks to keep it.  Not fingerprinted: the config's schema
(:mod:`fedpl_core.runs.experiment_config`, :mod:`fedpl_core.base.validation`: the config itself is in the run
id), the cache, result-file, grid and file code (the rest of :mod:`fedpl_core.runs`,
:mod:`fedpl_core.base.fileio`, :mod:`fedpl_core.base.locks`), tables and plotting; third-party code
is recorded by its versions, not hashed.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import os
import platform
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

KEEP_STALE_ENV = "FEDPL_KEEP_STALE"

#: Modules every run uses; a name ending in ``.*`` stands for every ``.py`` file of that
#: package (recursively).  The one list of what the fingerprint covers, with the method's
#: classes and the data source's module added per run (:func:`run_modules`).
FINGERPRINT_MODULES: tuple[str, ...] = (
    "fedpl_core.fl.*",
    "fedpl_core.nn.losses",
    "fedpl_core.nn.aggregation",
    "fedpl_core.nn.models",
    "fedpl_core.nn.metrics",
    "fedpl_core.data.sources",
    "fedpl_core.methods",
    "fedpl_core.methods.base",
    "fedpl_core.methods.blocks",
    "fedpl_core.runs.build",
    "fedpl_core.data.*",
    "fedpl_core.partitions.*",
)

_NOT_HASHED = {"builtins", "abc", "typing", "torch", "numpy", "collections", "__main__"}


def keep_stale_default(keep_stale: bool | None) -> bool:
    """``keep_stale`` when given, else ``$FEDPL_KEEP_STALE`` (``1``, ``true``, ``yes``)."""
    if keep_stale is not None:
        return bool(keep_stale)
    return os.environ.get(KEEP_STALE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=None)
def _file_hash(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def module_hash(name: str) -> str | None:
    """SHA-256 (16 hex digits) of a module's source file, or of every ``.py`` file of a
    package for ``"<package>.*"``; None when the module has no source file (built in, a
    notebook's ``__main__``).  Read once per process: the code this process runs."""
    try:
        if name.endswith(".*"):
            mod = importlib.import_module(name[:-2])
            root = Path(mod.__file__).parent
            h = hashlib.sha256()
            for p in sorted(root.rglob("*.py")):
                h.update(f"{p.relative_to(root).as_posix()}:{_file_hash(str(p))}\n".encode())
            return h.hexdigest()[:16]
        mod = importlib.import_module(name)
        src = inspect.getsourcefile(mod)
        return _file_hash(src) if src and os.path.isfile(src) else None
    except (ImportError, TypeError, OSError, AttributeError):
        return None


def _method_class(cfg) -> type | None:
    from ..methods import METHODS, get_method

    try:
        return type(get_method(cfg.method, **cfg.method_kwargs))
    except Exception:  # a method that no longer takes these options: its registered class
        return METHODS.get(cfg.method)


def run_modules(cfg) -> list[str]:
    """The modules whose source makes up the fingerprint of the run ``cfg`` (sorted)."""
    names = set(FINGERPRINT_MODULES)
    cls = _method_class(cfg)
    for c in (cls.__mro__ if cls is not None else ()):
        if c.__module__.split(".")[0] not in _NOT_HASHED:
            names.add(c.__module__)
    try:
        from ..data.sources.base import SOURCES

        fn = SOURCES.get(cfg.dataset)
        if fn is not None and fn.__module__.split(".")[0] not in _NOT_HASHED:
            names.add(fn.__module__)
    except ImportError:
        pass
    return sorted(names)


def code_hashes(cfg) -> dict[str, str]:
    """``{module: source hash}`` of :func:`run_modules` (modules without a source file left out)."""
    return {m: h for m in run_modules(cfg) if (h := module_hash(m)) is not None}


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
        return getattr(sys.modules.get(__package__ or ""), "__version__", None)


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout the package runs from; ``(None, None)`` when
    it is not one, or git is missing or slow (5 s).  Read once per process."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None, None
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5,
                                  check=True).stdout.strip()

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
    return sorted(f for f in line.split(":", 1)[-1].split() if f.startswith(("avx", "amx", "fma", "f16c", "sse",
                                                                                "asimd", "sve", "neon")))


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
    return {"torch": torch.__version__, "cpu_capability": cap, "cpu_simd": simd, "machine": platform.machine(),
            "torch_threads": threads,
            "key": f"torch {torch.__version__}, {platform.machine()} {cap} (simd {simd}), {threads} thread(s)"}


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


__all__ = ["FINGERPRINT_MODULES", "KEEP_STALE_ENV", "keep_stale_default", "module_hash", "run_modules",
           "code_hashes", "code_fingerprint", "fingerprint_of", "package_version", "git_state", "numeric_platform", "provenance",
           "stale_reason"]
