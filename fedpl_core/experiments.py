"""The one experiment runner: a config -> data, partition, model, method, engine -> a result.

``run(config, results_dir)`` returns a :class:`RunResult`; ``run_many(base, methods,
seeds, settings=...)`` runs a grid (settings x methods x seeds) on identical data and
partitions and returns a tidy DataFrame.  Every notebook and study goes through these
two functions and their one results cache:

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
  lock on ``<run_id>.lock`` (:mod:`fedpl_core.locks`, ``filelock``): a run another
  process holds is waited for, with a message naming its host and process, or skipped
  by ``run_many`` until the end.  The kernel lets a lock go when its holder exits or is
  killed, so a lock of a dead process never blocks;
* every file is written through :mod:`fedpl_core.fileio`: a fresh ``mkstemp`` temporary
  file, then ``os.replace``; a file or link planted at a temporary or final name is
  never written through;
* every result records its ``"provenance"`` (:mod:`fedpl_core.provenance`: package
  version, git commit, Python / torch / numpy versions, device, date, host, seconds) and
  the fingerprint of the code the run used.  The run id stays the config's hash, but a
  cached result from other code (or from before results recorded it) is *stale*: it is
  done again with one warning per ``run`` / per grid, unless ``keep_stale=True`` or
  ``$FEDPL_KEEP_STALE=1`` keeps it (the warning then says so).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import stat
import time
import typing
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
import torch

from . import partitions as P
from .checkpoint import CheckpointError
from .config import (ConfigError, EngineConfig, check_engine_conflicts, check_seed, check_settings, read_config_file,
                     validate)
from .data.base import ImageDataset
from .datasets import DataBundle, load_bundle
from .engine import Simulation
from .fileio import atomic_write_text, remove_stale_temps
from .fileio import check_writable as _check_writable
from .locks import holder as lock_holder
from .locks import try_lock
from .methods import available_methods, get_method
from .models import MODELS, build_model
from .provenance import keep_stale_default, stale_reason
from .provenance import provenance as make_provenance
from .selection import check_selection_key

log = logging.getLogger("fedpl")

PARTITIONS = ("iid", "dirichlet", "missing_classes", "label_set_mismatch", "explicit", "by_source",
              "shared_classes_split")


@dataclass
class ExperimentConfig:
    """Everything that defines one run.  Each field's docstring below is its ``--help``
    text (:func:`fedpl_core.config.field_docs`); every field is checked on construction
    (:func:`fedpl_core.config.validate`)."""

    name: str = ""
    """Label of the run in tables and grids; it does not change the numbers (not in the run id)."""
    # data
    dataset: str = "synthetic-cxr"
    """Data source: a built-in synthetic set, a real data set read from data_root, or a
    source registered by the studies."""
    data_root: str | None = None
    """Folder holding a real data set as its publisher ships it (not used by the synthetic sets)."""
    classes: list | None = None
    """Class names to keep, in this order (default: all classes of the data set)."""
    image_size: int = 32
    """Side of the square images in pixels; images are resized to it."""
    n_train: int = 8000
    """Training images of a synthetic set (real data sets use their own splits)."""
    n_test: int = 2000
    """Test images of a synthetic set (real data sets use their own splits)."""
    data_seed: int = 0
    """Seed of the synthetic images, and of a real set's subset and split, so every method
    and seed sees the same data."""
    dataset_kwargs: dict = field(default_factory=dict)
    """Options of the data source's loader, e.g. {"skip_missing": true}."""
    # partition
    partition: str = "missing_classes"
    """Partition builder (iid, dirichlet, missing_classes, label_set_mismatch, explicit,
    by_source, ...); with split: the label-set rule applied to the sample split."""
    num_clients: int | None = 8
    """Number of clients (none: the partition or the data source fixes it)."""
    partition_kwargs: dict = field(default_factory=dict)
    """Options of the partition, e.g. {"missing": 7}; its "seed" seeds the partition (default: seed)."""
    split: str | None = None
    """Sample split (iid, dirichlet, ...) composed with the label-set rule named by
    partition (none: partition alone builds the partition)."""
    split_kwargs: dict = field(default_factory=dict)
    """Options of the sample split, e.g. {"alpha": 0.5}."""
    # model and method
    model: str = "cnn"
    """Network: cnn, resnet18 or densenet121."""
    model_kwargs: dict = field(default_factory=dict)
    """Options of the model, e.g. {"norm": "gn"} or {"weights_path": "w.pt"}."""
    calibrate_bn: bool = False
    """Set the initial model's BatchNorm statistics from the data source's public images
    (Surgical Aggregation's FedBN+ without pre-trained weights)."""
    method: str = "fedavg"
    """Federated method (list: python -m fedpl_core methods)."""
    method_kwargs: dict = field(default_factory=dict)
    """Options of the method, e.g. {"mu": 0.01}."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """Training loop settings (EngineConfig); given as their own flags or config keys."""
    seed: int = 0
    """Seed of model initialisation, client sampling, batching and (unless partition_kwargs
    names its own seed) the partition."""

    _RANGES: typing.ClassVar[dict[str, str]] = {"image_size": ">=8", "n_train": ">=1", "n_test": ">=1",
                                                "num_clients": ">=1", "data_seed": ">=0"}

    def __post_init__(self) -> None:
        if isinstance(self.engine, dict):
            self.engine = EngineConfig(**self.engine)
        validate(self)
        check_seed(self.seed)
        if self.classes is not None:
            self.classes = [str(c) for c in self.classes]
        if self.split is None and self.partition not in PARTITIONS:
            raise ConfigError(f"unknown partition {self.partition!r}; choose one of {', '.join(PARTITIONS)}")
        if self.split is not None and self.split not in P.SPLITS:
            raise ConfigError(f"unknown split {self.split!r}; choose one of {', '.join(P.SPLITS)}")
        if self.split is not None and self.partition not in P.LABEL_SETS:
            raise ConfigError(f"with a split, partition names a label-set rule; choose one of "
                              f"{', '.join(P.LABEL_SETS)}, got {self.partition!r}")
        if self.model not in MODELS:
            raise ConfigError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        if self.method not in available_methods():
            raise ConfigError(f"unknown method {self.method!r}; available: {', '.join(available_methods())}")
        check_settings(self)  # options of the method, the model and the data source

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExperimentConfig":
        """From a nested dict (``to_dict``'s form); engine fields may also stand at the
        top level (``rounds: 7``).  The experiment's ``seed`` is the engine's seed."""
        if not isinstance(d, dict):
            raise ConfigError(f"a config must be a mapping of field names to values, got {type(d).__name__}")
        check_engine_conflicts(d, ENGINE_FIELDS)
        names = {f.name for f in dataclasses.fields(cls)}
        top, engine = {}, d.get("engine") or {}
        if not isinstance(engine, dict):
            raise ConfigError(f"engine must be a mapping, got {type(engine).__name__}")
        engine = dict(engine)
        for k, v in d.items():
            if k == "engine":
                continue
            if k in names:
                top[k] = v
            elif k in ENGINE_FIELDS:
                engine[k] = v
            else:
                raise ConfigError(f"unknown config key {k!r}")
        unknown = set(engine) - ENGINE_FIELDS - {"seed"}
        if unknown:
            raise ConfigError(f"unknown engine config key(s) {sorted(unknown)}")
        if "seed" in engine:
            top.setdefault("seed", engine.pop("seed"))
        try:
            return cls(**top, engine=EngineConfig(**engine))
        except TypeError as e:
            raise ConfigError(str(e)) from None

    @classmethod
    def from_file(cls, path: str | Path) -> "ExperimentConfig":
        """A YAML (``.yaml``/``.yml``) or JSON file with :meth:`from_dict`'s fields (any
        other name is read by its content: :func:`fedpl_core.config.read_config_file`)."""
        d = read_config_file(path)
        try:
            return cls.from_dict({} if d is None else d)
        except ConfigError as e:
            raise ConfigError(f"config file {path}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["engine"].pop("seed")  # the experiment's seed is the engine's
        return d

    def replace(self, **changes: Any) -> "ExperimentConfig":
        """A copy with top-level or engine fields changed (``cfg.replace(rounds=5)``)."""
        eng = {k: changes.pop(k) for k in list(changes) if k in ENGINE_FIELDS}
        engine = changes.pop("engine", self.engine)
        if isinstance(engine, dict):
            engine = EngineConfig(**engine)
        return dataclasses.replace(self, engine=dataclasses.replace(engine, **eng), **changes)

    def engine_config(self) -> EngineConfig:
        return dataclasses.replace(self.engine, seed=self.seed)

    def run_id(self) -> str:
        """``<method>-s<seed>-<hash of everything that changes the numbers>``."""
        d = self.to_dict()
        for k in ("name",):
            d.pop(k)
        for k in ("progress", "device", "checkpoint_every"):
            d["engine"].pop(k, None)
        h = hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:10]
        return f"{self.method}-s{self.seed}-{h}"


ENGINE_FIELDS = {f.name for f in dataclasses.fields(EngineConfig)} - {"seed"}


# --------------------------------------------------------------------------- data
def load_data(cfg: ExperimentConfig) -> DataBundle:
    """The run's data (:mod:`fedpl_core.datasets`, cached in memory per process)."""
    return load_bundle(cfg.dataset, cfg.data_root, cfg.classes, cfg.image_size, cfg.n_train, cfg.n_test,
                       cfg.data_seed, cfg.dataset_kwargs, progress=cfg.engine.progress)


