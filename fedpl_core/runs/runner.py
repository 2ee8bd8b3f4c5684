"""One run, and the one results cache: ``run(config, results_dir)`` returns a
:class:`~fedpl_core.runs.results.RunResult`.  Every run goes through it (a grid's too,
:mod:`fedpl_core.runs.grid`):

* ``<results_dir>/<run_id>.json`` is written atomically when a run finishes; a finished
  run is loaded instead of re-run.  The run id hashes every field that changes the
  numbers (not the ``name``, the device or the progress bar), so identical runs of two
  experiments are shared.
* an interrupted run resumes from ``<run_id>.ckpt`` (``engine.checkpoint_every``);
* a corrupt result file (unreadable JSON, a missing key, a value of the wrong type, a
  NaN or infinity, a link instead of a file) or an unreadable checkpoint is reported with
  a warning naming the file, and the run is done again; temporary files left by a killed
  process are removed;
* two processes on one ``results_dir`` never do the same run: a run is held with an OS
  lock on ``<run_id>.lock`` (:mod:`fedpl_core.base.locks`, ``filelock``): a run another
  process holds is waited for, with a message naming its host and process, or skipped
  by ``run_many`` until the end.  The kernel lets a lock go when its holder exits or is
  killed, so a lock of a dead process never blocks;
* every file is written through :mod:`fedpl_core.base.fileio`: a fresh ``mkstemp`` temporary
  file, then ``os.replace``; a file or link planted at a temporary or final name is
  never written through;
* the run's data files are checked around the loaders (:mod:`fedpl_core.runs.data_checks`,
  outside the code fingerprint): a MedMNIST ``.npz`` whose arrays would not fit in memory
  is refused before it is decompressed, a compressed label table that unpacks to more than
  the memory allows is refused before it is unpacked, two different image files of one name
  (of which the loader would use one) are refused, a link in the decode cache folder is
  refused, a data folder nested too deep for the folder scan is named, and image files far
  from the size they are resized to are named in one warning;
* a finished run's result is checked with the result schema
  (:func:`~fedpl_core.runs.schema.parse_result`) before it is written or returned, and the
  history a run resumes from is checked before training resumes: a result the cache would
  refuse on its next read (a checkpoint edited to hold an AUROC of 7.5) is one error line
  naming the run and the checkpoint to remove, and nothing is written;
* a checkpoint that torch cannot write for want of room ("[enforce fail at
  inline_container.cc]") is said as "no space left in <folder> to write <run_id>.ckpt";
* every result records its ``"provenance"`` (:mod:`fedpl_core.runs.provenance`: package
  version, git commit, Python / torch / numpy versions, device, date, host, seconds) and
  the fingerprint of the code the run used.  The run id stays the config's hash, but a
  cached result from other code (or from before results recorded it) is *stale*: it is
  done again with one warning per ``run`` / per grid, unless ``keep_stale=True`` or
  ``$FEDPL_KEEP_STALE=1`` keeps it (the warning then says so).

The run's config is :mod:`~fedpl_core.runs.experiment_config`, what it builds :mod:`~fedpl_core.runs.build`,
its result file :mod:`~fedpl_core.runs.results`.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import threading
import time
import warnings
from pathlib import Path

import torch

from ..base.fileio import UnsafePath, check_inside, no_space_error, remove_stale_temps
from ..base.fileio import check_writable as _check_writable
from ..base.locks import holder as lock_holder
from ..base.locks import try_lock
from ..base.validation import check_device_available
from ..fl.checkpoint import CheckpointError
from . import data_checks
from .build import build_simulation, load_data
from .experiment_config import ExperimentConfig
from .provenance import keep_stale_default, stale_reason
from .provenance import provenance as make_provenance
from .results import (
    RunResult,
    StaleResultWarning,
    atomic_write_json,
    final_record,
    finite_or_none,
    stale_message,
)
from .schema import ResultFileError, check_record, parse_result, read_result

log = logging.getLogger("fedpl")


def clean_stale_files(results_dir: str | Path) -> list[Path]:
    """Remove this package's temporary files (``.<name>.<pid>@<host>.<random>.tmp``, or
    the older ``.<name>.<pid>.tmp``) of processes that no longer run (see
    :func:`fedpl_core.base.fileio.remove_stale_temps`); links are never followed or removed."""
    return remove_stale_temps(results_dir)


def _read_result(out: Path, warned: set | None = None, cfg: ExperimentConfig | None = None) -> RunResult | None:
    """The cached result at ``out``, or None (no file; or a corrupt one, or one of another
    run than ``cfg``: then a warning names the file and what is wrong, once per ``warned``
    set, and the run is done again)."""
    try:
        return read_result(out, None if cfg is None else cfg.to_dict())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        if warned is None or str(out) not in warned:
            why = f"{type(e).__name__}: {e}" if isinstance(e, ResultFileError) else type(e).__name__
            warnings.warn(f"ignoring corrupt result file {out} ({why}); the run is done again")
            if warned is not None:
                warned.add(str(out))
        return None


def check_targets(results_dir: str | Path, rid: str) -> None:
    """Raise ``IsADirectoryError`` now (before training) when a folder stands where run
    ``rid``'s result (``<rid>.json``), checkpoint (``<rid>.ckpt``) or lock (``<rid>.lock``)
    goes: no file can be moved onto it (nor a lock taken on it), so the run's work would be
    lost when it is written (a link or a file there is replaced, see
    :mod:`fedpl_core.base.fileio`).  A run id that would put a file
    outside ``results_dir`` or through a link in it (a method registered under a name such as
    ``../../x``) raises :class:`~fedpl_core.base.fileio.UnsafePath`."""
    for suffix, what in ((".json", "result"), (".ckpt", "checkpoint"), (".lock", "lock")):
        p = Path(results_dir) / f"{rid}{suffix}"
        if Path(f"{rid}{suffix}").name != f"{rid}{suffix}":
            raise UnsafePath(f"run id {rid!r} is not a plain file name: its {what} would leave {results_dir}")
        check_inside(results_dir, p)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{p} is a folder, where run {rid}'s {what} file goes; move it away and run again")


def check_writable(path: str | Path) -> Path:
    """Raise ``OSError`` now (before training) when a result cannot be written to ``path``."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"--out {p} is a folder; give a file name")
    return _check_writable(p)


