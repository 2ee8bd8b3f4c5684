"""A run's result: :class:`RunResult`, and its JSON file, written atomically
(:func:`atomic_write_json`) and read back checked (:func:`read_result`,
:func:`parse_result`): the keys, the types, no NaN or infinity, the run id, the
provenance.  A file that fails a check raises :class:`ResultFileError`; the cache
(:mod:`fedpl_core.runs.runner`) then warns and does the run again.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..base.fileio import atomic_write_text
from ..nn.metrics import per_class_table


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
        return per_class_table(getattr(self, which), self.class_names)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunResult:
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
    beside it, then :func:`os.replace` (:func:`fedpl_core.base.fileio.atomic_write`; a link
    planted at ``path`` or at a temporary name is replaced, never written through)."""
    atomic_write_text(path, json.dumps(finite_or_none(obj), indent=1, allow_nan=False))


_RECORD_NUMBERS = set(METRIC_KEYS) | {
    "round",
    "val_loss",
    "train_loss",
    "threshold",
    "n_classes",
    "train_time",
    "eval_time",
}
#: Record keys (the part after the last ``/``) whose values are shares: in [0, 1] (the
#: metrics, the threshold, pseudo-label quality); per-class lists of these metrics too.
UNIT_KEYS = {
    "auroc_mean",
    "map",
    "bacc",
    "f1",
    "precision",
    "recall",
    "accuracy",
    "threshold",
    "coverage",
    "pos_precision",
    "pos_recall",
}
UNIT_PER_CLASS = {"auroc", "ap", "bacc", "f1", "precision", "recall", "accuracy"}
#: Record keys that count or time something: >= 0.
NONNEGATIVE_KEYS = {"n_defined", "n_classes", "train_time", "eval_time"}
#: A record is evaluated (it can be ``final``) when it holds one of these.
EVALUATED_KEYS = ("auroc_mean", "accuracy", "val_loss")


