"""Figures: per-round curves, per-class AUROC bars, label-mask heatmaps (matplotlib/seaborn).

Importing this module leaves the matplotlib backend alone (``%matplotlib widget`` keeps
working); without a display matplotlib picks a non-interactive backend by itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

FIGURES = Path("figures")


def history_frame(histories: dict[str, list[dict]], metric: str = "auroc_mean") -> pd.DataFrame:
    rows = [{"label": lab, "round": h["round"], metric: h[metric]}
            for lab, hist in histories.items() for h in hist if h.get(metric) is not None]
    return pd.DataFrame(rows)


def plot_curves(histories: dict[str, list[dict]], metric: str = "auroc_mean", ax=None, title: str | None = None):
    """Metric per round, one line per method (``histories``: label -> engine history)."""
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    df = history_frame(histories, metric)
    sns.lineplot(df, x="round", y=metric, hue="label", marker="o", ax=ax)
    ax.set_title(title or metric)
    ax.grid(alpha=0.3)
    return ax.figure


def plot_per_class(df: pd.DataFrame, x: str = "class", y: str = "auroc", hue: str = "label", ax=None,
                   title: str | None = None, order: Sequence[str] | None = None):
    """Per-class bars; ``df`` long form (one row per class x method [x seed])."""
    ax = ax or plt.subplots(figsize=(max(6, 0.6 * df[x].nunique() + 2), 4))[1]
    sns.barplot(df, x=x, y=y, hue=hue, order=order, ax=ax, errorbar="sd")
    ax.set_ylim(max(0.0, df[y].min() - 0.1), 1.0)
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.tick_params(axis="x", rotation=60)
    ax.set_title(title or f"per-class {y}")
    return ax.figure


def per_class_long(df: pd.DataFrame, which: str = "final") -> pd.DataFrame:
    """From ``run_many``'s wide rows to long rows (label, seed, class, auroc)."""
    d = df[df["which"] == which] if "which" in df else df
    cols = [c for c in d.columns if c.startswith("auroc:")]
    long = d.melt(id_vars=[c for c in ("setting", "label", "seed") if c in d], value_vars=cols,
                  var_name="class", value_name="auroc")
    long["class"] = long["class"].str.replace("auroc:", "", regex=False)
    return long.dropna(subset=["auroc"])


def plot_mask_matrix(mask: np.ndarray, class_names: Sequence[str], client_names: Sequence[str] | None = None,
                     ax=None, title: str = "annotated classes"):
    """Client x class annotation matrix (1 = the client labels the class)."""
    ax = ax or plt.subplots(figsize=(0.45 * len(class_names) + 2, 0.4 * len(mask) + 1.5))[1]
    sns.heatmap(pd.DataFrame(mask.astype(int), index=client_names, columns=list(class_names)), cmap="Blues",
                cbar=False, linewidths=0.5, linecolor="white", ax=ax, vmin=0, vmax=1)
    ax.set_title(title)
    return ax.figure


def savefig(fig, name: str, folder: str | Path = FIGURES, dpi: int = 150) -> Path:
    """Save ``fig`` as ``folder/name`` (PNG unless the name has a suffix)."""
    p = Path(folder) / (name if Path(name).suffix else f"{name}.png")
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=dpi, bbox_inches="tight")
    return p
