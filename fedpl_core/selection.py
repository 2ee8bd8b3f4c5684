"""Model selection: which evaluated round is "best", and early stopping."""
from __future__ import annotations

from typing import Any


class BestRound:
    """Tracks the record with the best ``key`` (larger is better when ``maximise``) and
    the number of evaluations since it improved (for ``patience``).  Records without
    ``key`` (rounds that were not evaluated) are ignored."""

    def __init__(self, key: str | None, maximise: bool = True, patience: int | None = None):
        self.key, self.maximise, self.patience = key, maximise, patience
        self.best: dict[str, Any] | None = None
        self.since_best = 0

    def update(self, record: dict[str, Any]) -> bool:
        """Consider ``record``; True when it is the new best."""
        v = record.get(self.key) if self.key else None
        if v is None:
            return False
        b = None if self.best is None else self.best[self.key]
        if b is None or (v > b if self.maximise else v < b):
            self.best, self.since_best = dict(record), 0
            return True
        self.since_best += 1
        return False

    @property
    def should_stop(self) -> bool:
        return self.patience is not None and self.since_best >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "since_best": self.since_best}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.best, self.since_best = d["best"], d["since_best"]
