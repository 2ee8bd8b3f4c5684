"""Surgical Aggregation (Kulkarni et al., ML4H 2024): the experiments of notebook 03.

* **Ablation** on IID subsets of one NIH-like data set whose clients' label sets cover
  all 14 findings: (a) the number of clients K (each client's data shrinking as 1/K;
  random label sets, every class held by at least one client) and (b) the number of
  classes shared by all K = 4 clients (:func:`~fedpl_core.partitions.shared_classes_split`:
  the other classes are each unique to one client).  Methods: a fully labelled model on
  all the data (the paper's "NIH baseline", our Oracle), Centralized (missing =
  negative), FL (missing = negative), FL + partial loss, FL + surgical aggregation, all
  with the BatchNorm strategy ``Settings.bn`` (FedBN+ as in the paper in the full
  setting).  Evaluated on the held-out test set and an external
  test set from another domain (MIMIC's role).  Mean +- SD over the iterations (the K
  or shared-class values) and paired t-tests across iterations.
* **Non-IID**: an NIH-like source (14 findings) and a CheXpert-like source (13
  findings, 7 shared, 20 in the union) from two domains, one client each, (i) with the
  7 shared classes only and (ii) with all 20.  Evaluated on each source's test set
  with its own classes (split into shared / unique classes) and on an external, fully
  labelled test set from a third domain with all 20 classes (NIH classes and CheXpert
  classes reported separately).  Mean +- SD over classes and paired t-tests across
  class-level AUROCs.

Every method follows the paper's protocol (:class:`~fedpl_core.methods.surgical.PaperProtocol`):
the same initial model (BatchNorm statistics calibrated on public images when no
pre-trained weights are used), head warm-up with the encoder frozen, FedBN+ with
BatchNorm frozen on the clients too, and selection of the global model with the lowest mean
local validation BCE (early stopping with ``patience``); the last-round model is
reported too (``which="last"``).  Runs are cached as JSON under ``results_dir``.

Rules for models that are not one global model: an individually trained model (one
per source, ``local``) is scored on a test column only when it knows every class of
the column (the paper: the mean AUROC is undefined when a test class is absent from
the model), otherwise "-"; a personalised FL model (PFL) is scored with the client
model of the source that owns the column (the NIH client on the NIH test set and on
the external set's NIH classes, ...), and "-" on a column no single source owns (the
external set with the classes of both).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from .. import partitions as P
from ..data import synthetic as S
from ..data.base import ImageDataset, concat_datasets
from ..engine import EngineConfig, Simulation
from ..metrics import multilabel_metrics
from ..methods.surgical import calibrate_batchnorm, paper_method
from ..models import build_model
from ..tables import paired_ttest, stars

#: NIH's 14 findings and CheXpert's 13 (CheXpert's column order), synthetic names.
NIH_CLASSES = list(S.NIH14)
CHEXPERT_CLASSES = list(S.CHEXPERT_PREVALENCE)
#: Synthetic domains (hospital styles): NIH-like, CheXpert-like, external (MIMIC's role),
#: and the public images used to calibrate BatchNorm statistics (no client's domain).
DOMAINS = {"NIH": 0, "CheXpert": 2, "external": 3, "public": 7}
#: Paper names of the NIH findings spelled differently in CheXpert / MIMIC (CXR-LT).
NIH_TO_PAPER = {"Effusion": "Pleural Effusion", "Pleural_Thickening": "Pleural Thickening"}
STRATEGIES = {"FedAvg": "aggregate", "FedBN": "local", "FedBN+": "frozen"}
BN_NAMES = {v: k for k, v in STRATEGIES.items()}


# =========================================================================== settings
@dataclass
class Settings:
    """Everything that defines the notebook's runs (``make_settings`` fills quick / full)."""

    quick: bool = True
    seed: int = 0
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
    rounds: int = 4
    local_epochs: float = 1.0
    batch_size: int = 32
    lr: float = 3e-3
    warmup_epochs: float = 1
    warmup_lr: float = 5e-3
    client_val_fraction: float = 0.15
    patience: int | None = None
    # ablation
    n_train: int = 800
    n_test: int = 300
    n_external: int = 300
    k_values: list = field(default_factory=lambda: [2, 3, 4])
    shared_values: list = field(default_factory=lambda: [0, 4, 14])
    shared_clients: int = 4
    #: BatchNorm strategy of the ablation's FL methods and of the non-federated models
    #: (Oracle, Central, individually trained).  The paper: FedBN+ ("frozen") for all; the
    #: quick setting uses "aggregate" (ordinary BatchNorm), because a randomly initialised
    #: model has no pre-trained statistics worth freezing.
    bn: str = "aggregate"
    # non-IID
    n_nih: int = 400
    n_chexpert: int = 600
    n_noniid_test: int = 300
    max_images: int | None = None  # real data: subsample each source (None = all)

    def engine(self) -> EngineConfig:
        return EngineConfig(rounds=self.rounds, local_epochs=self.local_epochs, batch_size=self.batch_size,
                            lr=self.lr, normalize=self.normalize, augment=self.augment,
                            client_val_fraction=self.client_val_fraction, selection="val_loss",
                            selection_mode="min", patience=self.patience, device=self.device, seed=self.seed,
                            progress=False)

    def key(self) -> dict:
        d = asdict(self)
        for k in ("device", "results_dir", "quick"):
            d.pop(k)
        return d