class RunInterrupted(KeyboardInterrupt):
    """A run stopped at a round boundary because ``stop`` was set (an interrupted grid of
    threads); its checkpoint of that round, if it keeps them, is where it resumes."""


def run(
    cfg: ExperimentConfig,
    results_dir: str | Path | None = None,
    resume: bool = True,
    wait: bool = True,
    keep_stale: bool | None = None,
    warn_stale: bool = True,
    stop: threading.Event | None = None,
) -> RunResult | None:
    """Run one experiment (see the module docstring for the results cache).  With
    ``wait=False`` a run held by another process returns None at once; with
    ``wait=True`` it is waited for, with a message (log ``fedpl``, warning level, once a
    minute) naming the run and its holder, until its holder lets it go (then its result
    is read, or the run is done here if the holder did not finish it).  A cached result
    of other code is done again with a :class:`StaleResultWarning`, or kept with
    ``keep_stale=True`` (default: ``$FEDPL_KEEP_STALE``); ``warn_stale=False``: no
    warning (a grid warns once for all its runs).  Once ``stop`` is set the run ends at
    its next round boundary (after that round's checkpoint) with :class:`RunInterrupted`."""
    rid = cfg.run_id()
    keep = keep_stale_default(keep_stale)
    said_stale = False

    def cached(out: Path, warned: set) -> RunResult | None:
        nonlocal said_stale
        res = _read_result(out, warned, cfg)
        why = None if res is None else stale_reason(res.provenance, cfg)
        if why is None:
            return res
        if warn_stale and not said_stale:
            warnings.warn(stale_message([(rid, why)], 1, keep), StaleResultWarning, stacklevel=3)
            said_stale = True
        return res if keep else None

    if results_dir is None:
        return _execute(cfg, rid, None, None, resume, stop)
    rd = Path(results_dir)
    rd.mkdir(parents=True, exist_ok=True)
    clean_stale_files(rd)
    out, ckpt, path = rd / f"{rid}.json", rd / f"{rid}.ckpt", rd / f"{rid}.lock"
    check_targets(rd, rid)
    warned: set = set()
    if resume and (res := cached(out, warned)) is not None:
        return res
    lock = try_lock(path)
    if lock is None and not wait:
        log.info("run %s is held by %s; left for later", rid, lock_holder(path))
        return None
    while lock is None:
        log.warning("waiting for run %s: its lock %s is held by %s", rid, path, lock_holder(path))
        lock = try_lock(path, timeout=60)
    with lock:
        if resume and (res := cached(out, warned)) is not None:
            return res  # finished by the process that held it
        return _execute(cfg, rid, out, ckpt, resume, stop)


