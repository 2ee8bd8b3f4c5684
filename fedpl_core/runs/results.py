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

from ..fileio import atomic_write_text
from ..metrics import per_class_table


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
    ``code`` a mapping of module names to hashes; its ``numeric_platform``
    (:func:`fedpl_core.provenance.numeric_platform`) a mapping of names to such values."""
    if not isinstance(p, dict):
        raise ResultFileError(f"provenance is a {type(p).__name__}, not a mapping")
    for k, v in p.items():
        if k == "code":
            if not (isinstance(v, dict) and all(isinstance(h, str) for h in v.values())):
                raise ResultFileError("provenance.code is not a mapping of module names to hashes")
        elif k == "numeric_platform":
            if not (isinstance(v, dict) and all(x is None or isinstance(x, (str, int, float, bool))
                                                for x in v.values())):
                raise ResultFileError("provenance.numeric_platform is not a mapping of names to values")
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


__all__ = ["RunResult", "METRIC_KEYS", "finite_or_none", "atomic_write_json", "ResultFileError", "parse_result",
           "read_result", "StaleResultWarning", "stale_message"]