def make_settings(quick: bool = True, seed: int = 0, device: str = "auto", data_root: str | None = None,
                  results_dir: str = "results/03_surgical", pretrained: bool = False, **overrides: Any) -> Settings:
    """Quick (CPU, minutes) or full (GPU, the paper's schedule) settings; ``overrides``
    replace any field."""
    st = Settings(quick=quick, seed=seed, device=device, data_root=data_root, results_dir=results_dir,
                  pretrained=pretrained)
    if not quick:
        real = bool(data_root)
        st = dataclasses.replace(
            st, model="densenet121" if real else "resnet18", model_kwargs={"pretrained": pretrained},
            image_size=224 if real else 64, normalize="imagenet" if pretrained else "fixed",
            augment="flip_shift", prevalence_floor=None, bn="frozen", calibrate_bn=not pretrained, n_public=1024,
            rounds=150, batch_size=64, lr=5e-5 if pretrained else 5e-4, warmup_epochs=15, warmup_lr=5e-3,
            client_val_fraction=0.125, patience=25,
            n_train=20000, n_test=4000, n_external=4000, k_values=[2, 3, 4, 5, 6, 8, 10],
            shared_values=[0, 1, 2, 4, 8, 12, 14], n_nih=15000, n_chexpert=30000, n_noniid_test=4000)
    return dataclasses.replace(st, **overrides)


# =========================================================================== methods
@dataclass(frozen=True)
class Spec:
    """One row family of a table: a label, a registered method and its keywords."""

    label: str
    method: str
    family: str
    strategy: str = ""
    kwargs: tuple = ()

    def hparams(self) -> dict:
        return dict(self.kwargs)


def _spec(family: str, method: str, strategy: str = "", label: str | None = None, **kw) -> Spec:
    if strategy:
        kw["bn_policy"] = STRATEGIES[strategy]
    lab = label or (f"{family} ({strategy})" if strategy else family)
    return Spec(lab, method, family, strategy, tuple(sorted(kw.items(), key=lambda t: t[0])))


def ablation_specs(st: Settings) -> list[Spec]:
    """The ablation's methods, all with BatchNorm strategy ``st.bn`` (the paper: FedBN+)."""
    bn = {"bn_policy": st.bn}
    return [Spec("Oracle", "oracle", "Oracle", "", tuple(bn.items())),
            Spec("Central", "centralized", "Central", "", tuple(bn.items())),
            Spec("FL", "fedavg", "FL", BN_NAMES[st.bn], tuple(bn.items())),
            Spec("FL + PL", "fedavg_pl", "FL + PL", BN_NAMES[st.bn], tuple(bn.items())),
            Spec("FL + SA", "surgical", "FL + SA", BN_NAMES[st.bn], tuple(bn.items()))]


