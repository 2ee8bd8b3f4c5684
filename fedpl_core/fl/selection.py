"""Model selection: which evaluated round is "best", and early stopping."""

from __future__ import annotations

from typing import Any

#: The summary metrics an evaluation records, by task (:mod:`fedpl_core.nn.metrics`).
TASK_METRICS = {
    "multilabel": ("auroc_mean", "map", "bacc", "f1", "precision", "recall"),
    "multiclass": ("auroc_mean", "accuracy", "bacc", "f1", "precision", "recall"),
}


def recorded_keys(eval_sets: dict[str, str], val_split: bool) -> list[str]:
    """The selection keys a run records: ``train_loss``, ``val_loss``, and each metric of
    each evaluation set (``eval_sets``: ``{"": test task, "<name>": task}``; the test set's
    metrics have no prefix, an extra set's are ``<name>/<metric>``).  ``val_loss`` is
    listed without a validation split too: it is the default key, and selects nothing
    there (no best round)."""
    keys = ["val_loss", "train_loss"]
    for name, task in eval_sets.items():
        keys += [f"{name}/{m}" if name else m for m in TASK_METRICS.get(task, ())]
    return keys


def check_selection_key(key: str | None, eval_sets: dict[str, str], val_split: bool) -> None:
    """A ``ValueError`` naming the valid keys when ``key`` can never be recorded by this
    run (an unknown evaluation set, ``accuracy`` on multi-label data, ``map`` on
    single-label data), instead of a run with no best round."""
    if key is None:
        return
    keys = recorded_keys(eval_sets, val_split)
    if key not in keys:
        from ..base.validation import ConfigError

        raise ConfigError(
            f"selection key {key!r} is never recorded by this run; use one of {', '.join(keys)} (or None)"
        )


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
        b = None if self.best is None else self.best[self.key]  # type: ignore[index]  # key is set: v is not None
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
