"""Grids of runs: :class:`Study` (settings x methods x seeds on one base config),
:func:`run_many` (a study run on a backend of :mod:`fedpl_core.runs.grid`, as a tidy
DataFrame), :func:`result_rows` (a result's tidy rows) and the warning about two methods
that are one on a single-label task.  The top layer of :mod:`fedpl_core.runs`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..base.validation import cap_workers
from ..methods import get_method
from ..methods.baselines import Centralized, FedAvgPL, FedBN, FedProx
from ..methods.fedavg import FedAvg
from .build import load_data
from .experiment_config import ExperimentConfig
from .grid import check_args, check_unique, run_grid
from .results import METRIC_KEYS, RunResult


def data_label(config: Mapping[str, Any] | ExperimentConfig) -> str:
    """The data a run trained on, as a report names it: ``"built-in"`` for the data the package
    generates (no ``data_root``), else the real data set's name as its publisher gives it
    (``"ham10000"`` -> "HAM10000"; a source the studies register, by its key).  ``config``: a
    run's config, or its dict as a result holds it.

    >>> data_label({"dataset": "synthetic-cxr"}), data_label({"dataset": "ham10000", "data_root": "d"})
    ('built-in', 'HAM10000')
    """
    get = config.get if isinstance(config, Mapping) else lambda key: getattr(config, key, None)
    if not get("data_root"):
        return "built-in"
    from ..data.catalog import DATASETS

    name = str(get("dataset"))
    return DATASETS[name].description.split(" (")[0] if name in DATASETS else name


def result_rows(res: RunResult, **labels: Any) -> list[dict[str, Any]]:
    """Tidy rows: one per ``which`` (``final``: the last evaluated round; ``best``: the
    round picked by ``engine.selection``, absent when nothing was selected) with the
    summary metrics, ``auroc:<class>`` and ``<eval set>/<metric>`` columns, and ``data``, the
    data the run trained on (:func:`data_label`)."""
    rows = []
    for which in ("final", "best"):
        rec = getattr(res, which) or {}
        if not rec:
            continue
        row = {
            "method": res.config["method"],
            "seed": res.config["seed"],
            "which": which,
            "round": rec.get("round"),
            "data": data_label(res.config),
            **labels,
        }
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
                prefix = k[: -len("auroc_per_class")]
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
            warnings.warn(
                f"{' and '.join(pair)} are the same method on this single-label task ({sname}): a sample "
                "whose class the client does not identify has no label, and both losses leave it out",
                SingleLabelWarning,
                stacklevel=3,
            )
    return pairs


def run_many(
    base: ExperimentConfig,
    methods: Sequence[str | tuple[str, dict]],
    seeds: Iterable[int] = (0,),
    results_dir: str | Path | None = None,
    settings: dict[str, dict[str, Any]] | None = None,
    progress: bool = True,
    histories: bool = False,
    workers: int = 1,
    backend: str | None = None,
    ray_address: str | None = None,
    retries: int = 1,
    keep_stale: bool | None = None,
    cost: Callable[[ExperimentConfig], float] | None = None,
) -> pd.DataFrame:
    """Grid over settings x methods x seeds on identical data and partitions.

    ``methods`` items are names or ``(label, overrides)`` pairs, e.g.
    ``("fedprox_mu0.01", {"method": "fedprox", "method_kwargs": {"mu": 0.01}})``;
    ``settings`` maps a setting label to config overrides.  Returns one row per run and
    ``which`` (final / best, see :func:`result_rows`).  With ``histories`` the per-round
    records are kept in ``df.attrs["histories"][(setting, label, seed)]``.  Runs that
    another process holds (a lock in ``results_dir``) are done last, waiting for it.

    ``backend`` (:mod:`fedpl_core.runs.grid`) runs the runs not cached yet: ``"serial"`` in
    this process, ``"process"`` in ``workers`` local processes (forked on Linux without CUDA, else
    spawned; ``cpu_count // workers`` torch threads each; kept alive for the next grid),
    ``"threads"`` in ``workers`` threads of this process (a run on a GPU on a CUDA stream of its
    own), ``"ray"`` as Ray tasks (a cluster at ``ray_address``, else a local Ray with
    ``workers`` CPUs; ``pip install -e .[ray]``).  Default: ``"process"`` when
    ``workers > 1``, else ``"serial"``.  The numbers are those of a serial run with the
    same threads.  A run that raises is retried ``retries`` times; then one
    :class:`fedpl_core.runs.grid.GridError` names every failed run, after the others are done
    and written.  Data sources registered in ``__main__`` (a notebook cell) are not seen
    by spawned workers (macOS, Windows, CUDA): register them in an importable module.
    Cached results of other code (:mod:`fedpl_core.runs.provenance`) are done again with one
    :class:`~fedpl_core.runs.results.StaleResultWarning` for the grid, or kept with ``keep_stale=True`` (default:
    ``$FEDPL_KEEP_STALE``).  ``cost``: a config's expected run time (any unit); the runs still to
    do then start longest first, so that with several workers a long run does not start last
    and run alone (:func:`~fedpl_core.runs.grid.run_grid`); the rows keep the grid's order.
    """
    backend = check_args(backend, workers, retries, ray_address, keep_stale, results_dir)
    if not (backend == "ray" and (ray_address or os.environ.get("RAY_ADDRESS"))):  # a cluster has its own CPUs
        workers = cap_workers(workers)
    seeds = list(seeds)
    check_unique(methods, seeds)  # a repeated seed or method is no independent run
    jobs = Study(base, methods, seeds, settings).jobs()
    warn_single_label_twins(jobs)
    results = run_grid(
        [cfg for _, _, cfg in jobs],
        results_dir,
        backend,
        workers,
        ray_address,
        retries,
        progress,
        keep_stale=keep_stale,
        cost=cost,
    )
    rows, hist = [], {}
    for (sname, label, cfg), res in zip(jobs, results):
        rows += result_rows(res, setting=sname, label=label)
        if histories:
            hist[(sname, label, cfg.seed)] = res.history
    df = pd.DataFrame(rows)
    if histories:
        df.attrs["histories"] = Histories(hist)
    return df


class Histories(Mapping[tuple, list[dict]]):
    """The per-round records of a grid's runs, ``(setting, label, seed) -> [record, ...]``, as
    :func:`run_many` keeps them in ``DataFrame.attrs["histories"]``: a read-only mapping that
    every frame derived from the grid's shares.

    pandas deep-copies ``attrs`` into each frame it derives from another (a column, a
    selection, a group), so a plain dict of histories was copied at every step of a table's
    loop: notebook 03's best-against-last table of ablation (a) took 128.5 s in the paper
    profile (180 runs of up to 150 rounds) and 8.7 s in the cpu profile, 0.02 s with the
    histories shared (``python benchmarks/histories_attrs.py``).  A deep copy of a
    ``Histories`` is the object itself; do not change its records.

    >>> h = Histories({("", "FedAvg", 0): [{"round": 1, "auroc_mean": 0.7}]})
    >>> import copy; copy.deepcopy(h) is h, h[("", "FedAvg", 0)][0]["auroc_mean"], len(h)
    (True, 0.7, 1)
    """

    def __init__(self, runs: Mapping[tuple, list[dict]]):
        self._runs = dict(runs)

    def __getitem__(self, key: tuple) -> list[dict]:
        return self._runs[key]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._runs)

    def __len__(self) -> int:
        return len(self._runs)

    def __deepcopy__(self, memo: dict) -> Histories:
        return self

    def __repr__(self) -> str:
        return f"Histories({len(self)} runs)"


__all__ = [
    "Study",
    "run_many",
    "data_label",
    "Histories",
    "result_rows",
    "SingleLabelWarning",
    "warn_single_label_twins",
]
