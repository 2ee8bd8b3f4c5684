"""Backends of :func:`fedpl_core.runs.study.run_many`: where the runs of a grid execute.

* ``serial``: one after the other in this process;
* ``process``: local worker processes (forked on Linux without CUDA, else spawned),
  ``cpu_count // workers`` torch threads each, kept for the next grid;
* ``threads``: threads of this process, each run on a CUDA stream of its own when it runs on
  a GPU (one CUDA context and one copy of the data for all of them);
* ``ray``: one Ray task per run, with the CPU / GPU request of its device, on an existing
  cluster (``ray_address``) or on a local one started with ``num_cpus=workers``.

Every backend executes the same :func:`fedpl_core.runs.runner.run`, so the results cache
keeps its files, skipping, resume and lock semantics: a worker calls ``run(cfg,
results_dir, wait=False)``; a run that another process holds (its ``<run_id>.lock``)
comes back as ``None`` and is submitted again once everything else is done, then waiting
for that process.  :func:`run_grid` drives a backend: it submits the runs, collects their
:class:`RunResult`, resubmits a run that raised (``retries`` times, warning each time)
without touching the others, and raises one :class:`GridError` naming every run that
still failed, after all the other runs finished and were written.
"""
from __future__ import annotations

import atexit
import itertools
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..datasets import SOURCES
from ..provenance import keep_stale_default, stale_reason
from .results import StaleResultWarning, read_result, stale_message
from .runner import run

log = logging.getLogger("fedpl")

BACKENDS = ("serial", "process", "threads", "ray")
RAY_MISSING = "backend='ray' needs Ray, an optional extra: pip install -e .[ray]  (or: pip install fedpl[ray])"


class GridError(RuntimeError):
    """Runs of a grid that failed on every attempt; ``failures`` holds ``(run_id, exception)``."""

    def __init__(self, failures: list[tuple[str, BaseException]], attempts: int):
        self.failures = failures
        what = "; ".join(f"{rid} ({type(e).__name__}: {_first_line(e)})" for rid, e in failures)
        super().__init__(f"{len(failures)} run(s) failed after {attempts} attempt(s) each: {what}")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def source_modules() -> list[str]:
    """The importable modules that registered the data sources (a worker imports them)."""
    return sorted({fn.__module__ for fn in SOURCES.values() if fn.__module__ != "__main__"})


def worker_init(modules: Sequence[str], threads: int) -> None:
    """A worker process: the modules that register data sources, and ``threads`` torch
    threads (the workers share the cores)."""
    import importlib

    import torch

    torch.set_num_threads(threads)
    for m in modules:
        importlib.import_module(m)


def _run_one(cfg, results_dir, wait: bool):
    # run_grid already warned about (and kept, if asked) the stale cached results: a
    # result the worker still finds stale is done again without another warning
    return run(cfg, results_dir, wait=wait, keep_stale=False, warn_stale=False)


# --------------------------------------------------------------------------- backends
class Backend:
    """Submits runs and hands back finished ones.  ``submit`` returns a handle;
    ``finished(handles)`` blocks until at least one is done and returns
    ``[(handle, result or None, exception or None)]``."""

    name = "?"
    workers = 1

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        pass

    def submit(self, cfg, results_dir, wait: bool) -> Any:
        raise NotImplementedError

    def finished(self, handles: list) -> list[tuple[Any, Any, BaseException | None]]:
        raise NotImplementedError


class SerialBackend(Backend):
    """Runs in this process, in submission order (a run executes when it is collected)."""

    name = "serial"
    _ids = itertools.count()

    def __init__(self) -> None:
        self._todo: dict[int, tuple] = {}

    def submit(self, cfg, results_dir, wait):
        h = next(self._ids)
        self._todo[h] = (cfg, results_dir, wait)
        return h

    def finished(self, handles):
        h = min(handles)
        try:
            return [(h, _run_one(*self._todo.pop(h)), None)]
        except Exception as e:  # reported by run_grid; KeyboardInterrupt stops the grid
            return [(h, None, e)]


