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
for that process.  :func:`run_grid` drives a backend: it first checks every run it has to
do (:func:`check_runs`: what would fail on every attempt is refused before the first
run), submits the runs, collects their :class:`RunResult`, resubmits a run that raised
(``retries`` times, warning each time; not a run whose error is one it raises every time,
:data:`DETERMINISTIC`) without touching the others, and raises one :class:`GridError`
naming every run that still failed, after all the other runs finished and were written.

An interrupted grid (Ctrl-C, SIGTERM through the command line, an error of the driver)
stops its runs: the process backend's workers are killed (:func:`kill_pools`), the
threads' runs stop at their next round boundary.  A process worker also ends by itself
when its driver is gone (:func:`watch_driver`), even after ``kill -9``.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.messages import one_line_warnings_on, use_one_line_warnings
from ..data.sources.base import SOURCES
from .provenance import keep_stale_default, note_platforms, stale_reason
from .results import StaleResultWarning, stale_message
from .runner import check_targets, run
from .schema import read_result

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


#: Seconds between two looks of a process worker at its driver (:func:`watch_driver`).
DRIVER_POLL_S = 0.5


def watch_driver(driver: int, poll_s: float = DRIVER_POLL_S) -> threading.Thread:
    """A daemon thread that ends this process (``os._exit``) once its parent is no longer
    the process ``driver``: the driver was killed (even by ``kill -9``, which no handler
    sees) and this process was handed to another parent.

    **[choice]** A watchdog on the parent's pid rather than Linux's parent-death signal
    (``prctl(PR_SET_PDEATHSIG)``): that signal fires when the *thread* that started the
    worker ends (a pool started from a notebook's or a grid's helper thread would lose its
    workers while its process lives on) and exists on Linux only; and rather than watching
    the job pipe for end-of-file: a forked worker inherits the pipe's write end too, and
    a worker busy training reads no pipe.  A worker stops within ``poll_s`` seconds; its
    run's lock goes with it (the kernel frees it), its temporary files are removed by the
    next run on the folder, and the run resumes from its last checkpoint."""

    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(poll_s)
        try:
            sys.stderr.write(
                f"fedpl: warning: the grid's driver (process {driver}) is gone; worker process {os.getpid()} stops\n"
            )
            sys.stderr.flush()
        finally:
            os._exit(1)

    t = threading.Thread(target=watch, name="fedpl-watch-driver", daemon=True)
    t.start()
    return t


def process_worker_init(modules: Sequence[str], threads: int, driver: int, one_line: bool = False) -> None:
    """A worker of the process backend: :func:`worker_init`, then it leaves Ctrl-C to its
    driver (a terminal sends SIGINT to the whole process group; the driver stops the
    workers itself, see :func:`kill_pools`), ends on SIGTERM, watches its driver
    (:func:`watch_driver`) and prints warnings as the driver does (:mod:`fedpl_core.base.messages`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the command line's handler
    watch_driver(driver)
    if one_line:
        use_one_line_warnings()
    worker_init(modules, threads)


def _run_one(cfg, results_dir, wait: bool, stop=None):
    # run_grid already warned about (and kept, if asked) the stale cached results: a
    # result the worker still finds stale is done again without another warning
    return run(cfg, results_dir, wait=wait, keep_stale=False, warn_stale=False, stop=stop)


# --------------------------------------------------------------------------- backends
class Backend:
    """Submits runs and hands back finished ones.  ``submit`` returns a handle;
    ``finished(handles)`` blocks until at least one is done and returns
    ``[(handle, result or None, exception or None)]``."""

    name = "?"
    workers = 1

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(interrupted=exc_type is not None)

    def close(self, interrupted: bool = False) -> None:
        """Release the backend; ``interrupted``: the grid stops now (Ctrl-C, SIGTERM, an
        error of the driver), so runs still going are stopped, not waited for."""

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

    def close(self, interrupted: bool = False):
        """Cancel this grid's runs that have not started; the pool stays for the next
        grid.  An interrupted grid stops its workers at once (:func:`kill_pools`): their
        runs resume from their checkpoints."""
        for f in self._futures:
            f.cancel()
        self._futures = []
        if interrupted:
            kill_pools()


def _futures_done(handles) -> list[tuple[Any, Any, BaseException | None]]:
    """At least one of the futures ``handles``, once done: ``(future, result, exception)``."""
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(handles, return_when=FIRST_COMPLETED)
    return [(f, None if f.exception() is not None else f.result(), f.exception()) for f in done]


def _run_on_own_stream(cfg, results_dir, wait: bool, stop=None):
    """A run in a thread: on a GPU inside a CUDA stream of its own (its kernels may overlap
    the other threads' runs), synchronised before the result is handed back."""
    import torch

    from ..fl.site import resolve_device

    device = resolve_device(cfg.engine.device)
    if device.type != "cuda":
        return _run_one(cfg, results_dir, wait, stop)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        out = _run_one(cfg, results_dir, wait, stop)
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
        self._stop = threading.Event()  # set: each run stops at its next round boundary

    def submit(self, cfg, results_dir, wait):
        f = self._pool.submit(_run_on_own_stream, cfg, results_dir, wait, self._stop)
        self._futures.append(f)
        return f

    def finished(self, handles):
        return _futures_done(handles)

    def close(self, interrupted: bool = False):
        """Cancel the runs that have not started and wait for the running ones; an
        interrupted grid asks them to stop at their next round boundary (a thread cannot
        be killed), after their checkpoint of that round."""
        if interrupted:
            self._stop.set()
            running = sum(f.running() for f in self._futures)
            if running:
                log.warning("interrupted: stopping %d running run(s) at their next round boundary", running)
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

    if (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and not torch.cuda.is_initialized()
    ):
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
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(start_method()),
        initializer=process_worker_init,
        initargs=(list(modules), threads, os.getpid(), one_line_warnings_on()),
    )
    _POOLS[key] = pool
    return pool


