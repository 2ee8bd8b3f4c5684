"""Figures: per-round curves, per-class bars, label-mask heatmaps (matplotlib/seaborn), and the
check every figure of the package is held to (:func:`figure_problems`).

Every figure follows the same rules, fixed here once:

* **names, not keys**: a method label is shown by :func:`~fedpl_core.report.names.display_name`
  (``fedavg_star`` -> "FedAvg*"), a metric by :func:`~fedpl_core.nn.metrics.metric_name`
  (``auroc_mean`` -> "mean AUROC"), a class by :func:`~fedpl_core.report.names.class_name`;
* **one legend per figure**, titled "method", to the right of every panel
  (:func:`figure_legend`), never over another panel or the data;
* **colours from the method classes** (their ``color``); no two labels of one figure share one
  (:func:`method_palette`);
* **a line breaks where a round has no value** (:func:`with_gaps`), and a reference value is a
  marker where it was measured (:func:`plot_reference`), never a line across the x range;
* **integer ticks** for rounds and counts; **bars from 0**;
* writes go through :func:`fedpl_core.base.fileio.atomic_write` into the figures folder
  (:func:`savefig`).

Importing this module leaves the matplotlib backend alone (``%matplotlib widget`` keeps
working); without a display matplotlib picks a non-interactive backend by itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from ..base.fileio import atomic_write
from .names import class_name, display_name, method_class, method_classes, metric_name, registry_words
from .tables import output_path, output_root

#: The metric name the figures show (:func:`fedpl_core.nn.metrics.metric_name`, one place).
metric_label = metric_name
#: Markers of the methods of one figure, in order.
MARKERS = "osD^vP*X<>hp"


# ---------------------------------------------------------------------------- colours
def method_colors() -> dict[str, str]:
    """``{registry key: colour}``, read from the method classes (their ``color``)."""
    return {k: c.color for k, c in method_classes().items() if c.color}


def _rgb_distance(a: str, b: str) -> float:
    return float(np.linalg.norm(np.array(matplotlib.colors.to_rgb(a)) - np.array(matplotlib.colors.to_rgb(b))) * 255)


@functools.lru_cache(maxsize=1)
def _fallback() -> tuple[str, ...]:
    """Colours for labels no class stands for (a notebook's variants such as "TADL, batch 64"):
    tab20, tab20b and tab20c without those within 30 (RGB distance, 0-255 scale) of a method's
    colour, so such a label is never mistaken for a method."""
    used = set(method_colors().values())
    pool = (
        sns.color_palette("tab20", 20).as_hex()
        + sns.color_palette("tab20b", 20).as_hex()
        + sns.color_palette("tab20c", 20).as_hex()
    )
    return tuple(c for c in dict.fromkeys(pool) if min(_rgb_distance(c, f) for f in used) > 30)


def method_color(label: str, method: str | None = None) -> str:
    """The colour of a method label: its class's ``color`` (the class of ``method``, a
    registry key, when given; else of the label, :func:`~fedpl_core.report.names.method_class`),
    else a stable fallback colour.

    >>> method_color("fedavg") == method_color("FedAvg") == method_color("FL", "fedavg")
    True
    >>> method_color("FL + SA (FedBN+)", "surgical") == method_color("Surgical Aggregation")
    True
    """
    cls = method_class(label, method)
    if cls is not None and cls.color:
        return cls.color
    fb = _fallback()
    return fb[sum(map(ord, str(label))) % len(fb)]


def method_palette(labels, methods: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{label: colour}`` for the labels of one figure: each label's :func:`method_color`
    (``methods``: label -> registry key, e.g. from ``run_many``'s ``method`` column), except
    that no two labels share a colour: labels of a method claim its colour first (the first
    of them where several stand for one method), a label whose colour is taken gets the first
    free fallback colour.

    >>> pal = method_palette(["FedAvg (100% labels)", "FedAvg*", "FedAvg", "FedProx*", "FSSL*"])
    >>> pal["FedAvg"] == method_color("fedavg") and pal["FedAvg (100% labels)"] == method_color("fedavg_oracle")
    True
    >>> len(set(pal.values()))
    5
    """
    labels = list(dict.fromkeys(labels))
    methods = dict(methods or {})
    out: dict[str, str] = {}
    used: set[str] = set()
    for lab in labels:  # the methods' colours first, in order
        cls = method_class(lab, methods.get(lab))
        if cls is not None and cls.color and cls.color not in used:
            out[lab] = cls.color
            used.add(cls.color)
    for lab in labels:
        if lab in out:
            continue
        c = method_color(lab, methods.get(lab))
        if c in used:
            c = next((x for x in _fallback() if x not in used), c)
        out[lab] = c
        used.add(c)
    return {lab: out[lab] for lab in labels}