# ------------------------------------------------------------------ the run's data files
def _real_catalogue_set(name: str) -> bool:
    from ..data.catalog import DATASETS

    return name in DATASETS


def check_data_files(cfg: ExperimentConfig) -> None:
    """What the run's data files make impossible, found before they are loaded (the
    loaders are in the run's code fingerprint, so these checks are made here,
    :mod:`fedpl_core.runs.data_checks`): a MedMNIST ``.npz`` whose arrays declare more
    bytes than the memory available (or than it stores) is refused before anything is
    decompressed; a symbolic link in the decode cache folder named like a cache file is
    refused, not followed.  For a real data set read from a folder: a compressed table that
    unpacks to more than the memory allows is refused before the loader unpacks it
    (:func:`fedpl_core.runs.data_checks.check_compressed_tables`), and two different image
    files of one name, of which the loader would silently use one, are refused
    (:func:`fedpl_core.runs.data_checks.check_same_names`; copies of one file are named in
    a warning).  A ``DataError`` naming the file."""
    kw = cfg.dataset_kwargs or {}
    if _real_catalogue_set(cfg.dataset) and cfg.data_root is not None and Path(cfg.data_root).is_dir():
        root = Path(cfg.data_root)
        tables = [kw[k] for k in ("csv", "csv_path") if isinstance(kw.get(k), (str, os.PathLike))]
        data_checks.check_compressed_tables(root, tables)
        indexed = data_checks.INDEXED_IMAGES.get(cfg.dataset)
        if indexed is not None:
            data_checks.check_same_names(root, indexed, f"data set {cfg.dataset}")
    if cfg.dataset.startswith("medmnist:") and cfg.data_root is not None:
        _check_medmnist_file(cfg.dataset.split(":", 1)[1].lower(), Path(cfg.data_root), kw)
    elif _real_catalogue_set(cfg.dataset) and kw.get("use_cache", True):
        from ..data.cache import default_cache_dir

        folder = Path(kw["cache_dir"]).expanduser() if kw.get("cache_dir") else default_cache_dir()
        links = data_checks.cache_links(folder)
        if links:
            raise data_checks.cache_link_error(folder, links)


def _check_medmnist_file(flag: str, root: Path, kw: dict) -> None:
    from ..data.loaders.medmnist import PUBLISHED_SIZES, SIZES, medmnist_filename

    size = kw.get("size", 28)
    if size not in SIZES:
        return  # the loader names the valid sizes
    path = root / medmnist_filename(flag, size)
    if not path.is_file():
        return  # the loader says it is missing (or offers to download it)
    published = PUBLISHED_SIZES.get(flag, ((0, 0, 0),))[-1]
    smaller = [s for s in SIZES if s < size]
    advice = (
        f"the published {flag} holds {published[0]:,} training and {published[2]:,} test images, so this is "
        f"not the published file: download {path.name} again"
        + (f", or read a smaller one (dataset_kwargs size {' or '.join(map(str, smaller))})" if smaller else "")
        + "; max_images and classes pick images only after the file is read"
    )
    keys = [f"{s}_{k}" for s in ("train", "test") for k in ("images", "labels")]
    data_checks.check_npz_fits(path, keys, "MedMNIST file", advice)


