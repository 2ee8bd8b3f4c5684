"""Notebook 01's figures: the sweeps (:func:`plot_sweep`), the head weights of FedAvg and TDMA
(:func:`plot_head_weights`), the clients' images (:func:`plot_sources`) and Table II per class
(:func:`plot_per_class_selection`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import partitions as P
from ...report.names import display_name
from ...runs.build import load_data
from ...runs.experiment_config import ExperimentConfig
from .profile import Settings
from .runs import partition


def plot_sweep(df: pd.DataFrame, x: str = "n", xlabel: str | None = None, title: str = "", logx: bool = True):
    """Mean AUROC (mean ± std over seeds) against ``x``: best round (left) and last round
    (right), a shared y axis, one legend for the figure, the sweep's values as the x ticks."""
    import matplotlib.pyplot as plt

    from ...report.plotting import figure_legend, method_palette

    d0 = df.assign(label=df["label"].map(display_name))
    methods = dict(zip(d0["label"], df["method"])) if "method" in df else {}
    colors = method_palette(list(dict.fromkeys(d0["label"])), methods)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    values = sorted(d0[x].dropna().unique())
    for ax, which, name in zip(axes, ("best", "final"), ("best round* (paper)", "last round")):
        d = d0[d0["which"] == which].groupby(["label", x], sort=False)["auroc_mean"].agg(["mean", "std"]).reset_index()
        for i, (label, g) in enumerate(d.groupby("label", sort=False)):
            g = g.sort_values(x)
            ax.errorbar(
                g[x],
                g["mean"],
                yerr=g["std"].fillna(0.0),
                marker="osD^v"[i % 5],
                capsize=3,
                label=label,
                color=colors[label],
            )
        if logx:
            ax.set_xscale("log")
            ax.minorticks_off()
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:g}" for v in values])
        ax.set_xlabel(xlabel or x)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean AUROC")
    if title:
        fig.suptitle(title)
    figure_legend(fig)
    return fig


def head_weight_frames(cfg: ExperimentConfig) -> dict[str, pd.DataFrame]:
    """Weight of each client in each class's head row: FedAvg (n_k / n) and TDMA
    (n_k^c / sum_k n_k^c, Eq. 9), clients (named by :func:`fedpl_core.partitions.client_names`)
    x classes."""
    train = load_data(cfg).train
    part = partition(cfg)
    n = part.sizes().astype(float)
    counts = np.stack([part.client_labels(train, k)[1].sum(0) for k in range(part.num_clients)]).astype(float)
    names = P.client_names(part)
    fedavg = np.repeat((n / n.sum())[:, None], counts.shape[1], 1)
    tdma = counts / np.where(counts.sum(0) > 0, counts.sum(0), 1.0)
    cols = [c.replace("_", " ") for c in train.class_names]
    return {
        "FedAvg": pd.DataFrame(fedavg, index=names, columns=cols),
        "TDMA": pd.DataFrame(tdma, index=names, columns=cols),
    }


def plot_head_weights(cfg: ExperimentConfig, title: str = ""):
    """The weight of each client in each class's head row under FedAvg and under TDMA
    (Eq. 9): two heatmaps (:func:`head_weight_frames`)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    frames = head_weight_frames(cfg)
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.45 * len(frames["TDMA"]) + 2.2))
    for ax, (name, f) in zip(axes, frames.items()):
        sns.heatmap(f, annot=True, fmt=".2f", cmap="Greens", vmin=0, vmax=1, cbar=False, ax=ax)
        ax.set_title(f"{name}: weight of client k in head row c")
        ax.set_ylabel("client")
        ax.tick_params(axis="x", rotation=45)
        plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_sources(cfg: ExperimentConfig, per_client: int = 4):
    """A few training images of every client (the one-class clients' domain shift), each
    row named by the client (:func:`fedpl_core.partitions.client_names`) and its classes."""
    import matplotlib.pyplot as plt

    train = load_data(cfg).train
    part = partition(cfg)
    names = P.client_names(part)
    fig, axes = plt.subplots(part.num_clients, per_client, figsize=(1.3 * per_client, 1.3 * part.num_clients))
    axes = np.atleast_2d(axes)
    for k, c in enumerate(part.clients):
        for j in range(per_client):
            ax = axes[k, j]
            ax.imshow(train.images[c.indices[j], 0], cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
        classes = [part.class_names[i] for i in np.flatnonzero(c.class_mask)]
        axes[k, 0].set_ylabel(f"client {names[k]}\n" + ", ".join(x[:5] for x in classes), fontsize=6)
    fig.tight_layout()
    return fig


def plot_per_class_selection(df: pd.DataFrame, title: str = "Table II per class"):
    """Per-class AUROC of every method at the paper's best round* (left) and the last round
    (right), bars from 0, one legend (the notebook's ``01_table2_per_class``)."""
    import matplotlib.pyplot as plt

    from ...report.plotting import per_class_long, plot_per_class

    fig, axes = plt.subplots(1, 2, figsize=(15, 4.2), sharey=True)
    for ax, which, name in zip(axes, ("best", "final"), ("best round*", "last round")):
        plot_per_class(per_class_long(df, which), ax=ax, title=f"{title}, {name}")
    axes[1].set_ylabel("")
    return fig


def fig4_xlabel(s: Settings) -> str:
    """The x label of Fig. 4's sweep: the size of the two extreme clients (B and C: the
    second and third, :func:`fig4_settings`) and of the others."""
    return f"images in clients B and C (the others: {s.fig4_base})"