def noniid_specs(st: Settings, class_orders: dict[str, list[str]] | None = None) -> list[Spec]:
    """The non-IID tables' rows: individually trained, PFL, Central, FL, FL + PL, FL + SA."""
    sa = {} if class_orders is None else {"class_order": json.dumps(class_orders)}
    return [_spec("Individual", "local", label="Individual", bn_policy=st.bn),
            _spec("PFL", "pfl", "FedAvg"), _spec("PFL", "pfl", "FedBN"), _spec("PFL", "pfl", "FedBN+"),
            _spec("Central", "centralized", bn_policy=st.bn),
            _spec("FL", "fedavg", "FedAvg"), _spec("FL", "fedavg", "FedBN+"),
            _spec("FL + PL", "fedavg_pl", "FedAvg"), _spec("FL + PL", "fedavg_pl", "FedBN+"),
            _spec("FL + SA", "surgical", "FedAvg", **sa), _spec("FL + SA", "surgical", "FedBN+", **sa)]


def build_method(spec: Spec, st: Settings):
    kw = spec.hparams()
    if "class_order" in kw and isinstance(kw["class_order"], str) and kw["class_order"].startswith("{"):
        kw["class_order"] = json.loads(kw["class_order"])
    return paper_method(spec.method, warmup_epochs=st.warmup_epochs, warmup_lr=st.warmup_lr, **kw)


# =========================================================================== data
def _prevalence(classes: Sequence[str], floor: float | None, base: dict | None = None) -> dict | None:
    base = base or {}
    if floor is None:
        return base or None
    return {c: max(base.get(c, S.FINDINGS[c].prevalence), floor) for c in classes}


def synthetic_data(st: Settings) -> dict[str, Any]:
    """Synthetic stand-ins: the ablation's NIH-like pool, test and external sets; the
    non-IID sources (NIH-like and CheXpert-like, their test sets, a 20-class external
    set); the public images for BatchNorm calibration.

    Every image is drawn with all 20 findings of the union (each source with its own
    prevalences and hospital style) and then labelled with its source's classes only,
    as in reality: NIH images do show support devices, NIH just does not annotate them.
    So "missing = negative" produces genuine false negatives.
    """
    s, size, f = st.seed, st.image_size, st.prevalence_floor
    union = NIH_CLASSES + [c for c in CHEXPERT_CLASSES if c not in NIH_CLASSES]
    chx_prev = dict(S.CHEXPERT_PREVALENCE)

    def mk(n, labelled, seed, dom, base=None, name=""):
        ds = S.make_cxr(n, classes=union, image_size=size, seed=seed, domain=dom,
                        prevalence=_prevalence(union, f, base), strength=st.strength, name=name)
        return ds.select_classes(labelled)

    return {
        "ablation": {"train": mk(st.n_train, NIH_CLASSES, 100 * s + 1, DOMAINS["NIH"], name="NIH"),
                     "test": mk(st.n_test, NIH_CLASSES, 100 * s + 2, DOMAINS["NIH"], name="NIH-test"),
                     "external": mk(st.n_external, NIH_CLASSES, 100 * s + 3, DOMAINS["external"],
                                    name="external")},
        "noniid": {"NIH": (mk(st.n_nih, NIH_CLASSES, 100 * s + 11, DOMAINS["NIH"], name="NIH"),
                           mk(st.n_noniid_test, NIH_CLASSES, 100 * s + 12, DOMAINS["NIH"], name="NIH-test")),
                   "CheXpert": (mk(st.n_chexpert, CHEXPERT_CLASSES, 100 * s + 13, DOMAINS["CheXpert"], chx_prev,
                                   name="CheXpert"),
                                mk(st.n_noniid_test, CHEXPERT_CLASSES, 100 * s + 14, DOMAINS["CheXpert"], chx_prev,
                                   name="CheXpert-test")),
                   "external": mk(st.n_external, union, 100 * s + 15, DOMAINS["external"], name="external")},
        "public": mk(st.n_public, union, 100 * s + 16, DOMAINS["public"], name="public").images,
    }


def _rename(ds: ImageDataset, mapping: dict[str, str]) -> ImageDataset:
    return dataclasses.replace(ds, class_names=[mapping.get(c, c) for c in ds.class_names])