def _prepare(d: pd.DataFrame, labels: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str], dict[str, str]]:
    """The rows of ``labels`` (all when None) with the ``label`` column in display names,
    the labels in order of appearance, and their colours (from the ``method`` column when
    the frame has one)."""
    if labels is not None:
        d = d[d["label"].isin(list(labels))]
    methods = dict(zip(d["label"], d["method"])) if "method" in d else {}
    shown = {lab: display_name(lab) for lab in dict.fromkeys(d["label"])}
    d = d.assign(label=d["label"].map(shown))
    order = list(dict.fromkeys(d["label"]))
    colors = method_palette(order, {shown[lab]: m for lab, m in methods.items()})
    return d, order, colors


# ---------------------------------------------------------------------------- lines
def _typical_step(x: np.ndarray) -> float | None:
    """The most frequent step between a curve's sorted x values, its last step left out (a
    run's last round is evaluated whatever ``eval_every``); ties: the smallest; None with
    fewer than three values."""
    steps = np.diff(np.unique(np.asarray(x, float)))[:-1]
    if not len(steps):
        return None
    vals, counts = np.unique(np.round(steps, 9), return_counts=True)
    return float(vals[counts == counts.max()].min())


def with_gaps(s: pd.DataFrame | pd.Series, step: float | None) -> pd.DataFrame | pd.Series:
    """``s`` (indexed by sorted x) with a NaN row after every step longer than 1.5 ``step``:
    a line drawn through it breaks there instead of joining values across rounds without one.

    >>> with_gaps(pd.Series([0.5, 0.6, 0.7, 0.9], index=[5, 6, 8, 13]), 1).index.tolist()
    [5, 6, 7, 8, 9, 13]
    """
    if step is None or len(s) < 2:
        return s
    x = np.asarray(s.index, float)
    gaps = x[:-1][np.diff(x) > 1.5 * step]
    if not len(gaps):
        return s
    at = gaps + step
    if pd.api.types.is_integer_dtype(s.index) and np.all(at == np.round(at)):
        at = at.astype(s.index.dtype)
    add = (
        pd.DataFrame(np.nan, index=at, columns=s.columns)
        if isinstance(s, pd.DataFrame)
        else pd.Series(np.nan, index=at)
    )
    return pd.concat([s, add]).sort_index()