def build_partition(cfg: ExperimentConfig, train: ImageDataset) -> P.Partition:
    """The partition of ``cfg`` (see :class:`ExperimentConfig`); ``explicit`` takes its
    client classes and pools from the data source when it provides them (``train.extra``).
    ``missing_classes`` (a builder, or a label-set rule with ``split``) defaults to the
    fewest classes per client that still covers every class."""
    kw = dict(cfg.partition_kwargs)
    kw.setdefault("seed", cfg.seed)
    if cfg.partition == "missing_classes" and "missing" not in kw and cfg.num_clients is not None:
        if cfg.num_clients < 2:
            raise ConfigError("partition 'missing_classes' needs num_clients >= 2 (each client misses classes "
                              "another one labels); with one client use partition 'iid'")
        # one class per client when K >= C
        kw["missing"] = train.num_classes - -(-train.num_classes // cfg.num_clients)
    if cfg.split is None and cfg.partition == "explicit" and "client_classes" not in kw \
            and "client_classes" not in train.extra:
        raise ConfigError("partition 'explicit' needs partition_kwargs {\"client_classes\": {client: [class, ...]}} "
                          f"(data set {cfg.dataset!r} provides no table)")
    try:
        if cfg.split is not None:
            seed = kw.pop("seed")
            return P.make_partition(train, cfg.num_clients, split=cfg.split, split_kwargs=cfg.split_kwargs,
                                    labels=cfg.partition, label_kwargs=kw, seed=seed)
        fn = getattr(P, cfg.partition)
        if cfg.partition == "explicit":
            if "client_classes" not in kw and "client_classes" in train.extra:
                kw["client_classes"] = train.extra["client_classes"]
            if "pools" not in kw and "pools" in train.extra:
                kw["pools"] = train.extra["pools"]
            return fn(train, **kw)
        if cfg.partition == "by_source":
            return fn(train, **kw)
        return fn(train, num_clients=cfg.num_clients, **kw)
    except TypeError as e:  # a required option left out, an unknown one given
        raise ConfigError(partition_option_error(cfg, e)) from None


def partition_option_error(cfg: ExperimentConfig, e: TypeError) -> str:
    """``"split 'dirichlet' (split_kwargs): missing 1 required ... 'alpha'"`` from the
    ``TypeError`` of a partition builder or rule called with the options of ``cfg``."""
    import re

    text = str(e)
    m = re.match(r"^([\w.]+)\(\) (.*)$", text)
    owner, why = (m[1].split(".")[0], m[2]) if m else ("", text)
    if cfg.split is not None and owner in {c.__name__ for c in P.SPLITS.values()}:
        return f"split {cfg.split!r} (split_kwargs): {why}"
    return f"partition {cfg.partition!r} (partition_kwargs): {why}"


def build_simulation(cfg: ExperimentConfig, checkpoint_path: str | Path | None = None) -> Simulation:
    method = get_method(cfg.method, **cfg.method_kwargs)  # fail fast on a bad hyper-parameter
    data = load_data(cfg)
    check_selection_key(cfg.engine.selection, {**({"": data.test.task} if data.test is not None else {}),
                                               **{k: v.task for k, v in data.extra.items()}},
                        cfg.engine.client_val_fraction > 0)
    partition = build_partition(cfg, data.train)
    torch.manual_seed(cfg.seed)
    train = data.train
    model = build_model(cfg.model, train.num_classes, train.channels, train.image_size, **cfg.model_kwargs)
    if cfg.calibrate_bn and data.public is not None:
        from .methods.surgical import calibrate_batchnorm

        calibrate_batchnorm(model, data.public, normalize=cfg.engine.normalize)
    return Simulation(method, model, train, partition, data.test, cfg.engine_config(), extra_eval=data.extra,
                      checkpoint_path=checkpoint_path)


# --------------------------------------------------------------------------- results
@dataclass
class RunResult:
    config: dict[str, Any]
    history: list[dict[str, Any]]
    final: dict[str, Any]
    best: dict[str, Any]
    class_names: list[str]
    timings: dict[str, float]
    run_id: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)  # empty in a result written before it existed

    def per_class(self, which: str = "final") -> pd.DataFrame:
        from .metrics import per_class_table
        return per_class_table(getattr(self, which), self.class_names)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RunResult":
        return cls(**d)


