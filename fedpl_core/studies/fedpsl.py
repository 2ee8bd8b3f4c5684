"""FedPSL (IEEE TMI) experiments behind ``notebooks/01_fedpsl.ipynb``.

The federations of the paper, on the built-in synthetic chest X-rays or on the real data:

* **Table II** (``table="II"``): K = 4 clients of ChestX-ray14-like images (one source,
  no domain shift), C = 6 classes, the class sets of Table I
  (:data:`~fedpl_core.partitions.FEDPSL_TABLE_I`), 1,000 images per client.
* **Table IV** (``table="IV"``): plus two one-class clients from other sources with a
  domain shift (Tuberculosis, COVID-19), K = 6, C = 8 (Table III).
* Test set: for every class an independent balanced block of 300 positive and 300
  negative images from the class's own source; class c is evaluated on its block only
  (``label_mask`` of the test set), as the paper's "balanced test set".

Synthetic data (our choices, the paper uses real data): the ChestX-ray14 clients are drawn
by :func:`~fedpl_core.data.synthetic.make_cxr` with the class prevalences of Table I (the
mean positive rate of each class over the clients that label it), one contiguous pool per
client (the paper's "batches"); the one-class clients are drawn in the synthetic
``tb-source`` / ``covid-source`` hospital styles with the prevalences of Table III (16.7 %
Tuberculosis, 26.2 % COVID-19, which are also the shares of the real databases).  A
client of size n takes the *first* n images of its pool (Fig. 3: "we sample the first n
examples in each batch"), so the sweeps are nested.

Real data (``data_root``): NIH ChestX-ray14 batches 2-5 (folders ``images_002`` ...
``images_005``, or the same ranges of image indices) for the four multi-class clients and
test blocks from the other batches; the TB Chest X-ray Database and the COVID-19
Radiography Database for the one-class clients (a seeded random share of each, test
blocks from the rest).

This module is declarative: it registers the data source ``"fedpsl"`` (dataset kwargs
``table``, ``pool``, ``test_pos``, ``test_neg``, ``strength``, ``nih_root``, ``tb_root``,
``covid_root``) and describes each experiment as settings x methods x seeds for the one
runner, :func:`fedpl_core.runs.study.run_many`, whose tidy frame the helpers of
:mod:`fedpl_core.report.tables` read.  ``which="best"`` is the paper's model selection (the
round with the best mean test AUROC: optimistic, it looks at the test set);
``which="final"`` is the last round.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .. import partitions as P
from ..fl.engine_config import EngineConfig
from ..data.sources.fedpsl import (CLASSES_II, CLASSES_IV, ONE_CLASS, client_classes, nih_batches,  # noqa: F401
                                   real_data, source, synthetic_data, table1_prevalence)
from ..runs.experiment_config import ExperimentConfig
from ..runs.build import build_partition, load_data
from ..methods import available_methods
from ..report.names import display_name
from ..report.tables import fmt_mean_std, per_class_mean_std

#: (label, registry name, kwargs): the paper's methods in the order of Table II, each labelled
#: by its class's ``display_name`` (the paper's FedAVG, FedProx and Oracle train with the
#: weighted partial BCE: "FedAvg (wBCE)", "FedProx (wBCE)", "Oracle (wBCE)").  Methods that are
#: not registered (yet) are skipped by :func:`paper_methods`.
TABLE_II_METHODS: list[tuple[str, str, dict]] = [(display_name(key), key, kw) for key, kw in (
    ("fedavg_wbce", {}),
    ("fedprox_wbce", {"mu": 1e-3}),
    ("fedssp", {}),
    ("fedmatch", {}),
    ("fedmatch_plus", {}),
    ("iml_wbce", {}),
    ("fixmatch", {}),
    ("mixup_pme", {}),
    ("fedpsl_tdma", {}),
    ("fedpsl_tadl", {}),
    ("fedpsl", {}),
    ("oracle_wbce", {}),
)]
TABLE_IV_LABELS = [display_name(k) for k in ("fedavg_wbce", "fedmatch_plus", "fedpsl_tdma", "fedpsl_tadl", "fedpsl",
                                             "oracle_wbce")]
TADL_METHODS = ("fedpsl", "fedpsl_tadl")


#: Methods that pre-train the encoder (federated SimSiam) before the supervised rounds.
PRETRAIN_METHODS = ("fedssp", "fedmatch_plus")
PRETRAIN_ROUNDS = 5


def paper_methods(labels: Sequence[str] | None = None, first_order: bool = False,
                  verbose: bool = True, rounds: int | None = None,
                  cache_dir: str | None = None) -> list[tuple[str, dict]]:
    """The paper's methods (all of Table II, or those named in ``labels``) that are
    registered, as ``(label, config overrides)`` for :func:`~fedpl_core.runs.study.run_many`;
    TADL methods get ``first_order``.  Skipped ones are printed.

    FedSSP and FedMatch+ pre-train the encoder for :data:`PRETRAIN_ROUNDS` rounds of
    federated SimSiam **[choice: the paper gives no length]**; with ``rounds`` (the other
    methods' schedule) they run that many rounds *after* the pre-training, so that every
    method gets the same supervised schedule.  ``cache_dir``: where FedSSP writes the
    pre-trained encoder that FedMatch+ (and later runs with the same settings) reuse."""
    have = set(available_methods())
    chosen = [m for m in TABLE_II_METHODS if labels is None or m[0] in labels]
    out, missing = [], []
    for label, name, kw in chosen:
        if name not in have:
            missing.append(f"{label} ({name})")
            continue
        kw = dict(kw)
        if name in TADL_METHODS:
            kw["first_order"] = first_order
        over: dict[str, Any] = {"method": name, "method_kwargs": kw}
        if name in PRETRAIN_METHODS:
            kw["pretrain_rounds"] = PRETRAIN_ROUNDS
            if cache_dir is not None:
                kw["cache_dir"] = str(cache_dir)
            if rounds is not None:
                over["rounds"] = int(rounds) + PRETRAIN_ROUNDS
        out.append((label, over))
    if missing and verbose:
        print("not available yet, skipped:", ", ".join(missing))
    return out


def tadl_variants(first_order: bool = True) -> list[tuple[str, dict]]:
    """A diagnosis of TADL against FedAvg (wBCE)'s local step (the paper's FedAVG), one
    difference at a time, as ``(label, config overrides)`` for ``run_many`` (the first and
    third rows are Table II's FedAvg (wBCE) and FedPSL w/ TADL, so their runs are shared):

    * ``FedAvg (wBCE), batch 16``: FedAvg (wBCE) on TADL's half-batches: smaller gradient
      batches and BatchNorm statistics over 16 images, without any meta-learning;
    * ``TADL, batch 64``: TADL whose halves have FedAvg (wBCE)'s 32 images;
    * ``TADL, alpha = 0.1``: a look-ahead that moves the encoder (with alpha = 1e-3 the
      SGD step theta - alpha grad is tiny next to the Adam steps, so TADL is close to
      training the encoder on one half with the head updated on the other);
    * ``TADL, second order``: the exact meta-gradient (skipped if ``first_order`` is False:
      it is then the Table II row).
    """
    tadl = {"method": "fedpsl_tadl", "method_kwargs": {"first_order": first_order}}
    avg = display_name("fedavg_wbce")
    rows = [(avg, {"method": "fedavg_wbce", "method_kwargs": {}}),
            (f"{avg}, batch 16", {"method": "fedavg_wbce", "method_kwargs": {}, "batch_size": 16}),
            (display_name("fedpsl_tadl"), tadl),
            ("TADL, batch 64", {**tadl, "batch_size": 64}),
            ("TADL, alpha = 0.1", {"method": "fedpsl_tadl", "method_kwargs": {"first_order": first_order, "alpha": 0.1}})]
    if first_order:
        rows.append(("TADL, second order", {"method": "fedpsl_tadl", "method_kwargs": {"first_order": False}}))
    return rows


# =========================================================================== runs
def config(table: str = "II", pool: int = 1000, image_size: int = 32, test_pos: int = 300, test_neg: int = 300,
           data_seed: int = 0, data_root: str | None = None, n: int | None = None, model: str = "cnn",
           model_kwargs: dict | None = None, engine: EngineConfig | None = None, **dataset_kwargs: Any
           ) -> ExperimentConfig:
    """The base config of a FedPSL experiment: the Table I / III federation with every
    client of size ``n`` (None: the whole pool), the model and the schedule."""
    return ExperimentConfig(
        dataset="fedpsl", data_root=data_root, image_size=image_size, data_seed=data_seed,
        dataset_kwargs={"table": table, "pool": pool, "test_pos": test_pos, "test_neg": test_neg, **dataset_kwargs},
        partition="explicit", partition_kwargs=sizes_kwargs(n), model=model, model_kwargs=dict(model_kwargs or {}),
        engine=engine or EngineConfig())


def sizes_kwargs(sizes: int | Sequence[int] | None) -> dict[str, Any]:
    """``partition_kwargs`` for clients of size ``sizes`` (one n for all, one per client,
    or None for the whole pool), each taking the first n images of its pool."""
    if sizes is not None and not isinstance(sizes, (int, np.integer)):
        sizes = [int(x) for x in sizes]
    return {"sizes": None if sizes is None else (int(sizes) if isinstance(sizes, (int, np.integer)) else sizes),
            "take": "first", "name": "FedPSL Table I/III"}


def partition(cfg: ExperimentConfig) -> P.Partition:
    """The partition a run of ``cfg`` trains on."""
    return build_partition(cfg, load_data(cfg).train)


# =========================================================================== reports
def paper_table(df: pd.DataFrame, which: str = "best", decimals: int = 3) -> pd.DataFrame:
    """The paper's table: methods x (classes, Average), ``mean ± std`` over seeds (AUROC in [0, 1])."""
    t = per_class_mean_std(df, which=which, scale=1.0, decimals=decimals)
    return t.rename(columns={"Mean": "Average"})


def selection_table(df: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """Mean AUROC at the paper's best round (optimistic: picked on the test set) and at
    the last round, side by side, with the mean best round."""
    out = {}
    for which, col in (("best", "Average, best round*"), ("final", "Average, last round")):
        d = df[df["which"] == which].groupby("label", sort=False)["auroc_mean"]
        m, s = d.mean(), d.std(ddof=1)
        out[col] = [fmt_mean_std(a, b, decimals) for a, b in zip(m, s)]
        idx = m.index
    t = pd.DataFrame(out, index=idx)
    t["best round"] = df[df["which"] == "best"].groupby("label", sort=False)["round"].mean().round(1)
    t["last round"] = df[df["which"] == "final"].groupby("label", sort=False)["round"].max()
    t.index.name = "method"
    return t


def sweep_table(df: pd.DataFrame, x: str = "n", which: str = "best", decimals: int = 3) -> pd.DataFrame:
    """Methods x sweep values of ``mean ± std`` mean AUROC."""
    d = df[df["which"] == which].groupby(["label", x], sort=False)["auroc_mean"]
    m, s = d.mean().unstack(x), d.std(ddof=1).unstack(x)
    out = m.astype(object)
    for col in m.columns:
        out[col] = [fmt_mean_std(u, v, decimals) for u, v in zip(m[col], s[col])]
    out.columns.name = x
    return out


def sweep_differences(df: pd.DataFrame, x: str, a: str, b: str, which: str = "final") -> pd.DataFrame:
    """``a`` minus ``b`` (AUROC points, paired over seeds) at every value of the sweep
    column ``x``: columns ``x``, ``diff``, ``sd``, ``95 % CI``, ``pairs``, ``p``."""
    from ..report.tables import difference_columns, paired_difference

    rows = []
    for v, d in df.groupby(x, sort=True):
        r = paired_difference(d, a, b, which=which)
        rows.append({x: v, **difference_columns(r, diff="diff")})
    return pd.DataFrame(rows)


def sweep_trend(df: pd.DataFrame, x: str, label: str, which: str = "final") -> dict:
    """Mean AUROC of ``label`` at the smallest and the largest ``x``, and their paired
    difference (points, largest minus smallest, paired over seeds; t-test ``p``)."""
    from ..report.tables import paired_difference

    d = df[(df["label"] == label) & (df["which"] == which)]
    lo, hi = d[x].min(), d[x].max()
    r = paired_difference(d.assign(label=d[x]), hi, lo, which=None, pair_on=("seed",))
    means = d.groupby(x)["auroc_mean"].mean()
    return {"label": label, "x_lo": lo, "x_hi": hi, "lo": float(means[lo]), "hi": float(means[hi]),
            "diff": r["diff"], "n": r["n"], "p": r["p"]}


def plot_sweep(df: pd.DataFrame, x: str = "n", xlabel: str | None = None, title: str = "", logx: bool = True):
    """Mean AUROC (mean ± std over seeds) against ``x``: best round (left) and last round
    (right), a shared y axis, one legend for the figure, the sweep's values as the x ticks."""
    import matplotlib.pyplot as plt

    from ..report.plotting import figure_legend, method_palette

    d0 = df.assign(label=df["label"].map(display_name))
    methods = dict(zip(d0["label"], df["method"])) if "method" in df else {}
    colors = method_palette(list(dict.fromkeys(d0["label"])), methods)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    values = sorted(d0[x].dropna().unique())
    for ax, which, name in zip(axes, ("best", "final"), ("best round* (paper)", "last round")):
        d = d0[d0["which"] == which].groupby(["label", x], sort=False)["auroc_mean"].agg(["mean", "std"]).reset_index()
        for i, (label, g) in enumerate(d.groupby("label", sort=False)):
            g = g.sort_values(x)
            ax.errorbar(g[x], g["mean"], yerr=g["std"].fillna(0.0), marker="osD^v"[i % 5], capsize=3, label=label,
                        color=colors[label])
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
    return {"FedAvg": pd.DataFrame(fedavg, index=names, columns=cols),
            "TDMA": pd.DataFrame(tdma, index=names, columns=cols)}


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


# =========================================================================== settings
_NO_SIMSIAM = tuple(display_name(k) for k in ("fedssp", "fedmatch", "fedmatch_plus"))
#: The notebook's profiles (:mod:`fedpl_core.studies.profiles`): named fields of :class:`Settings`.
#:
#: * ``smoke``: 32 px, small CNN, 60 images per client, 2 rounds x 1 epoch, 1 seed,
#:   two points per sweep: every cell runs, the numbers mean nothing.
#: * ``cpu``: 28 px, small CNN, 200 images per client (the regime of label scarcity TADL
#:   targets), 16 rounds x 2 local epochs, Adam lr 3e-3, 3 seeds, first-order TADL,
#:   evaluation every 2 rounds, channels-last layout; sweeps of three points; Table V over
#:   32 epochs.  Tables II and IV leave out the SimSiam-pre-trained baselines FedSSP,
#:   FedMatch and FedMatch+ (their runs cost the most: 5 more rounds of pre-training;
#:   ``notebooks/05_benchmark.ipynb`` runs them on the Table I federation), so that the
#:   notebook fits 15 minutes on 2 cores.  **[choice]** lr 3e-3 instead of the paper's
#:   1e-3 (also TADL's outer step beta; its look-ahead alpha stays 1e-3): the small CNN,
#:   trained from scratch for a few hundred steps, gets further in the same rounds (FedAvg (wBCE),
#:   32 px, round 12, 3 seeds: 0.720 against 0.688); 28 px instead of 32 costs about a
#:   quarter less a round and learns no worse (FedAvg (wBCE), lr 3e-3, round 20: 0.793 against
#:   0.792).  ``benchmarks/cpu_schedule.py`` measures both.
#: * ``gpu``: the paper's DenseNet-121 (random init) at 128 px with the ImageNet stem, 64
#:   images per client (label scarcity), the paper's proportions: 10 synchronisations of
#:   the training (paper: 100 epochs, E = 10; here 20 epochs, E = 2), Table V's E at 1/10,
#:   1/2 and all of the training (paper: 10, 20, 50, 100 of 100), Adam 1e-3 (the paper's),
#:   first-order TADL, sweeps of two points, the cpu profile's methods, 3 seeds.  On paper
#:   (no GPU measured it: :func:`fedpl_core.studies.profiles.gpu_estimate` and its stated
#:   assumptions): 5.51 x (128/224)^2 = 1.80 GFLOPs a forward pass, 5.4 a training image;
#:   78 runs, 25,626 training steps (TADL counted x 2.5) on 0.67 M training images, 1.31 M
#:   evaluation images (the balanced blocks every round), 6.0 PFLOP: 121 s at 5 % of the
#:   H100's 989 dense bf16 TFLOPS (30 s at 20 %); the 15 ms floor of an eager DenseNet step
#:   gives 397 s; estimate 7.6 min (budget 10).
#: * ``full``: ResNet-18 at 64 px on synthetic data (DenseNet-121 at 224 px is the
#:   paper's; pass ``model="densenet121"`` with real data), 1,000 images per client,
#:   100 epochs with synchronisation every 10 (10 rounds), 3 seeds, second-order TADL.
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=1e-3, local_epochs=1, eval_every=1, eval_batch_size=400,
                  n=60, image_size=32, test_pos=40, test_neg=40, model="cnn", model_kwargs={"width": 8},
                  first_order=True, fig3_n=[30, 60], fig4_base=60, fig4_n=[15, 60], total_epochs=2, table5_e=[1, 2]),
    "cpu": dict(seeds=[0, 1, 2], rounds=16, lr=3e-3, local_epochs=2, eval_every=2, eval_batch_size=500,
                n=200, image_size=28, test_pos=150, test_neg=150, model="cnn", model_kwargs={"width": 16},
                first_order=True, fig3_n=[50, 100, 200], fig4_base=200, fig4_n=[50, 200, 400], total_epochs=32,
                table5_e=[2, 8, 32], table2_labels=[m for m, _, _ in TABLE_II_METHODS if m not in _NO_SIMSIAM],
                table4_labels=[m for m in TABLE_IV_LABELS if m not in _NO_SIMSIAM]),
    "gpu": dict(seeds=[0, 1, 2], rounds=10, lr=1e-3, local_epochs=2, eval_every=1, eval_batch_size=512,
                n=64, image_size=128, test_pos=150, test_neg=150, model="densenet121", model_kwargs={},
                first_order=True, fig3_n=[32, 64], fig4_base=64, fig4_n=[16, 64], total_epochs=20,
                table5_e=[2, 10, 20], table2_labels=[m for m, _, _ in TABLE_II_METHODS if m not in _NO_SIMSIAM],
                table4_labels=[m for m in TABLE_IV_LABELS if m not in _NO_SIMSIAM]),
    "full": dict(seeds=[0, 1, 2], rounds=10, lr=1e-3, local_epochs=10, eval_every=1, eval_batch_size=512,
                 n=1000, image_size=64, test_pos=300, test_neg=300, model="resnet18", model_kwargs={},
                 first_order=False, fig3_n=[100, 250, 500, 1000, 2500], fig4_base=1000,
                 fig4_n=[100, 250, 500, 1000, 2500, 5000, 10000], total_epochs=100, table5_e=[10, 20, 50, 100]),
}


