"""The introduction's profiles (``notebooks/00_introduction.ipynb``): FedAvg, the partial
loss, Surgical Aggregation, centralised training and the Oracle on the built-in synthetic
chest X-rays with the 8 FedMLP CXR findings, in two label settings.

:data:`PROFILES` holds, per profile, the data (``size`` px, ``n_train`` / ``n_test``
images), the model and the schedule (``rounds`` of 2 local epochs, ``batch_size``, Adam
``lr``, evaluation every ``eval_every`` rounds) and the ``seeds``; the notebook applies
its parameters with :func:`fedpl_core.profiles.apply_parameters`.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.profiles.gpu_estimate`
and its stated assumptions): DenseNet-121 (the papers' chest X-ray backbone, random init)
at 128 px with the ImageNet stem: 5.51 x (128/224)^2 = 1.80 GFLOPs a forward pass, 5.4 a
training image (x 3); 2,400 training / 1,200 test images, 6 rounds of 2 local epochs, batch
32, evaluation every round, 3 seeds.  The notebook's 30 runs (5 methods x 2 settings x 3
seeds) make 28,440 training steps (0.86 M training images) and 0.22 M evaluation images:
5.1 PFLOP, 102 s at 5 % of the H100's 989 dense bf16 TFLOPS (26 s at 20 %), but at batch 32
each eager DenseNet step costs at least 15 ms (kernel launches): 429 s; estimate 7.4 min
(budget 10).
"""
from __future__ import annotations

from typing import Any

import numpy as np

PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=2e-3, size=32, n_train=800, n_test=400, model="cnn",
                  model_kwargs={"width": 8}, batch_size=32, eval_every=1),
    "cpu": dict(seeds=[0, 1, 2], rounds=16, lr=2e-3, size=32, n_train=2400, n_test=1200, model="cnn",
                model_kwargs={"width": 8}, batch_size=32, eval_every=2),
    # gpu: see the module docstring (DenseNet-121 at 128 px, 6 rounds x 2 epochs; 7.4 min on paper)
    "gpu": dict(seeds=[0, 1, 2], rounds=6, lr=1e-3, size=128, n_train=2400, n_test=1200, model="densenet121",
                model_kwargs={}, batch_size=32, eval_every=1),
    "full": dict(seeds=[0, 1, 2], rounds=40, lr=1e-3, size=64, n_train=40000, n_test=10000, model="resnet18",
                 model_kwargs={}, batch_size=64, eval_every=2),
}



# =========================================================================== figures
def plot_finding_atlas(atlas: dict):
    """Every finding of :func:`fedpl_core.data.synthetic.finding_atlas` (``name -> (image
    without, image with)``): one column each, the chest without it (top) and with it (bottom);
    the notebook's "what the synthetic findings look like" figure."""
    import matplotlib.pyplot as plt

    from ..report.names import class_name

    names = list(atlas)
    fig, axes = plt.subplots(2, len(names), figsize=(1.1 * len(names), 2.8), squeeze=False)
    for j, name in enumerate(names):
        for i in (0, 1):
            axes[i, j].imshow(atlas[name][i], cmap="gray", vmin=0, vmax=255)
            axes[i, j].set_xticks([])
            axes[i, j].set_yticks([])
        axes[0, j].set_title(class_name(name).replace(" ", "\n"), fontsize=6)
    axes[0, 0].set_ylabel("without", fontsize=7)
    axes[1, 0].set_ylabel("with", fontsize=7)
    return fig


def plot_prevalence(dataset):
    """The training set's labels: each class's prevalence (left, bars from 0) and the
    histogram of the pairwise label correlations between classes (right: how many class
    pairs, integer counts)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from ..report.names import class_name

    labels = np.asarray(dataset.labels, float)
    names = [class_name(c) for c in dataset.class_names]
    corr = np.corrcoef(labels.T)[np.triu_indices(len(names), 1)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    axes[0].bar(names, labels.mean(0), color="#4c72b0")
    axes[0].set_ylim(0, None)
    axes[0].set_ylabel("share of images with the finding")
    axes[0].set_title("prevalence")
    axes[0].tick_params(axis="x", rotation=60)
    plt.setp(axes[0].get_xticklabels(), ha="right", rotation_mode="anchor")
    axes[1].hist(corr[np.isfinite(corr)], bins=20, color="#4c72b0")
    axes[1].xaxis.set_major_locator(MaxNLocator(nbins=5))
    axes[1].yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[1].set_xlabel("correlation of two classes' labels")
    axes[1].set_ylabel("number of class pairs")
    axes[1].set_title("pairwise label correlations")
    fig.tight_layout()
    return fig


def plot_partitions(partitions: dict, dataset):
    """The notebook's label settings side by side (``{title: Partition}``): positives per
    class and client, unannotated cells hatched
    (:func:`fedpl_core.partitions.report.plot_label_reports`)."""
    from ..partitions import plot_label_reports

    return plot_label_reports(partitions, dataset)


__all__ = ["PROFILES", "plot_finding_atlas", "plot_prevalence", "plot_partitions"]