def load_real_data(data_root: str, st: Settings, *, nih: str = "nih", chexpert: str = "chexpert",
                   mimic: str = "mimic-cxr-jpg", mimic_lt_csv: str | None = None,
                   cache_dir: str | None = None) -> dict[str, Any]:
    """NIH ChestX-ray14 + CheXpert + MIMIC-CXR-JPG, shaped like :func:`synthetic_data`.

    ``data_root/<nih>``, ``data_root/<chexpert>``, ``data_root/<mimic>`` (each falls back
    to ``data_root`` itself when absent).  NIH's ``Effusion`` / ``Pleural_Thickening``
    take the CheXpert / CXR-LT spellings (``Pleural Effusion`` / ``Pleural Thickening``):
    7 shared classes, 20 in the union, as the paper.  CheXpert: frontal images only,
    uncertain labels as negatives, its 13 findings ("No Finding" dropped).  NIH and
    CheXpert are split 80 / 20 by patient into training (the client; the engine holds out
    ``client_val_fraction`` = 1/8 of it for validation, 70/10/20 overall) and test.
    MIMIC-CXR-JPG (frontal, CheXpert labeler, uncertain = negative) is the external set;
    its labels cover the 13 CheXpert classes only, so the NIH-only findings are evaluated
    externally only when a CXR-LT label table is given (``mimic_lt_csv``: a CSV with a
    ``path`` column relative to the MIMIC folder, ``subject_id`` and one 0/1 column per
    class, the paper's 20 names).  Without pre-trained weights (``st.calibrate_bn``),
    ``st.n_public`` random MIMIC images are taken out of the external set to calibrate
    the initial BatchNorm statistics (never a client's data).
    """
    from ..data.csv_loader import CHEXPERT_CLASSES as CHEXPERT_COLUMNS
    from ..data.csv_loader import load_chexpert, load_csv, load_mimic_cxr
    from ..data.nih import load_nih
    from ..data.splits import split_dataset

    root = Path(data_root)
    sub = lambda name: root / name if (root / name).exists() else root  # noqa: E731
    io = {"image_size": st.image_size, "channels": 1, "cache_dir": cache_dir, "seed": st.seed}
    chex_classes = [c for c in CHEXPERT_COLUMNS if c != "No Finding"]
    nih_ds = _rename(load_nih(sub(nih), max_images=st.max_images, **io), NIH_TO_PAPER)
    chx_ds = load_chexpert(sub(chexpert), "train", classes=chex_classes, uncertain="zeros", frontal_only=True,
                           max_images=st.max_images, **io)
    nih_tr, nih_te = split_dataset(nih_ds, (0.8, 0.2), seed=st.seed)
    chx_tr, chx_te = split_dataset(chx_ds, (0.8, 0.2), seed=st.seed)
    nih_tr.name, nih_te.name, chx_tr.name, chx_te.name = "NIH", "NIH-test", "CheXpert", "CheXpert-test"
    if mimic_lt_csv:
        union = nih_tr.class_names + [c for c in chx_tr.class_names if c not in nih_tr.class_names]
        ext = load_csv(mimic_lt_csv, sub(mimic), "path", union, group_column="subject_id", name="external", **io)
    else:
        ext = load_mimic_cxr(sub(mimic), None, classes=chex_classes, uncertain="zeros", views=("PA", "AP"),
                             name="external", **io)
    public = None
    if st.calibrate_bn:  # a few external images, removed from the external set, calibrate BatchNorm
        pick = np.random.default_rng(st.seed).permutation(len(ext))
        public, ext = ext.images[pick[:st.n_public]], ext.subset(np.sort(pick[st.n_public:]))
    return {"ablation": {"train": nih_tr, "test": nih_te, "external": ext},
            "noniid": {"NIH": (nih_tr, nih_te), "CheXpert": (chx_tr, chx_te), "external": ext},
            "public": public}


# =========================================================================== partitions
def random_label_sets(num_classes: int, num_clients: int, seed: int = 0, extra: float = 0.25,
                      min_classes: int = 2) -> np.ndarray:
    """``[K, C]`` bool: random label sets whose union is every class.  Each class is given
    to one random client (coverage), then every client takes each other class with
    probability ``extra``; a client with fewer than ``min_classes`` gets random extra ones."""
    rng = np.random.default_rng(seed)
    m = rng.random((num_clients, num_classes)) < extra
    m[rng.integers(0, num_clients, num_classes), np.arange(num_classes)] = True
    for k in range(num_clients):
        while m[k].sum() < min(min_classes, num_classes):
            m[k, rng.integers(num_classes)] = True
    return m