METRIC_KEYS = ("auroc_mean", "map", "bacc", "f1", "precision", "recall", "accuracy", "n_defined")


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every NaN / infinity replaced by None and numpy scalars by Python ones
    (results JSON never holds NaN)."""
    if isinstance(obj, float) or (hasattr(obj, "dtype") and getattr(obj, "shape", None) == ()):
        v = obj.item() if hasattr(obj, "item") else obj
        return None if isinstance(v, float) and not math.isfinite(v) else v
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    if hasattr(obj, "tolist"):
        return finite_or_none(obj.tolist())
    return obj


def atomic_write_json(obj: Any, path: str | Path) -> None:
    """Write JSON (NaN / infinity as null) to ``path`` atomically: a fresh temporary file
    beside it, then :func:`os.replace` (:func:`fedpl_core.fileio.atomic_write`; a link
    planted at ``path`` or at a temporary name is replaced, never written through)."""
    atomic_write_text(path, json.dumps(finite_or_none(obj), indent=1, allow_nan=False))


# --------------------------------------------------------------------------- temporary files
def clean_stale_files(results_dir: str | Path) -> list[Path]:
    """Remove this package's temporary files (``.<name>.<pid>@<host>.<random>.tmp``, or
    the older ``.<name>.<pid>.tmp``) of processes that no longer run (see
    :func:`fedpl_core.fileio.remove_stale_temps`); links are never followed or removed."""
    return remove_stale_temps(results_dir)


# --------------------------------------------------------------------------- run
_RECORD_NUMBERS = set(METRIC_KEYS) | {"round", "val_loss", "train_loss", "threshold", "n_classes", "train_time",
                                      "eval_time"}


class ResultFileError(ValueError):
    """A cached result file that cannot be used (then the run is done again)."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ResultFileError(f"{where} is {obj}")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_finite(v, f"{where}[{i}]")