def check_loaded_data(cfg: ExperimentConfig) -> None:
    """After the run's data is loaded: one warning naming the image files far from the
    size they were resized to (:func:`fedpl_core.runs.data_checks.warn_far_sizes`), once
    per data set and process.  The data is the loaded one (cached per process)."""
    if cfg.data_root is None or cfg.dataset.startswith("medmnist:"):
        return
    bundle = load_data(cfg)
    parts = [bundle.train, bundle.test, *getattr(bundle, "extra", {}).values()]
    paths: list[str] = []
    seen: set[str] = set()
    size = None
    for ds in parts:
        extra = getattr(ds, "extra", None) or {}
        if "paths" not in extra:
            continue
        size = size or int(ds.images.shape[-1])
        for p in extra["paths"]:
            if p not in seen:
                seen.add(p)
                paths.append(str(p))
    if paths:
        data_checks.warn_far_sizes(paths, size, f"data set {cfg.dataset}")


def _build(cfg: ExperimentConfig, ckpt: Path | None):
    """:func:`build_simulation`; a data folder nested too deep for the loaders' folder scan
    (Python's recursion limit) is one ``DataError`` naming the folder."""
    try:
        return build_simulation(cfg, checkpoint_path=ckpt)
    except RecursionError:
        deep = data_checks.deep_folder_error(cfg.data_root)
        if deep is None:
            raise
        raise deep from None


# ------------------------------------------------------------------ checkpoints on a full disk
#: What torch's zip writer says when a write of ``torch.save`` fails (its errno is lost).
TORCH_WRITE_FAILED = ("inline_container", "PytorchStreamWriter", "file write failed")


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _state_bytes(obj, depth: int = 0) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if depth > 20:
        return 0
    if isinstance(obj, dict):
        return sum(_state_bytes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_state_bytes(v, depth + 1) for v in obj)
    return 0


def checkpoint_space_error(e: BaseException, ckpt: Path | None, sim) -> OSError | None:
    """The error to raise for ``e`` when it is torch's failure to write the checkpoint
    ``ckpt`` on a full disk ("[enforce fail at inline_container.cc:...]": a RuntimeError
    whose errno is lost): "no space left in <folder> to write <checkpoint>"
    (:func:`fedpl_core.base.fileio.no_space_error`).  The disk counts as full when the
    folder has less room than the checkpoint needs (its arrays, or the size of the last
    one written).  None for any other error (it stands as it is)."""
    text = str(e)
    if ckpt is None or not any(t in text for t in TORCH_WRITE_FAILED):
        return None
    free = _free_bytes(ckpt.parent)
    try:
        need = _state_bytes(sim.run_state())
    except Exception:  # noqa: BLE001 - an estimate only
        need = 0
    try:
        need = max(need, os.lstat(ckpt).st_size)
    except OSError:
        pass
    if free is None or free >= need + 2**20:
        return None
    return no_space_error(OSError(errno.ENOSPC, "No space left on device"), ckpt)


# ------------------------------------------------------------------ a result checked before it is kept
class ImpossibleResultError(ValueError):
    """A run's result (or the history of the checkpoint it resumed from) fails the result
    schema (:func:`fedpl_core.runs.schema.parse_result`): it is neither written nor
    returned."""


def _checkpoint_advice(ckpt: Path) -> str:
    return f"remove the checkpoint {ckpt} (it holds impossible values) and run again: the run then starts from round 0"


def check_resumed_history(sim, rid: str, ckpt: Path) -> None:
    """Raise :class:`ImpossibleResultError` (one line naming the run, the checkpoint and the
    first impossible value) when the history restored from the checkpoint ``ckpt`` breaks
    the rules of a result's records (:mod:`fedpl_core.runs.schema`: shares in [0, 1],
    counts and times >= 0, one per-class value per class, ...), its model selection's best
    record included: checked before training resumes, so no round is spent on a history the
    result check would refuse at the end.  The checkpoint is left in place
    (it is the user's to look at or remove)."""
    model = list(sim.info.class_names)
    try:
        history = finite_or_none(list(sim.history))
        for i, rec in enumerate(history):
            check_record(rec, f"history[{i}]", model)
        check_record(finite_or_none(sim.best or {}), "best", model, empty_ok=True)
    except ResultFileError as e:
        raise ImpossibleResultError(
            f"run {rid} cannot resume: its checkpoint {ckpt} holds impossible values ({e}); nothing was run: "
            "remove the checkpoint and run again (the run then starts from round 0)"
        ) from None