def _mean_sd(d: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    s = d.groupby(x)[y].agg(["mean", "std"]).sort_index()
    return s[s["mean"].notna()]


def draw_lines(
    ax,
    d: pd.DataFrame,
    x: str,
    y: str,
    order: Sequence[str],
    colors: Mapping[str, str],
    styles: Mapping[str, str] | None = None,
    band: bool = True,
) -> None:
    """One line per label of ``d`` (long rows ``label``, ``x``, ``y``; several seeds are
    averaged, their sd drawn as a band), each with its own marker; a line breaks where the
    panel's evaluation step (the smallest of its labels' typical steps) finds no value."""
    series = {lab: _mean_sd(d[d["label"] == lab], x, y) for lab in order}
    steps = [s for s in (_typical_step(v.index) for v in series.values()) if s]
    step = min(steps) if steps else None
    for i, lab in enumerate(order):
        s = series[lab]
        if s.empty:
            continue
        s = with_gaps(s, step)
        ax.plot(
            s.index,
            s["mean"],
            marker=MARKERS[i % len(MARKERS)],
            ms=4,
            lw=1.5,
            color=colors[lab],
            ls=(styles or {}).get(lab, "-"),
            label=lab,
        )
        if band and s["std"].notna().any():
            ax.fill_between(s.index, s["mean"] - s["std"], s["mean"] + s["std"], color=colors[lab], alpha=0.15, lw=0)


def integer_ticks(axis) -> None:
    """Integer ticks only (rounds, counts): ``MaxNLocator(integer=True)``."""
    axis.set_major_locator(MaxNLocator(integer=True))


def _rounds_axis(ax) -> None:
    integer_ticks(ax.xaxis)
    ax.set_xlabel("round")
    ax.grid(alpha=0.3)


def figure_legend(fig, title: str = "method", fontsize: float | None = None, relayout: bool = True):
    """One legend for the whole figure, right of every panel: the entries of all its axes
    (each label once, in order of appearance), the axes' own legends removed; calling it
    again (another panel drawn) rebuilds it.  ``relayout``: first fit the panels to the
    figure (``tight_layout``), so the legend sits beside them.  Returns the legend (None
    without entries)."""
    handles: dict[str, object] = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab and not lab.startswith("_"):
                handles.setdefault(lab, h)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    for leg in list(fig.legends):
        leg.remove()
    if relayout and fig.get_layout_engine() is None:
        fig.tight_layout()
    if not handles:
        return None
    return fig.legend(
        list(handles.values()),
        list(handles),
        title=title,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
        fontsize=fontsize,
    )


def plot_reference(ax, x: float, y: float, label: str, color: str = "black") -> None:
    """A reference value where it was measured: one marker at (``x``, ``y``) with its label in
    the legend, never a line across the x range (the x axis is widened to show it)."""
    ax.plot([x], [y], marker="*", ms=11, ls="none", color=color, label=label, zorder=5)
    lo, hi = ax.get_xlim()
    if not lo <= x <= hi:
        pad = 0.05 * (max(hi, x) - min(lo, x))
        ax.set_xlim(min(lo, x) - pad, max(hi, x) + pad)


def plot_curves(
    curves: pd.DataFrame,
    metric: str = "auroc_mean",
    ax=None,
    title: str | None = None,
    labels: Sequence[str] | None = None,
):
    """Metric per round, one line per method: the mean over seeds with an sd band (where
    there are several seeds); ``curves`` long rows as :func:`fedpl_core.report.tables.curve_frame`
    gives them.  Integer rounds, a human y label, one legend for the figure (drawing on
    another panel of the same figure adds to it)."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    d, order, colors = _prepare(curves, labels)
    draw_lines(ax, d, "round", metric, order, colors)
    _rounds_axis(ax)
    ax.set_ylabel(metric_name(metric))
    ax.set_title(title or f"{metric_name(metric)} per round")
    figure_legend(ax.figure)
    return ax.figure


def plot_curve_grid(
    curves: pd.DataFrame,
    metric: str = "auroc_mean",
    col: str = "setting",
    labels: Sequence[str] | None = None,
    title: str | None = None,
    col_wrap: int | None = None,
):
    """One panel per ``col`` value (titled ``K = 4``, or the setting's own name), one line per
    method (mean and sd band over seeds), a shared y axis and one legend; ``curves`` as
    :func:`fedpl_core.report.tables.curve_frame` gives it."""
    d, order, colors = _prepare(curves, labels)
    values = list(dict.fromkeys(d[col]))
    nc = min(len(values), col_wrap or len(values)) or 1
    nr = -(-len(values) // nc) or 1
    fig, axes = plt.subplots(nr, nc, figsize=(3.6 * nc, 3.2 * nr), sharey=True, squeeze=False)
    for ax, v in zip(axes.flat, values):
        draw_lines(ax, d[d[col] == v], "round", metric, order, colors)
        _rounds_axis(ax)
        ax.set_title(str(v) if col == "setting" else f"{col} = {v}")
    for ax in list(axes.flat)[len(values) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(metric_name(metric))
    if title:
        fig.suptitle(title)
    figure_legend(fig)
    return fig


#: Per-round record keys whose values are shares or accuracies: their panels span [0, 1].
def unit_interval(key: str) -> bool:
    """Whether a record key is a share, rate or accuracy (its panel's axis is [0, 1]).

    >>> unit_interval("pl/accuracy"), unit_interval("log/share_dl"), unit_interval("log/uncertainty")
    (True, True, False)
    """
    key = str(key).split(": ")[-1]
    return key.startswith("pl/") or bool(re.search(r"(share|rate|accuracy)", key))


def _all_zero(d: pd.DataFrame, order: Sequence[str], value: str) -> list[str]:
    """The labels of ``order`` whose every value in ``d`` is 0."""
    out = []
    for lab in order:
        v = d.loc[d["label"] == lab, value].dropna()
        if len(v) and bool((v == 0).all()):
            out.append(lab)
    return out


def plot_metric_panels(
    curves: pd.DataFrame,
    metrics: Sequence[str],
    labels: Sequence[str] | None = None,
    title: str | None = None,
    ncols: int = 4,
    value: str = "value",
    constant: str = "drop",
):
    """One panel per metric (``curves`` long rows: ``label``, ``seed``, ``round``, ``metric``,
    ``value``), one line per method: the mean over seeds with an sd band.  Panels wrap after
    ``ncols``; each method has its own marker and line style, so lines that coincide stay
    visible, and methods at 0 in every round of a panel, two or more, are named in it instead of
    drawn on top of each other; a share, rate or accuracy (:func:`unit_interval`) is drawn on
    [0, 1] (its sd band cut there); a line breaks at rounds without a value; one legend for
    the figure.  A metric whose values never change (``constant``): ``"drop"`` (the default)
    leaves its panel out and lists it under the figure, ``"note"`` draws the panel titled with
    the value."""
    d, order, colors = _prepare(curves, labels)
    styles = dict(zip(order, ["-", "--", ":", "-."] * 4))
    flat: dict[str, float] = {}
    for m in metrics:
        vals = d[d["metric"] == m][value].dropna()
        if len(vals) and np.allclose(vals, vals.iloc[0]):
            flat[m] = float(vals.iloc[0])
    shown = [m for m in metrics if not (constant == "drop" and m in flat)]
    if flat and not shown:  # nothing moves: the values as text, without empty axes
        fig = plt.figure(figsize=(6.8, 0.9 + 0.3 * len(flat)))
        lines = [f"{metric_name(m)}: {v:.3g} in every round" for m, v in flat.items()]
        fig.text(0.5, 0.5, "\n".join(lines), ha="center", va="center", fontsize=9)
        if title:
            fig.suptitle(title, fontsize=10)
        return fig
    n = max(1, len(shown))
    nc = max(1, min(ncols, n))
    nr = -(-n // nc)
    fig, axes = plt.subplots(
        nr, nc, figsize=(3.4 * nc, 2.9 * nr + (0.4 if constant == "drop" and flat else 0)), squeeze=False
    )
    for ax, m in zip(axes.flat, shown):
        sub = d[d["metric"] == m]
        at_zero = _all_zero(sub, order, value)
        if len(at_zero) > 1:  # lines on top of each other at 0: named in the panel instead of hidden
            sub = sub[~sub["label"].isin(at_zero)]
            ax.text(
                0.02,
                0.1,
                "0 in every round: " + ", ".join(at_zero),
                transform=ax.transAxes,
                fontsize=7,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
        draw_lines(ax, sub, "round", value, order, colors, styles)
        unit = unit_interval(m) and sub[value].dropna().between(0, 1).all()
        if unit:
            ax.set_ylim(-0.03, 1.03)
        elif m in flat:
            v = flat[m]
            ax.set_ylim(v - 0.5, v + 0.5) if abs(v) > 1 else ax.set_ylim(min(0.0, v) - 0.05, max(1.0, v) + 0.05)
        ax.set_title(metric_name(m) + (f" (constant: {flat[m]:.3g})" if m in flat else ""), fontsize=9)
        ax.set_ylabel(metric_name(m).split(": ")[-1], fontsize=8)
        _rounds_axis(ax)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    figure_legend(fig, fontsize=8)
    if constant == "drop" and flat:
        fig.subplots_adjust(bottom=fig.subplotpars.bottom + 0.35 / fig.get_figheight())
        fig.text(
            0.01,
            0.005,
            "constant over the rounds, left out: " + "; ".join(f"{metric_name(m)} {v:.3g}" for m, v in flat.items()),
            fontsize=8,
            va="bottom",
            wrap=True,
        )
    return fig


# ---------------------------------------------------------------------------- bars
def plot_per_class(
    df: pd.DataFrame,
    x: str = "class",
    y: str = "auroc",
    hue: str = "label",
    ax=None,
    title: str | None = None,
    order: Sequence[str] | None = None,
):
    """Per-class bars from 0 (``y`` an AUROC: the axis spans [0, 1], chance dotted at 0.5),
    one bar per method (mean over seeds, sd as an error bar); ``df`` long form (one row per
    class x method [x seed], :func:`per_class_long`); class names with spaces; one legend for
    the figure."""
    if hue == "label":
        d, labels, palette = _prepare(df)
    else:
        d, labels, palette = df, list(dict.fromkeys(df[hue])), None
    d = d.assign(**{x: d[x].map(class_name)})
    order = [class_name(c) for c in order] if order is not None else list(dict.fromkeys(d[x]))
    ax = ax or plt.subplots(figsize=(max(6.0, 0.6 * len(order) + 2), 4))[1]
    sns.barplot(
        d,
        x=x,
        y=y,
        hue=hue,
        hue_order=labels,
        order=order,
        ax=ax,
        errorbar="sd",
        palette=palette,
        err_kws={"linewidth": 1},
    )
    top = max(1.0, float(d[y].max())) if len(d) else 1.0
    ax.set_ylim(0.0, top)
    if "auroc" in str(y).lower():
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_ylabel(metric_name(y))
    ax.set_xlabel(x)
    ax.tick_params(axis="x", rotation=60)
    plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    ax.set_title(title or f"per-class {metric_name(y)}")
    figure_legend(ax.figure, title="method" if hue == "label" else hue)
    return ax.figure


def per_class_long(df: pd.DataFrame, which: str = "final") -> pd.DataFrame:
    """From ``run_many``'s wide rows to long rows (label, seed, class, auroc[, method])."""
    d = df[df["which"] == which] if "which" in df else df
    cols = [c for c in d.columns if c.startswith("auroc:")]
    long = d.melt(
        id_vars=[c for c in ("setting", "label", "seed", "method") if c in d],
        value_vars=cols,
        var_name="class",
        value_name="auroc",
    )
    long["class"] = long["class"].str.replace("auroc:", "", regex=False)
    return long.dropna(subset=["auroc"])


def plot_mask_matrix(
    mask: np.ndarray,
    class_names: Sequence[str],
    client_names: Sequence[str] | None = None,
    ax=None,
    title: str = "annotated classes",
):
    """Client x class annotation matrix (1 = the client labels the class)."""
    ax = ax or plt.subplots(figsize=(0.45 * len(class_names) + 2, 0.4 * len(mask) + 1.5))[1]
    sns.heatmap(
        pd.DataFrame(mask.astype(int), index=client_names, columns=[class_name(c) for c in class_names]),
        cmap="Blues",
        cbar=False,
        linewidths=0.5,
        linecolor="white",
        ax=ax,
        vmin=0,
        vmax=1,
    )
    ax.set_title(title)
    ax.set_ylabel("client")
    return ax.figure


# ---------------------------------------------------------------------------- the check
_KEY_WORD = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9_]*|(?<![\w/])[a-z]+/[a-z_]{2,}(?![\w/])")
_NUMBER = re.compile(r"^[\u2212\-+]?\d*\.?\d+(e[\u2212\-+]?\d+)?%?$")


def _visible_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def _tick_labels(ax, axis) -> list:
    """The tick labels of ``axis`` drawn with text (inside the view interval)."""
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * max(1.0, abs(hi - lo))
    out = []
    for tick in axis.get_major_ticks():
        lab = tick.label1
        if lab.get_visible() and lab.get_text().strip() and lo - eps <= tick.get_loc() <= hi + eps:
            out.append(lab)
    return out


def _texts(fig) -> list[tuple[str, object]]:
    """Every text a reader sees, with where it is: figure texts (the suptitle), legends
    (entries and titles), and per axes its titles, axis labels, tick labels and annotations."""
    out = [("figure text", t) for t in fig.texts if t.get_visible()]
    legends = list(fig.legends)
    for i, ax in enumerate(_visible_axes(fig)):
        where = f"panel {i + 1}"
        for loc in ("left", "center", "right"):
            t = {"left": ax._left_title, "center": ax.title, "right": ax._right_title}[loc]
            out.append((f"{where} title", t))
        out += [(f"{where} x label", ax.xaxis.label), (f"{where} y label", ax.yaxis.label)]
        out += [(f"{where} x tick", t) for t in _tick_labels(ax, ax.xaxis)]
        out += [(f"{where} y tick", t) for t in _tick_labels(ax, ax.yaxis)]
        out += [(f"{where} annotation", t) for t in ax.texts if t.get_visible()]
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
    for leg in legends:
        out.append(("legend title", leg.get_title()))
        out += [("legend entry", t) for t in leg.get_texts()]
    return [(w, t) for w, t in out if t.get_text().strip()]


def _area(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _collisions(ax, axis, renderer) -> list[str]:
    """Tick labels of one axis drawn over each other: axis-aligned labels whose boxes
    overlap; rotated ones closer (across their baselines) than a line of text."""
    labs = _tick_labels(ax, axis)
    if len(labs) < 2:
        return []
    boxes = [t.get_window_extent(renderer) for t in labs]
    rot = labs[0].get_rotation() % 180
    out = []
    if rot in (0.0, 90.0):
        for i in range(len(labs)):
            for j in range(i + 1, len(labs)):
                if _area(boxes[i], boxes[j]) > 0.5:
                    out.append(f"tick labels {labs[i].get_text()!r} and {labs[j].get_text()!r} overlap")
        return out
    pos = sorted(
        ax.transData.transform(
            [(t.get_position()[0], 0) if axis is ax.xaxis else (0, t.get_position()[1]) for t in labs]
        )[:, 0 if axis is ax.xaxis else 1]
    )
    line = labs[0].get_fontsize() * renderer.points_to_pixels(1.0)
    gap = min(np.diff(pos)) * abs(np.sin(np.radians(rot)))
    if gap < 0.9 * line:
        out.append(f"rotated tick labels {gap:.0f} px apart across their baselines, less than a line ({line:.0f} px)")
    return out


def figure_problems(fig) -> list[str]:
    """What a reader would stumble on in ``fig``, one line each (empty: none), as the package's
    figures promise (the module docstring):

    * a text (title, axis label, tick label, legend entry or title, annotation) that is a
      registry key or holds one: a word with ``_`` (``fedavg_star``, ``auroc_mean``), a
      namespaced key (``pl/accuracy``), or a whole text that is a method key, a metric key
      or a frame column (``fedavg``, ``auroc``, ``label``);
    * more than one legend, or a legend over any panel (another's, or its own data);
    * tick labels of one axis drawn over each other;
    * a numeric axis without a label; non-integer ticks on a round or count axis (its label
      names rounds, or starts with "number of", "count", "positives", "images", "clients");
    * bars whose axis does not start at 0; a panel whose every line is constant.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    words = registry_words()
    problems: list[str] = []
    for where, t in _texts(fig):
        text = t.get_text().strip()
        bad = [w for w in _KEY_WORD.findall(text)]
        if text in words:
            bad.append(text)
        if bad:
            problems.append(f"{where}: {text!r} shows a registry key ({', '.join(dict.fromkeys(bad))})")
    axes = _visible_axes(fig)
    legends = [(leg, None) for leg in fig.legends] + [(ax.get_legend(), ax) for ax in axes if ax.get_legend()]
    if len(legends) > 1:
        problems.append(f"{len(legends)} legends: a figure has one")
    for leg, own in legends:
        box = leg.get_window_extent(renderer)
        for i, ax in enumerate(axes):
            if _area(box, ax.get_window_extent(renderer)) > 1.0:
                whose = "its own panel's data" if ax is own else f"panel {i + 1}"
                problems.append(f"the legend ({leg.get_title().get_text() or 'untitled'}) lies over {whose}")
    for i, ax in enumerate(axes):
        where = f"panel {i + 1}"
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            problems += [f"{where} {name} axis: {p}" for p in _collisions(ax, axis, renderer)]
            labs = _tick_labels(ax, axis)
            numeric = labs and all(_NUMBER.match(t.get_text().strip().replace(",", "")) for t in labs)
            label = axis.label.get_text().strip()
            if numeric and not label and not _is_colorbar(ax):
                problems.append(f"{where}: the {name} axis has numbers but no label")
            if numeric and re.search(r"\bround\b|^(number of|count|positives|images|clients)\b", label):
                ticks = [float(t.get_text().replace("\u2212", "-")) for t in labs]
                if not all(v.is_integer() for v in ticks):
                    problems.append(f"{where}: {label!r} ticks are not whole numbers ({ticks})")
        if ax.containers and any(isinstance(c, matplotlib.container.BarContainer) for c in ax.containers):
            lo = min(ax.get_ylim()) if not _horizontal_bars(ax) else min(ax.get_xlim())
            if lo > 1e-9:
                problems.append(f"{where}: the bars start at {lo:g}, not at 0")
        lines = [ln for ln in ax.get_lines() if ln.get_transform() == ax.transData and len(ln.get_ydata()) > 1]
        ys = [np.asarray(ln.get_ydata(), float) for ln in lines]
        ys = [y[np.isfinite(y)] for y in ys]
        if ys and all(len(y) > 1 for y in ys) and np.allclose(np.concatenate(ys), np.concatenate(ys)[0]):
            problems.append(f"{where}: every line is constant ({np.concatenate(ys)[0]:g})")
    return problems


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar") or ax.get_label() == "<colorbar>"


def _horizontal_bars(ax) -> bool:
    bars = [p for c in ax.containers if isinstance(c, matplotlib.container.BarContainer) for p in c]
    return bool(bars) and all(b.get_height() < b.get_width() and b.get_y() != 0 for b in bars)


def check_figure(fig):
    """``fig`` when :func:`figure_problems` finds nothing, else a ``ValueError`` listing them."""
    problems = figure_problems(fig)
    if problems:
        raise ValueError("figure problems:\n" + "\n".join(f"  - {p}" for p in problems))
    return fig


# ---------------------------------------------------------------------------- writing
def savefig(fig, name: str, folder: str | Path | None = None, dpi: int = 150) -> Path:
    """Save ``fig`` as ``folder/name`` (PNG unless the name has a suffix; default folder
    :func:`fedpl_core.report.tables.figures_dir`) through
    :func:`fedpl_core.base.fileio.atomic_write`: a link planted at the name is replaced, never
    written through, nor through a link in a sub-folder.  A name that would leave the folder
    (absolute, or with a ``..`` part) is refused with a ``ValueError`` before anything is
    drawn (:func:`~fedpl_core.report.tables.output_path`)."""
    p = output_path(name if Path(str(name)).suffix else f"{name}.png", folder, what="figure")
    fmt = p.suffix.lstrip(".").lower() or "png"
    with atomic_write(p, "wb", root=output_root(folder)) as f:
        fig.savefig(f, format=fmt, dpi=dpi, bbox_inches="tight")
    return p


__all__ = [
    "method_colors",
    "method_color",
    "method_palette",
    "metric_label",
    "with_gaps",
    "draw_lines",
    "integer_ticks",
    "figure_legend",
    "plot_reference",
    "plot_curves",
    "plot_curve_grid",
    "unit_interval",
    "plot_metric_panels",
    "plot_per_class",
    "per_class_long",
    "plot_mask_matrix",
    "figure_problems",
    "check_figure",
    "savefig",
    "MARKERS",
]
