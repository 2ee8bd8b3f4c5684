"""Notebook 04's figure: the tags' quality round by round (:func:`plot_tag_quality`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .profile import Settings
from .tables import TAG_KEYS, tag_curves


def plot_tag_quality(results: dict[str, pd.DataFrame], st: Settings, keys: Sequence[str] = TAG_KEYS):
    """The tags' quality per round (:func:`tag_curves`): one panel per table and score, on
    [0, 1], a line broken at rounds without a value (a method that tags nothing in a round
    has no accuracy there), one legend (the notebook's ``04_tag_quality``)."""
    from ...report.plotting import plot_metric_panels

    cv = tag_curves(results, st, keys)
    seeds = cv["seed"].nunique() if len(cv) else 0
    return plot_metric_panels(
        cv,
        list(dict.fromkeys(cv["metric"])),
        ncols=len(keys),
        title=f"Pseudo-label (tag) quality per round, mean ± sd over {seeds} seed(s)",
    )
