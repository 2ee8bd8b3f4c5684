"""Reports and plots of a partition: positives per class and client, annotation masks.

pandas, matplotlib and seaborn are imported inside the functions, so importing
:mod:`fedpl_core.partitions` never loads a plotting backend.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..data.base import ImageDataset
from .partition import Partition


def label_report(partition: Partition, dataset: ImageDataset, sizes_row: bool = False, unannotated: Any = 0):
    """Positives per class (rows) and client (columns), as FedLSM Tables 5/6 and FedPSL Tables I/III.

    Counted on each client's own labels (:meth:`Partition.client_labels`), so a class
    the client does not annotate shows ``unannotated``: 0 by default (integer columns),
    or a marker such as ``"n/a"`` (object columns) that tells it apart from an annotated
    class without positives.  ``sizes_row=True`` appends a row ``"n (images)"`` with the
    clients' sample counts (see also :func:`client_sizes`).
    """
    import pandas as pd

    cols, masks = {}, partition.masks
    for k, c in enumerate(partition.clients):
        labels, _ = partition.client_labels(dataset, k)
        counts = np.rint(labels.sum(0)).astype(np.int64)
        cols[c.name] = counts if unannotated == 0 else np.where(masks[k], counts.astype(object), unannotated)
    df = pd.DataFrame(cols, index=list(partition.class_names))
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
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor="0.92", edgecolor="0.65", hatch="///",
                               linewidth=0, zorder=0.5))


def plot_label_report(partition: Partition, dataset: ImageDataset, ax=None, annotate: bool = True):
    """Heatmap of :func:`label_report` (classes x clients); unannotated cells grey and hatched.

    Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = label_report(partition, dataset)
    unannotated = ~partition.masks.T
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.8 * partition.num_clients, 1.2 + 0.38 * len(df)))
    else:
        fig = ax.figure
    sns.heatmap(df, mask=unannotated, annot=annotate, fmt="d", cmap="Blues", ax=ax,
                linewidths=0.5, linecolor="white", cbar_kws={"label": "positives"})
    _hatch(ax, unannotated)
    ax.set_title(f"{partition.name}: positives per client\n(hatched = not annotated)", fontsize=10)
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
    sns.heatmap(m, cmap=ListedColormap(["0.92", "tab:green"]), vmin=0, vmax=1, cbar=False, ax=ax,
                linewidths=0.5, linecolor="white",
                xticklabels=[c.name for c in partition.clients],
                yticklabels=[f"{n} ({k})" for n, k in zip(partition.class_names, per_class)])
    ax.set_title(f"{partition.name}: annotated classes (green)\n(k) = clients per class", fontsize=10)
    ax.set_xlabel("client")
    fig.tight_layout()
    return fig