@dataclass
class Settings:
    """Everything the notebook varies between profiles (a row of :data:`PROFILES` with the
    notebook's parameters applied, :func:`settings`)."""

    seeds: list[int]
    rounds: int                  # communication rounds of Tables II / IV and the sweeps of Fig. 3 / 4
    lr: float                    # Adam's learning rate (and TADL's outer step)
    local_epochs: float
    eval_every: int
    eval_batch_size: int
    n: int                       # images per client (Tables II / IV, Table V)
    image_size: int
    test_pos: int
    test_neg: int
    model: str
    model_kwargs: dict
    first_order: bool            # TADL first-order
    fig3_n: list[int]            # Fig. 3: n of every client
    fig4_base: int               # Fig. 4: size of the normal clients
    fig4_n: list[int]            # Fig. 4: n of the two extreme clients (2 and 3)
    total_epochs: int            # Table V: epochs of training in total
    table5_e: list[int]          # Table V: local epochs between synchronisations
    table2_labels: list[str] | None = None  # Table II's methods (None: all of the paper's)
    table4_labels: list[str] = field(default_factory=lambda: list(TABLE_IV_LABELS))  # Table IV's methods
    profile: str = "cpu"
    device: str = "auto"
    data_seed: int = 0

    @property
    def engine(self) -> EngineConfig:
        """The schedule: Adam, instance normalisation, flips and shifts, batch 32, model
        selection by the best mean test AUROC (the paper's), the profile's engine options."""
        from .profiles import engine_options

        return EngineConfig(rounds=self.rounds, local_epochs=self.local_epochs, eval_every=self.eval_every,
                            eval_batch_size=self.eval_batch_size, optimizer="adam", lr=self.lr,
                            normalize="instance", augment="flip_shift", batch_size=32, device=self.device,
                            progress=False, selection="auroc_mean", **engine_options(self.profile))

    @property
    def pool(self) -> int:
        """Images generated per client: enough for every sweep, so that Table II, Fig. 3,
        Fig. 4 and Table V take their clients' images from the same pools."""
        return max([self.n, self.fig4_base, *self.fig3_n, *self.fig4_n])

    def config(self, table: str = "II", pool: int | None = None, data_seed: int | None = None,
               data_root: str | None = None) -> ExperimentConfig:
        """The base config of the Table I / III federation with clients of size ``n``
        (``data_seed``: None: the settings' own)."""
        data_seed = self.data_seed if data_seed is None else data_seed
        return config(table, pool or self.n, self.image_size, self.test_pos, self.test_neg, data_seed, data_root,
                      n=self.n, model=self.model, model_kwargs=self.model_kwargs, engine=self.engine)