class ProcessBackend(Backend):
    """``workers`` local processes (forked on Linux, see :func:`start_method`), each with
    ``cpu_count // workers`` torch threads.

    The pool outlives the grid: the next grid with the same ``workers`` (and data-source
    modules) reuses it, so a notebook's many grids pay the workers' start (spawning or forking,
    importing torch, torch's lazy imports on the first optimizer: about 7 s a worker)
    once, and each worker keeps its in-memory data cache.  :func:`shutdown_pools` (also
    run at exit) stops it.  A worker that dies breaks the pool: the runs it held fail (and
    are retried) and a new pool serves the later submissions."""

    name = "process"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.threads = max(1, (os.cpu_count() or 1) // workers)
        self._futures: list = []

    def _executor(self):
        return shared_pool(self.workers, self.threads, tuple(source_modules()))

    def submit(self, cfg, results_dir, wait):
        f = self._executor().submit(_run_one, cfg, results_dir, wait)
        self._futures.append(f)
        return f

    def finished(self, handles):
        return _futures_done(handles)

    def close(self):
        """Cancel this grid's runs that have not started (an interrupted grid); the pool
        stays for the next grid."""
        for f in self._futures:
            f.cancel()
        self._futures = []


def _futures_done(handles) -> list[tuple[Any, Any, BaseException | None]]:
    """At least one of the futures ``handles``, once done: ``(future, result, exception)``."""
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(handles, return_when=FIRST_COMPLETED)
    return [(f, None if f.exception() is not None else f.result(), f.exception()) for f in done]


def _run_on_own_stream(cfg, results_dir, wait: bool):
    """A run in a thread: on a GPU inside a CUDA stream of its own (its kernels may overlap
    the other threads' runs), synchronised before the result is handed back."""
    import torch

    from ..fl.site import resolve_device

    device = resolve_device(cfg.engine.device)
    if device.type != "cuda":
        return _run_one(cfg, results_dir, wait)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        out = _run_one(cfg, results_dir, wait)
    stream.synchronize()
    return out


class ThreadBackend(Backend):
    """``workers`` threads of this process; a run on a GPU gets a CUDA stream of its own.

    Against the process backend: one CUDA context, one copy of the images and one memory
    pool for all the runs, and no start-up (nothing is imported again), but the runs share
    the interpreter (Python's lock serialises their kernel launches) and torch's threads.
    Which is faster for a grid on one GPU is measured by ``benchmarks/grid_throughput.py
    --device cuda --backends spawn threads``.  A model's initial weights come from torch's
    global generator under a lock (:mod:`fedpl_core.runs.build`), so the numbers are the
    serial backend's.  Runs of one grid have distinct ids; two grids in two threads of one
    process must not run the same id at once (the run lock is per process)."""

    name = "threads"

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="fedpl-run")
        self._futures: list = []

    def submit(self, cfg, results_dir, wait):
        f = self._pool.submit(_run_on_own_stream, cfg, results_dir, wait)
        self._futures.append(f)
        return f

    def finished(self, handles):
        return _futures_done(handles)

    def close(self):
        """Cancel the runs that have not started; wait for the running ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)


_POOLS: dict[tuple, Any] = {}


def start_method() -> str:
    """``"fork"`` on Linux while CUDA is not initialised in this process, else ``"spawn"``.

    A forked worker starts at once with torch, fedpl and the data sources already imported
    (a spawned one imports them again: 3-7 s a worker, most of a short run), the pattern of
    torch's own ``DataLoader`` workers: the worker sets its torch threads before any torch
    work (:func:`worker_init`).  CUDA cannot be forked once initialised, and macOS /
    Windows default to spawn, so those spawn."""
    import multiprocessing
    import sys

    import torch

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods() \
            and not torch.cuda.is_initialized():
        return "fork"
    return "spawn"


def shared_pool(workers: int, threads: int, modules: tuple[str, ...]):
    """The live process pool for ``(workers, threads, modules)``; a broken pool, or one
    started for other settings, is shut down and replaced (one pool at a time)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    key = (workers, threads, modules)
    pool = _POOLS.get(key)
    if pool is not None and not getattr(pool, "_broken", False):
        return pool
    shutdown_pools(wait=False)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(start_method()),
                               initializer=worker_init, initargs=(list(modules), threads))
    _POOLS[key] = pool
    return pool


