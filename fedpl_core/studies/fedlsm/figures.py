"""Notebook 02's figures: both tasks' curves round by round (:func:`plot_task_curves`) and the
pseudo-labels and FedLSM's uncertainty split per round (:func:`plot_diagnostics`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...report.names import display_name
from .tables import diagnostic_curves

#: The methods whose pseudo-labels and uncertainty split notebook 02 follows round by round.
DIAGNOSED = tuple(display_name(k) for k in ("fedlsm", "fedavg_fixmatch_star", "fssl_star"))


def plot_task_curves(
    results: dict[str, pd.DataFrame], metric: str = "auroc_mean", title: str = "{task}: {metric} per round"
):
    """Per-round curves of both tasks side by side (``results``: ``{task: run_many frame with
    histories}``), one panel per task, one legend (the notebook's ``02_curves``)."""
    import matplotlib.pyplot as plt

    from ...nn.metrics import metric_name
    from ...report.plotting import plot_curves
    from ...report.tables import curve_frame

    fig, axes = plt.subplots(1, len(results), figsize=(7 * len(results), 4.2), squeeze=False)
    for ax, (task, res) in zip(axes[0], results.items()):
        seeds = res["seed"].nunique() if "seed" in res else 0
        plot_curves(
            curve_frame(res, metric),
            metric,
            ax=ax,
            title=title.format(task=task, metric=metric_name(metric)) + (f" ({seeds} seeds)" if seeds else ""),
        )
    return fig


def plot_diagnostics(res: pd.DataFrame, task: str, labels: Sequence[str] = DIAGNOSED):
    """The pseudo-labels and FedLSM's uncertainty split per round (:func:`diagnostic_curves`
    of ``labels``): one panel per recorded quantity that changes over the rounds (a constant
    one is listed under the figure instead), shares and accuracies on [0, 1], one colour and
    marker per method (the notebook's ``02_diagnostics_task1/2``)."""
    from ...report.plotting import plot_metric_panels

    cv = diagnostic_curves(res, labels)
    seeds = cv["seed"].nunique() if len(cv) else 0
    return plot_metric_panels(
        cv,
        sorted(cv["metric"].unique()),
        title=f"{task}: pseudo-labels and FedLSM's uncertainty split, mean ± sd over {seeds} seed(s)",
    )