def shutdown_pools(wait: bool = True) -> None:
    """Stop the worker processes kept between grids (their pending runs are cancelled)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=wait, cancel_futures=True)


def kill_pools(grace_s: float = 5.0) -> None:
    """Stop the kept worker processes now, running runs and all (an interrupted grid):
    SIGTERM to each, SIGKILL to one still there after ``grace_s`` seconds.  A killed run
    loses the rounds since its last checkpoint and nothing else (its lock goes with it)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for p in procs:
            with contextlib.suppress(Exception):
                p.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(grace_s)
                if p.is_alive():
                    p.kill()


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

        return self._remote.options(num_cpus=cpus, num_gpus=gpus).remote(
            cfg, rd, wait, self._modules, cpus, os.getcwd(), [p for p in sys.path if p]
        )

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
        raise ValueError(
            f"seed {twice[0]!r} is listed twice in seeds {seeds}: a repeated seed repeats the same run, "
            "it is not an independent one; give distinct seeds"
        )
    labels = [m if isinstance(m, str) else (m[0] if isinstance(m, (tuple, list)) and m else m) for m in methods]
    twice = [m for i, m in enumerate(labels) if m in labels[:i]]
    if twice:
        raise ValueError(
            f"method {twice[0]!r} is listed twice in methods: a repeated method repeats the same runs, "
            "they are not independent ones; give each method once (a (label, overrides) pair for a "
            "variant)"
        )


def check_args(
    backend: str | None,
    workers: int,
    retries: int,
    ray_address: str | None = None,
    keep_stale: bool | None = None,
    results_dir: str | Path | None = None,
) -> str:
    """The backend to use (``None``: ``process`` when ``workers > 1``, else ``serial``).
    A setting the grid would ignore is refused: ``workers > 1`` on the serial backend (one
    run at a time), or on a Ray cluster joined at ``ray_address`` (its own CPUs count); a
    ``ray_address`` on another backend; ``keep_stale`` without a ``results_dir`` (no
    cached results to keep)."""
    if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if not (isinstance(retries, int) and not isinstance(retries, bool) and retries >= 0):
        raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
    backend = backend or ("process" if workers > 1 else "serial")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "serial" and workers > 1:
        raise ValueError(
            f"workers {workers} would be ignored: the serial backend does one run at a time in this "
            "process; choose backend process or threads, or leave workers at 1"
        )
    if ray_address and backend != "ray":
        raise ValueError(
            f"ray_address {ray_address!r} would be ignored: the {backend} backend does not use Ray; "
            "choose backend ray, or leave it out"
        )
    if ray_address and workers > 1:
        raise ValueError(
            f"workers {workers} would be ignored: a Ray cluster joined at {ray_address!r} runs on its own "
            "CPUs (workers sets the CPUs of a local Ray); leave workers at 1"
        )
    if keep_stale and results_dir is None:
        raise ValueError(
            "keep_stale would be ignored: without a results folder there are no cached results to keep; "
            "give a results folder, or leave it out"
        )
    return backend


# --------------------------------------------------------------------------- driver
@dataclass
class _Job:
    index: int
    cfg: Any
    wait: bool
    attempt: int = 0


