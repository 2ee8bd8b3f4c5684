"""Figures: per-round curves, per-class AUROC bars, label-mask heatmaps (matplotlib/seaborn).

Importing this module leaves the matplotlib backend alone (``%matplotlib widget`` keeps
working); without a display matplotlib picks a non-interactive backend by itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .tables import figures_dir

#: One colour per method concept, the same in every notebook.  Keys are normalised labels
#: (lower case, without spaces, ``_`` and ``-``; a trailing ``" (strategy)"`` is dropped
#: unless the whole label has a key, as FedLSM's "FedAvg (100% labels)", its oracle); the
#: papers' names for one concept share a colour (FedAvg = FedAVG = FL), and so do a
#: method's label and its registry name ("FedProx*" = ``fedprox_star``, "w/o AWPA" =
#: ``fedlsm_no_awpa``).  The papers' own methods and the headline baselines have strong
#: colours; every other registered method has a colour of its own from tab20 / tab20b.
METHOD_COLORS: dict[str, str] = {
    **dict.fromkeys(["oracle", "oraclewbce", "fedavgoracle", "fedavg(100%labels)"], "#222222"),
    **dict.fromkeys(["centralized", "central", "iml", "imlwbce"], "#8c8c8c"),
    **dict.fromkeys(["fedavg", "fl", "fedavgwbce"], "#1f77b4"),
    **dict.fromkeys(["fedavgpl", "fl+pl", "fedpl"], "#ff7f0e"),
    **dict.fromkeys(["fedprox", "fedproxwbce"], "#17becf"),
    **dict.fromkeys(["fedbn", "fedbn+"], "#bcbd22"),
    **dict.fromkeys(["fl+sa", "surgical"], "#2ca02c"),
    **dict.fromkeys(["fedpsl", "fpsl"], "#d62728"),
    **dict.fromkeys(["fedpslw/tdma", "tdma", "fedpsltdma"], "#e377c2"),
    **dict.fromkeys(["fedpslw/tadl", "tadl", "fedpsltadl"], "#9467bd"),
    **dict.fromkeys(["pfl", "local", "individual"], "#8c564b"),
    **dict.fromkeys(["fedlsm"], "#7f3c8d"),
    **dict.fromkeys(["fedmlp"], "#11a579"),
    # FedPSL's baselines (Table II)
    **dict.fromkeys(["fedssp"], "#393b79"),
    **dict.fromkeys(["fedmatch"], "#e7ba52"),
    **dict.fromkeys(["fedmatch+", "fedmatchplus"], "#8ca252"),
    **dict.fromkeys(["fixmatch"], "#98df8a"),
    **dict.fromkeys(["mixuppme"], "#c49c94"),
    # FedLSM's baselines (Tables 1-2; * = with TDMA head aggregation) and ablations (Table 3)
    **dict.fromkeys(["fedavg*", "fedavgstar"], "#6baed6"),
    **dict.fromkeys(["fedprox*", "fedproxstar"], "#9edae5"),
    **dict.fromkeys(["moon"], "#5254a3"),
    **dict.fromkeys(["moon*", "moonstar"], "#9c9ede"),
    **dict.fromkeys(["fedrs"], "#637939"),
    **dict.fromkeys(["fedpu"], "#e7969c"),
    **dict.fromkeys(["fedavgfixmatch*", "fedavgfixmatchstar"], "#ffbb78"),
    **dict.fromkeys(["fssl*", "fsslstar"], "#c5b0d5"),
    **dict.fromkeys(["w/oawpa", "fedlsmnoawpa"], "#a55194"),
    **dict.fromkeys(["w/oude", "fedlsmnoude"], "#de9ed6"),
    **dict.fromkeys(["w/oue", "fedlsmnoue"], "#d6616b"),
    # FedMLP's baselines (Tables 1-2)
    **dict.fromkeys(["rscfed"], "#6b6ecf"),
    **dict.fromkeys(["fedfixmatch"], "#e7cb94"),
    **dict.fromkeys(["fedirm"], "#b5cf6b"),
    **dict.fromkeys(["cbafed"], "#ff9896"),
    **dict.fromkeys(["fedlsr"], "#c7c7c7"),
    **dict.fromkeys(["fednoro"], "#74c476"),
}


def _rgb_distance(a: str, b: str) -> float:
    return float(np.linalg.norm(np.array(matplotlib.colors.to_rgb(a)) - np.array(matplotlib.colors.to_rgb(b))) * 255)


#: Colours for labels without a key above (a notebook's variants such as "TADL, batch 64"):
#: tab20, tab20b and tab20c without those within 30 (RGB distance, 0-255 scale) of a colour
#: above, so such a label is never mistaken for a method that has a colour.
_FALLBACK = [c for c in dict.fromkeys(sns.color_palette("tab20", 20).as_hex() + sns.color_palette("tab20b", 20).as_hex()
                                      + sns.color_palette("tab20c", 20).as_hex())
             if min(_rgb_distance(c, f) for f in set(METHOD_COLORS.values())) > 30]


def _norm(label: str) -> str:
    return str(label).lower().replace(" ", "").replace("_", "").replace("-", "")


def _key(label: str) -> str:
    """The label's key in :data:`METHOD_COLORS`: the whole normalised label if it has a
    colour of its own, else without a trailing ``" (strategy)"``."""
    label = str(label)
    if _norm(label) not in METHOD_COLORS and label.endswith(")") and " (" in label:
        label = label[:label.rindex(" (")]
    return _norm(label)


def method_color(label: str) -> str:
    """The fixed colour of a method label (a label without a key gets a stable fallback colour).

    >>> method_color("FedAVG") == method_color("fedavg") == method_color("FL")
    True
    >>> method_color("FL + SA (FedBN+)") == method_color("FL + SA")
    True
    """
    key = _key(label)
    if key in METHOD_COLORS:
        return METHOD_COLORS[key]
    return _FALLBACK[sum(map(ord, key)) % len(_FALLBACK)]


def method_palette(labels) -> dict[str, str]:
    """``{label: colour}`` for seaborn's ``palette=``: each label's :func:`method_color`,
    except that no two labels of one figure share a colour.  Labels with a concept colour
    claim it first (the first of them where two share a concept); a label whose colour is
    taken gets the first free fallback colour (colours repeat only once those run out).

    >>> pal = method_palette(["FedAvg (100% labels)", "FedAvg*", "FedAvg", "FedProx*", "FSSL*"])
    >>> pal["FedAvg"] == method_color("FedAvg") and pal["FedAvg (100% labels)"] == method_color("Oracle")
    True
    >>> len(set(pal.values()))
    5
    """
    labels = list(dict.fromkeys(labels))
    out: dict[str, str] = {}
    used: set[str] = set()
    for lab in labels:  # concept colours first, in order
        c = METHOD_COLORS.get(_key(lab))
        if c is not None and c not in used:
            out[lab] = c
            used.add(c)
    for lab in labels:
        if lab in out:
            continue
        c = method_color(lab)
        if c in used:
            c = next((x for x in _FALLBACK if x not in used), c)
        out[lab] = c
        used.add(c)
    return {lab: out[lab] for lab in labels}


#: human names of the metrics and per-round diagnostics the figures show
METRIC_LABELS: dict[str, str] = {
    "auroc_mean": "mean AUROC", "map": "mAP", "bacc": "balanced accuracy", "f1": "macro F1",
    "accuracy": "accuracy", "train_loss": "training loss", "val_loss": "validation loss",
    "pl/coverage": "pseudo-labels: share of missing entries tagged", "pl/accuracy": "pseudo-labels: accuracy",
    "pl/pos_precision": "pseudo-labels: positive precision", "pl/pos_recall": "pseudo-labels: positive recall",
}


def metric_label(key: str) -> str:
    """A human name for a metric or a logged diagnostic (``log/uncertainty`` -> "uncertainty").

    >>> metric_label("auroc_mean"), metric_label("pl/pos_precision"), metric_label("log/mean_uncertainty")
    ('mean AUROC', 'pseudo-labels: positive precision', 'mean uncertainty')
    >>> metric_label("CXR (m=7): pl/accuracy")  # a panel's own prefix stays
    'CXR (m=7): pseudo-labels: accuracy'
    """
    if ": " in key:
        head, tail = key.split(": ", 1)
        return f"{head}: {metric_label(tail)}"
    if key in METRIC_LABELS:
        return METRIC_LABELS[key]
    return key.split("/", 1)[-1].replace("_", " ")


def _rounds_axis(ax) -> None:
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.grid(alpha=0.3)


def plot_curves(curves: pd.DataFrame, metric: str = "auroc_mean", ax=None, title: str | None = None):
    """Metric per round, one line per method: the mean over seeds with an sd band (where
    there are several seeds); ``curves`` long rows as :func:`fedpl_core.report.tables.curve_frame`
    gives them.  Integer rounds, a human y label, the legend outside the data."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    sns.lineplot(curves, x="round", y=metric, hue="label", marker="o", ax=ax, errorbar="sd",
                 palette=method_palette(curves["label"]))
    _rounds_axis(ax)
    ax.set_ylabel(metric_label(metric))
    ax.set_title(title or f"{metric_label(metric)} per round")
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, title="method")
    return ax.figure