def ablation_partitions(st: Settings, train: ImageDataset, kind: str) -> dict[int, P.Partition]:
    """The partition of every iteration of ablation ``kind`` (seeded per iteration)."""
    values = st.k_values if kind == "clients" else st.shared_values
    return {v: ablation_partition(train, kind, v, seed=st.seed * 1000 + i, shared_clients=st.shared_clients)
            for i, v in enumerate(values)}


def ablation_partition(train: ImageDataset, kind: str, value: int, seed: int, shared_clients: int = 4) -> P.Partition:
    """(a) ``kind="clients"``: ``value`` clients, equal IID shares (no patient in two
    clients), :func:`random_label_sets`; (b) ``kind="shared"``: ``shared_clients``
    clients, ``value`` classes shared by all, the others unique to one client."""
    group = train.groups is not None
    if kind == "clients":
        return P.make_partition(train, value, P.IID(group_aware=group), P.RandomCover(), seed=seed, name=f"K={value}")
    if kind == "shared":
        return P.shared_classes_split(train, shared_clients, value, seed=seed, group_aware=group,
                                      name=f"{value} shared")
    raise ValueError(f"unknown ablation kind {kind!r}; use 'clients' or 'shared'")


# =========================================================================== runs
@dataclass
class EvalSpec:
    """A table column: a test set, the classes scored and the source that owns them."""

    column: str
    dataset: ImageDataset
    classes: list[str]
    owner: str | None = None


def initial_state(st: Settings, num_classes: int, channels: int, public: np.ndarray | None) -> dict:
    """The initial model every method of an experiment starts from (seeded; BatchNorm
    statistics calibrated on the public images when ``st.calibrate_bn``)."""
    torch.manual_seed(st.seed)
    model = build_model(st.model, num_classes, channels, st.image_size, **st.model_kwargs)
    if st.calibrate_bn and public is not None:
        calibrate_batchnorm(model, public, normalize=st.normalize)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _snapshot(sim: Simulation) -> dict:
    return {"round": sim.round,
            "global": {k: v.detach().clone() for k, v in sim.server.global_state.items()},
            "local": [{k: v.detach().clone() for k, v in cs.get("local", {}).items()} for cs in sim.client_states]}


def _digest(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_spec(spec: Spec, st: Settings, train: ImageDataset, partition: P.Partition, evals: list[EvalSpec],
             init: dict, experiment: str, setting: Any = "", cache: bool = True) -> pd.DataFrame:
    """Train one method and score its selected (``which="best"``) and last models on
    ``evals``; long rows (one per class and column), cached under ``st.results_dir``."""
    key = {"settings": st.key(), "spec": asdict(spec), "experiment": experiment, "setting": setting,
           "masks": partition.masks.tolist(), "sizes": partition.sizes().tolist(),
           "evals": [(e.column, e.dataset.name, len(e.dataset), e.classes, e.owner) for e in evals]}
    path = Path(st.results_dir) / experiment / f"{_slug(spec.label)}-{_slug(str(setting))}-{_digest(key)}.json"
    if cache and path.is_file():
        return pd.DataFrame(json.loads(path.read_text()))
    t0 = time.perf_counter()
    method = build_method(spec, st)
    model = build_model(st.model, train.num_classes, train.channels, st.image_size, **st.model_kwargs)
    model.load_state_dict(init)
    sim = Simulation(method, model, train, partition, None, st.engine())
    snaps: dict[str, dict] = {}

    def keep_best(rec: dict) -> None:
        if sim.best is not None and sim.best.get("round") == rec["round"]:
            snaps["best"] = _snapshot(sim)

    sim.run(callback=keep_best)
    snaps["last"] = _snapshot(sim)
    snaps.setdefault("best", snaps["last"])
    seconds = time.perf_counter() - t0
    rows = []
    for which, snap in snaps.items():
        for r in score(sim, snap, evals, spec):
            rows.append({"experiment": experiment, "setting": setting, "family": spec.family,
                         "strategy": spec.strategy, "which": which, "round": snap["round"],
                         "rounds_run": sim.round, "seconds": seconds, **r})
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rows, default=_json_default))
        tmp.replace(path)
    return pd.DataFrame(rows)


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(type(o).__name__)


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in s).strip("_") or "x"