def _check_record(rec: Any, where: str, empty_ok: bool = False) -> None:
    """A history record / ``final`` / ``best``: a mapping whose ``round`` is an integer and
    whose metrics are numbers (or null), per-class lists of numbers (or null)."""
    if not isinstance(rec, dict):
        raise ResultFileError(f"{where} is a {type(rec).__name__}, not a mapping")
    if not rec and empty_ok:
        return
    if not (isinstance(rec.get("round"), int) and not isinstance(rec.get("round"), bool)):
        raise ResultFileError(f"{where}.round is {rec.get('round')!r}, not an integer")
    for k, v in rec.items():
        base = k.rsplit("/", 1)[-1]  # "<eval set>/<metric>" keys follow the metric's rule
        if base in _RECORD_NUMBERS:
            if not (v is None or _is_number(v)):
                raise ResultFileError(f"{where}.{k} is {v!r}, not a number")
        elif base.endswith("_per_class"):
            if not (isinstance(v, list) and all(x is None or _is_number(x) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of numbers")
        elif base in ("class_names", "few_positives"):
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of names")


def _reject_constant(name: str) -> Any:
    raise ResultFileError(f"it holds {name}")


def parse_result(text: str, run_id: str | None = None) -> RunResult:
    """A :class:`RunResult` from a results JSON, checked: the keys, the types (config and
    records are mappings, history a list of records, class names strings, metrics numbers)
    and no NaN or infinity; ``run_id`` (the file's name), when given, must match.  Raises
    :class:`ResultFileError` (a ``ValueError``) naming what is wrong."""
    try:
        d = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ResultFileError("it is nested too deeply") from None
    if not isinstance(d, dict):
        raise ResultFileError(f"it holds a {type(d).__name__}, not a mapping")
    names = {f.name for f in dataclasses.fields(RunResult)}
    if set(d) - names or (names - {"run_id", "provenance"}) - set(d):
        raise ResultFileError(f"its keys are {sorted(d)}, expected {sorted(names)}")
    _check_finite(d, "result")
    cfg = d["config"]
    if not isinstance(cfg, dict):
        raise ResultFileError(f"config is a {type(cfg).__name__}, not a mapping")
    if not isinstance(cfg.get("method"), str):
        raise ResultFileError(f"config.method is {cfg.get('method')!r}, not a name")
    if not (isinstance(cfg.get("seed"), int) and not isinstance(cfg.get("seed"), bool)):
        raise ResultFileError(f"config.seed is {cfg.get('seed')!r}, not an integer")
    if not isinstance(d["history"], list) or not d["history"]:
        raise ResultFileError("history is not a non-empty list of records")
    for i, rec in enumerate(d["history"]):
        _check_record(rec, f"history[{i}]")
    _check_record(d["final"], "final")
    _check_record(d["best"], "best", empty_ok=True)
    if not (isinstance(d["class_names"], list) and all(isinstance(c, str) for c in d["class_names"])):
        raise ResultFileError("class_names is not a list of names")
    t = d["timings"]
    if not (isinstance(t, dict) and all(_is_number(v) for v in t.values()) and "total_s" in t):
        raise ResultFileError("timings is not a mapping of numbers with total_s")
    rid = d.get("run_id", "")
    if not isinstance(rid, str) or (run_id is not None and rid and rid != run_id):
        raise ResultFileError(f"its run_id {rid!r} is not {run_id!r}")
    _check_provenance(d.get("provenance", {}))
    return RunResult.from_json(d)


def _check_provenance(p: Any) -> None:
    """``provenance``: a mapping of names to strings, numbers, booleans or null; its
    ``code`` a mapping of module names to hashes."""
    if not isinstance(p, dict):
        raise ResultFileError(f"provenance is a {type(p).__name__}, not a mapping")
    for k, v in p.items():
        if k == "code":
            if not (isinstance(v, dict) and all(isinstance(h, str) for h in v.values())):
                raise ResultFileError("provenance.code is not a mapping of module names to hashes")
        elif not (v is None or isinstance(v, (str, int, float, bool))):
            raise ResultFileError(f"provenance.{k} is a {type(v).__name__}, not a value")


class StaleResultWarning(UserWarning):
    """Cached results made by other code than the current one (:mod:`fedpl_core.provenance`)."""


def stale_message(stale: list[tuple[str, str]], total: int, kept: bool) -> str:
    """One warning for ``stale`` ``(run id, why)`` pairs out of ``total`` cached results."""
    whys: dict[str, list[str]] = {}
    for rid, why in stale:
        whys.setdefault(why, []).append(rid)
    detail = "; ".join(f"{len(r)} {why} (e.g. {r[0]})" for why, r in whys.items())
    n = len(stale)
    head = f"{n} of {total} cached result(s) {'is' if n == 1 else 'are'} stale: {detail}; "
    if kept:
        return head + "kept as they are (keep_stale / $FEDPL_KEEP_STALE=1 / --keep-stale)"
    return head + ("recomputed (keep them with keep_stale=True, $FEDPL_KEEP_STALE=1 or --keep-stale)")


def read_result(out: str | Path) -> RunResult:
    """The checked result in the file ``out`` (:func:`parse_result`); a link is refused,
    never followed.  Raises ``OSError`` or :class:`ResultFileError`."""
    out = Path(out)
    if stat.S_ISLNK(os.lstat(out).st_mode):
        raise ResultFileError("it is a symbolic link, not a file")
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ResultFileError("it is not a regular file")
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError("it is not UTF-8 text") from None
    return parse_result(text, run_id=out.stem)


def _read_result(out: Path, warned: set | None = None) -> RunResult | None:
    """The cached result at ``out``, or None (no file; or a corrupt one: then a warning
    names the file and what is wrong, once per ``warned`` set, and the run is done again)."""
    try:
        return read_result(out)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as e:
        if warned is None or str(out) not in warned:
            why = f"{type(e).__name__}: {e}" if isinstance(e, ResultFileError) else type(e).__name__
            warnings.warn(f"ignoring corrupt result file {out} ({why}); the run is done again")
            if warned is not None:
                warned.add(str(out))
        return None


def check_writable(path: str | Path) -> Path:
    """Raise ``OSError`` now (before training) when a result cannot be written to ``path``."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"--out {p} is a folder; give a file name")
    return _check_writable(p)


def run(cfg: ExperimentConfig, results_dir: str | Path | None = None, resume: bool = True,
        wait: bool = True, keep_stale: bool | None = None, warn_stale: bool = True) -> RunResult | None:
    """Run one experiment (see the module docstring for the results cache).  With
    ``wait=False`` a run held by another process returns None at once; with
    ``wait=True`` it is waited for, with a message (log ``fedpl``, warning level, once a
    minute) naming the run and its holder, until its holder lets it go (then its result
    is read, or the run is done here if the holder did not finish it).  A cached result
    of other code is done again with a :class:`StaleResultWarning`, or kept with
    ``keep_stale=True`` (default: ``$FEDPL_KEEP_STALE``); ``warn_stale=False``: no
    warning (a grid warns once for all its runs)."""
    rid = cfg.run_id()
    keep = keep_stale_default(keep_stale)
    said_stale = False

    def cached(out: Path, warned: set) -> RunResult | None:
        nonlocal said_stale
        res = _read_result(out, warned)
        why = None if res is None else stale_reason(res.provenance, cfg)
        if why is None:
            return res
        if warn_stale and not said_stale:
            warnings.warn(stale_message([(rid, why)], 1, keep), StaleResultWarning, stacklevel=3)
            said_stale = True
        return res if keep else None

    if results_dir is None:
        return _execute(cfg, rid, None, None, resume)
    rd = Path(results_dir)
    rd.mkdir(parents=True, exist_ok=True)
    clean_stale_files(rd)
    out, ckpt, path = rd / f"{rid}.json", rd / f"{rid}.ckpt", rd / f"{rid}.lock"
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
        return _execute(cfg, rid, out, ckpt, resume)


def _execute(cfg: ExperimentConfig, rid: str, out: Path | None, ckpt: Path | None, resume: bool) -> RunResult:
    t0 = time.perf_counter()
    sim = build_simulation(cfg, checkpoint_path=ckpt)
    t_setup = time.perf_counter() - t0
    if ckpt is not None and resume and ckpt.is_file():
        try:
            sim.load_checkpoint(ckpt)
        except CheckpointError as e:
            warnings.warn(f"{e}; the run starts again from round 0")
            sim = build_simulation(cfg, checkpoint_path=ckpt)
    sim.run()
    evaluated = [h for h in sim.history if any(k in h for k in ("auroc_mean", "accuracy", "val_loss"))]
    final = evaluated[-1] if evaluated else sim.history[-1]
    total_s = time.perf_counter() - t0
    res = RunResult(
        config=cfg.to_dict(), history=sim.history, final=dict(final), best=dict(sim.best or {}),
        class_names=list(sim.info.class_names),
        timings={"setup_s": t_setup, "total_s": total_s,
                 "train_s": float(sum(h.get("train_time", 0.0) for h in sim.history)),
                 "eval_s": float(sum(h.get("eval_time", 0.0) for h in sim.history))},
        run_id=rid,
        provenance=make_provenance(cfg, device=str(sim.device), seconds=total_s),
    )
    res = RunResult.from_json(finite_or_none(res.to_json()))  # as a cached load reads it: no NaN
    if out is not None:
        atomic_write_json(res.to_json(), out)
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)
    return res


def result_rows(res: RunResult, **labels: Any) -> list[dict[str, Any]]:
    """Tidy rows: one per ``which`` (``final``: the last evaluated round; ``best``: the
    round picked by ``engine.selection``, absent when nothing was selected) with the
    summary metrics, ``auroc:<class>`` and ``<eval set>/<metric>`` columns."""
    rows = []
    for which in ("final", "best"):
        rec = getattr(res, which) or {}
        if not rec:
            continue
        row = {"method": res.config["method"], "seed": res.config["seed"], "which": which,
               "round": rec.get("round"), **labels}
        for k in METRIC_KEYS + ("val_loss",):
            if k in rec:
                row[k] = rec[k]
        for k, v in rec.items():
            if "/" in k and not isinstance(v, list):
                row[k] = v
        names = rec.get("class_names") or res.class_names
        for c, v in zip(names, rec.get("auroc_per_class") or []):
            row[f"auroc:{c}"] = v
        for k, v in rec.items():
            if k.endswith("/auroc_per_class"):
                prefix = k[:-len("auroc_per_class")]
                for c, a in zip(rec.get(prefix + "class_names") or [], v):
                    row[f"{prefix}auroc:{c}"] = a
        rows.append(row)
    return rows


@dataclass
class Study:
    """A declarative grid: ``settings`` (label -> config overrides) x ``methods`` (names
    or ``(label, overrides)``) x ``seeds`` on one ``base`` config."""

    base: ExperimentConfig
    methods: Sequence[Any]
    seeds: Sequence[int] = (0,)
    settings: dict[str, dict[str, Any]] | None = None

    def jobs(self) -> list[tuple[str, str, ExperimentConfig]]:
        out = []
        for sname, sover in (self.settings or {"default": {}}).items():
            for m in self.methods:
                label, over = (m, {"method": m}) if isinstance(m, str) else m
                for s in self.seeds:
                    cfg = self.base.replace(**{**sover, **over, "seed": s})
                    cfg.name = cfg.name or f"{sname}-{label}"
                    out.append((sname, label, cfg))
        return out


class SingleLabelWarning(UserWarning):
    """Two methods of a grid are the same method on a single-label task."""


_TWINS_WARNED: set = set()


def _twin_key(method) -> tuple | None:
    """What is left of a FedAvg-family method once its ``partial`` switch is ignored."""
    from .methods.baselines import Centralized, FedAvgPL, FedBN, FedProx
    from .methods.fedavg import FedAvg

    cls = FedAvg if type(method) is FedAvgPL else type(method)
    if cls not in (FedAvg, FedProx, FedBN, Centralized):
        return None
    return (cls.__name__, tuple(sorted((k, repr(v)) for k, v in vars(method).items() if k != "partial")))


def warn_single_label_twins(jobs: list[tuple[str, str, ExperimentConfig]]) -> list[tuple[str, str]]:
    """Warn (once per pair and process) when a grid runs two methods that differ only by
    the partial loss on a single-label task: there a sample whose class the client does
    not identify has no label at all, both losses leave it out, so e.g. ``fedavg`` and
    ``fedavg_pl`` are the same method (same numbers for the same seed).  Returns the pairs."""
    groups: dict[tuple, list[str]] = {}
    first: dict[str, ExperimentConfig] = {}
    for sname, label, cfg in jobs:
        key = _twin_key(get_method(cfg.method, **cfg.method_kwargs))
        if key is not None:
            groups.setdefault((sname, key), [])
            if label not in groups[(sname, key)]:
                groups[(sname, key)].append(label)
                first.setdefault(sname, cfg)
    pairs = []
    for (sname, _), labels in groups.items():
        if len(labels) < 2 or load_data(first[sname]).train.task != "multiclass":
            continue
        pair = tuple(labels)
        pairs.append(pair)
        if pair not in _TWINS_WARNED:
            _TWINS_WARNED.add(pair)
            warnings.warn(f"{' and '.join(pair)} are the same method on this single-label task ({sname}): a sample "
                          "whose class the client does not identify has no label, and both losses leave it out",
                          SingleLabelWarning, stacklevel=3)
    return pairs


def run_many(base: ExperimentConfig, methods: Sequence[str | tuple[str, dict]], seeds: Iterable[int] = (0,),
             results_dir: str | Path | None = None, settings: dict[str, dict[str, Any]] | None = None,
             progress: bool = True, histories: bool = False, workers: int = 1, backend: str | None = None,
             ray_address: str | None = None, retries: int = 1, keep_stale: bool | None = None) -> pd.DataFrame:
    """Grid over settings x methods x seeds on identical data and partitions.

    ``methods`` items are names or ``(label, overrides)`` pairs, e.g.
    ``("fedprox_mu0.01", {"method": "fedprox", "method_kwargs": {"mu": 0.01}})``;
    ``settings`` maps a setting label to config overrides.  Returns one row per run and
    ``which`` (final / best, see :func:`result_rows`).  With ``histories`` the per-round
    records are kept in ``df.attrs["histories"][(setting, label, seed)]``.  Runs that
    another process holds (a lock in ``results_dir``) are done last, waiting for it.

    ``backend`` (:mod:`fedpl_core.grid`) runs the runs not cached yet: ``"serial"`` in
    this process, ``"process"`` in ``workers`` local processes (forked on Linux without CUDA, else
    spawned; ``cpu_count // workers`` torch threads each; kept alive for the next grid), ``"ray"`` as Ray tasks (a cluster at ``ray_address``, else a local
    Ray with ``workers`` CPUs; ``pip install -e .[ray]``).  Default: ``"process"`` when
    ``workers > 1``, else ``"serial"``.  The numbers are those of a serial run with the
    same threads.  A run that raises is retried ``retries`` times; then one
    :class:`fedpl_core.grid.GridError` names every failed run, after the others are done
    and written.  Data sources registered in ``__main__`` (a notebook cell) are not seen
    by spawned workers (macOS, Windows, CUDA): register them in an importable module.
    Cached results of other code (:mod:`fedpl_core.provenance`) are done again with one
    :class:`StaleResultWarning` for the grid, or kept with ``keep_stale=True`` (default:
    ``$FEDPL_KEEP_STALE``).
    """
    from .grid import check_args, check_unique, run_grid

    backend = check_args(backend, workers, retries)
    seeds = list(seeds)
    check_unique(methods, seeds)  # a repeated seed or method is no independent run
    jobs = Study(base, methods, seeds, settings).jobs()
    warn_single_label_twins(jobs)
    results = run_grid([cfg for _, _, cfg in jobs], results_dir, backend, workers, ray_address, retries, progress,
                       keep_stale=keep_stale)
    rows, hist = [], {}
    for (sname, label, cfg), res in zip(jobs, results):
        rows += result_rows(res, setting=sname, label=label)
        if histories:
            hist[(sname, label, cfg.seed)] = res.history
    df = pd.DataFrame(rows)
    if histories:
        df.attrs["histories"] = hist
    return df


__all__ = ["ExperimentConfig", "Study", "SingleLabelWarning", "warn_single_label_twins", "RunResult", "run", "run_many", "result_rows", "load_data",
           "build_partition", "build_simulation", "atomic_write_json", "finite_or_none", "ConfigError", "StaleResultWarning"]