def plot_curve_grid(curves: pd.DataFrame, metric: str = "auroc_mean", col: str = "setting",
                    labels: Sequence[str] | None = None, title: str | None = None, col_wrap: int | None = None):
    """One panel per ``col`` value (titled ``K = 4``, or the setting's own name), one line per
    method (mean and sd band over seeds); ``curves`` as :func:`fedpl_core.report.tables.curve_frame`
    gives it."""
    d = curves if labels is None else curves[curves["label"].isin(labels)]
    g = sns.relplot(d, x="round", y=metric, hue="label", col=col, kind="line", marker="o", errorbar="sd",
                    palette=method_palette(d["label"]), col_wrap=col_wrap, height=3.2, aspect=1.1)
    g.set_titles("{col_name}" if col == "setting" else f"{col} = {{col_name}}")
    g.set_axis_labels("round", metric_label(metric))
    for ax in g.axes.flat:
        _rounds_axis(ax)
    if g.legend is not None:
        g.legend.set_title("method")
    if title:
        g.figure.suptitle(title, y=1.03)
    return g.figure


def plot_metric_panels(curves: pd.DataFrame, metrics: Sequence[str], labels: Sequence[str] | None = None,
                       title: str | None = None, ncols: int = 4, value: str = "value"):
    """One panel per metric (``curves`` long rows: ``label``, ``seed``, ``round``, ``metric``,
    ``value``), one line per method: the mean over seeds with an sd band.  Panels wrap
    after ``ncols``; each method has its own marker and line style, so lines that coincide
    (several methods at 0) stay visible; a panel whose values never change says so instead
    of auto-scaling a flat line; one legend for the figure, outside the panels."""
    d = curves if labels is None else curves[curves["label"].isin(labels)]
    order = list(dict.fromkeys(d["label"]))
    colors = method_palette(order)
    markers = dict(zip(order, "osD^vP*X<>"))
    styles = dict(zip(order, ["-", "--", ":", "-."] * 4))
    n = len(metrics)
    nc = max(1, min(ncols, n))
    nr = -(-n // nc)
    fig, axes = plt.subplots(nr, nc, figsize=(3.4 * nc + 2.2, 2.9 * nr), squeeze=False)
    for ax, m in zip(axes.flat, metrics):
        sub = d[d["metric"] == m]
        for lab in order:
            s = sub[sub["label"] == lab].groupby("round")[value].agg(["mean", "std"])
            if s.empty:
                continue
            ax.plot(s.index, s["mean"], marker=markers[lab], ms=3.5, ls=styles[lab], color=colors[lab], label=lab)
            if s["std"].notna().any():
                ax.fill_between(s.index, s["mean"] - s["std"].fillna(0), s["mean"] + s["std"].fillna(0),
                                color=colors[lab], alpha=0.15, lw=0)
        vals = sub[value].dropna()
        flat = len(vals) and np.allclose(vals, vals.iloc[0])
        if flat:
            v = float(vals.iloc[0])
            ax.set_ylim(v - 0.5, v + 0.5) if abs(v) > 1 else ax.set_ylim(min(0.0, v) - 0.05, max(1.0, v) + 0.05)
        ax.set_title(metric_label(m) + (f" (constant: {vals.iloc[0]:.3g})" if flat else ""), fontsize=9)
        ax.set_ylabel(metric_label(m).split(": ")[-1], fontsize=8)
        _rounds_axis(ax)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles = {lab: h for ax in axes.flat for h, lab in zip(*ax.get_legend_handles_labels())}
    fig.legend(list(handles.values()), list(handles), title="method", loc="upper left",
               bbox_to_anchor=(1.0, 0.95), frameon=False, fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_per_class(df: pd.DataFrame, x: str = "class", y: str = "auroc", hue: str = "label", ax=None,
                   title: str | None = None, order: Sequence[str] | None = None):
    """Per-class bars; ``df`` long form (one row per class x method [x seed])."""
    ax = ax or plt.subplots(figsize=(max(6, 0.6 * df[x].nunique() + 2), 4))[1]
    palette = method_palette(df[hue]) if hue == "label" else None
    sns.barplot(df, x=x, y=y, hue=hue, order=order, ax=ax, errorbar="sd", palette=palette)
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


def savefig(fig, name: str, folder: str | Path | None = None, dpi: int = 150) -> Path:
    """Save ``fig`` as ``folder/name`` (PNG unless the name has a suffix; default folder
    :func:`fedpl_core.report.tables.figures_dir`)."""
    p = Path(figures_dir() if folder is None else folder) / (name if Path(name).suffix else f"{name}.png")
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=dpi, bbox_inches="tight")
    return p