def settings(profile: str | dict = "cpu", **parameters: Any) -> Settings:
    """The notebook's settings: the row of :data:`PROFILES` for ``profile`` with the notebook
    ``parameters`` applied (``seeds``, ``rounds``, ``lr``, ``first_order``, ``data_seed``,
    ``device``; None: the profile's value) by :func:`fedpl_core.studies.profiles.apply_parameters`, or
    a row it returned.

    Model selection is the paper's: the evaluated round with the best mean test AUROC
    (optimistic, labelled so; the last round is reported beside it)."""
    from .profiles import apply_parameters, fields_of

    row = profile if isinstance(profile, dict) else apply_parameters(PROFILES, profile, **parameters)
    return Settings(**fields_of(Settings, row, extra=("workers", "results_dir", "data_root")))


def table2_settings(s: Settings) -> dict[str, dict]:
    """Table II / IV: every client of size n."""
    return {"table": {"partition_kwargs": sizes_kwargs(s.n)}}


def fig3_settings(s: Settings) -> dict[str, dict]:
    """Fig. 3: every client of size n, for each n of the sweep."""
    return {f"n={n}": {"partition_kwargs": sizes_kwargs(n)} for n in s.fig3_n}


def fig4_settings(s: Settings) -> dict[str, dict]:
    """Fig. 4: clients 2 and 3 of size n, the others of size ``fig4_base``."""
    b = s.fig4_base
    # all clients equal: the Table II config itself, so that run is shared, not repeated
    return {f"n={n}": {"partition_kwargs": sizes_kwargs(b if n == b else [b, n, n, b])} for n in s.fig4_n}


