"""Reports and plots of a partition: positives per class and client, annotation masks.

pandas, matplotlib and seaborn are imported inside the functions, so importing
:mod:`fedpl_core.partitions` never loads a plotting backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.base import ImageDataset
from .partition import Partition, default_client_name


def client_names(partition: Partition) -> list[str]:
    """How every figure and table names the clients of ``partition``: one rule for the whole
    package.  A client named after its data source keeps that name ("NIH", "CheXpert"); every
    other client is named by a capital letter in the partition's order (A, B, C, ...), the
    default names of :class:`~fedpl_core.partitions.partition.Partition`, so a paper table that
    numbers its clients (FedPSL's Tables I and III: 1-6) reads as every other (A-F).

    >>> from fedpl_core.partitions.partition import ClientSpec
    >>> spec = lambda name: ClientSpec([0], [True], name)
    >>> client_names(Partition([spec("1"), spec("2")], ["a"])), client_names(Partition([spec("NIH"), spec("")], ["a"]))
    (['A', 'B'], ['NIH', 'B'])
    """
    return [
        c.name if c.name and not c.name.isdigit() else default_client_name(k) for k, c in enumerate(partition.clients)
    ]


def _class(name: str) -> str:
    """A class name as figures and tables show it (``_`` as a space)."""
    return str(name).replace("_", " ")


def _title(partition: Partition) -> str:
    return str(partition.name).replace("_", " ")


def label_report(
    partition: Partition, dataset: ImageDataset, sizes_row: bool = False, unannotated: Any = 0, display: bool = False
):
    """Positives per class (rows) and client (columns), as FedLSM Tables 5/6 and FedPSL Tables I/III.

    Counted on each client's own labels (:meth:`Partition.client_labels`), so a class
    the client does not annotate shows ``unannotated``: 0 by default (integer columns),
    or a marker such as ``"n/a"`` (object columns) that tells it apart from an annotated
    class without positives.  ``sizes_row=True`` appends a row ``"n (images)"`` with the
    clients' sample counts (see also :func:`client_sizes`).  ``display=True`` (what a reader
    sees: the figures, ``python -m fedpl_core report``) names the clients by
    :func:`client_names` and the classes with ``_`` as a space; else the partition's own names.
    """
    import pandas as pd

    cols, masks = {}, partition.masks
    names = client_names(partition) if display else [c.name for c in partition.clients]
    for k, name in enumerate(names):
        labels, _ = partition.client_labels(dataset, k)
        counts = np.rint(labels.sum(0)).astype(np.int64)
        cols[name] = counts if unannotated == 0 else np.where(masks[k], counts.astype(object), unannotated)
    df = pd.DataFrame(cols, index=[_class(c) if display else c for c in partition.class_names])
    df.index.name, df.columns.name = "class", "client"
    if sizes_row:
        df.loc["n (images)"] = partition.sizes()
    return df


def client_sizes(partition: Partition):
    """Number of samples per client as a pandas Series."""
    import pandas as pd

    return pd.Series(partition.sizes(), index=[c.name for c in partition.clients], name="n (images)")


def _hatch(ax, unannotated: np.ndarray) -> None:
    from matplotlib.patches import Rectangle

    for i, j in zip(*np.nonzero(unannotated)):
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.92", edgecolor="0.65", hatch="///", linewidth=0, zorder=0.5))


def plot_label_report(partition: Partition, dataset: ImageDataset, ax=None, annotate: bool = True):
    """Heatmap of :func:`label_report` (classes x clients); unannotated cells grey and hatched.

    Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = label_report(partition, dataset, display=True)
    unannotated = ~partition.masks.T
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.8 * partition.num_clients, 1.2 + 0.38 * len(df)))
    else:
        fig = ax.figure
    sns.heatmap(
        df,
        mask=unannotated,
        annot=annotate,
        fmt="d",
        cmap="Blues",
        ax=ax,
        linewidths=0.5,
        linecolor="white",
        cbar_kws={"label": "positives"},
    )
    from matplotlib.ticker import MaxNLocator

    cbar = ax.collections[0].colorbar
    cbar.locator = MaxNLocator(integer=True)  # counts: whole-number ticks
    cbar.update_ticks()
    _hatch(ax, unannotated)
    ax.set_title(f"{_title(partition)}: positives per client\n(hatched = not annotated)", fontsize=10)
    ax.set_xlabel("client")
    ax.set_ylabel("")
    fig.tight_layout()
    return fig


def plot_mask(partition: Partition, ax=None):
    """Class x client annotation heatmap; the class labels carry the number of annotating clients.

    Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.colors import ListedColormap

    m = partition.masks.T.astype(int)
    per_class = m.sum(1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.6 * partition.num_clients, 1.0 + 0.35 * m.shape[0]))
    else:
        fig = ax.figure
    sns.heatmap(
        m,
        cmap=ListedColormap(["0.92", "tab:green"]),
        vmin=0,
        vmax=1,
        cbar=False,
        ax=ax,
        linewidths=0.5,
        linecolor="white",
        xticklabels=client_names(partition),
        yticklabels=[f"{_class(n)} ({k})" for n, k in zip(partition.class_names, per_class)],
    )
    ax.set_title(f"{_title(partition)}: annotated classes (green)\n(k) = clients per class", fontsize=10)
    ax.set_xlabel("client")
    fig.tight_layout()
    return fig


def plot_masks(partitions, titles=None, width_ratios=None, height: float = 4.8):
    """Several partitions' annotation heatmaps (:func:`plot_mask`) side by side, one panel
    each, titled by ``titles`` (default: the keys of ``partitions`` when it is a dict);
    ``width_ratios`` default: the panels' client counts.  Returns the figure (notebooks 02,
    03 and 04: the label sets of their settings)."""
    import matplotlib.pyplot as plt

    items = list(partitions.items()) if isinstance(partitions, dict) else [(None, p) for p in partitions]
    titles = list(titles) if titles is not None else [t for t, _ in items]
    ratios = list(width_ratios) if width_ratios is not None else [max(2, p.num_clients) for _, p in items]
    fig, axes = plt.subplots(
        1,
        len(items),
        figsize=(1.6 + 0.55 * sum(ratios) + 1.6 * len(items), height),
        gridspec_kw={"width_ratios": ratios},
        squeeze=False,
    )
    for ax, (_, part), title in zip(axes[0], items, titles):
        plot_mask(part, ax=ax)
        if title:
            ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_label_reports(partitions, dataset: ImageDataset, titles=None, height: float = 4.0):
    """Several partitions' positives heatmaps (:func:`plot_label_report`) side by side, titled
    by ``titles`` (default: the keys of ``partitions`` when it is a dict).  Returns the figure
    (notebook 00: its two label settings)."""
    import matplotlib.pyplot as plt

    items = list(partitions.items()) if isinstance(partitions, dict) else [(None, p) for p in partitions]
    titles = list(titles) if titles is not None else [t for t, _ in items]
    width = sum(2.6 + 0.75 * p.num_clients for _, p in items)
    fig, axes = plt.subplots(1, len(items), figsize=(width, height), squeeze=False)
    for ax, (_, part), title in zip(axes[0], items, titles):
        plot_label_report(part, dataset, ax=ax)
        if title:
            ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
