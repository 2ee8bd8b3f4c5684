"""The introduction's profiles (``notebooks/00_introduction.ipynb``): FedAvg, the partial
loss, Surgical Aggregation, centralised training and the Oracle on the built-in synthetic
chest X-rays with the 8 FedMLP CXR findings, in two label settings.

:data:`PROFILES` holds, per profile, the data (``size`` px, ``n_train`` / ``n_test``
images), the model and the schedule (``rounds`` of 2 local epochs, ``batch_size``, Adam
``lr``, evaluation every ``eval_every`` rounds) and the ``seeds``; the notebook applies
its parameters with :func:`fedpl_core.studies.parameters.apply_parameters`.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.budget.gpu_estimate`
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

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        seeds=[0],
        rounds=2,
        lr=2e-3,
        size=32,
        n_train=800,
        n_test=400,
        model="cnn",
        model_kwargs={"width": 8},
        batch_size=32,
        eval_every=1,
    ),
    "cpu": dict(
        seeds=[0, 1, 2],
        rounds=16,
        lr=2e-3,
        size=32,
        n_train=2400,
        n_test=1200,
        model="cnn",
        model_kwargs={"width": 8},
        batch_size=32,
        eval_every=2,
    ),
    # gpu: see the module docstring (DenseNet-121 at 128 px, 6 rounds x 2 epochs; 7.4 min on paper)
    "gpu": dict(
        seeds=[0, 1, 2],
        rounds=6,
        lr=1e-3,
        size=128,
        n_train=2400,
        n_test=1200,
        model="densenet121",
        model_kwargs={},
        batch_size=32,
        eval_every=1,
    ),
    "full": dict(
        seeds=[0, 1, 2],
        rounds=40,
        lr=1e-3,
        size=64,
        n_train=40000,
        n_test=10000,
        model="resnet18",
        model_kwargs={},
        batch_size=64,
        eval_every=2,
    ),
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


# =========================================================================== the notebook's tables and sentences
def clients_per_class(part, classes: Sequence[str]) -> pd.Series:
    """How many clients of a partition annotate each class (hot: many, cool: few)."""
    return pd.Series(part.masks.sum(0), index=list(classes), name="clients labelling the class")


def hot_cool_table(long: pd.DataFrame, clients: pd.Series) -> pd.DataFrame:
    """Mean per-class AUROC of each method (columns, by its display name) by the number of
    clients that label the class (rows), from :func:`~fedpl_core.report.plotting.per_class_long`'s
    long rows."""
    from ..report.names import display_name

    d = long.assign(clients=long["class"].map(clients))
    t = d.groupby(["label", "clients"], sort=False)["auroc"].mean().unstack(0).round(3)
    t.columns = pd.Index([display_name(c) for c in t.columns], name="method")
    t.index.name = "clients labelling the class"
    return t


def _mid_training(curves: pd.DataFrame, setting: str, a: str, b: str):
    """Paired difference a - b half-way through training (the middle evaluated round)."""
    from ..report.tables import paired_difference

    c = curves[curves["setting"] == setting]
    rounds_ = sorted(c["round"].unique())
    mid = rounds_[len(rounds_) // 2 - 1]
    return paired_difference(c[c["round"] == mid], a, b, which=None), mid


def _peak_then_last(curves: pd.DataFrame, setting: str, label: str):
    """Per seed: the best evaluated round of ``label`` and how far its last round is below
    that peak (points)."""
    c = curves[(curves["setting"] == setting) & (curves["label"] == label)]
    per_seed = c.sort_values("round").groupby("seed")["auroc_mean"]
    peak_round = c.loc[c.groupby("seed")["auroc_mean"].idxmax(), "round"]
    return [int(r) for r in peak_round.tolist()], (per_seed.max() - per_seed.last()) * 100


def findings(df: pd.DataFrame, settings: Sequence[str], methods: Sequence[str], seeds: Sequence[int]) -> list[str]:
    """What the run shows, one paragraph a label setting, computed from its numbers (``df``:
    the ``run_many`` result with histories): the cost of partial labels (the Oracle against
    every partial-label method, paired on the seed), missing-as-negative against the partial
    loss, whether FedAvg declines after a peak, and head dilution (surgical against the
    partial loss half-way and at the last round).  **[choice]** With one seed there is no
    test and the sentence says so; "significantly" means a paired t-test at p < 0.05."""
    from ..report.names import display_name as name
    from ..report.tables import curve_frame, describe_difference, paired_difference
    from .notebook import join

    curves = curve_frame(df)
    final = df[df["which"] == "final"]
    partial = [m for m in methods if m != "oracle"]
    out = []
    for setting in settings:
        d = final[final["setting"] == setting]
        gaps = {m: paired_difference(d, "oracle", m) for m in partial}
        above = [m for m, g in gaps.items() if g["diff"] > 0]
        significant = [m for m in above if gaps[m]["p"] is not None and gaps[m]["p"] < 0.05]
        if len(seeds) < 2:
            verdict = (
                f"the Oracle is above {len(above)} of the {len(partial)} partial-label methods (one seed: no test)"
            )
        elif len(significant) == len(partial):
            verdict = "the Oracle is above every partial-label method (each paired p < 0.05)"
        else:
            verdict = (
                f"the Oracle is significantly above {join(map(name, significant)) or 'none'} of the partial-label "
                f"methods, not above the others at p < 0.05"
            )
        closest = min(gaps, key=lambda m: gaps[m]["diff"])
        lines = [
            f"**{setting}.** The cost of partial labels: {verdict}; the closest is {name(closest)}: "
            + describe_difference(gaps[closest])
            + ".",
            "Missing as negative against the partial loss, last round: "
            + describe_difference(paired_difference(d, "fedavg_pl", "fedavg"))
            + ".",
        ]
        rounds_, drop = _peak_then_last(curves, setting, "fedavg")
        when = f"round {rounds_[0]}" if len(rounds_) == 1 else f"rounds {join(rounds_)} (one per seed)"
        if drop.mean() >= 1.0:
            lines.append(
                f"{name('fedavg')} peaks at {when} and ends {drop.mean():.1f} points (mean over seeds) below its "
                "peak: a decline that fits the false negatives it learns as truth outweighing the signal "
                "later on."
            )
        else:
            lines.append(
                f"{name('fedavg')} does not decline: its last round is within {drop.mean():.1f} points of its peak "
                f"({when})."
            )
        mid, r_mid = _mid_training(curves, setting, "surgical", "fedavg_pl")
        lines.append(
            f"Head dilution: half-way (round {r_mid}), "
            + describe_difference(mid)
            + "; at the last round, "
            + describe_difference(paired_difference(d, "surgical", "fedavg_pl"))
            + "."
        )
        out.append(" ".join(lines))
    return out


def _flag_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def command_line(cfg, out: str | None = None) -> str:
    """The ``python -m fedpl_core run`` command that makes the run of ``cfg`` (an
    :class:`~fedpl_core.runs.experiment_config.ExperimentConfig`): one flag for every field that differs
    from its default (the engine's fields too), so a reader can repeat any run of the notebook
    from a shell and get its numbers (the same config is the same run)."""
    import shlex

    from ..fl.engine_config import EngineConfig
    from ..runs.experiment_config import ExperimentConfig

    def default(f):
        return f.default_factory() if f.default is dataclasses.MISSING else f.default

    parts = ["python -m fedpl_core run"]
    for owner, cls in ((cfg, ExperimentConfig), (cfg.engine, EngineConfig)):
        for f in dataclasses.fields(cls):
            if f.name in ("engine",) or (cls is EngineConfig and f.name == "seed"):
                continue
            v = getattr(owner, f.name)
            if v != default(f):
                parts.append(f"--{f.name.replace('_', '-')} {shlex.quote(_flag_text(v))}")
    if out:
        parts.append(f"--out {shlex.quote(out)}")
    return " \\\n    ".join(parts)


__all__ = [
    "PROFILES",
    "clients_per_class",
    "hot_cool_table",
    "findings",
    "command_line",
    "plot_finding_atlas",
    "plot_prevalence",
    "plot_partitions",
]
