"""Surgical Aggregation (Kulkarni et al., ML4H 2024): the experiments of notebook 03.

* **Ablation** on IID subsets of one NIH-like data set whose clients' label sets cover
  all 14 findings: (a) the number of clients K (each client's data shrinking as 1/K;
  random label sets, every class held by at least one client:
  :class:`~fedpl_core.partitions.RandomCover`) and (b) the number of classes shared by
  all K = 4 clients (:class:`~fedpl_core.partitions.SharedClasses`: the other classes
  are each unique to one client).  Methods: a fully labelled model on all the data (the
  paper's "NIH baseline", our Oracle), Centralized (missing = negative), FL (missing =
  negative), FL + partial loss, FL + surgical aggregation, all with the BatchNorm
  strategy ``Settings.bn`` (FedBN+ as in the paper in the full setting).  Evaluated on
  the held-out test set and an external test set from another domain (MIMIC's role).
  Mean +- SD over the iterations (the K or shared-class values) and paired t-tests
  across iterations.
* **Non-IID**: an NIH-like source (14 findings) and a CheXpert-like source (13
  findings, 7 shared, 20 in the union) from two domains, one client each, (i) with the
  7 shared classes only and (ii) with all 20.  Evaluated on each source's test set
  with its own classes (split into shared / unique classes) and on an external, fully
  labelled test set from a third domain with all 20 classes (NIH classes and CheXpert
  classes reported separately).  Mean +- SD over classes and paired t-tests across
  class-level AUROCs.

This module is declarative.  It registers two data sources for the one runner
(:mod:`fedpl_core.runs`):

* ``"surgical-ablation"``: train = the NIH-like pool (``n_train``), test = its held-out
  test set (``n_test``), extra = ``{"external": ...}`` (``n_external``), public = the
  images that calibrate BatchNorm (``n_public``; 0: none);
* ``"surgical-noniid"`` (``heterogeneous``): train = the NIH + CheXpert union (one client
  per source, partition ``by_source``), no test set, extra = ``{"NIH": ..., "CheXpert":
  ..., "external": ...}`` (each source's test set with its own classes, the external
  set), public;

both synthetic, or read from ``data_root`` (NIH, CheXpert, MIMIC-CXR-JPG:
:func:`load_real_data`).  :func:`settings` gives the smoke / cpu / gpu / full :class:`Settings` (:data:`PROFILES`);
:func:`ablation_config` / :func:`noniid_config` the base configs,
:func:`ablation_settings` the iterations (``{K or shared classes: overrides}``) and
:func:`ablation_methods` / :func:`noniid_methods` the rows (``[(label, overrides)]``),
so that each experiment is one call of :func:`fedpl_core.runs.study.run_many`, whose
tidy frame the tables and figures below read (through :func:`long_form`).

Every method follows the paper's protocol (the head warm-up block :class:`~fedpl_core.methods.blocks.HeadWarmup`
through ``get_method(..., warmup_epochs=, warmup_lr=)``): the same initial model
(``torch.manual_seed(seed)``, BatchNorm statistics calibrated on the public images when
no pre-trained weights are used: ``ExperimentConfig.calibrate_bn``), head warm-up with
the encoder frozen, FedBN+ with BatchNorm frozen on the clients too, and selection of the
global model with the lowest mean local validation BCE (early stopping with ``patience``).
``which="best"`` is that selected model (the paper's protocol), ``which="final"`` the
last round.

Models that are not one global model (PFL, the individually trained models ``local``)
are scored with the package's one policy
(:func:`fedpl_core.fl.evaluation.predict_personalised`): class c's score is the mean, over
the clients that annotate c, of their own model's score.  So each source's own classes
are scored by its own model, a shared class by the mean of both sources' models, and
every column has a number (the external set's union of classes included).  Before the
one runner this study scored them its own way: PFL with the client model of the source
that "owns" the column ("-" on the external set with both sources' classes) and each
individually trained model separately ("-" where it lacks a class of the column); those
rows (PFL, Individual) therefore differ from the earlier tables, every global-model row
(Oracle, Central, FL, FL + PL, FL + SA) is unchanged.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .. import partitions as P
from ..fl.engine_config import EngineConfig
from ..data.sources.surgical import (CHEXPERT_CLASSES, DOMAINS, NIH_CLASSES, NIH_TO_PAPER,  # noqa: F401
                                     UNION_CLASSES, ablation_source, noniid_source, real_data)
from ..runs.experiment_config import ExperimentConfig
from ..runs.build import build_partition, load_data
from .profiles import engine_options
from ..report.tables import (describe_difference, difference_columns, fmt_mean_std, paired_difference, paired_ttest,
                             paired_values, stars, verdict)

STRATEGIES = {"FedAvg": "aggregate", "FedBN": "local", "FedBN+": "frozen"}
BN_NAMES = {v: k for k, v in STRATEGIES.items()}


# =========================================================================== settings
@dataclass
class Settings:
    """Everything that defines the notebook's runs; the defaults are the cpu profile's, a row
    of :data:`PROFILES` replaces them (:func:`settings`)."""

    profile: str = "cpu"
    seeds: list = field(default_factory=lambda: [0, 1, 2])
    seed: int = 0  # data seed
    device: str = "auto"
    data_root: str | None = None
    results_dir: str = "results/03_surgical"
    pretrained: bool = False
    # model and data
    model: str = "cnn"
    model_kwargs: dict = field(default_factory=lambda: {"width": 8})
    image_size: int = 28
    normalize: str = "fixed"
    augment: str = "none"
    prevalence_floor: float | None = 0.1
    strength: float = 1.0
    calibrate_bn: bool = True
    n_public: int = 256
    # training (the paper: 1 local epoch per round, batch 64, lr 5e-5, warm-up 15 epochs at 5e-3)
    rounds: int = 16
    local_epochs: float = 1.0
    batch_size: int = 32
    lr: float = 3e-3
    warmup_epochs: float = 1
    warmup_lr: float = 5e-3
    client_val_fraction: float = 0.15
    patience: int | None = None
    #: each client keeps its Adam state across rounds, as the released code does (one
    #: ``model.compile`` per client before FL, ``model.fit`` every round:
    #: ``src/federated.py`` L232-243, L261); "reset" gives a fresh Adam each round
    optimizer_state: str = "keep"
    # ablation
    n_train: int = 800
    n_test: int = 300
    n_external: int = 300
    k_values: list = field(default_factory=lambda: [2, 4, 8])
    shared_values: list = field(default_factory=lambda: [0, 4, 14])
    shared_clients: int = 4
    #: BatchNorm strategy of the ablation's FL methods and of the non-federated models
    #: (Oracle, Central, individually trained).  The paper: FedBN+ ("frozen") for all; the
    #: smoke and cpu profiles use "aggregate" (ordinary BatchNorm), because a randomly initialised
    #: model has no pre-trained statistics worth freezing.
    bn: str = "aggregate"
    # non-IID
    n_nih: int = 400
    n_chexpert: int = 600
    n_noniid_test: int = 300
    max_images: int | None = None  # real data: subsample each source (None = all)
    #: real data: keywords of :func:`load_real_data` (``nih``, ``chexpert``, ``mimic``,
    #: ``mimic_lt_csv``, ``cache_dir``)
    data_kwargs: dict = field(default_factory=dict)

    def engine(self) -> EngineConfig:
        """The schedule (the run's ``seed`` is the config's)."""
        return EngineConfig(rounds=self.rounds, local_epochs=self.local_epochs, batch_size=self.batch_size,
                            lr=self.lr, normalize=self.normalize, augment=self.augment,
                            client_val_fraction=self.client_val_fraction, selection="val_loss",
                            selection_mode="min", patience=self.patience, optimizer_state=self.optimizer_state,
                            device=self.device, progress=False, **engine_options(self.profile))


#: The notebook's profiles (:mod:`fedpl_core.studies.profiles`): named fields of :class:`Settings`,
#: replacing its defaults.
#:
#: * ``smoke``: 400 images at 28 px, a slim CNN, 2 rounds, 1 seed, two points per
#:   ablation: every cell runs, the numbers mean nothing.
#: * ``cpu``: the class defaults: 800 images, 16 rounds, 3 seeds, K in 2, 4, 8.
#: * ``gpu``: the paper's DenseNet-121 (random init, BatchNorm calibrated on public images,
#:   FedBN+) at 128 px with the ImageNet stem, batch 64 and one local epoch a round as the
#:   paper, 10 rounds with a 1-epoch head warm-up (the paper's share: 15 epochs to 150
#:   rounds), no early stopping (every round counted), 800 training images in the
#:   ablation and 400 + 600 in the non-IID setting (the cpu profile's), test sets of 400,
#:   three points per ablation, 3 seeds.  On paper (no GPU measured it:
#:   :func:`fedpl_core.studies.profiles.gpu_estimate` and its stated assumptions): 5.51 x
#:   (128/224)^2 = 1.80 GFLOPs a forward pass, 5.4 a training image; 141 runs, 21,697
#:   training steps on 1.10 M training images, 1.95 M evaluation images (held-out, external
#:   and validation sets every round), 9.5 PFLOP: 191 s at 5 % of the H100's 989 dense bf16
#:   TFLOPS (48 s at 20 %); the 15 ms floor of an eager DenseNet step gives 353 s; estimate
#:   7.3 min (budget 10).
#: * ``full``: the paper's schedule (150 rounds, warm-up 15 epochs, early stopping after
#:   25) with ResNet-18 at 64 px on synthetic data; on real data (``data_root``) and with
#:   ImageNet weights (``pretrained``) :func:`profiles` adds :data:`FULL_REAL_DATA` and
#:   :data:`FULL_PRETRAINED` to this row.
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=3e-3, n_train=400, n_test=200, n_external=200, k_values=[2, 4],
                  shared_values=[0, 14], n_nih=200, n_chexpert=300, n_noniid_test=200, n_public=128),
    "cpu": dict(seeds=[0, 1, 2], rounds=16, lr=3e-3),
    "gpu": dict(seeds=[0, 1, 2], rounds=10, lr=5e-4, model="densenet121", model_kwargs={"pretrained": False},
                image_size=128, normalize="fixed", augment="flip_shift", prevalence_floor=None, bn="frozen",
                calibrate_bn=True, n_public=512, batch_size=64, warmup_epochs=1, warmup_lr=5e-3,
                client_val_fraction=0.125, patience=None, n_train=800, n_test=400, n_external=400,
                k_values=[2, 4, 8], shared_values=[0, 4, 14], n_nih=400, n_chexpert=600, n_noniid_test=400),
    "full": dict(seeds=[0, 1, 2], rounds=150, lr=5e-4, model="resnet18", model_kwargs={"pretrained": False},
                 image_size=64, normalize="fixed", augment="flip_shift", prevalence_floor=None, bn="frozen",
                 calibrate_bn=True, n_public=1024, batch_size=64, warmup_epochs=15, warmup_lr=5e-3,
                 client_val_fraction=0.125, patience=25, n_train=20000, n_test=4000, n_external=4000,
                 k_values=[2, 3, 4, 5, 6, 8, 10], shared_values=[0, 1, 2, 4, 8, 12, 14], n_nih=15000,
                 n_chexpert=30000, n_noniid_test=4000),
}
#: The full profile on real data: DenseNet-121 at 224 px, as the paper.
FULL_REAL_DATA: dict[str, Any] = dict(model="densenet121", image_size=224)
#: The full profile with ImageNet weights: ImageNet normalisation, no BatchNorm calibration
#: (FedBN+ then freezes the pre-trained statistics), lr 5e-5.
FULL_PRETRAINED: dict[str, Any] = dict(model_kwargs={"pretrained": True}, normalize="imagenet", calibrate_bn=False,
                                       lr=5e-5)


def profiles(data_root: Any = None, pretrained: Any = False) -> dict[str, dict[str, Any]]:
    """:data:`PROFILES` for the notebook's data (``data_root``: real data) and weights
    (``pretrained``; text such as ``"true"`` is read as papermill passes it): the full row
    takes :data:`FULL_REAL_DATA` and / or :data:`FULL_PRETRAINED`."""
    from .profiles import notebook_parameters

    checked = notebook_parameters(data_root=data_root, pretrained=pretrained)
    full = {**PROFILES["full"], **(FULL_REAL_DATA if checked["data_root"] else {}),
            **(FULL_PRETRAINED if checked["pretrained"] else {})}
    return {**PROFILES, "full": full}


def settings(profile: str | dict = "cpu", **parameters: Any) -> Settings:
    """The notebook's settings: the row of :func:`profiles` for ``profile`` with the notebook
    ``parameters`` applied (``seeds``, ``rounds``, ``lr``, ``data_seed``, ``device``,
    ``data_root``, ``results_dir``, ``pretrained``; None: the profile's value) by
    :func:`fedpl_core.studies.profiles.apply_parameters`, or a row it returned."""
    from .profiles import apply_parameters, fields_of

    if isinstance(profile, dict):
        row = dict(profile)
    else:
        row = apply_parameters(profiles(parameters.get("data_root"), parameters.get("pretrained", False)), profile,
                               **parameters)
    if "data_seed" in row:
        row["seed"] = row.pop("data_seed")
    if row.get("results_dir") is None:  # None: the class default
        row.pop("results_dir", None)
    return Settings(**fields_of(Settings, row, extra=("workers",)))


def make_settings(profile: str = "cpu", seed: int = 0, device: str = "auto", data_root: str | None = None,
                  results_dir: str = "results/03_surgical", pretrained: bool = False, **overrides: Any) -> Settings:
    """:func:`settings` with the data seed ``seed``; ``overrides`` then replace any field
    (the benchmark's image size, model and data sizes)."""
    st = settings(profile, data_seed=seed, device=device, data_root=data_root, results_dir=results_dir,
                  pretrained=pretrained)
    return dataclasses.replace(st, **overrides)


def load_real_data(data_root: str, st: Settings, **kwargs: Any) -> dict[str, Any]:
    """:func:`real_data` with the settings' image size, seed, ``max_images`` and
    public images (``n_public`` when ``calibrate_bn``); ``kwargs`` (or
    ``st.data_kwargs``) name the folders, ``mimic_lt_csv`` and ``cache_dir``."""
    return real_data(data_root, st.image_size, st.seed, st.max_images, st.n_public if st.calibrate_bn else 0,
                     **{**st.data_kwargs, **kwargs})


# =========================================================================== configs
def _data_kwargs(st: Settings) -> dict[str, Any]:
    kw: dict[str, Any] = {"n_external": st.n_external, "n_public": st.n_public if st.calibrate_bn else 0}
    if st.data_root:
        kw.update(max_images=st.max_images, **st.data_kwargs)
    else:
        kw.update(prevalence_floor=st.prevalence_floor, strength=st.strength)
    return kw


def _config(st: Settings, **fields: Any) -> ExperimentConfig:
    return ExperimentConfig(data_root=st.data_root, image_size=st.image_size, data_seed=st.seed, model=st.model,
                            model_kwargs=dict(st.model_kwargs), calibrate_bn=st.calibrate_bn, engine=st.engine(),
                            seed=st.seed, **fields)


def ablation_config(st: Settings) -> ExperimentConfig:
    """The ablation's base config: the ``surgical-ablation`` source, an IID split (no
    patient in two clients) with random covering label sets; :func:`ablation_settings`
    gives each iteration's clients and partition."""
    return _config(st, name="surgical-ablation", dataset="surgical-ablation", n_train=st.n_train, n_test=st.n_test,
                   dataset_kwargs=_data_kwargs(st), split="iid", split_kwargs={"group_aware": True},
                   partition="random_cover", num_clients=st.k_values[0], partition_kwargs={"seed": st.seed * 1000})


def ablation_settings(st: Settings, kind: str) -> dict[int, dict[str, Any]]:
    """The iterations of ablation ``kind`` as ``{value: config overrides}``, partition
    seeds ``seed * 1000 + i``: (a) ``"clients"``: K in ``st.k_values`` equal IID shares
    (no patient in two clients) with random covering label sets; (b) ``"shared"``:
    ``st.shared_clients`` clients, ``value`` classes shared by all, the others unique to
    one client."""
    split = {"split": "iid", "split_kwargs": {"group_aware": True}}
    if kind == "clients":
        return {k: {**split, "num_clients": k, "partition": "random_cover",
                    "partition_kwargs": {"seed": st.seed * 1000 + i}} for i, k in enumerate(st.k_values)}
    if kind == "shared":
        return {v: {**split, "num_clients": st.shared_clients, "partition": "shared_classes",
                    "partition_kwargs": {"num_shared": v, "seed": st.seed * 1000 + i}}
                for i, v in enumerate(st.shared_values)}
    raise ValueError(f"unknown ablation kind {kind!r}; use 'clients' or 'shared'")


def _protocol(st: Settings, **kw: Any) -> dict[str, Any]:
    """``method_kwargs`` with the paper's head warm-up."""
    return {**kw, "warmup_epochs": st.warmup_epochs, "warmup_lr": st.warmup_lr}


def ablation_methods(st: Settings) -> list[tuple[str, dict[str, Any]]]:
    """The ablation's rows, all with BatchNorm strategy ``st.bn`` (the paper: FedBN+).
    The Oracle trains on the whole pool as one client with every label (its config is
    the same in every iteration, so it runs once and is cached)."""
    kw = _protocol(st, bn_policy=st.bn)
    oracle = {"method": "oracle", "method_kwargs": kw, "num_clients": 1, "split": "iid", "split_kwargs": {},
              "partition": "all", "partition_kwargs": {}}
    return [("Oracle", oracle),
            ("Central", {"method": "centralized", "method_kwargs": kw}),
            ("FL", {"method": "fedavg", "method_kwargs": kw}),
            ("FL + PL", {"method": "fedavg_pl", "method_kwargs": kw}),
            ("FL + SA", {"method": "surgical", "method_kwargs": kw})]


def noniid_config(st: Settings, heterogeneous: bool) -> ExperimentConfig:
    """The non-IID base config: the ``surgical-noniid`` source, one client per source.
    (i) ``heterogeneous=False``: the 7 shared classes; (ii) True: all 20."""
    kw = {**_data_kwargs(st), "heterogeneous": bool(heterogeneous), "n_nih": st.n_nih, "n_chexpert": st.n_chexpert}
    return _config(st, name=f"surgical-noniid-{'heterogeneous' if heterogeneous else 'shared'}",
                   dataset="surgical-noniid", n_train=st.n_nih + st.n_chexpert, n_test=st.n_noniid_test,
                   dataset_kwargs=kw, partition="by_source", num_clients=None,
                   partition_kwargs={"name": "by source"})


def class_orders(cfg: ExperimentConfig) -> dict[str, list[str]]:
    """Each source's own class order (its data set's columns), client name -> classes."""
    extra = load_data(cfg).extra
    return {s: list(extra[s].class_names) for s in ("NIH", "CheXpert")}


def noniid_methods(st: Settings, orders: dict[str, list[str]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The non-IID tables' rows: individually trained (``local``), PFL with FedAvg /
    FedBN / FedBN+, Central, and FL, FL + PL, FL + SA with FedAvg and FedBN+.  ``orders``
    (:func:`class_orders`): each FL + SA client's head in its source's own class order."""
    rows = [("Individual", "local", _protocol(st, bn_policy=st.bn))]
    rows += [(f"PFL ({s})", "pfl", _protocol(st, bn_policy=STRATEGIES[s])) for s in ("FedAvg", "FedBN", "FedBN+")]
    rows.append(("Central", "centralized", _protocol(st, bn_policy=st.bn)))
    sa = {} if orders is None else {"class_order": {k: list(v) for k, v in orders.items()}}
    for fam, method, extra in (("FL", "fedavg", {}), ("FL + PL", "fedavg_pl", {}), ("FL + SA", "surgical", sa)):
        rows += [(f"{fam} ({s})", method, _protocol(st, bn_policy=STRATEGIES[s], **extra))
                 for s in ("FedAvg", "FedBN+")]
    return [(label, {"method": m, "method_kwargs": kw}) for label, m, kw in rows]


def partition(cfg: ExperimentConfig) -> P.Partition:
    """The partition a run of ``cfg`` trains on."""
    return build_partition(cfg, load_data(cfg).train)


def random_label_sets(num_classes: int, num_clients: int, seed: int = 0, extra: float = 0.25,
                      min_classes: int = 2) -> np.ndarray:
    """``[K, C]`` bool: random label sets whose union is every class.  Each class is given
    to one random client (coverage), then every client takes each other class with
    probability ``extra``; a client with fewer than ``min_classes`` gets random extra ones.
    The reference of :class:`~fedpl_core.partitions.RandomCover` (``partition="random_cover"``),
    which the ablation uses."""
    rng = np.random.default_rng(seed)
    m = rng.random((num_clients, num_classes)) < extra
    m[rng.integers(0, num_clients, num_classes), np.arange(num_classes)] = True
    for k in range(num_clients):
        while m[k].sum() < min(min_classes, num_classes):
            m[k, rng.integers(num_classes)] = True
    return m


# =========================================================================== long form
_AUROC = re.compile(r"^(?:(?P<set>.+)/)?auroc:(?P<cls>.+)$")


def table_columns(df: pd.DataFrame) -> dict[str, tuple[str, list[str]]]:
    """The table columns of a tidy frame, ``{column: (set prefix, classes)}``: the
    ablation's ``held-out test`` / ``external test``; the non-IID experiment's ``NIH``,
    ``CheXpert``, ``External``, their shared / unique classes and the external set's NIH
    / CheXpert classes (empty columns left out)."""
    sets: dict[str, list[str]] = {}
    for col in df.columns:
        m = _AUROC.match(str(col))
        if m:
            sets.setdefault(f"{m['set']}/" if m["set"] else "", []).append(m["cls"])
    if "NIH/" in sets and "CheXpert/" in sets:
        nih, chx, ext = sets["NIH/"], sets["CheXpert/"], sets.get("external/", [])
        shared = [c for c in nih if c in chx]
        cols = {"NIH": ("NIH/", nih), "CheXpert": ("CheXpert/", chx), "External": ("external/", ext),
                "NIH: shared": ("NIH/", shared), "NIH: unique": ("NIH/", [c for c in nih if c not in shared]),
                "CheXpert: shared": ("CheXpert/", shared),
                "CheXpert: unique": ("CheXpert/", [c for c in chx if c not in shared]),
                "External: NIH classes": ("external/", [c for c in ext if c in nih]),
                "External: CheXpert classes": ("external/", [c for c in ext if c in chx])}
    else:
        cols = {"held-out test": ("", sets.get("", [])), "external test": ("external/", sets.get("external/", []))}
    return {k: v for k, v in cols.items() if v[1]}


def long_form(df: pd.DataFrame) -> pd.DataFrame:
    """The runner's tidy frame (:func:`~fedpl_core.runs.study.run_many`) as long rows:
    one per run, ``which``, table column and class, with its AUROC (NaN: not defined,
    e.g. a class without positives in the test set)."""
    ids = [c for c in ("setting", "label", "method", "seed", "which", "round") if c in df.columns]
    parts = []
    for column, (prefix, classes) in table_columns(df).items():
        for c in classes:
            parts.append(df[ids].assign(column=column, cls=c, auroc=pd.to_numeric(df[f"{prefix}auroc:{c}"])))
    return pd.concat(parts, ignore_index=True)


# =========================================================================== tables
def _fmt(mean: float, sd: float, mark: str = "") -> str:
    return fmt_mean_std(mean, sd, 3) + (f" {mark}" if mark else "")


def _mark(a: pd.Series, b: pd.Series) -> str:
    """Stars of a paired t-test of ``a`` against ``b`` on their common index ("ns": p >= 0.05)."""
    common = a.dropna().index.intersection(b.dropna().index)
    if len(common) < 2 or np.allclose(a[common], b[common]):
        return ""
    return stars(paired_ttest(a[common], b[common])[1]) or "ns"


def _reference(label: str, labels: Sequence[str], default: str) -> str:
    """FL + SA with the row's own strategy when there is one, else ``default``."""
    strat = label[label.find("(") + 1:-1] if label.endswith(")") and "(" in label else ""
    cand = f"FL + SA ({strat})"
    return cand if strat and cand in labels else default


def ablation_summary(df: pd.DataFrame, which: str = "best") -> pd.DataFrame:
    """Mean AUROC over classes (and seeds) per (setting, label, column) of a tidy frame."""
    d = long_form(df[df["which"] == which]).dropna(subset=["auroc"])
    return d.groupby(["setting", "label", "column"], sort=False)["auroc"].mean().reset_index()


def ablation_table(df: pd.DataFrame, which: str = "best", reference: str = "FL + SA") -> pd.DataFrame:
    """Rows: methods; columns: held-out / external test; cells: mean ± SD over the
    iterations of the mean AUROC, with stars of a paired t-test against ``reference``
    across iterations (ns: p >= 0.05, * < 0.05, ** < 0.01, *** < 0.001).  ``df``: the
    tidy frame of ``run_many``; ``which="best"``: the models selected by validation loss."""
    s = ablation_summary(df, which)
    labels = list(dict.fromkeys(s["label"]))
    cols = list(dict.fromkeys(s["column"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=cols, dtype=object)
    for c in cols:
        piv = s[s["column"] == c].pivot(index="setting", columns="label", values="auroc")
        for lab in labels:
            v = piv[lab].dropna()
            mark = _mark(piv[lab], piv[reference]) if lab != reference and reference in piv else ""
            # the Oracle is one run shown in every iteration: no spread to report
            spread = v.std(ddof=1) if v.nunique() > 1 else float("nan")
            out.loc[lab, c] = _fmt(v.mean(), spread, mark)
    return out


def noniid_table(df: pd.DataFrame, columns: Sequence[str], which: str = "best",
                 reference: str = "FL + SA (FedBN+)") -> pd.DataFrame:
    """Rows: methods; columns: ``columns`` (of :func:`table_columns`); cells: mean ± SD
    over the column's classes of the class AUROCs (each the mean over seeds), "-" where
    there is none, stars of a paired t-test across class AUROCs against FL + SA with the
    row's strategy (``reference`` for rows without one)."""
    d = long_form(df[df["which"] == which])
    labels = list(dict.fromkeys(d["label"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=list(columns), dtype=object)
    for c in columns:
        per_class = (d[d["column"] == c].groupby(["label", "cls"], sort=False)["auroc"].mean()
                     .unstack("label").astype(float))
        for lab in labels:
            v = per_class[lab].dropna() if lab in per_class else pd.Series(dtype=float)
            if v.empty:
                out.loc[lab, c] = "-"
                continue
            ref = _reference(lab, labels, reference)
            mark = _mark(per_class[lab], per_class[ref]) if lab != ref and ref in per_class else ""
            out.loc[lab, c] = _fmt(v.mean(), v.std(ddof=1) if len(v) > 1 else float("nan"), mark)
    return out


def class_difference(df: pd.DataFrame, column: str, a: str, b: str, which: str = "best") -> dict:
    """``a`` minus ``b`` on one table column (e.g. ``"NIH: unique"``), paired across the
    column's classes (each class AUROC the mean over seeds), as the paper tests: the
    :func:`~fedpl_core.report.tables.paired_difference` dict (``n`` = classes)."""
    d = long_form(df[df["which"] == which])
    per_class = d[d["column"] == column].groupby(["label", "cls"])["auroc"].mean().reset_index()
    return paired_difference(per_class.rename(columns={"auroc": "auroc_mean"}), a, b, which=None, pair_on=("cls",))


def gap_by_round(df: pd.DataFrame, a: str, b: str,
                 columns: Sequence[str] = ("NIH: unique", "CheXpert: unique", "NIH: shared", "CheXpert: shared")
                 ) -> pd.DataFrame:
    """``a`` minus ``b`` round by round on the non-IID experiment's columns, from the per-round
    histories of ``run_many(..., histories=True)``: one row per (round, column) with the mean
    over the column's classes of the class AUROC difference (points; each class AUROC the mean
    over seeds), the two-sided paired t-test over those classes (as :func:`class_difference`
    tests) with its 95 % CI, and the number of classes.

    FL + SA and FL + PL differ only in the head rows of the classes a client lacks: FL + PL
    averages a unique class's row with the other clients' rows of it, which the partial loss
    leaves untouched, so the class moves at a fraction of its speed.  This shows when that
    dilution costs and whether it is still there at the rounds the models are selected."""
    rows = []
    for (_, label, seed), hist in df.attrs["histories"].items():
        if label not in (a, b):
            continue
        for rec in hist:
            sets = {src: rec[f"{src}/class_names"] for src in ("NIH", "CheXpert") if f"{src}/class_names" in rec}
            shared = set.intersection(*(set(v) for v in sets.values())) if len(sets) > 1 else set()
            for src, names in sets.items():
                for c, v in zip(names, rec[f"{src}/auroc_per_class"]):
                    rows.append({"label": label, "seed": seed, "round": rec["round"], "cls": c, "auroc": v,
                                 "column": f"{src}: {'shared' if c in shared else 'unique'}"})
    long = pd.DataFrame(rows)
    per = long.groupby(["round", "column", "cls", "label"])["auroc"].mean().unstack("label").dropna()
    out = []
    for (r, col), d in per.groupby(level=["round", "column"]):
        if col not in columns:
            continue
        gap = paired_values(d[a], d[b])
        out.append({"round": r, "column": col, **difference_columns(gap, diff="gap", sd=False)})
    out = pd.DataFrame(out).rename(columns={"pairs": "classes"})
    out["p"] = out["p"].astype(float)  # no test (one class): NaN, so the column compares with numbers
    return out


def best_vs_last(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean AUROC of the selected (``best``: lowest validation loss) and the last-round
    (``final``) models per method and column, with the mean selected round."""
    d = long_form(df).dropna(subset=["auroc"])
    if columns is not None:
        d = d[d["column"].isin(columns)]
    g = d.groupby(["label", "column", "which"], sort=False)["auroc"].mean().unstack("which")
    g = g[[w for w in ("best", "final") if w in g.columns]]
    g["best round"] = d[d["which"] == "best"].groupby(["label", "column"], sort=False)["round"].mean()
    return g.round(3)


# =========================================================================== figures
def plot_ablation(df: pd.DataFrame, xlabel: str, which: str = "best", title: str = ""):
    """Mean AUROC per iteration (x: the number of clients or of shared classes) and method,
    one panel per test set, the methods coloured by their classes (``df``'s ``method``
    column); the Oracle (one run, the same at every x: it trains on the whole pool) dashed;
    whole-number x ticks; one legend for the figure."""
    import matplotlib.pyplot as plt

    from ..report.plotting import MARKERS, figure_legend, method_palette

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

    from ..report.plotting import figure_legend

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
        sns.barplot(d[d["source"] == src], x="label", y="auroc", hue="classes", hue_order=["shared", "unique"],
                    order=order, errorbar="sd", ax=ax, palette=["#9ecae1", "#3182bd"], err_kws={"linewidth": 1})
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

    from ..report.plotting import figure_legend, integer_ticks

    groups = list(gaps.groupby("strategy", sort=False)) if "strategy" in gaps else [("", gaps)]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.4), sharey=True, squeeze=False)
    columns = list(dict.fromkeys(gaps["column"]))
    colors = dict(zip(columns, ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b"]))
    for ax, (strategy, g) in zip(axes[0], groups):
        for col in columns:
            gc = g[g["column"] == col].sort_values("round")
            ax.plot(gc["round"], gc["gap"], marker="o", ms=3, ls="-" if "unique" in col else ":", color=colors[col],
                    label=col)
        ax.axhline(0, color="black", lw=0.5)
        ax.set_title(f"{a} - {b}" + (f" ({strategy})" if strategy else ""))
        ax.set_xlabel("round")
        integer_ticks(ax.xaxis)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("AUROC points (mean over classes)")
    figure_legend(fig, title="test classes")
    return fig


# =========================================================================== the notebook's tables and sentences
def settings_table(st: Settings) -> pd.DataFrame:
    """The notebook's settings, one row a field (folders as :func:`fedpl_core.base.paths.shown`
    writes them: no machine path)."""
    from ..base.paths import shown

    out = {}
    for k, v in vars(st).items():
        if k in ("results_dir", "data_root") and v:
            out[k] = shown(v, "FEDPL_RESULTS")
        elif isinstance(v, (list, tuple)):
            out[k] = ", ".join(map(str, v))  # prose, not a Python list
        else:
            out[k] = str(v)
    return pd.Series(out, name="value").to_frame()


def data_sets_table(abl, nd) -> pd.DataFrame:
    """Images, classes and imaging domains of every data set of the ablation (``abl``) and
    the non-IID experiment (``nd``), and the public images that calibrate BatchNorm."""
    sets = {"ablation: train pool": abl.train, "ablation: test": abl.test, "ablation: external": abl.extra["external"],
            "non-IID: NIH + CheXpert train": nd.train, "non-IID: NIH test": nd.extra["NIH"],
            "non-IID: CheXpert test": nd.extra["CheXpert"], "non-IID: external": nd.extra["external"]}
    table = pd.DataFrame({name: {"images": len(ds), "classes": ds.num_classes,
                                 "domain(s)": ", ".join(map(str, sorted(set(ds.domains.tolist()))))
                                 if ds.domains is not None else "-"}
                          for name, ds in sets.items()}).T
    table.loc["public (BatchNorm calibration)"] = [0 if abl.public is None else len(abl.public), "-", "-"]
    return table


def grid_tables(iterations: dict, methods: Sequence[tuple[str, dict]], name: str = "K") -> tuple[pd.DataFrame, pd.DataFrame]:
    """An experiment as the two tables of its declarative grid: the iterations (one row a
    value of ``name``, its config overrides) and the rows (one a method, its overrides)."""
    its = pd.DataFrame(iterations).T.rename_axis(name)
    rows = pd.DataFrame([{"label": label, **{k: str(v) for k, v in over.items()}} for label, over in methods])
    rows = rows.rename(columns={"method": "registry name (method=)", "method_kwargs": "options (method_kwargs=)"})
    return its, rows.set_index("label").rename_axis("method").fillna("")


def round_gap(curves: pd.DataFrame, a: str, b: str, by: str = "K") -> pd.DataFrame:
    """``a`` minus ``b`` (points, paired over seeds) half-way through training (the middle
    evaluated round) and at the last round, for every value of ``by``."""
    rows = []
    for v, cv in curves.groupby(by):
        rounds_ = sorted(cv["round"].unique())
        for when, r in (("middle round", rounds_[len(rounds_) // 2 - 1]), ("last round", rounds_[-1])):
            d = paired_difference(cv[cv["round"] == r], a, b, which=None)
            rows.append({by: v, "when": f"{when} ({r})", **difference_columns(d, diff="gap")})
    return pd.DataFrame(rows)


def round_gap_sentence(gap: pd.DataFrame, by: str = "K") -> str:
    """:func:`round_gap` as a sentence: the gap at each value half-way and at the end, and
    whether it grows with every step of ``by`` (the head-dilution prediction)."""
    from .notebook import join

    mid = gap[gap["when"].str.startswith("middle")].set_index(by)
    last = gap[gap["when"].str.startswith("last")].set_index(by)

    def trend(g):
        steps = g["gap"].diff().dropna()
        return f"growing with every step of {by}" if (steps > 0).all() else f"**not** growing with every step of {by}"

    def listing(g):
        return join(f"{by} = {k}: {r.gap:+.1f} (p = {r.p:.2g})" if r.p is not None and r.p == r.p
                    else f"{by} = {k}: {r.gap:+.1f}" for k, r in g.iterrows())

    return (f"FL + SA minus FL + PL half-way ({mid['when'].iloc[0]}): {listing(mid)} points, {trend(mid)}; "
            f"at the last round: {listing(last)} points, {trend(last)}.")


def end_point_sentences(results: dict[str, pd.DataFrame]) -> list[str]:
    """FL + SA against FL and FL + PL on the selected model, paired over every (setting,
    seed) of each ablation in ``results`` (name -> runs), one sentence an ablation."""
    return [f"**{name}.** " + "; ".join(describe_difference(paired_difference(res, "FL + SA", other, which="best"))
                                        for other in ("FL", "FL + PL")) + "."
            for name, res in results.items()]


def noise_vs_data(base: ExperimentConfig, settings_s: dict, truth: np.ndarray) -> pd.DataFrame:
    """What FL's negatives cost and what FL + SA gives up, counted from the partitions of
    ablation (b) without training: per setting (mean over classes), the share of FL's
    negative labels that are wrong (positives of clients that do not annotate the class)
    and the share of the images that train a class under FL + PL / FL + SA (those of the
    clients that annotate it).  ``truth``: every true label of the pool, hidden from the
    clients."""
    rows = []
    for name, over in settings_s.items():
        part = partition(base.replace(**over))
        n = sum(len(c.indices) for c in part.clients)
        for j, _ in enumerate(part.class_names):
            has = [c for c in part.clients if c.class_mask[j]]
            lack = [c for c in part.clients if not c.class_mask[j]]
            wrong = sum(int(truth[c.indices, j].sum()) for c in lack)  # positives FL trains as negatives
            negatives = (sum(len(c.indices) - int(truth[c.indices, j].sum()) for c in has)
                         + sum(len(c.indices) for c in lack))
            rows.append({"shared classes": name, "FL: wrong negative labels (%)": 100 * wrong / max(negatives, 1),
                         "FL + PL / SA: images that train the class (%)": 100 * sum(len(c.indices) for c in has) / n})
    return pd.DataFrame(rows).groupby("shared classes", sort=False).mean().round(1)


def noise_vs_data_sentence(trade: pd.DataFrame) -> str:
    """:func:`noise_vs_data`'s first setting (the fewest shared classes) as a sentence."""
    worst = trade.iloc[0]
    return (f"With {trade.index[0]} shared classes, FL trains each class on all the images with "
            f"{worst.iloc[0]:.1f} % of its negative labels wrong, while FL + SA trains it on {worst.iloc[1]:.1f} % of "
            "them. Trained centrally, labels missing at random and treated as negatives cost about as much as dropping "
            "them (`benchmarks/synthetic_learnability.py`). That is how FL can stay level with FL + SA, or ahead of it, "
            "in an IID split: the end points above show which way this run went.")


def shared_unique_sentences(df: pd.DataFrame) -> list[str]:
    """FL + SA against FL + PL, FL and the individually trained models on each column (unique
    and shared classes of each source), for FedAvg and FedBN+, paired over the column's
    classes (the paper's test), one sentence a (column, strategy)."""
    out = []
    for strategy in ("FedAvg", "FedBN+"):
        sa = f"FL + SA ({strategy})"
        for col in ("NIH: unique", "CheXpert: unique", "NIH: shared", "CheXpert: shared"):
            parts = [describe_difference(class_difference(df, col, sa, other), pairs="classes")
                     for other in (f"FL + PL ({strategy})", f"FL ({strategy})", "Individual")]
            out.append(f"**{col}, {strategy}**: " + "; ".join(parts) + ".")
    return out


def unique_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """FL + SA minus FL + PL round by round (:func:`gap_by_round`) for FedAvg and FedBN+, one
    frame with a ``strategy`` column."""
    return pd.concat({s: gap_by_round(df, f"FL + SA ({s})", f"FL + PL ({s})") for s in ("FedAvg", "FedBN+")},
                     names=["strategy"]).reset_index(level=0)


def unique_gap_sentences(gaps: pd.DataFrame, df: pd.DataFrame) -> list[str]:
    """:func:`unique_gaps` on the unique classes as sentences: the largest lead and its round,
    the gap at the last round, the rounds where the lead is significant, the rounds the
    models are selected at (``df``: the selected models), and both methods against the
    individually trained models."""
    from .notebook import join

    best = df[df["which"] == "best"].groupby("label")["round"].mean()
    lines = []
    for (strategy, col), g in gaps[gaps["column"].str.endswith("unique")].groupby(["strategy", "column"], sort=False):
        top = g.loc[g["gap"].idxmax()]
        last = g[g["round"] == g["round"].max()].iloc[0]
        sig = [int(r) for r in g[(g["p"] < 0.05) & (g["gap"] > 0)]["round"]]
        lines.append(f"**{col}, {strategy}**: largest lead {top['gap']:+.1f} at round {int(top['round'])} "
                     f"(p = {top['p']:.2g}), {last['gap']:+.1f} at the last round {int(last['round'])} "
                     f"(p = {last['p']:.2g}); significant (p < 0.05) " + (f"in rounds {join(sig)}" if sig else "in no round")
                     + f"; models selected at round {best[f'FL + SA ({strategy})']:.1f} (SA) / "
                     f"{best[f'FL + PL ({strategy})']:.1f} (PL) on average.")
    cols = ("NIH: unique", "CheXpert: unique")
    ind = {c: class_difference(df, c, "FL + SA (FedAvg)", "Individual")["diff"] for c in cols}
    pl_ind = {c: class_difference(df, c, "FL + PL (FedAvg)", "Individual")["diff"] for c in cols}
    lines.append("Against the individually trained models on the unique classes (selected models, FedAvg): "
                 + "; ".join(f"{c}: FL + SA {ind[c]:+.1f}, FL + PL {pl_ind[c]:+.1f} points" for c in cols)
                 + ". Whatever both share there is not the head aggregation, the only thing in which they differ.")
    return lines


def best_vs_last_table(results: dict[str, tuple[pd.DataFrame, Sequence[str] | None]]) -> pd.DataFrame:
    """:func:`best_vs_last` of every experiment (name -> (runs, columns or None)) in one table."""
    return pd.concat({name: best_vs_last(df, cols) for name, (df, cols) in results.items()}, names=["experiment"])


def what_this_run_shows(ablations: dict[str, pd.DataFrame], noniid: pd.DataFrame) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's claim
    that FL + SA is above FL + PL and FL (the ablations, paired over (setting, seed); the
    unique classes of the non-IID experiment, paired over classes)."""
    out = []
    for name, res in ablations.items():
        for other in ("FL + PL", "FL"):
            d = paired_difference(res, "FL + SA", other, which="best")
            out.append(f"{name}: the paper's claim that FL + SA is above {other} is {verdict(d)} here "
                       f"({describe_difference(d)}).")
    for col in ("NIH: unique", "CheXpert: unique"):
        d = class_difference(noniid, col, "FL + SA (FedAvg)", "FL + PL (FedAvg)")
        out.append(f"Non-IID, {col} classes: the claim that surgical aggregation keeps the unique classes above the "
                   f"partial loss is {verdict(d)} here ({describe_difference(d, pairs='classes')}).")
    return out



# =========================================================================== the paper's headline claims
def column_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Each run's mean AUROC over the classes of each table column (:func:`table_columns`:
    ``"NIH: unique"``, ``"CheXpert: shared"``, ...) as columns of the runner's frame, so a
    claim on a group of classes pairs over seeds like any metric."""
    d = long_form(df)
    ids = [c for c in ("setting", "label", "method", "seed", "which") if c in d.columns]
    wide = d.groupby(ids + ["column"], dropna=False)["auroc"].mean().unstack("column").reset_index()
    wide.columns.name = None
    return wide


def headline_claims() -> list:
    """Surgical Aggregation's headline claims (:class:`~fedpl_core.report.findings.Claim`),
    tested by notebook 03 on its runs with the models selected on the clients' validation
    loss (the paper's protocol): ``frames`` keys ``"a"`` and ``"b"`` (the two ablations, paired
    over every setting and seed) and ``"non-IID"`` (:func:`column_scores` of the
    class-heterogeneous runs)."""
    from ..report.findings import Claim

    iid = ("in an IID split FL trains each class on every image with some negatives wrong, FL + SA only on the "
           "images of the clients that label it")
    out = [Claim("Surgical Aggregation", f"Ablation ({k}): FL + SA above {ref}", "FL + SA", ref, k, which="best",
                 mechanism=iid if ref == "FL" else "", evidence=f"notebook 03, ablation ({k})")
           for k in ("a", "b") for ref in ("FL", "FL + PL")]
    out += [Claim("Surgical Aggregation", f"Non-IID: FL + SA above FL + PL on {src}'s unique classes ({s})",
                  f"FL + SA ({s})", f"FL + PL ({s})", "non-IID", metric=f"{src}: unique", which="best",
                  mechanism="with two clients FL + PL's only handicap on a unique class is that its head row is "
                            "averaged with the other client's untouched row",
                  evidence="notebook 03, round by round") for src in ("NIH", "CheXpert") for s in ("FedAvg", "FedBN+")]
    return out

__all__ = ["settings_table", "data_sets_table", "grid_tables", "round_gap", "round_gap_sentence",
           "end_point_sentences", "noise_vs_data", "noise_vs_data_sentence", "shared_unique_sentences", "unique_gaps",
           "unique_gap_sentences", "best_vs_last_table", "what_this_run_shows", "PROFILES", "FULL_REAL_DATA", "FULL_PRETRAINED", "Settings", "profiles", "settings", "make_settings",
           "ablation_source", "noniid_source", "real_data", "load_real_data",
           "ablation_config", "ablation_settings", "ablation_methods", "noniid_config", "noniid_methods",
           "class_orders", "partition", "random_label_sets", "table_columns", "long_form", "ablation_summary",
           "ablation_table", "noniid_table", "gap_by_round", "best_vs_last", "plot_ablation", "plot_shared_unique",
           "plot_gap_by_round", "column_scores", "headline_claims"]


def imagenet_pair(st: Settings, orders: dict[str, list[str]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The headline pair of :func:`imagenet_start`: FL + SA and FL + PL with FedAvg, as the
    non-IID tables run them (``orders``: :func:`class_orders`)."""
    pair = dict(noniid_methods(st, orders))
    return [(lab, pair[lab]) for lab in ("FL + SA (FedAvg)", "FL + PL (FedAvg)")]


def imagenet_start(st: Settings, base: ExperimentConfig, results_dir: str, workers: int = 1,
                   force: bool = False) -> pd.DataFrame | None:
    """Does Surgical Aggregation's headline (FL + SA above FL with the partial loss when the clients' label
    spaces differ) hold from an ImageNet start? FL + SA and FL + PL with FedAvg on ``base`` (the
    notebook's class-heterogeneous ``het_base``), with the profile's backbone from scratch (the
    notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (the selected model, mean AUROC; the gpu and
    full profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate
    0.2 min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from .pretrained import imagenet_start as run

    if _imagenet_skipped(st.profile, force):
        return None
    return run(base, imagenet_pair(st, class_orders(base)), st.seeds, results_dir, st.profile, which="best",
               workers=workers, force=force)


def _imagenet_skipped(profile: str, force: bool = False) -> bool:
    """True (after one printed line) where :func:`imagenet_start` runs nothing, before the data
    are loaded for the class orders."""
    from .profiles import pretrained_backbone

    return pretrained_backbone(profile, verbose=True, force=force) is None


__all__ += ["imagenet_pair", "imagenet_start"]