def score(sim: Simulation, snap: dict, evals: list[EvalSpec], spec: Spec) -> list[dict]:
    """Per-class AUROC of a snapshot on every column (see the module docstring for
    individually trained and personalised models)."""
    model_classes = list(sim.info.class_names)
    clients = [(c.name, [n for n, m in zip(model_classes, c.class_mask.tolist()) if m]) for c in sim.clients]
    state_of = lambda k: {**snap["global"], **snap["local"][k]}  # noqa: E731
    preds: dict[tuple, np.ndarray] = {}

    def probs(state_id, state, ds):
        if (state_id, id(ds)) not in preds:
            preds[(state_id, id(ds))] = sim.predict(ds, state)
        return preds[(state_id, id(ds))]

    rows = []
    for ev in evals:
        if sim.method.evaluation == "global":
            targets = [(spec.label, "global", snap["global"], True)]
        elif spec.method == "local":
            targets = [(name, k, state_of(k), set(ev.classes) <= set(own)) for k, (name, own) in enumerate(clients)]
        else:  # personalised FL: the owner's client model
            names = [n for n, _ in clients]
            k = names.index(ev.owner) if ev.owner in names else None
            targets = [(spec.label, k, None if k is None else state_of(k), k is not None)]
        for label, sid, state, defined in targets:
            if not defined:
                rows += [{"label": label, "column": ev.column, "cls": c, "auroc": None, "defined": False}
                         for c in ev.classes]
                continue
            p = probs(sid, state, ev.dataset)
            cols = [model_classes.index(c) for c in ev.classes]
            idx = [ev.dataset.class_names.index(c) for c in ev.classes]
            m = multilabel_metrics(ev.dataset.labels[:, idx], p[:, cols], ev.classes, mask=ev.dataset.known[:, idx])
            rows += [{"label": label, "column": ev.column, "cls": c, "auroc": a, "defined": True}
                     for c, a in zip(ev.classes, m["auroc_per_class"])]
    return rows


# =========================================================================== experiments
def run_ablation(st: Settings, data: dict, kind: str, log: Callable[[str], None] | None = print) -> pd.DataFrame:
    """Ablation (a) ``kind="clients"`` (K in ``st.k_values``) or (b) ``kind="shared"``
    (shared classes in ``st.shared_values``, K = ``st.shared_clients``)."""
    d = data["ablation"]
    train, test, ext = d["train"], d["test"], d["external"]
    classes = list(train.class_names)
    evals = [EvalSpec("held-out test", test, [c for c in classes if c in test.class_names]),
             EvalSpec("external test", ext, [c for c in classes if c in ext.class_names])]
    init = initial_state(st, train.num_classes, train.channels, data.get("public"))
    specs = ablation_specs(st)
    out = []
    oracle = run_spec(specs[0], st, train, P.iid(train, 1, seed=st.seed), evals, init, f"ablation_{kind}", "all")
    for v, part in ablation_partitions(st, train, kind).items():
        out.append(oracle.assign(setting=v))
        for spec in specs[1:]:
            t0 = time.perf_counter()
            out.append(run_spec(spec, st, train, part, evals, init, f"ablation_{kind}", v))
            if log:
                log(f"{kind}={v:>2} {spec.label:<8} {time.perf_counter() - t0:5.1f}s")
    return pd.concat(out, ignore_index=True)