def shutdown_pools(wait: bool = True) -> None:
    """Stop the worker processes kept between grids (their pending runs are cancelled)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=wait, cancel_futures=True)


atexit.register(shutdown_pools, wait=False)


def _ray_task(cfg, results_dir, wait, modules, threads, cwd, paths):
    """A Ray worker: the driver's folder and import paths where this machine has them
    (a local cluster: relative data paths and data sources of the driver's modules work
    as in the driver), its data sources, ``threads`` torch threads, then the run."""
    import sys

    if os.path.isdir(cwd):
        os.chdir(cwd)
    sys.path.extend(p for p in paths if p not in sys.path and os.path.isdir(p))
    worker_init(modules, threads)
    return _run_one(cfg, results_dir, wait)


def import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError(RAY_MISSING) from None
    return ray


class RayBackend(Backend):
    """One Ray task per run.  Joins the cluster at ``address`` (or ``RAY_ADDRESS``), else
    starts a local one with ``num_cpus=workers``; a Ray this process already started is
    used as it is, and a local Ray started here stays up for the next grid of this process
    (``ray.shutdown()`` stops it).  A task asks for 1 CPU (and runs 1 torch thread) and
    for 1 GPU when its ``engine.device`` is ``cuda[:N]``, or ``auto`` on a cluster with
    GPUs.  On a cluster of several machines ``results_dir`` must be a shared folder."""

    name = "ray"

    def __init__(self, workers: int, address: str | None = None) -> None:
        ray = import_ray()
        self.ray = ray
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address)
            else:
                ray.init(address="local", num_cpus=workers, num_gpus=_local_gpus(), include_dashboard=False)
        self.workers = int(ray.cluster_resources().get("CPU", workers))
        self.cluster_gpus = float(ray.cluster_resources().get("GPU", 0))
        self._remote = ray.remote(max_retries=0)(_ray_task)  # run_grid retries, not Ray
        self._modules = source_modules()

    def resources(self, cfg) -> tuple[int, int]:
        """``(num_cpus, num_gpus)`` of a run's task."""
        return 1, int(needs_gpu(cfg.engine.device, self.cluster_gpus))

    def submit(self, cfg, results_dir, wait):
        cpus, gpus = self.resources(cfg)
        rd = None if results_dir is None else str(Path(results_dir).resolve())
        import sys

        return self._remote.options(num_cpus=cpus, num_gpus=gpus).remote(cfg, rd, wait, self._modules, cpus,
                                                                         os.getcwd(), [p for p in sys.path if p])

    def finished(self, handles):
        ray = self.ray
        ready, _ = ray.wait(handles, num_returns=1)
        out = []
        for ref in ready:
            try:
                out.append((ref, ray.get(ref), None))
            except Exception as e:
                out.append((ref, None, _ray_cause(e)))
        return out


def _local_gpus() -> int:
    import torch

    return torch.cuda.device_count()


def needs_gpu(device: str, cluster_gpus: float) -> bool:
    """A run on ``device`` needs a GPU: ``cuda`` / ``cuda:N``, or ``auto`` where the cluster has one."""
    return device.startswith("cuda") or (device == "auto" and cluster_gpus > 0)