def final_record(history: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's ``final`` record: its last evaluated round (:data:`EVALUATED_KEYS`), else
    its last round."""
    evaluated = [h for h in history if any(k in h for k in EVALUATED_KEYS)]
    return evaluated[-1] if evaluated else history[-1]


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
    if rec["round"] < 1:
        raise ResultFileError(f"{where}.round is {rec['round']}, not a round (1 or more)")
    for k, v in rec.items():
        base = k.rsplit("/", 1)[-1]  # "<eval set>/<metric>" keys follow the metric's rule
        if base in _RECORD_NUMBERS or base in UNIT_KEYS:
            if not (v is None or _is_number(v)):
                raise ResultFileError(f"{where}.{k} is {v!r}, not a number")
            _check_range(v, base in UNIT_KEYS, base in NONNEGATIVE_KEYS, f"{where}.{k}")
        elif base.endswith("_per_class"):
            if not (isinstance(v, list) and all(x is None or _is_number(x) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of numbers")
            unit = base[: -len("_per_class")] in UNIT_PER_CLASS
            for i, x in enumerate(v):
                _check_range(x, unit, False, f"{where}.{k}[{i}]")
        elif base == "n_positives":
            if not (isinstance(v, list) and all(_is_number(x) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of numbers")
            for i, x in enumerate(v):
                _check_range(x, False, True, f"{where}.{k}[{i}]")
        elif base in ("class_names", "few_positives"):
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of names")


def _check_range(v: Any, unit: bool, nonnegative: bool, where: str) -> None:
    """A share (``unit``) in [0, 1], a count or time (``nonnegative``) >= 0; None passes."""
    if v is None:
        return
    if unit and not 0 <= v <= 1:
        raise ResultFileError(f"{where} is {v!r}, outside [0, 1]")
    if nonnegative and v < 0:
        raise ResultFileError(f"{where} is {v!r}, below 0")


def _reject_constant(name: str) -> Any:
    raise ResultFileError(f"it holds {name}")


def parse_result(text: str, run_id: str | None = None, config: dict[str, Any] | None = None) -> RunResult:
    """A :class:`RunResult` from a results JSON, checked: the keys, the types (config and
    records are mappings, history a list of records, class names strings, metrics numbers),
    no NaN or infinity, the ranges (metrics and shares in [0, 1], counts and times >= 0,
    rounds >= 1), ``final`` the history's last evaluated record (:func:`final_record`),
    ``best`` one of its records; ``run_id`` (the file's name), when given, must be the
    file's own ``run_id``; ``config`` (the run's :meth:`ExperimentConfig.to_dict`), when
    given, must be the file's config in every field that makes the run id
    (:func:`~fedpl_core.runs.experiment_config.run_identity`).  Raises :class:`ResultFileError` (a
    ``ValueError``) naming what is wrong."""
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
    if d["final"] != final_record(d["history"]):
        raise ResultFileError(f"final (round {d['final']['round']}) is not the history's last evaluated record")
    if d["best"] and d["best"] not in d["history"]:
        raise ResultFileError(f"best (round {d['best']['round']}) is not a record of the history")
    rid = d.get("run_id")
    if run_id is not None and rid != run_id:
        raise ResultFileError(
            f"its run_id {rid!r} is not {run_id!r}"
            if rid is not None
            else f"it names no run_id (this run is {run_id!r})"
        )
    if rid is not None and not isinstance(rid, str):
        raise ResultFileError(f"its run_id {rid!r} is not a name")
    if config is not None:
        _check_own_config(cfg, config)
    _check_provenance(d.get("provenance", {}))
    return RunResult.from_json(d)


def _check_own_config(stored: dict[str, Any], config: dict[str, Any]) -> None:
    """The stored config is ``config`` (as a result file holds it: JSON, no NaN) in every
    field that makes the run id; else the fields that differ are named."""
    from .experiment_config import run_identity

    own = run_identity(json.loads(json.dumps(finite_or_none(config), default=str)))
    try:
        theirs = run_identity(stored)
    except (KeyError, TypeError, AttributeError):
        raise ResultFileError("its config is not a run's config") from None
    if theirs == own:
        return
    flat_own, flat_theirs = _flatten(own), _flatten(theirs)
    diff = [k for k in sorted(set(flat_own) | set(flat_theirs)) if flat_own.get(k, _NA) != flat_theirs.get(k, _NA)]
    said = "; ".join(
        f"{k} {_shown(flat_theirs.get(k, _NA))} (this run: {_shown(flat_own.get(k, _NA))})" for k in diff[:3]
    )
    raise ResultFileError(f"its config is another run's: {said}" + (f"; {len(diff) - 3} more" if len(diff) > 3 else ""))


_NA = object()


def _shown(v: Any) -> str:
    return "absent" if v is _NA else json.dumps(v)


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and k == "engine":
            out.update(_flatten(v, f"{k}."))
        else:
            out[prefix + k] = v
    return out


def _is_value(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _check_provenance(p: Any) -> None:
    """``provenance``: a mapping of names to strings, numbers, booleans or null, or to
    mappings of names to those (``numeric_platform``); its ``code`` a mapping of module
    names to hashes."""
    if not isinstance(p, dict):
        raise ResultFileError(f"provenance is a {type(p).__name__}, not a mapping")
    for k, v in p.items():
        if k == "code":
            if not (isinstance(v, dict) and all(isinstance(h, str) for h in v.values())):
                raise ResultFileError("provenance.code is not a mapping of module names to hashes")
        elif isinstance(v, dict):
            if not all(isinstance(n, str) and _is_value(x) for n, x in v.items()):
                raise ResultFileError(f"provenance.{k} is not a mapping of names to values")
        elif not _is_value(v):
            raise ResultFileError(f"provenance.{k} is a {type(v).__name__}, not a value")


class StaleResultWarning(UserWarning):
    """Cached results made by other code than the current one (:mod:`fedpl_core.runs.provenance`)."""


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


def read_result(out: str | Path, config: dict[str, Any] | None = None) -> RunResult:
    """The checked result in the file ``out`` (:func:`parse_result`: its run id must be the
    file's name; with ``config``, the run's ``to_dict()``, its config must be that run's);
    a link is refused, never followed.  Raises ``OSError`` or :class:`ResultFileError`."""
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
    return parse_result(text, run_id=out.stem, config=config)


__all__ = [
    "RunResult",
    "METRIC_KEYS",
    "final_record",
    "finite_or_none",
    "atomic_write_json",
    "ResultFileError",
    "parse_result",
    "read_result",
    "StaleResultWarning",
    "stale_message",
]