def noniid_setup(st: Settings, data: dict,
                 heterogeneous: bool) -> tuple[ImageDataset, P.Partition, list[EvalSpec], dict]:
    """The union training set (one client per source), the table columns and each
    source's own class order.  Non-class-heterogeneous: every data set restricted to
    the shared classes."""
    nd = data["noniid"]
    (nih_tr, nih_te), (chx_tr, chx_te), ext = nd["NIH"], nd["CheXpert"], nd["external"]
    nih_c, chx_c = list(nih_tr.class_names), list(chx_tr.class_names)
    shared = [c for c in nih_c if c in chx_c]
    if not heterogeneous:
        nih_tr, nih_te = nih_tr.select_classes(shared), nih_te.select_classes(shared)
        chx_tr, chx_te = chx_tr.select_classes(shared), chx_te.select_classes(shared)
        ext = ext.select_classes([c for c in shared if c in ext.class_names])
    nih_tr.name, chx_tr.name = "NIH", "CheXpert"
    union = concat_datasets([nih_tr, chx_tr], name="NIH+CheXpert")
    part = P.by_source(union, seed=st.seed, name="by source")
    in_ext = lambda cs: [c for c in cs if c in ext.class_names]  # noqa: E731
    if heterogeneous:
        evals = [EvalSpec("NIH", nih_te, nih_c, "NIH"), EvalSpec("CheXpert", chx_te, chx_c, "CheXpert"),
                 EvalSpec("External", ext, in_ext(union.class_names), None),
                 EvalSpec("NIH: shared", nih_te, shared, "NIH"),
                 EvalSpec("NIH: unique", nih_te, [c for c in nih_c if c not in shared], "NIH"),
                 EvalSpec("CheXpert: shared", chx_te, shared, "CheXpert"),
                 EvalSpec("CheXpert: unique", chx_te, [c for c in chx_c if c not in shared], "CheXpert"),
                 EvalSpec("External: NIH classes", ext, in_ext(nih_c), "NIH"),
                 EvalSpec("External: CheXpert classes", ext, in_ext(chx_c), "CheXpert")]
    else:
        evals = [EvalSpec("NIH", nih_te, shared, "NIH"), EvalSpec("CheXpert", chx_te, shared, "CheXpert"),
                 EvalSpec("External", ext, in_ext(shared), None)]
    orders = {"NIH": list(nih_tr.class_names), "CheXpert": list(chx_tr.class_names)}
    return union, part, evals, orders


def run_noniid(st: Settings, data: dict, heterogeneous: bool,
               log: Callable[[str], None] | None = print) -> pd.DataFrame:
    """Non-IID experiment (i) ``heterogeneous=False`` (7 shared classes) or (ii) True (20)."""
    union, part, evals, orders = noniid_setup(st, data, heterogeneous)
    init = initial_state(st, union.num_classes, union.channels, data.get("public"))
    name = "noniid_heterogeneous" if heterogeneous else "noniid_shared"
    out = []
    for spec in noniid_specs(st, orders):
        t0 = time.perf_counter()
        out.append(run_spec(spec, st, union, part, evals, init, name, "NIH+CheXpert"))
        if log:
            log(f"{name} {spec.label:<18} {time.perf_counter() - t0:5.1f}s")
    return pd.concat(out, ignore_index=True)


# =========================================================================== tables
def _fmt(mean: float, sd: float, mark: str = "") -> str:
    return f"{mean:.3f} ± {sd:.3f}" + (f" {mark}" if mark else "")


def _reference(label: str, labels: Sequence[str], default: str) -> str:
    """FL + SA with the row's own strategy when there is one, else ``default``."""
    strat = label[label.find("(") + 1:-1] if label.endswith(")") and "(" in label else ""
    cand = f"FL + SA ({strat})"
    return cand if strat and cand in labels else default


def ablation_summary(df: pd.DataFrame, which: str = "best") -> pd.DataFrame:
    """Mean AUROC over classes per (setting, label, column)."""
    d = df[(df["which"] == which) & df["defined"]].dropna(subset=["auroc"])
    return d.groupby(["setting", "label", "column"], sort=False)["auroc"].mean().reset_index()


