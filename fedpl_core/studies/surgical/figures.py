"""Notebook 03's figures: the ablations per iteration (:func:`plot_ablation`), the shared and
unique classes of the non-IID experiment (:func:`plot_shared_unique`) and FL + SA's lead
round by round (:func:`plot_gap_by_round`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .class_scores import long_form
from .tables import ablation_summary


def plot_ablation(df: pd.DataFrame, xlabel: str, which: str = "best", title: str = ""):
    """Mean AUROC per iteration (x: the number of clients or of shared classes) and method,
    one panel per test set, the methods coloured by their classes (``df``'s ``method``
    column); the Oracle (one run, the same at every x: it trains on the whole pool) dashed;
    whole-number x ticks; one legend for the figure."""
    import matplotlib.pyplot as plt

    from ...report.plotting import MARKERS, figure_legend, method_palette

    methods = dict(zip(df["label"], df["method"])) if "method" in df else {}
    s = ablation_summary(df, which)
    cols = list(dict.fromkeys(s["column"]))
    labels = [lab for lab in dict.fromkeys(s["label"]) if lab != "Oracle"]
    colors = method_palette(labels, methods)
    fig, axes = plt.subplots(1, len(cols), figsize=(5.2 * len(cols), 3.8), squeeze=False, sharey=True)
    for ax, c in zip(axes[0], cols):
        sc = s[(s["column"] == c) & (s["label"] != "Oracle")].astype({"setting": float})
        for i, lab in enumerate(labels):
            g = sc[sc["label"] == lab].groupby("setting")["auroc"].mean().sort_index()
            ax.plot(g.index, g.values, marker=MARKERS[i % len(MARKERS)], color=colors[lab], label=lab)
        orc = s[(s["column"] == c) & (s["label"] == "Oracle")]["auroc"]
        if len(orc):
            ax.axhline(float(orc.mean()), color="k", ls="--", lw=1, label="Oracle (all labels, one run)")
        ax.set_xlabel(xlabel)
        ax.set_title(c)
        ax.set_xticks(sorted(sc["setting"].unique()))
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("mean AUROC")
    fig.suptitle(title or f"Ablation ({which} model)")
    figure_legend(fig)
    return fig


def plot_shared_unique(df: pd.DataFrame, which: str = "best", labels: Sequence[str] | None = None):
    """Class-heterogeneous experiment: mean AUROC on the shared and the unique classes of each
    source's test set, one panel per source, bars from 0 (chance dotted at 0.5), one legend."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...report.plotting import figure_legend

    cols = ["NIH: shared", "NIH: unique", "CheXpert: shared", "CheXpert: unique"]
    d = long_form(df[df["which"] == which])
    d = d[d["column"].isin(cols)].dropna(subset=["auroc"])
    if labels is not None:
        d = d[d["label"].isin(labels)]
    d = d.assign(source=d["column"].str.split(":").str[0], classes=d["column"].str.split(": ").str[1])
    order = list(dict.fromkeys(d["label"]))
    sources = list(dict.fromkeys(d["source"]))
    fig, axes = plt.subplots(1, len(sources), figsize=(5.4 * len(sources), 4.2), sharey=True, squeeze=False)
    for ax, src in zip(axes[0], sources):
        sns.barplot(
            d[d["source"] == src],
            x="label",
            y="auroc",
            hue="classes",
            hue_order=["shared", "unique"],
            order=order,
            errorbar="sd",
            ax=ax,
            palette=["#9ecae1", "#3182bd"],
            err_kws={"linewidth": 1},
        )
        ax.set_ylim(0.0, 1.0)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_title(f"{src} test set")
        ax.set_xlabel("")
        ax.tick_params(axis="x", rotation=60)
        plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    axes[0, 0].set_ylabel("class AUROC (mean ± SD over classes)")
    for ax in axes[0, 1:]:
        ax.set_ylabel("")
    fig.suptitle(f"Class-heterogeneous non-IID: shared vs unique classes ({which} model)")
    figure_legend(fig, title="classes")
    return fig


def plot_gap_by_round(gaps: pd.DataFrame, a: str = "FL + SA", b: str = "FL + PL"):
    """``a`` minus ``b`` round by round (:func:`gap_by_round`'s rows with a ``strategy``
    column: one panel per BatchNorm strategy), one line per test column, the unique classes
    solid and the shared ones dotted, 0 marked, whole-number rounds, one legend (the
    notebook's ``03_unique_gap_by_round``)."""
    import matplotlib.pyplot as plt

    from ...report.plotting import figure_legend, integer_ticks

    groups = list(gaps.groupby("strategy", sort=False)) if "strategy" in gaps else [("", gaps)]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.4), sharey=True, squeeze=False)
    columns = list(dict.fromkeys(gaps["column"]))
    colors = dict(zip(columns, ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b"]))
    for ax, (strategy, g) in zip(axes[0], groups):
        for col in columns:
            gc = g[g["column"] == col].sort_values("round")
            ax.plot(
                gc["round"],
                gc["gap"],
                marker="o",
                ms=3,
                ls="-" if "unique" in col else ":",
                color=colors[col],
                label=col,
            )
        ax.axhline(0, color="black", lw=0.5)
        ax.set_title(f"{a} - {b}" + (f" ({strategy})" if strategy else ""))
        ax.set_xlabel("round")
        integer_ticks(ax.xaxis)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("AUROC points (mean over classes)")
    figure_legend(fig, title="test classes")
    return fig
