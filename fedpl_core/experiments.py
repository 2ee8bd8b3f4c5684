"""Experiments: one config -> data, partition, model, method, engine -> a saved result.

``run(config)`` returns a :class:`RunResult`; ``run_many(base, methods, seeds)`` runs a
grid and returns a tidy DataFrame, skipping runs whose result file already exists
(resume of a grid) and resuming an interrupted run from its checkpoint.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from . import partitions as P
from .data.base import DataError, ImageDataset
from .engine import EngineConfig, Simulation
from .methods import get_method
from .models import build_model

SYNTHETIC = ("synthetic-cxr", "synthetic-skin")
PARTITIONS = ("iid", "dirichlet", "missing_classes", "label_set_mismatch", "explicit", "by_source",
              "shared_classes_split")


@dataclass
class ExperimentConfig:
    """Everything that defines one run.  ``seed`` fixes model initialisation, client
    sampling, batching and (unless ``partition_kwargs`` names its own seed) the partition;
    ``data_seed`` fixes the synthetic data, so every method and seed sees the same images."""

    name: str = ""
    # data
    dataset: str = "synthetic-cxr"
    data_root: str | None = None
    classes: list[str] | None = None
    image_size: int = 32
    n_train: int = 8000
    n_test: int = 2000
    data_seed: int = 0
    dataset_kwargs: dict[str, Any] = field(default_factory=dict)
    # partition
    partition: str = "missing_classes"
    num_clients: int = 8
    partition_kwargs: dict[str, Any] = field(default_factory=dict)
    # model and method
    model: str = "cnn"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    method: str = "fedavg"
    method_kwargs: dict[str, Any] = field(default_factory=dict)
    engine: EngineConfig = field(default_factory=EngineConfig)
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.engine, dict):
            self.engine = EngineConfig(**self.engine)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExperimentConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        eng = _ENGINE_ONLY
        top, engine = {}, dict(d.get("engine", {}))
        for k, v in d.items():
            if k == "engine":
                continue
            if k in names:
                top[k] = v
            elif k in eng:
                engine[k] = v
            else:
                raise ValueError(f"unknown config key {k!r}")
        unknown = set(engine) - eng
        if unknown:
            raise ValueError(f"unknown engine config key(s) {sorted(unknown)}")
        return cls(**top, engine=EngineConfig(**engine))

    @classmethod
    def from_file(cls, path: str | Path) -> "ExperimentConfig":
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"config file not found: {p}")
        text = p.read_text()
        if p.suffix in (".yaml", ".yml"):
            import yaml
            d = yaml.safe_load(text)
        else:
            d = json.loads(text)
        return cls.from_dict(d or {})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> "ExperimentConfig":
        eng = {k: changes.pop(k) for k in list(changes) if k in _ENGINE_ONLY}
        new = dataclasses.replace(self, **changes)
        new.engine = dataclasses.replace(self.engine, **eng) if eng else dataclasses.replace(self.engine)
        return new

    def run_id(self) -> str:
        d = self.to_dict()
        d["engine"].pop("progress", None)
        d["engine"].pop("device", None)
        h = hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:10]
        stem = self.name or f"{self.method}"
        return f"{stem}-s{self.seed}-{h}"


# engine fields settable at the top level of a config ("seed" is the experiment's own)
_ENGINE_ONLY = {f.name for f in dataclasses.fields(EngineConfig)} - {"seed"}


# --------------------------------------------------------------------------- data
def _key(cfg: ExperimentConfig) -> str:
    return json.dumps([cfg.dataset, cfg.data_root, cfg.classes, cfg.image_size, cfg.n_train, cfg.n_test,
                       cfg.data_seed, cfg.dataset_kwargs], sort_keys=True, default=str)


@lru_cache(maxsize=4)
def _load_data(key: str) -> tuple[ImageDataset, ImageDataset, dict[str, ImageDataset]]:
    dataset, root, classes, size, n_train, n_test, seed, kw = json.loads(key)
    kw = dict(kw)
    if dataset in SYNTHETIC:
        from .data import synthetic as S

        make = S.make_cxr if dataset == "synthetic-cxr" else S.make_skin
        external = kw.pop("external_domain", None)
        train_domains = kw.pop("train_domains", None)
        ckw = {"classes": classes} if dataset == "synthetic-cxr" else {}
        ckw.update(kw)
        tr_kw = dict(ckw)
        if train_domains is not None:
            tr_kw["domains"] = np.resize(np.asarray(train_domains), n_train)
        train = make(n_train, image_size=size, seed=seed, **tr_kw)
        test = make(n_test, image_size=size, seed=seed + 10_000, **ckw)
        extra = {}
        if external is not None:
            ekw = dict(ckw, domain=external)
            extra["external"] = make(n_test, image_size=size, seed=seed + 20_000, **ekw)
        return train, test, extra
    from .data import registry

    train, test = registry.load_split(dataset, root, classes=classes, image_size=size, seed=seed, **kw)
    return train, test, {}


def load_data(cfg: ExperimentConfig) -> tuple[ImageDataset, ImageDataset, dict[str, ImageDataset]]:
    """Training set, test set and extra evaluation sets (cached in memory per process)."""
    return _load_data(_key(cfg))


def build_partition(cfg: ExperimentConfig, train: ImageDataset) -> P.Partition:
    if cfg.partition not in PARTITIONS:
        raise ValueError(f"unknown partition {cfg.partition!r}; choose one of {PARTITIONS}")
    kw = dict(cfg.partition_kwargs)
    kw.setdefault("seed", cfg.seed)
    fn = getattr(P, cfg.partition)
    if cfg.partition in ("explicit", "by_source"):
        return fn(train, **kw)
    if cfg.partition == "missing_classes":
        # default: the fewest classes per client that still covers every class
        # (one class per client when K >= C)
        kw.setdefault("missing", train.num_classes - -(-train.num_classes // cfg.num_clients))
    return fn(train, num_clients=cfg.num_clients, **kw)


# --------------------------------------------------------------------------- run
@dataclass
class RunResult:
    config: dict[str, Any]
    history: list[dict[str, Any]]
    final: dict[str, Any]
    best: dict[str, Any]
    class_names: list[str]
    timings: dict[str, float]
    run_id: str = ""

    def per_class(self, which: str = "final") -> pd.DataFrame:
        from .metrics import per_class_table
        return per_class_table(getattr(self, which), self.class_names)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RunResult":
        return cls(**d)


METRIC_KEYS = ("auroc_mean", "map", "bacc", "f1", "precision", "recall", "accuracy", "n_defined")


def _summary(record: dict[str, Any] | None) -> dict[str, Any]:
    if not record:
        return {}
    return {k: v for k, v in record.items() if k != "class_names"}


def atomic_write_json(obj: Any, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_json_default, allow_nan=False))
    os.replace(tmp, path)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def build_simulation(cfg: ExperimentConfig, checkpoint_path: str | Path | None = None) -> Simulation:
    method = get_method(cfg.method, **cfg.method_kwargs)  # fail fast on a bad method
    train, test, extra = load_data(cfg)
    partition = build_partition(cfg, train)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, train.num_classes, train.channels, train.image_size, **cfg.model_kwargs)
    ecfg = dataclasses.replace(cfg.engine, seed=cfg.seed)
    return Simulation(method, model, train, partition, test, ecfg, extra_eval=extra, checkpoint_path=checkpoint_path)


def run(cfg: ExperimentConfig, results_dir: str | Path | None = None, resume: bool = True) -> RunResult:
    """Run one experiment; with ``results_dir`` the result JSON is written atomically
    (``<run_id>.json``), a finished run is loaded instead of re-run, and an interrupted
    run resumes from ``<run_id>.ckpt`` (checkpoint every ``engine.checkpoint_every``)."""
    rid = cfg.run_id()
    out = ckpt = None
    if results_dir is not None:
        out = Path(results_dir) / f"{rid}.json"
        ckpt = Path(results_dir) / f"{rid}.ckpt"
        if resume and out.is_file():
            return RunResult.from_json(json.loads(out.read_text()))
    t0 = time.perf_counter()
    sim = build_simulation(cfg, checkpoint_path=ckpt)
    t_setup = time.perf_counter() - t0
    if ckpt is not None and resume and ckpt.is_file():
        sim.load_checkpoint(ckpt)
    sim.run()
    evaluated = [h for h in sim.history if any(k in h for k in ("auroc_mean", "accuracy"))]
    final = evaluated[-1] if evaluated else sim.history[-1]
    res = RunResult(
        config=cfg.to_dict(), history=sim.history, final=_summary(final), best=_summary(sim.best),
        class_names=list(sim.info.class_names),
        timings={"setup_s": t_setup, "total_s": time.perf_counter() - t0,
                 "train_s": float(sum(h.get("train_time", 0.0) for h in sim.history)),
                 "eval_s": float(sum(h.get("eval_time", 0.0) for h in sim.history))},
        run_id=rid,
    )
    if out is not None:
        atomic_write_json(res.to_json(), out)
        if ckpt is not None and ckpt.exists():
            ckpt.unlink()
    return res


def result_rows(res: RunResult, **labels: Any) -> list[dict[str, Any]]:
    """Tidy rows: one per (which in final/best, metric)."""
    rows = []
    for which in ("final", "best"):
        rec = getattr(res, which) or {}
        row = {"method": res.config["method"], "seed": res.config["seed"], "which": which,
               "round": rec.get("round"), **labels}
        for k in METRIC_KEYS:
            if k in rec:
                row[k] = rec[k]
        for k, v in rec.items():
            if "/" in k and not isinstance(v, list):
                row[k] = v
        for c, v in zip(res.class_names, rec.get("auroc_per_class") or []):
            row[f"auroc:{c}"] = v
        rows.append(row)
    return rows


def run_many(base: ExperimentConfig, methods: Sequence[str | tuple[str, dict]], seeds: Iterable[int] = (0,),
             results_dir: str | Path | None = None, settings: dict[str, dict[str, Any]] | None = None,
             progress: bool = True) -> pd.DataFrame:
    """Grid over settings x methods x seeds on identical data and partitions.

    ``methods`` items are names or ``(label, overrides)`` pairs, e.g.
    ``("fedprox_mu0.01", {"method": "fedprox", "method_kwargs": {"mu": 0.01}})``;
    ``settings`` maps a setting label to config overrides.  Returns one row per run and
    ``which`` (final / best) with the summary metrics and per-class AUROC columns.
    """
    settings = settings or {"default": {}}
    jobs = []
    for sname, sover in settings.items():
        for m in methods:
            label, over = (m, {"method": m}) if isinstance(m, str) else m
            for s in seeds:
                jobs.append((sname, label, base.replace(**{**sover, **over, "seed": s})))
    rows = []
    from tqdm.auto import tqdm

    for sname, label, cfg in tqdm(jobs, desc="runs", disable=not progress):
        cfg.name = cfg.name or f"{sname}-{label}"
        res = run(cfg, results_dir)
        for r in result_rows(res, setting=sname, label=label):
            rows.append(r)
    return pd.DataFrame(rows)