def _ray_cause(e: BaseException) -> BaseException:
    """The exception the run raised, out of Ray's wrapper when there is one."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def make_backend(backend: str, workers: int, ray_address: str | None = None) -> Backend:
    if backend == "serial":
        return SerialBackend()
    if backend == "process":
        return ProcessBackend(workers)
    if backend == "threads":
        return ThreadBackend(workers)
    if backend == "ray":
        return RayBackend(workers, ray_address)
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def check_unique(methods: Sequence[Any], seeds: Sequence[Any]) -> None:
    """Refuse a grid that lists a seed or a method label twice: the same run done again
    gives the same numbers, and would be counted as an independent run in the means and
    spreads (``± 0.0000, 2 runs``)."""
    seeds = list(seeds)
    twice = [s for i, s in enumerate(seeds) if s in seeds[:i]]
    if twice:
        raise ValueError(f"seed {twice[0]!r} is listed twice in seeds {seeds}: a repeated seed repeats the same run, "
                         "it is not an independent one; give distinct seeds")
    labels = [m if isinstance(m, str) else (m[0] if isinstance(m, (tuple, list)) and m else m) for m in methods]
    twice = [m for i, m in enumerate(labels) if m in labels[:i]]
    if twice:
        raise ValueError(f"method {twice[0]!r} is listed twice in methods: a repeated method repeats the same runs, "
                         "they are not independent ones; give each method once (a (label, overrides) pair for a "
                         "variant)")


def check_args(backend: str | None, workers: int, retries: int) -> str:
    """The backend to use (``None``: ``process`` when ``workers > 1``, else ``serial``)."""
    if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if not (isinstance(retries, int) and not isinstance(retries, bool) and retries >= 0):
        raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
    backend = backend or ("process" if workers > 1 else "serial")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    return backend


# --------------------------------------------------------------------------- driver
@dataclass
class _Job:
    index: int
    cfg: Any
    wait: bool
    attempt: int = 0


def run_grid(cfgs: Sequence, results_dir: str | Path | None, backend: str = "serial", workers: int = 1,
             ray_address: str | None = None, retries: int = 1, progress: bool = True,
             keep_stale: bool | None = None) -> list:
    """The :class:`RunResult` of every config, in order.  Runs held by another process
    are waited for at the end; a run that raises is retried ``retries`` times; then a
    :class:`GridError` names every run that still failed (the others are all written).
    Cached results of other code are counted in one :class:`StaleResultWarning` and done
    again, or kept with ``keep_stale`` (default: ``$FEDPL_KEEP_STALE``)."""
    from tqdm.auto import tqdm

    results: list = [_cached(c, results_dir) for c in cfgs]  # finished: no worker, no Ray started
    stale = [(i, why) for i, r in enumerate(results)
             if r is not None and (why := stale_reason(r.provenance, cfgs[i])) is not None]
    if stale:
        keep = keep_stale_default(keep_stale)
        warnings.warn(stale_message([(cfgs[i].run_id(), why) for i, why in stale],
                                    sum(r is not None for r in results), keep), StaleResultWarning, stacklevel=3)
        if not keep:
            for i, _ in stale:
                results[i] = None
    todo = [i for i, r in enumerate(results) if r is None]
    failures: list[tuple[int, BaseException]] = []
    if not todo:
        return results
    with make_backend(backend, workers, ray_address) as b:
        desc = "runs" if b.name == "serial" else f"runs ({b.name}, {b.workers} workers)"
        with tqdm(total=len(todo), desc=desc, disable=not progress) as bar:
            held = _drive(b, [_Job(i, cfgs[i], wait=False) for i in todo], results_dir, retries, results,
                          failures, bar.update)
            # held by another process: wait until it lets go (then read its result, or do the run if it died)
            _drive(b, [_Job(i, cfgs[i], wait=True) for i in held], results_dir, retries, results, failures,
                   bar.update)
    if failures:
        failures.sort(key=lambda f: f[0])
        raise GridError([(cfgs[i].run_id(), e) for i, e in failures], retries + 1) from failures[0][1]
    return results


def _cached(cfg, results_dir):
    """The finished result of ``cfg`` in ``results_dir``; None when absent or unreadable
    (then ``run`` reads it again, warns, and does the run)."""
    if results_dir is None:
        return None
    try:
        return read_result(Path(results_dir) / f"{cfg.run_id()}.json")  # checked: keys, types, no NaN
    except (OSError, ValueError, TypeError):
        return None


def _drive(b: Backend, jobs: list[_Job], results_dir, retries: int, results: list,
           failures: list, tick: Callable[[int], Any]) -> list[int]:
    """Run ``jobs`` on ``b``; returns the indices of runs that another process held."""
    live = {b.submit(j.cfg, results_dir, j.wait): j for j in jobs}
    held = []
    while live:
        for h, res, err in b.finished(list(live)):
            j = live.pop(h)
            if err is None and res is None:
                held.append(j.index)
            elif err is None:
                results[j.index] = res
                tick(1)
            elif j.attempt < retries:
                warnings.warn(f"run {j.cfg.run_id()} failed ({type(err).__name__}: {_first_line(err)}); "
                              f"retrying ({j.attempt + 1} of {retries})", RuntimeWarning, stacklevel=2)
                j.attempt += 1
                live[b.submit(j.cfg, results_dir, j.wait)] = j
            else:
                log.error("run %s failed after %d attempt(s): %s: %s", j.cfg.run_id(), j.attempt + 1,
                          type(err).__name__, _first_line(err))
                failures.append((j.index, err))
                tick(1)
    return sorted(held)


__all__ = ["BACKENDS", "GridError", "check_unique", "Backend", "SerialBackend", "ProcessBackend", "ThreadBackend",
           "RayBackend", "make_backend", "run_grid", "needs_gpu", "worker_init", "source_modules", "shared_pool", "shutdown_pools",
           "start_method"]