def ablation_table(df: pd.DataFrame, which: str = "best", reference: str = "FL + SA") -> pd.DataFrame:
    """Rows: methods; columns: held-out / external test; cells: mean ± SD over the iterations of
    the mean AUROC, with stars of a paired t-test against ``reference`` across iterations
    (ns: p >= 0.05, * < 0.05, ** < 0.01, *** < 0.001)."""
    s = ablation_summary(df, which)
    labels = list(dict.fromkeys(s["label"]))
    cols = list(dict.fromkeys(s["column"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=cols, dtype=object)
    for c in cols:
        piv = s[s["column"] == c].pivot(index="setting", columns="label", values="auroc")
        for lab in labels:
            v = piv[lab].dropna()
            mark = ""
            if lab != reference and reference in piv:
                both = piv[[lab, reference]].dropna()
                if len(both) >= 2 and not np.allclose(both[lab], both[reference]):
                    mark = stars(paired_ttest(both[lab], both[reference])[1]) or "ns"
            out.loc[lab, c] = _fmt(v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0, mark)
    return out


def noniid_table(df: pd.DataFrame, columns: Sequence[str], which: str = "best",
                 reference: str = "FL + SA (FedBN+)") -> pd.DataFrame:
    """Rows: methods (individually trained models by source); columns: ``columns``;
    cells: mean ± SD over the column's classes of the class AUROCs, "-" where the model
    does not cover the column, stars of a paired t-test across class AUROCs against FL +
    SA with the row's strategy (``reference`` for rows without one)."""
    d = df[df["which"] == which]
    labels = list(dict.fromkeys(d["label"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=list(columns), dtype=object)
    for c in columns:
        dc = d[d["column"] == c]
        for lab in labels:
            r = dc[dc["label"] == lab]
            if r.empty or not r["defined"].all():
                out.loc[lab, c] = "-"
                continue
            v = r.set_index("cls")["auroc"].dropna().astype(float)
            ref = _reference(lab, labels, reference)
            mark = ""
            if lab != ref:
                rr = dc[(dc["label"] == ref) & dc["defined"]].set_index("cls")["auroc"].dropna().astype(float)
                common = v.index.intersection(rr.index)
                if len(common) >= 2 and not np.allclose(v[common], rr[common]):
                    mark = stars(paired_ttest(v[common], rr[common])[1]) or "ns"
            out.loc[lab, c] = _fmt(v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0, mark) if len(v) else "-"
    return out


def best_vs_last(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean AUROC of the selected (best val. loss) and last-round models per method."""
    d = df[df["defined"]].dropna(subset=["auroc"])
    if columns is not None:
        d = d[d["column"].isin(columns)]
    g = d.groupby(["label", "column", "which"], sort=False)["auroc"].mean().unstack("which")
    r = d[d["which"] == "best"].groupby(["label", "column"], sort=False)["round"].first()
    g["best round"] = r
    return g.round(3)


# =========================================================================== figures
def plot_ablation(df: pd.DataFrame, xlabel: str, which: str = "best", title: str = ""):
    """Mean AUROC per iteration (x) and method, one panel per test set; Oracle dashed."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    s = ablation_summary(df, which)
    cols = list(dict.fromkeys(s["column"]))
    fig, axes = plt.subplots(1, len(cols), figsize=(5.2 * len(cols), 3.8), squeeze=False)
    for ax, c in zip(axes[0], cols):
        sc = s[(s["column"] == c) & (s["label"] != "Oracle")].astype({"setting": float})
        sns.lineplot(sc, x="setting", y="auroc", hue="label", marker="o", ax=ax)
        orc = s[(s["column"] == c) & (s["label"] == "Oracle")]["auroc"]
        if len(orc):
            ax.axhline(float(orc.mean()), color="k", ls="--", lw=1, label="Oracle (all labels)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean AUROC")
        ax.set_title(c)
        ax.set_xticks(sorted(sc["setting"].unique()))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or f"Ablation ({which} model)")
    fig.tight_layout()
    return fig


def plot_shared_unique(df: pd.DataFrame, which: str = "best", labels: Sequence[str] | None = None):
    """Class-heterogeneous experiment: mean AUROC on shared vs unique classes per source."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    cols = ["NIH: shared", "NIH: unique", "CheXpert: shared", "CheXpert: unique"]
    d = df[(df["which"] == which) & df["defined"] & df["column"].isin(cols)].dropna(subset=["auroc"])
    if labels is not None:
        d = d[d["label"].isin(labels)]
    d = d.assign(source=d["column"].str.split(":").str[0], classes=d["column"].str.split(": ").str[1])
    g = sns.catplot(d, x="label", y="auroc", hue="classes", col="source", kind="bar", errorbar="sd",
                    height=3.6, aspect=1.5, order=list(dict.fromkeys(d["label"])))
    g.set_xticklabels(rotation=60, ha="right")
    g.set_axis_labels("", "class AUROC (mean ± SD over classes)")
    for ax in g.axes.flat:
        ax.set_ylim(0.4, 1.0)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    g.figure.suptitle(f"Class-heterogeneous non-IID: shared vs unique classes ({which} model)", y=1.04)
    return g.figure