def checked_result(res: RunResult, rid: str, cfg: ExperimentConfig, resumed: Path | None) -> RunResult:
    """``res`` as a cached load reads it back (NaN and infinity as null), checked with the
    one result schema (:func:`fedpl_core.runs.schema.parse_result`, against the run id and
    the config) before it is written or returned, so that a result the cache would refuse
    on its next read is never kept nor reported.  A result that fails raises
    :class:`ImpossibleResultError`: one line naming the run and what is wrong, and, when the
    run resumed from the checkpoint ``resumed``, that the checkpoint holds impossible
    values and should be removed (it is not removed here)."""
    text = json.dumps(finite_or_none(res.to_json()), allow_nan=False)
    try:
        return parse_result(text, rid, cfg.to_dict())
    except ResultFileError as e:
        where = f"; it resumed from a checkpoint: {_checkpoint_advice(resumed)}" if resumed is not None else ""
        raise ImpossibleResultError(
            f"run {rid} made a result that fails the result checks ({e}); it is not written{where}"
        ) from None


def _check_stop(stop: threading.Event | None, rid: str, rounds: int) -> None:
    if stop is not None and stop.is_set():
        raise RunInterrupted(f"run {rid} stopped after round {rounds}")


def _execute(
    cfg: ExperimentConfig,
    rid: str,
    out: Path | None,
    ckpt: Path | None,
    resume: bool,
    stop: threading.Event | None = None,
) -> RunResult:
    _check_stop(stop, rid, 0)
    t0 = time.perf_counter()
    check_device_available(cfg.engine.device, "engine device")  # a cached result needs no device: checked here
    check_data_files(cfg)
    sim = _build(cfg, ckpt)
    check_loaded_data(cfg)
    t_setup = time.perf_counter() - t0
    resumed = None
    if ckpt is not None and resume and ckpt.is_file():
        try:
            sim.load_checkpoint(ckpt)
        except CheckpointError as e:
            warnings.warn(f"{e}; the run starts again from round 0")
            sim = _build(cfg, ckpt)
        else:
            resumed = ckpt
            check_resumed_history(sim, rid, ckpt)
    cuda = sim.device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(sim.device)
    _check_stop(stop, rid, sim.round)
    try:
        sim.run(callback=None if stop is None else lambda rec: _check_stop(stop, rid, rec["round"]))
    except RuntimeError as e:
        full = checkpoint_space_error(e, ckpt, sim)
        if full is None:
            raise
        raise full from None
    final = final_record(sim.history)
    total_s = time.perf_counter() - t0
    res = RunResult(
        config=cfg.to_dict(),
        history=sim.history,
        final=dict(final),
        best=dict(sim.best or {}),
        class_names=list(sim.info.class_names),
        timings={
            "setup_s": t_setup,
            "total_s": total_s,
            "train_s": float(sum(h.get("train_time", 0.0) for h in sim.history)),
            "eval_s": float(sum(h.get("eval_time", 0.0) for h in sim.history)),
            # on a GPU: the run's peak memory (MiB)
            **({"peak_gpu_mib": torch.cuda.max_memory_allocated(sim.device) / 2**20} if cuda else {}),
        },
        run_id=rid,
        provenance=make_provenance(cfg, device=str(sim.device), seconds=total_s),
    )
    res = checked_result(res, rid, cfg, resumed)  # as a cached load reads it: no NaN, one schema
    if out is not None:
        atomic_write_json(res.to_json(), out)
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)
    return res


__all__ = [
    "run",
    "RunInterrupted",
    "ImpossibleResultError",
    "check_resumed_history",
    "checked_result",
    "check_targets",
    "check_writable",
    "clean_stale_files",
]