def run_grid(
    cfgs: Sequence,
    results_dir: str | Path | None,
    backend: str = "serial",
    workers: int = 1,
    ray_address: str | None = None,
    retries: int = 1,
    progress: bool = True,
    keep_stale: bool | None = None,
    cost: Callable[[Any], float] | None = None,
) -> list:
    """The :class:`RunResult` of every config, in order.  ``cost``: a config's expected run
    time in any unit; the runs still to do are then started longest first (ties in the given
    order), so that a long run does not start last and run alone while the other workers idle.
    It changes when a run starts, never its numbers.  Runs held by another process
    are waited for at the end; a run that raises is retried ``retries`` times; then a
    :class:`GridError` names every run that still failed (the others are all written).
    Cached results of other code are counted in one :class:`StaleResultWarning` and done
    again, or kept with ``keep_stale`` (default: ``$FEDPL_KEEP_STALE``).  The numeric platforms
    the results report (each run's own: the worker's, with its thread count) are noted where
    ``$FEDPL_PLATFORM_LOG`` says (:func:`fedpl_core.runs.provenance.note_platforms`; ``reproduce``
    sets it for its run's record)."""
    from tqdm.auto import tqdm

    results: list = [_cached(c, results_dir) for c in cfgs]  # finished: no worker, no Ray started
    stale = [
        (i, why)
        for i, r in enumerate(results)
        if r is not None and (why := stale_reason(r.provenance, cfgs[i])) is not None
    ]
    if stale:
        keep = keep_stale_default(keep_stale)
        warnings.warn(
            stale_message([(cfgs[i].run_id(), why) for i, why in stale], sum(r is not None for r in results), keep),
            StaleResultWarning,
            stacklevel=3,
        )
        if not keep:
            for i, _ in stale:
                results[i] = None
    todo = [i for i, r in enumerate(results) if r is None]
    if cost is not None:
        todo.sort(key=lambda i: -cost(cfgs[i]))  # stable: ties keep the grid's order
    failures: list[tuple[int, BaseException]] = []
    if not todo:
        note_platforms(r.provenance for r in results)
        return results
    check_runs([cfgs[i] for i in todo], results_dir)  # what would fail every attempt: refused before the first
    with make_backend(backend, workers, ray_address) as b:
        desc = "runs" if b.name == "serial" else f"runs ({b.name}, {b.workers} workers)"
        with tqdm(total=len(todo), desc=desc, disable=not progress) as bar:
            held = _drive(
                b, [_Job(i, cfgs[i], wait=False) for i in todo], results_dir, retries, results, failures, bar.update
            )
            # held by another process: wait until it lets go (then read its result, or do the run if it died)
            _drive(b, [_Job(i, cfgs[i], wait=True) for i in held], results_dir, retries, results, failures, bar.update)
    if failures:
        failures.sort(key=lambda f: f[0])
        raise GridError([(cfgs[i].run_id(), e) for i, e in failures], retries + 1) from failures[0][1]
    note_platforms(r.provenance for r in results)
    return results


def check_runs(cfgs: Sequence, results_dir: str | Path | None) -> None:
    """What would make a run of the grid fail on every attempt, found in this process
    before any run starts, without loading any data (the workers load it): a device this
    machine lacks (once, not for every run and attempt), a folder where
    a run's result or checkpoint goes (:func:`~fedpl_core.runs.runner.check_targets`), a
    method not defined for its data's task where the data source declares its task
    (:func:`fedpl_core.data.sources.source_task`: the built-in and the studies' sources; a
    real data set's task is known once loaded: there the run's own check,
    :func:`~fedpl_core.runs.build.check_data_fit`, fails it, once, without retries)."""
    from ..base.validation import check_device_available
    from ..data.sources import source_task
    from ..methods import METHODS

    for device in dict.fromkeys(cfg.engine.device for cfg in cfgs):
        check_device_available(device, "engine device")
    for cfg in cfgs:
        if results_dir is not None:
            check_targets(results_dir, cfg.run_id())
        task = source_task(cfg.dataset)
        if task is not None:
            METHODS[cfg.method].check_task(task, f"data set {cfg.dataset!r}, a")


#: Errors a run raises on every attempt (a setting it cannot have, a bug): not retried.
DETERMINISTIC = (ValueError, TypeError, LookupError, NotImplementedError, AssertionError)


def _cached(cfg, results_dir):
    """The finished result of ``cfg`` in ``results_dir``; None when absent or unreadable
    (then ``run`` reads it again, warns, and does the run)."""
    if results_dir is None:
        return None
    try:
        return read_result(Path(results_dir) / f"{cfg.run_id()}.json", cfg.to_dict())  # checked, and this run's
    except (OSError, ValueError, TypeError):
        return None


def _drive(
    b: Backend, jobs: list[_Job], results_dir, retries: int, results: list, failures: list, tick: Callable[[int], Any]
) -> list[int]:
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
            elif j.attempt < retries and not isinstance(err, DETERMINISTIC):
                warnings.warn(
                    f"run {j.cfg.run_id()} failed ({type(err).__name__}: {_first_line(err)}); "
                    f"retrying ({j.attempt + 1} of {retries})",
                    RuntimeWarning,
                    stacklevel=2,
                )
                j.attempt += 1
                live[b.submit(j.cfg, results_dir, j.wait)] = j
            else:
                log.error(
                    "run %s failed after %d attempt(s): %s: %s",
                    j.cfg.run_id(),
                    j.attempt + 1,
                    type(err).__name__,
                    _first_line(err),
                )
                failures.append((j.index, err))
                tick(1)
    return sorted(held)


__all__ = [
    "BACKENDS",
    "GridError",
    "check_unique",
    "Backend",
    "SerialBackend",
    "ProcessBackend",
    "ThreadBackend",
    "RayBackend",
    "make_backend",
    "run_grid",
    "needs_gpu",
    "worker_init",
    "source_modules",
    "shared_pool",
    "shutdown_pools",
    "kill_pools",
    "process_worker_init",
    "watch_driver",
    "start_method",
]