def table5_settings(s: Settings) -> dict[str, dict]:
    """Table V: ``total_epochs`` of training, synchronised every E local epochs (T / E rounds)."""
    out = {}
    for e in s.table5_e:
        if s.total_epochs % e:
            raise ValueError(f"E={e} does not divide the {s.total_epochs} epochs")
        out[f"E={e}"] = {"local_epochs": e, "rounds": s.total_epochs // e}
    return out


def setting_value(df: pd.DataFrame) -> pd.Series:
    """The number in a sweep's setting label (``"n=120"`` -> 120, ``"E=2"`` -> 2)."""
    return df["setting"].str.split("=").str[1].astype(int)


# =========================================================================== figures (notebook 01)
def plot_per_class_selection(df: pd.DataFrame, title: str = "Table II per class"):
    """Per-class AUROC of every method at the paper's best round* (left) and the last round
    (right), bars from 0, one legend (the notebook's ``01_table2_per_class``)."""
    import matplotlib.pyplot as plt

    from ..report.plotting import per_class_long, plot_per_class

    fig, axes = plt.subplots(1, 2, figsize=(15, 4.2), sharey=True)
    for ax, which, name in zip(axes, ("best", "final"), ("best round*", "last round")):
        plot_per_class(per_class_long(df, which), ax=ax, title=f"{title}, {name}")
    axes[1].set_ylabel("")
    return fig


def fig4_xlabel(s: "Settings") -> str:
    """The x label of Fig. 4's sweep: the size of the two extreme clients (B and C: the
    second and third, :func:`fig4_settings`) and of the others."""
    return f"images in clients B and C (the others: {s.fig4_base})"


# =========================================================================== the notebook's tables and sentences
#: The comparisons the notebook states under Table II, in this order: (a, b) = "a minus b".
TABLE2_COMPARISONS = [("FedPSL", "FedAvg (wBCE)"), ("FedPSL", "FedProx (wBCE)"), ("FedPSL w/ TDMA", "FedAvg (wBCE)"),
                      ("FedPSL w/ TADL", "FedAvg (wBCE)"), ("IML", "FedAvg (wBCE)"), ("Oracle (wBCE)", "FedPSL"), ("FixMatch", "IML"),
                      ("FedMatch+", "FedMatch"), ("FedSSP", "FedAvg (wBCE)"), ("MixUp-PME", "IML")]


def p_text(p: float | None) -> str:
    """A p-value as text ("no test" with a single seed: None, or NaN in a table's column)."""
    return "no test" if p is None or p != p else f"p = {p:.2g}"


def comparison_sentences(df: pd.DataFrame, pairs: Sequence[tuple[str, str]] = TABLE2_COMPARISONS) -> list[str]:
    """Each pair of ``pairs`` that ``df`` has, as a sentence on the last round
    (:func:`~fedpl_core.report.tables.describe_difference`) with the paper's best-round*
    difference in brackets."""
    from ..report.tables import describe_difference, paired_difference

    labels = set(df["label"])
    out = []
    for a, b in pairs:
        if not {a, b} <= labels:
            continue
        last = describe_difference(paired_difference(df, a, b, which="final"))
        best = paired_difference(df, a, b, which="best")
        out.append(f"{last} [best round*: {best['diff']:+.1f} points, p = {best['p']:.2g}]" if best["p"] is not None
                   else last)
    return out


def diagnosis_sentences(dfd: pd.DataFrame, variants: Sequence[tuple[str, dict]], df2: pd.DataFrame,
                        s: "Settings") -> list[str]:
    """The TADL diagnosis: each variant against FedAvg (wBCE) (last round), then whether FedAvg (wBCE)'s best
    round* lies in the last evaluation period in every seed (its curve still rising: an
    under-fitting regime)."""
    from ..report.tables import describe_difference, paired_difference

    out = [describe_difference(paired_difference(dfd, label, "FedAvg (wBCE)")) for label, _ in variants if label != "FedAvg (wBCE)"]
    best = df2[(df2["label"] == "FedAvg (wBCE)") & (df2["which"] == "best")]
    at_end = int((best["round"] >= s.engine.rounds - s.engine.eval_every + 1).sum())
    out.append(f"FedAvg (wBCE)'s best round* is within the last evaluation period in {at_end} of {len(best)} seeds "
               f"({s.engine.rounds} rounds): " + ("its curve is still rising, an under-fitting regime, where a method "
               "that regularises local training has nothing to correct." if at_end == len(best) else
               "its curve has flattened before the end."))
    return out


def one_class_sentences(df4: pd.DataFrame) -> list[str]:
    """Table IV's one-class, domain-shifted clients: FedPSL and TDMA alone against FedAvg (wBCE) on
    Tuberculosis and COVID-19 (last round, AUROC points)."""
    from ..report.tables import describe_difference, paired_difference

    out = []
    for cls in ("Tuberculosis", "COVID-19"):
        for a in ("FedPSL", "FedPSL w/ TDMA"):
            if {a, "FedAvg (wBCE)"} <= set(df4["label"]):
                out.append(f"{cls}: " + describe_difference(paired_difference(df4, a, "FedAvg (wBCE)", metric=f"auroc:{cls}")))
    return out


def sweep_gain_sentence(gain: pd.DataFrame, x: str, what: str) -> str:
    """:func:`sweep_differences` as one sentence: ``what`` then the difference at every value
    of ``x`` (points, paired over seeds)."""
    return f"{what}: " + "; ".join(f"{x} = {int(getattr(r, x))}: {r.diff:+.1f} ({p_text(r.p)})"
                                   for r in gain.itertuples()) + "."


def table5(df5: pd.DataFrame, df2: pd.DataFrame, which: str = "best") -> pd.DataFrame:
    """Table V: mean AUROC per method and synchronisation interval E (columns "E=<E>"); the
    best-round table adds the Oracle's Table II result (it does not synchronise)."""
    t5 = sweep_table(df5, "E", which)
    if which == "best":
        oracle = df2[(df2["label"] == "Oracle") & (df2["which"] == "best")]["auroc_mean"]
        if len(oracle):
            t5.loc["Oracle"] = fmt_mean_std(oracle.mean(), oracle.std(ddof=1), 3)
    t5.columns = [f"E={e}" for e in t5.columns]
    return t5


def table5_sentences(df5: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """Each method's mean AUROC at the smallest and the largest E (:func:`sweep_trend`)."""
    out = []
    for label in labels:
        t = sweep_trend(df5, "E", label)
        out.append(f"{label}: mean AUROC {t['lo']:.3f} at E = {t['x_lo']} and {t['hi']:.3f} at E = {t['x_hi']} "
                   f"({t['diff']:+.1f} points, paired over {t['n']} seeds: {p_text(t['p'])}).")
    return out


def what_this_run_shows(df2: pd.DataFrame, df4: pd.DataFrame) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on each of the paper's
    claims about FedPSL and its modules (above FedAvg (wBCE) in Tables II and IV, last round), and on
    the one-class clients' classes in Table IV."""
    from ..report.tables import describe_difference, paired_difference, verdict

    out = []
    for name, df in (("Table II", df2), ("Table IV", df4)):
        for a in ("FedPSL", "FedPSL w/ TDMA", "FedPSL w/ TADL"):
            if {a, "FedAvg (wBCE)"} <= set(df["label"]):
                d = paired_difference(df, a, "FedAvg (wBCE)", which="final")
                out.append(f"{name}: the paper's claim that {a} is above FedAvg (wBCE) is {verdict(d)} here "
                           f"({describe_difference(d)}).")
    for cls in ("Tuberculosis", "COVID-19"):
        if {"FedPSL", "FedAvg (wBCE)"} <= set(df4["label"]):
            d = paired_difference(df4, "FedPSL", "FedAvg (wBCE)", metric=f"auroc:{cls}")
            out.append(f"Table IV, {cls} (one client labels it): FedPSL above FedAvg (wBCE) is {verdict(d)} here "
                       f"({describe_difference(d)}).")
    return out


# =========================================================================== the paper's headline claims
def headline_claims(s: Settings) -> list:
    """FedPSL's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 01 on its runs, last round: ``frames`` keys ``"II"`` (Table II), ``"IV"``
    (Table IV), ``"fig3"``, ``"fig4"`` and ``"V"`` (the sweeps, at the profile's extreme
    values: the smallest n of Fig. 3, the largest extreme clients of Fig. 4, the rarest against
    the most frequent synchronisation of Table V)."""
    from ..report.findings import Claim

    avg, prox, psl, tdma, iml, fix = (display_name(k) for k in ("fedavg_wbce", "fedprox_wbce", "fedpsl", "fedpsl_tdma",
                                                               "iml_wbce", "fixmatch"))
    tadl = ("TADL trains the head and the encoder on half a batch each, so it fits more slowly: it costs where "
            "FedAvg under-fits and is level where FedAvg over-fits")
    where_tadl = "notebook 01, 'Why does TADL cost here?'; benchmarks/tadl_overfit.py"
    n_small, n_ext, e_lo, e_hi = min(s.fig3_n), max(s.fig4_n), min(s.table5_e), max(s.table5_e)
    out = [Claim("FedPSL", f"Table II: {psl} above {avg}", psl, avg, "II", mechanism=tadl, evidence=where_tadl),
           Claim("FedPSL", f"Table II: {psl} above {prox}", psl, prox, "II", mechanism=tadl, evidence=where_tadl),
           Claim("FedPSL", f"Table II: TDMA alone above {avg}", tdma, avg, "II",
                 mechanism="TDMA averages each head row over the clients that label its class only",
                 evidence="notebook 01, section 1"),
           Claim("FedPSL", f"Table II: {fix} below {iml}", fix, iml, "II", direction=-1,
                 evidence="notebook 01, Table II")]
    out += [Claim("FedPSL", f"Table IV: {psl} above {avg} on {c} (one client labels it)", psl, avg, "IV",
                  metric=f"auroc:{c}", mechanism=tadl, evidence="notebook 01, Table IV") for c in ONE_CLASS]
    out += [Claim("FedPSL", f"Fig. 3: {psl} above {avg} with small clients", psl, avg, "fig3", setting=f"n={n_small}",
                  mechanism=tadl, evidence="notebook 01, Fig. 3"),
            Claim("FedPSL", f"Fig. 4: TDMA above {avg} with two extreme clients", tdma, avg, "fig4",
                  setting=f"n={n_ext}", evidence="notebook 01, Fig. 4"),
            Claim("FedPSL", f"Table V: rarer synchronisation is worse ({avg})", avg, avg, "V", direction=-1,
                  a_setting=f"E={e_hi}", b_setting=f"E={e_lo}", evidence="notebook 01, Table V")]
    return out


def imagenet_pair(s: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedPSL and FedAvg (wBCE), the paper's FedAVG, as Table II runs them."""
    pair = dict(paper_methods([display_name("fedavg_wbce"), "FedPSL"], first_order=s.first_order, verbose=False))
    return [(lab, pair[lab]) for lab in ("FedPSL", display_name("fedavg_wbce")) if lab in pair]


def imagenet_start(s: Settings, base, results_dir: str, workers: int = 1,
                   force: bool = False) -> pd.DataFrame | None:
    """Does FedPSL's headline (above FedAVG in Table II) hold from an ImageNet start? FedPSL and FedAvg (wBCE) on
    ``base`` (the notebook's ``base2``) in Table II's setting, with the profile's backbone from scratch
    (the notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC; the gpu and full
    profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate 0.3
    min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from .pretrained import imagenet_start as run

    return run(base, imagenet_pair(s), s.seeds, results_dir, s.profile, table2_settings(s)["table"],
               which="final", workers=workers, force=force)
