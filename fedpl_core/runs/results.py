"""A run's result: :class:`RunResult`, its ``final`` record, and its JSON file, written
atomically (:func:`atomic_write_json`); read back checked against one schema by
:mod:`fedpl_core.runs.schema`.  :class:`RunResult`, :func:`final_record` and
:func:`finite_or_none` are part of every run's code fingerprint; the schema, which never
changes a number, is not.
"""

from __future__ import annotations

import json
import math
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


#: Keys of a record that the training part of a round writes, every round; any other key but
#: ``log/<name>`` and ``pl/<share>`` is written by an evaluation.
TRAINING_KEYS = ("round", "train_loss", "train_time")
#: A record is evaluated (it can be ``final``) when it holds one of these.
EVALUATED_KEYS = ("auroc_mean", "accuracy", "val_loss")


def final_record(history: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's ``final`` record: its last evaluated round (:data:`EVALUATED_KEYS`), else
    its last round."""
    evaluated = [h for h in history if any(k in h for k in EVALUATED_KEYS)]
    return evaluated[-1] if evaluated else history[-1]


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


__all__ = [
    "RunResult",
    "METRIC_KEYS",
    "TRAINING_KEYS",
    "EVALUATED_KEYS",
    "final_record",
    "finite_or_none",
    "atomic_write_json",
    "StaleResultWarning",
    "stale_message",
]
