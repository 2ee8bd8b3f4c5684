"""FedLSM (MICCAI 2023) experiments behind ``notebooks/02_fedlsm.ipynb``.

The label set mismatch setting: client k identifies the classes I_k (3 per client), the
union of the I_k is every class, and a label outside I_k is simply unknown.

* **Task 1** (Table 1): multi-label chest X-rays, the 14 ChestX-ray14 classes, K = 8, the
  class sets of the paper's Table 5 (``label_set_mismatch`` with seed 523, the authors'
  assignment reproduced call for call).  Metric: AUROC per class and its mean.
* **Task 2** (Table 2): single-label skin lesions, the 7 HAM10000 / ISIC 2018 classes,
  K = 5, the class sets of Table 6.  A sample whose class its client does not identify
  has *no label at all*: FedAvg-style baselines cannot use it (``fedavg`` and
  ``fedavg_pl`` are one method there, and ``run_many`` says so), FedLSM pseudo-labels it.
  Metrics: AUC (macro one-vs-rest), accuracy, macro F1, precision, recall.
* **Table 3**: the ablation w/o AWPA, w/o UDE, w/o UE, in both tasks.

Built-in data (the default): the synthetic chest X-ray generator with the NIH 14 classes
(Task 1) and the synthetic skin-lesion mode with HAM10000's class priors (Task 2).
``data_roots`` (``{"Task 1": folder, "Task 2": folder}``, either or both, as
:mod:`~fedpl_core.studies.fedmlp` has it) switches a task to its real data, read from disk in
the published layout: NIH ChestX-ray14 (``nih``) for Task 1, HAM10000 / ISIC 2018 Task 3
(``ham10000``, split 7:1:2 by lesion as in the paper; ``n_train`` / ``n_test`` do not apply)
for Task 2; a task without a root stays on the built-in data.  :data:`PAPER_TABLE1` and
:data:`PAPER_TABLE2` hold the paper's numbers, :func:`with_paper` puts them beside ours and
:func:`ordering` tests the paper's ranking FedLSM > FedAvg* > FedAvg, paired over seeds.

**[choices]** (the paper's protocol where the built-in profiles cannot afford it):
DenseNet-121 at 224 px, 200 / 30 local iterations and 50 rounds are the ``full`` profile;
the ``cpu`` profile uses the small CNN at 28 px, fewer iterations and rounds and Adam at
lr 3e-3 (the paper's 1e-4 barely moves a randomly initialised small CNN in 10 rounds; at
1e-3 the mean-AUROC curves rose by 3-9 points over the last quarter of the rounds, at 3e-3
by 3-4, median over methods; they are flat by round 40, at most +1.1 over rounds 30-40,
and FedLSM's difference to FedAvg is then the same size: ``benchmarks/long_runs.py``), so
its absolute numbers are not the paper's.  Every client holds out 10 % of its samples as a
validation split (the paper splits 7:1:2); model selection is the round with the lowest
mean validation loss on those splits (``which="best"``), reported beside the last round
(``which="final"``).  FedLSM's weighted BCE (Task 1) is the method's own loss; the
baselines use the package's partial loss (known labels only), FedAvg* etc. with TDMA
head aggregation as the paper's * defines.

**gpu profile** (sized on paper, no GPU measured it: :func:`fedpl_core.studies.profiles.gpu_estimate`
and its stated assumptions): the paper's DenseNet-121 (random init; Adam 1e-3, weight
decay 5e-4) at 128 px with the ImageNet stem: 5.51 x (128/224)^2 = 1.80 GFLOPs a forward
pass, 5.4 a training image; the paper's ratio of local iterations a round to rounds (Task
1: 200 for 50 rounds, 4; Task 2: 30 for 50, 0.6) at 3 rounds: 12 (Task 1) and 2 (Task 2)
iterations of batch 32; the thresholds are the method's (Table 4); 2,400 / 1,500
training and 1,000 / 600 test images, 3 seeds.  99 runs: 26,312 training steps (FedLSM's
teacher and MixUp batch counted x 2) on 0.84 M training images, 0.30 M evaluation images,
5.1 PFLOP: 103 s at 5 % of the H100's 989 dense bf16 TFLOPS (26 s at 20 %); the 15 ms floor
of an eager DenseNet step gives 398 s; estimate 7.3 min (budget 10).  Three rounds are the
budget's: the notebook's 99 runs share 10 minutes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from ..fl.engine_config import EngineConfig
from ..data import synthetic as S
from ..runs.experiment_config import ExperimentConfig
from ..methods import available_methods
from .profiles import engine_options
from ..report.names import display_name
from ..report.tables import fmt_mean_std

TASKS = ("Task 1", "Task 2")
#: (label, registry name, task(s)): the methods of Tables 1 and 2 in the paper's order, each
#: labelled by its class's ``display_name`` (the paper's "FedAvg" trains with the partial loss:
#: "FedAvg-PL"; its "FPSL" is FedPSL).
PAPER_METHODS: list[tuple[str, str, tuple[str, ...]]] = [(display_name(key), key, tasks) for key, tasks in (
    ("fedavg_oracle", TASKS),
    ("fedavg_pl", TASKS),
    ("fedavg_star", TASKS),
    ("fedprox_star", TASKS),
    ("moon_star", TASKS),
    ("fedrs", ("Task 2",)),
    ("fedpu", ("Task 2",)),
    ("fedpsl", ("Task 1",)),
    ("fedavg_fixmatch_star", TASKS),
    ("fssl_star", TASKS),
    ("fedlsm", TASKS),
)]
#: Table 3: the study's own labels of FedLSM's ablations (the paper's "w/o AWPA" ...).
ABLATION = [(display_name("fedlsm"), "fedlsm"), ("w/o AWPA", "fedlsm_no_awpa"), ("w/o UDE", "fedlsm_no_ude"),
            ("w/o UE", "fedlsm_no_ue")]
TABLE2_METRICS = {"AUC": "auroc_mean", "Accuracy": "accuracy", "F1": "f1", "Precision": "precision",
                  "Recall": "recall"}
#: The paper's Table 1 (NIH ChestX-ray14), "Average AUC" row, by our method labels.
PAPER_TABLE1: dict[str, dict[str, float]] = {display_name(key): {"AUC": v} for key, v in (
    ("fedavg_oracle", 0.807), ("fedavg_pl", 0.710), ("fedavg_star", 0.760), ("fedprox_star", 0.766),
    ("moon_star", 0.772), ("fedrs", 0.697), ("fedpsl", 0.760), ("fedavg_fixmatch_star", 0.776), ("fssl_star", 0.740),
    ("fedlsm", 0.791))}
#: The paper's Table 2 (ISIC 2018 / HAM10000), macro AUC, accuracy, F1, precision, recall, by our
#: method labels (the paper's "FedAvg* + FixMatch" is FedAvg-FixMatch*, "Ours" FedLSM).
PAPER_TABLE2: dict[str, dict[str, float]] = {display_name(key): dict(zip(TABLE2_METRICS, v)) for key, v in (
    ("fedavg_oracle", (0.977, 0.889, 0.809, 0.743, 0.800)),
    ("fedavg_pl", (0.927, 0.810, 0.576, 0.721, 0.622)),
    ("fedavg_star", (0.949, 0.817, 0.620, 0.753, 0.597)),
    ("fedprox_star", (0.952, 0.820, 0.630, 0.768, 0.612)),
    ("moon_star", (0.948, 0.826, 0.652, 0.755, 0.620)),
    ("fedpu", (0.927, 0.796, 0.550, 0.699, 0.570)),
    ("fedrs", (0.926, 0.800, 0.577, 0.716, 0.597)),
    ("fedpsl", (0.952, 0.825, 0.638, 0.728, 0.613)),
    ("fedavg_fixmatch_star", (0.940, 0.789, 0.564, 0.681, 0.541)),
    ("fssl_star", (0.939, 0.807, 0.608, 0.740, 0.580)),
    ("fedlsm", (0.960, 0.846, 0.713, 0.763, 0.699)))}
#: The ranking both tables report, best first (FedLSM > FedAvg* > FedAvg-PL, the paper's FedAvg),
#: and the metrics :func:`ordering` tests it on.
RANKING = tuple(display_name(k) for k in ("fedlsm", "fedavg_star", "fedavg_pl"))
RANKING_METRICS = {"Task 1": {"AUC": "auroc_mean"},
                   "Task 2": {"AUC": "auroc_mean", "Accuracy": "accuracy", "F1": "f1"}}


#: The notebook's profiles (:mod:`fedpl_core.studies.profiles`): named fields of :class:`Settings`.
#:
#: * ``smoke``: 28 px, a tiny CNN, a few hundred images, 2 rounds of 3 iterations, 1 seed.
#: * ``cpu``: 28 px, the small CNN (width 16), 1,600 (Task 1) / 1,000 (Task 2) training
#:   images, 10 rounds of 12 / 10 local iterations, Adam lr 3e-3, 3 seeds (FPSL with
#:   first-order TADL, as in notebook 01's cpu profile), so the notebook fits its 15 minutes.
#: * ``full``: DenseNet-121 at 224 px, 50 rounds of 200 / 30 iterations, Adam lr 1e-4 with
#:   weight decay 5e-4 (Table 4), 3 seeds: the paper's protocol (a GPU; real data by
#:   ``data_roots``).
#: * ``gpu``: DenseNet-121 at 128 px, 3 rounds of 12 / 2 iterations (the paper's 200 / 30 to 50
#:   rounds), 3 seeds: 7.3 min on one H100 on paper (module docstring).
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=1e-3, weight_decay=0.0, eval_every=1, local_iters={"Task 1": 3, "Task 2": 3},
                  image_size=28, model="cnn", model_kwargs={"width": 8}, n_train={"Task 1": 240, "Task 2": 200},
                  n_test={"Task 1": 160, "Task 2": 160}),
    "cpu": dict(seeds=[0, 1, 2], rounds=10, lr=3e-3, weight_decay=0.0, eval_every=2,
                local_iters={"Task 1": 12, "Task 2": 10}, image_size=28, model="cnn", model_kwargs={"width": 16},
                n_train={"Task 1": 1600, "Task 2": 1000}, n_test={"Task 1": 800, "Task 2": 600}),
    "gpu": dict(seeds=[0, 1, 2], rounds=3, lr=1e-3, weight_decay=5e-4, eval_every=1,
                local_iters={"Task 1": 12, "Task 2": 2}, image_size=128, model="densenet121", model_kwargs={},
                n_train={"Task 1": 2400, "Task 2": 1500}, n_test={"Task 1": 1000, "Task 2": 600}),
    "full": dict(seeds=[0, 1, 2], rounds=50, lr=1e-4, weight_decay=5e-4, eval_every=1,
                 local_iters={"Task 1": 200, "Task 2": 30}, image_size=224, model="densenet121", model_kwargs={},
                 n_train={"Task 1": 20000, "Task 2": 7000}, n_test={"Task 1": 5000, "Task 2": 2000}),
}


@dataclass
class Settings:
    """What the notebook varies between profiles (a row of :data:`PROFILES` with the
    notebook's parameters applied, :func:`settings`)."""

    profile: str
    seeds: list[int]
    image_size: int
    model: str
    model_kwargs: dict
    n_train: dict[str, int]
    n_test: dict[str, int]
    rounds: int
    local_iters: dict[str, int]
    lr: float
    weight_decay: float
    eval_every: int
    device: str = "auto"
    #: ``{"Task 1": NIH folder, "Task 2": HAM10000 folder}``; a task left out uses the built-in data
    data_roots: dict[str, str] = field(default_factory=dict)
    data_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: loader options of each task's data folder, ``{"Task 1": {"skip_missing": True}}``
    #: (:func:`fedpl_core.studies.profiles.dataset_kwargs_by_key`); the built-in data take none
    dataset_kwargs: dict[str, dict] = field(default_factory=dict)

    def engine(self, task: str) -> EngineConfig:
        return EngineConfig(rounds=self.rounds, local_iters=self.local_iters[task], batch_size=32,
                            optimizer="adam", lr=self.lr, weight_decay=self.weight_decay,
                            augment="flip_shift", eval_every=self.eval_every, client_val_fraction=0.1,
                            selection="val_loss", device=self.device, progress=False, **engine_options(self.profile))

    def config(self, task: str) -> ExperimentConfig:
        """The base config of ``task`` (``"Task 1"`` or ``"Task 2"``)."""
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
        check_data_roots(self.data_roots)
        one = task == "Task 1"
        root = self.data_roots.get(task)
        real = root is not None
        dataset = ("nih" if one else "ham10000") if real else ("synthetic-cxr" if one else "synthetic-skin")
        return ExperimentConfig(
            name=f"fedlsm-{'t1' if one else 't2'}", dataset=dataset, data_root=root,
            classes=list(S.NIH14) if one and not real else None, image_size=self.image_size,
            n_train=self.n_train[task], n_test=self.n_test[task], data_seed=self.data_seed,
            partition="label_set_mismatch", num_clients=8 if one else 5,
            partition_kwargs={"classes_per_client": 3, "seed": 523},
            dataset_kwargs=self.loader_options(task, dataset) if real else {},
            model=self.model, model_kwargs=dict(self.model_kwargs), engine=self.engine(task))

    def loader_options(self, task: str, dataset: str) -> dict[str, Any]:
        """The ``dataset_kwargs`` of ``task``'s data folder, checked against its loader."""
        from .profiles import check_loader_kwargs

        return check_loader_kwargs(dataset, self.dataset_kwargs.get(task, {}), f"dataset_kwargs[{task!r}]")


def check_data_roots(data_roots: Any) -> dict[str, str]:
    """``data_roots`` as a ``{task: folder}`` dict (None: ``{}``), with a clear error for
    a key that is not a task or a bare folder where a dict belongs.  A string holding a dict
    literal (``'{"Task 2": "/data/HAM10000"}'``, what ``papermill -p`` passes) is parsed
    (:func:`fedpl_core.studies.profiles.data_roots_by_key`; the folders are checked by the loaders)."""
    from .profiles import data_roots_by_key

    return data_roots_by_key(data_roots, {TASKS[0]: "NIH ChestX-ray14", TASKS[1]: "HAM10000 / ISIC 2018"},
                             "data_roots", "task", "{'Task 2': '/data/HAM10000'}", must_exist=False)


def settings(profile: str | dict = "cpu", data_roots: Any = None, **parameters: Any) -> Settings:
    """The notebook's settings: the row of :data:`PROFILES` for ``profile`` with the notebook
    ``parameters`` applied (``seeds``, ``rounds``, ``lr``, ``data_seed``, ``device``; None: the
    profile's value) by :func:`fedpl_core.studies.profiles.apply_parameters`, or a row it returned.

    ``data_roots``: ``{"Task 1": NIH ChestX-ray14 folder, "Task 2": HAM10000 folder}``, either
    or both (given here or in the row); a task left out stays on the built-in data (a key
    other than the two tasks is an error, :func:`check_data_roots`).
    """
    from .profiles import settings_with_data_roots

    return settings_with_data_roots(Settings, PROFILES, profile, check_data_roots, data_roots, **parameters)


def methods(task: str, labels: Sequence[str] | None = None, first_order: bool = False) -> list[tuple[str, dict]]:
    """``(label, overrides)`` of the paper's methods for ``task`` that are registered (a
    method not registered yet is left out, see :func:`missing_methods`);
    ``first_order``: FPSL's TADL without the second-order term (the cheap variant)."""
    have = set(available_methods())
    keep = set(labels) if labels is not None else None
    out = []
    for lab, name, tasks in PAPER_METHODS:
        if task in tasks and name in have and (keep is None or lab in keep):
            over: dict[str, Any] = {"method": name}
            if name == "fedpsl" and first_order:
                over["method_kwargs"] = {"first_order": True}
            out.append((lab, over))
    return out


#: Task 1's FedAvg under both readings of "FedAvg", each with FedAvg and with TDMA
#: head aggregation and the same weighted BCE, so that each pair differs by the aggregation only:
#: (label, registry name, method kwargs, reading).
TDMA_GRID = [("FedAvg, partial", "fedavg_wbce", {}, "partial loss"),
             ("FedAvg*, partial", "fedavg_star", {}, "partial loss"),
             ("FedAvg, unknown = 0", "fedavg_wbce", {"partial": False}, "unknown = negative"),
             ("FedAvg*, unknown = 0", "fedavg_star", {"partial": False}, "unknown = negative")]


def tdma_methods() -> list[tuple[str, dict]]:
    """``(label, overrides)`` of :data:`TDMA_GRID`: FedAvg and FedAvg* with the partial loss
    and with unknown labels trained as negatives.  TDMA averages head row c over the clients
    that label c only, so it can matter only where the other clients' rows of c carry
    something harmful: with the partial loss they carry nothing new (their row of c gets no
    gradient), with unknown = 0 they were trained to say "no" to c."""
    return [(lab, {"method": name, "method_kwargs": dict(kw)}) for lab, name, kw, _ in TDMA_GRID]


def tdma_effect(df: pd.DataFrame, metric: str = "auroc_mean") -> pd.DataFrame:
    """Per reading of "FedAvg": FedAvg, FedAvg* (x 100, mean over seeds) and the paired
    difference FedAvg* - FedAvg with its 95 % CI and p-value (:func:`fedpl_core.report.tables.paired_difference`)."""
    from ..report.tables import difference_columns, paired_difference

    fin = df[df["which"] == "final"] if "which" in df else df
    mean = fin.groupby("label")[metric].mean() * 100
    rows = []
    for reading in dict.fromkeys(r for *_, r in TDMA_GRID):
        a, b = [lab for lab, *_, r in TDMA_GRID if r == reading]
        d = paired_difference(df, b, a, metric)
        rows.append({"reading of FedAvg": reading, "FedAvg": round(mean[a], 1), "FedAvg*": round(mean[b], 1),
                     **difference_columns(d, diff="TDMA gain (points)", sd=False)})
    return pd.DataFrame(rows).set_index("reading of FedAvg")


def code_mode_methods() -> list[tuple[str, dict]]:
    """FedLSM in paper mode and in ``mode="code"`` (the released code's loss reduction,
    MixUp order and thresholds; :mod:`fedpl_core.methods.fedlsm`), side by side."""
    return [("FedLSM", {"method": "fedlsm"}), ("FedLSM (code)", {"method": "fedlsm", "method_kwargs": {"mode": "code"}})]


def missing_methods() -> list[str]:
    """Registry names of the paper's methods that this package does not offer (yet)."""
    have = set(available_methods())
    return [name for _, name, _ in PAPER_METHODS + [(a, b, TASKS) for a, b in ABLATION] if name not in have]


def ablation_methods() -> list[tuple[str, dict]]:
    have = set(available_methods())
    return [(lab, {"method": name}) for lab, name in ABLATION if name in have]


def table1(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Table 1: per-class AUROC (x 100, mean ± std over seeds) and the mean, per method."""
    from ..report.tables import per_class_mean_std

    return per_class_mean_std(df, which=which, decimals=decimals)


def table2(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Table 2: AUC, accuracy, macro F1, precision, recall (x 100, mean ± std over seeds)."""
    d = df[df["which"] == which]
    g = d.groupby("label", sort=False)
    out = pd.DataFrame(index=pd.Index(list(dict.fromkeys(d["label"])), name="method"))
    for name, col in TABLE2_METRICS.items():
        m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
        out[name] = [fmt_mean_std(m[i], s[i], decimals) for i in out.index]
    return out


def best_and_last(df: pd.DataFrame, metric: str = "auroc_mean", decimals: int = 1) -> pd.DataFrame:
    """Model selection side by side: ``metric`` of the best-validation round and of the last."""
    out = {}
    for which, name in (("best", "best val. round"), ("final", "last round")):
        g = df[df["which"] == which].groupby("label", sort=False)[metric]
        m, s = g.mean() * 100, g.std(ddof=1) * 100
        out[name] = {k: fmt_mean_std(m[k], s[k], decimals) for k in m.index}
    return pd.DataFrame(out)


def paper_table(task: str) -> dict[str, dict[str, float]]:
    """The paper's numbers for ``task``: Table 1's average AUC or Table 2's five metrics."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
    return PAPER_TABLE1 if task == "Task 1" else PAPER_TABLE2


def with_paper(df: pd.DataFrame, task: str, which: str = "final", decimals: int = 1,
               not_run: bool = True) -> pd.DataFrame:
    """Our numbers (x 100, mean ± std over seeds) beside the paper's (x 100), a column pair
    ``"<metric> (ours)"``, ``"<metric> (paper)"`` per metric (Task 1: the mean AUROC and
    Table 1's average AUC; Task 2: Table 2's five metrics).  Rows: our methods in ``df``'s
    order, then (``not_run``) the paper's methods not run here (ours ``"not run"``)."""
    paper = paper_table(task)
    metrics = {"AUC": "auroc_mean"} if task == "Task 1" else TABLE2_METRICS
    d = df[df["which"] == which]
    g = d.groupby("label", sort=False)
    ours = list(dict.fromkeys(d["label"]))
    rows = ours + ([lab for lab in paper if lab not in ours] if not_run else [])
    out = pd.DataFrame(index=pd.Index(rows, name="method"))
    for name, col in metrics.items():
        m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
        out[f"{name} (ours)"] = [fmt_mean_std(m[i], s[i], decimals) if i in m.index else "not run" for i in rows]
        out[f"{name} (paper)"] = [f"{100 * paper[i][name]:.{decimals}f}" if i in paper else "" for i in rows]
    return out


def ordering(df: pd.DataFrame, task: str, ranking: Sequence[str] = RANKING, which: str = "final") -> pd.DataFrame:
    """The paper's ranking (``ranking``, best first: FedLSM > FedAvg* > FedAvg-PL) step by step,
    on the metrics of :data:`RANKING_METRICS`: for each metric and each neighbouring pair
    ``A - B``, the difference in points (x 100) paired on the seed, its sd, the number of
    pairs, the two-sided paired t-test's p (:func:`fedpl_core.report.tables.paired_difference`;
    None with fewer than two pairs), its 95 % confidence interval, Holm's adjustment of p over
    the whole table (one family of claims: :func:`fedpl_core.report.tables.holm`) and the paper's
    difference.  A pair with a method not in ``df`` is left out."""
    from ..report.tables import holm, paired_difference

    paper = paper_table(task)
    have = set(df["label"])
    rows = []
    for name, col in RANKING_METRICS[task].items():
        for a, b in zip(ranking[:-1], ranking[1:]):
            if not {a, b} <= have:
                continue
            d = paired_difference(df, a, b, col, which=which)
            pd_ = 100 * (paper[a][name] - paper[b][name]) if a in paper and b in paper else float("nan")
            ci = "" if d["ci"] is None else f"{d['ci'][0]:.1f} to {d['ci'][1]:.1f}"
            rows.append({"metric": name, "A": a, "B": b, "A - B (points)": round(d["diff"], 2),
                         "sd": round(d["sd"], 2), "95 % CI": ci, "pairs": d["n"], "p": d["p"],
                         "paper A - B": round(pd_, 1)})
    cols = ["metric", "A", "B", "A - B (points)", "sd", "95 % CI", "pairs", "p", "p (Holm)", "paper A - B"]
    out = pd.DataFrame(rows, columns=[c for c in cols if c != "p (Holm)"])
    out.insert(out.columns.get_loc("p") + 1, "p (Holm)", holm(list(out["p"])))
    return out


def describe_ordering(steps: pd.DataFrame, alpha: float = 0.05) -> list[str]:
    """One sentence per metric of :func:`ordering`'s table, in the three verdicts of
    :func:`~fedpl_core.report.tables.verdict`: each step "A above B" is *reproduced* (p <
    ``alpha`` in the paper's direction), *opposite* (p < ``alpha`` against it) or *not
    distinguishable* (its 95 % interval spans 0); the whole ranking is reproduced when every
    step is, opposite when a step is, else not distinguishable.  Never "holds" or "fails"
    for a gap the runs cannot tell from 0."""
    from ..report.tables import verdict

    out = []
    for metric, g in steps.groupby("metric", sort=False):
        chain = " > ".join([g["A"].iloc[0]] + list(g["B"]))
        parts, verdicts = [], []
        for _, r in g.iterrows():
            p = None if r["p"] is None or r["p"] != r["p"] else float(r["p"])
            v = verdict({"diff": r["A - B (points)"], "p": p}, alpha=alpha)
            verdicts.append(v)
            ci = f"95 % CI {r['95 % CI']}; " if isinstance(r["95 % CI"], str) and r["95 % CI"] else ""
            test = "no test" if p is None else f"p = {p:.2g}"
            parts.append(f"{r['A']} − {r['B']} = {r['A - B (points)']:+.1f} points ({ci}{test}; paper "
                         f"{r['paper A - B']:+.1f}): {v}")
        overall = ("reproduced" if all(v == "reproduced" for v in verdicts)
                   else "opposite" if "opposite" in verdicts else "not distinguishable")
        pairs = int(g["pairs"].min()) if len(g) else 0
        out.append(f"{metric}: the ranking {chain} is {overall} here; " + "; ".join(parts)
                   + f" (paired over {pairs} seed(s)).")
    return out


def describe_tdma_drift(table: pd.DataFrame, paper_gain: float = 5.0, alpha: float = 0.05) -> list[str]:
    """Sentences from ``benchmarks/fedlsm_tdma_drift.py``'s table (columns ``local iterations``,
    ``reading of FedAvg``, ``TDMA gain (points)``, ``p``, ``pairs``): TDMA's paired gain per
    reading of "FedAvg" and number of local iterations a round, and where the paper's gain
    (Table 1: +5.0) shows at p < ``alpha``."""
    out = []
    hits = []
    for reading, g in table.groupby("reading of FedAvg", sort=False):
        parts = []
        for _, r in g.sort_values("local iterations").iterrows():
            p = r["p"]
            test = "no test" if p is None or p != p else f"p = {p:.2g}"
            parts.append(f"{r['TDMA gain (points)']:+.1f} at {int(r['local iterations'])} ({test})")
            if r["TDMA gain (points)"] > 0 and p == p and p is not None and p < alpha:
                hits.append((reading, int(r["local iterations"]), r["TDMA gain (points)"], p))
        out.append(f"{reading}: TDMA (FedAvg* - FedAvg) " + ", ".join(parts) + " local iterations a round "
                   f"(paired over {int(g['pairs'].min())} seeds).")
    if hits:
        out.append("The paper's gain (+{:.1f}) shows, above zero at p < {:g}, with ".format(paper_gain, alpha)
                   + "; ".join(f"{rd} at {n} local iterations ({gain:+.1f}, p = {p:.2g})" for rd, n, gain, p in hits)
                   + ", and in no other setting.")
    else:
        out.append(f"The paper's gain (+{paper_gain:.1f}) shows in no setting at p < {alpha:g}.")
    return out


# =========================================================================== figures (notebook 02)
#: The methods whose pseudo-labels and uncertainty split notebook 02 follows round by round.
DIAGNOSED = tuple(display_name(k) for k in ("fedlsm", "fedavg_fixmatch_star", "fssl_star"))


def plot_task_curves(results: dict[str, pd.DataFrame], metric: str = "auroc_mean",
                     title: str = "{task}: {metric} per round"):
    """Per-round curves of both tasks side by side (``results``: ``{task: run_many frame with
    histories}``), one panel per task, one legend (the notebook's ``02_curves``)."""
    import matplotlib.pyplot as plt

    from ..nn.metrics import metric_name
    from ..report.plotting import plot_curves
    from ..report.tables import curve_frame

    fig, axes = plt.subplots(1, len(results), figsize=(7 * len(results), 4.2), squeeze=False)
    for ax, (task, res) in zip(axes[0], results.items()):
        seeds = res["seed"].nunique() if "seed" in res else 0
        plot_curves(curve_frame(res, metric), metric, ax=ax,
                    title=title.format(task=task, metric=metric_name(metric)) + (f" ({seeds} seeds)" if seeds else ""))
    return fig


def diagnostic_curves(res: pd.DataFrame, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """The per-round pseudo-label scores (``pl/*``) and logged diagnostics (``log/*``) of the
    runs of ``res`` (``run_many(..., histories=True)``) as long rows (``label``, ``seed``,
    ``round``, ``metric``, ``value``[, ``method``]), for ``labels`` only when given."""
    from ..report.tables import curve_frame

    keys = sorted({k for h in res.attrs["histories"].values() for r in h for k in r if k.startswith(("pl/", "log/"))})
    frames = [curve_frame(res, metric=k).rename(columns={k: "value"}).assign(metric=k) for k in keys]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["setting", "label", "seed", "round", "value", "metric"])
    out = pd.concat(frames, ignore_index=True)
    return out if labels is None else out[out["label"].isin(list(labels))]


def plot_diagnostics(res: pd.DataFrame, task: str, labels: Sequence[str] = DIAGNOSED):
    """The pseudo-labels and FedLSM's uncertainty split per round (:func:`diagnostic_curves`
    of ``labels``): one panel per recorded quantity that changes over the rounds (a constant
    one is listed under the figure instead), shares and accuracies on [0, 1], one colour and
    marker per method (the notebook's ``02_diagnostics_task1/2``)."""
    from ..report.plotting import plot_metric_panels

    cv = diagnostic_curves(res, labels)
    seeds = cv["seed"].nunique() if len(cv) else 0
    return plot_metric_panels(cv, sorted(cv["metric"].unique()),
                              title=f"{task}: pseudo-labels and FedLSM's uncertainty split, mean ± sd over "
                                    f"{seeds} seed(s)")


# =========================================================================== the notebook's tables and sentences
#: The variants tried when pseudo-labelling does not engage: (label, FedLSM options) per task.
TRIED_VARIANTS = {"Task 1": [("FedLSM, reachable thresholds", {"tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6, "tau_ln": 0.1}),
                             ("FedLSM, both", {"pos_weight": False, "tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6,
                                               "tau_ln": 0.1})],
                  "Task 2": [("FedLSM, reachable thresholds", {"tau": 0.8, "tau_l": 0.7})]}
#: The metrics each task's claims are tested on: mean AUROC (Task 1); AUC and macro F1 (Task 2).
CLAIM_METRICS = {"Task 1": ["auroc_mean"], "Task 2": ["auroc_mean", "f1"]}
#: The paper's setting beside which the real-data section prints its numbers.
PAPER_SETUP = {"Task 1": "Table 1: DenseNet-121 at 320 px, 50 rounds of 200 local iterations",
               "Task 2": "Table 2: DenseNet-121 at 224 px, 50 rounds of 30 local iterations"}


def _canon(sets) -> list[list[str]]:
    return [sorted(c.replace("Pleural_", "") for c in s) for s in sets]  # NIH's spelling vs the paper's


def same_as_paper(part, task: str) -> bool:
    """Whether a partition's label sets are the paper's Table 5 (Task 1) or 6 (Task 2),
    NIH's ``Pleural_Thickening`` read as the paper's ``Thickening``."""
    from .. import partitions as P

    paper = {"Task 1": P.FEDLSM_TABLE_5, "Task 2": P.FEDLSM_TABLE_6}[task]
    return _canon(P.assigned_classes(part)) == _canon(P.table_assignment(paper))


def label_sets_table(part) -> pd.DataFrame:
    """The classes each client (A, B, ...) identifies, one row a client."""
    from .. import partitions as P

    return pd.DataFrame({chr(65 + k): ", ".join(c) for k, c in enumerate(P.assigned_classes(part))},
                        index=["identified classes"]).T


def claims_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The paper's claim "FedLSM above FedAvg and FedAvg*" in numbers: per task and metric
    (:data:`CLAIM_METRICS`), FedLSM minus each reference, paired on the seed
    (:func:`~fedpl_core.report.tables.difference_columns`), the sentence
    :func:`~fedpl_core.report.tables.describe_difference` writes, and Holm's p over the
    family."""
    from ..report.tables import describe_difference, difference_columns, holm, paired_difference

    rows = []
    for task, res in results.items():
        for metric in CLAIM_METRICS[task]:
            for ref in ("FedAvg-PL", "FedAvg*"):  # the paper's FedAvg trains with the partial loss
                if {"FedLSM", ref} <= set(res["label"]):
                    d = paired_difference(res, "FedLSM", ref, metric)
                    rows.append({"task": task, "metric": metric, "vs": ref, **difference_columns(d),
                                 "sentence": describe_difference(d)})
    claims = pd.DataFrame(rows)
    if len(claims):
        claims["p (Holm)"] = holm(list(claims["p"]))
    return claims


def claims_sentences(claims: pd.DataFrame) -> list[str]:
    """Each claim of :func:`claims_table` as a sentence, then how many the run reproduces
    (p < 0.05 in the paper's direction), before and after Holm's correction."""
    from ..nn.metrics import metric_name
    from .notebook import reproduced_count

    out = [f"{r['task']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in claims.iterrows()]
    if len(claims):
        out.append(reproduced_count(claims, "FedLSM"))
    return out


def tdma_sentences(df: pd.DataFrame) -> list[str]:
    """What TDMA adds under each reading of FedAvg (:data:`TDMA_GRID`), one sentence each."""
    from ..report.tables import describe_difference, paired_difference

    out = []
    for reading in dict.fromkeys(rd for *_, rd in TDMA_GRID):
        labels = [lab for lab, *_, rd in TDMA_GRID if rd == reading]
        out.append(f"{reading}: {describe_difference(paired_difference(df, *labels[::-1]))}")
    return out


def code_mode_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The released code's behaviour beside paper mode: per task and metric, FedLSM (code)
    minus FedLSM and minus FedAvg*, and FedLSM minus FedAvg*, paired on the seed, with the
    sentence of each."""
    from ..report.tables import describe_difference, difference_columns, paired_difference

    rows = []
    for task, rc in results.items():
        for metric in CLAIM_METRICS[task]:
            for a, b in (("FedLSM (code)", "FedLSM"), ("FedLSM (code)", "FedAvg*"), ("FedLSM", "FedAvg*")):
                d = paired_difference(rc, a, b, metric)
                rows.append({"task": task, "metric": metric, "comparison": f"{a} - {b}",
                             **difference_columns(d, sd=False), "sentence": describe_difference(d)})
    return pd.DataFrame(rows)


def code_mode_sentences(code_mode: pd.DataFrame) -> list[str]:
    """:func:`code_mode_table`'s sentences, each after its task and metric (by its name)."""
    from ..nn.metrics import metric_name

    return [f"{r['task']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in code_mode.iterrows()]


def diagnostics(res: pd.DataFrame) -> pd.DataFrame:
    """The pseudo-label (``pl/*``) and uncertainty-split (``log/*``) records of every run,
    round by round, as long rows (label, seed, round, metric, value); empty without any."""
    return diagnostic_curves(res)


def diagnostics_table(cv: pd.DataFrame) -> pd.DataFrame:
    """:func:`diagnostics` as a table: rows (metric, method), columns the rounds, mean over seeds."""
    return cv.groupby(["metric", "label", "round"])["value"].mean().unstack("round").round(3)


def tried_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each variant of :data:`TRIED_VARIANTS` (``results[task]``: its runs with FedAvg,
    FedAvg* and FedLSM): its pseudo-labelled share and the precision of its positive
    pseudo-labels at the last round (mean over seeds), and its paired differences from FedAvg
    and FedAvg* (points, with p)."""
    from ..nn.metrics import metric_name
    from ..report.tables import curve_frame, paired_difference

    rows = []
    for task, rv in results.items():
        for lab, _ in TRIED_VARIANTS[task]:
            last = {}
            for k in ("pl/coverage", "pl/pos_precision"):
                cv = curve_frame(rv, metric=k)
                last[k] = cv[cv["label"] == lab].groupby("seed")[k].last().mean()
            row = {"task": task, "variant": lab,
                   "pseudo-labelled share (last round)": round(float(last["pl/coverage"]), 3),
                   "positive precision": round(float(last["pl/pos_precision"]), 3)}
            for metric in CLAIM_METRICS[task]:
                for ref in ("FedAvg-PL", "FedAvg*"):
                    d = paired_difference(rv, lab, ref, metric)
                    row[f"{metric_name(metric)} vs {ref}"] = (f"{d['diff']:+.1f} (p = {d['p']:.2g})" if d["p"] is not None
                                                 else f"{d['diff']:+.1f}")
            rows.append(row)
    return pd.DataFrame(rows).set_index(["task", "variant"])


def tried_sentences(tried: pd.DataFrame) -> list[str]:
    """One sentence per variant of :func:`tried_table`: its pseudo-labelled share and the
    comparisons in which it is significantly above the reference."""
    out = []
    for (task, lab), r in tried.iterrows():
        wins = [c for c in tried.columns if " vs " in c and isinstance(r[c], str) and r[c].startswith("+")
                and "p = " in r[c] and float(r[c].split("p = ")[1].rstrip(")")) < 0.05]
        out.append(f"{task}, {lab}: pseudo-labels on {r['pseudo-labelled share (last round)']:.1%} of the unknown "
                   f"entries; significantly above the reference in {len(wins)} comparison(s)"
                   + (f" ({', '.join(wins)})" if wins else ""))
    return out


def ablation_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3: per task, metric and ablation row, mean ± SD over seeds (points) and each
    variant's paired difference from the full FedLSM."""
    from ..nn.metrics import metric_name
    from ..report.tables import difference_columns, paired_difference

    rows = []
    for task, ra in results.items():
        for lab in dict.fromkeys(ra["label"]):
            for metric in CLAIM_METRICS[task]:
                d = ra[(ra["label"] == lab) & (ra["which"] == "final")][metric] * 100
                row = {"task": task, "metric": metric_name(metric), "method": lab,
                       "mean ± SD": f"{d.mean():.1f} ± {d.std(ddof=1):.1f}"}
                if lab != "FedLSM":
                    row.update(difference_columns(paired_difference(ra, lab, "FedLSM", metric), diff="vs FedLSM",
                                                  sd=False))
                rows.append(row)
    return pd.DataFrame(rows)


def ablation_sentences(table3: pd.DataFrame) -> list[str]:
    """What removing each component does in :func:`ablation_table`, one sentence a row."""
    from ..nn.metrics import metric_name

    out = []
    for _, r in table3.iterrows():
        if r["method"] != "FedLSM":
            change = "lowers" if r["vs FedLSM"] < 0 else "raises"
            sig = "n/a" if r["p"] is None or r["p"] != r["p"] else f"p = {r['p']:.2g}"
            out.append(f"{r['task']}, {metric_name(r['metric'])}: removing {r['method'][4:]} {change} the score by "
                       f"{abs(r['vs FedLSM']):.1f} points ({sig})")
    return out


def image_files_note(ds) -> str:
    """What the first image file's size says about a HAM10000 copy (the official JPEGs are
    600 x 450)."""
    from PIL import Image

    paths = ds.extra.get("paths")
    if paths is None or not len(paths):
        return "image files of unknown size"
    with Image.open(paths[0]) as im:
        w, h = im.size
    if (w, h) == (600, 450):
        return "600 x 450 JPEGs (the official release's size)"
    if (w, h) == (200, 150):
        return ("200 x 150 JPEGs downscaled from the official 600 x 450 (the size of the public GitHub snapshot "
                "mmalek06/bounding-box-detection-ham1000 this project checked against)")
    return f"{w} x {h} images"


def ham_tdma_sentences(ham: pd.DataFrame) -> list[str]:
    """The committed HAM10000 TDMA benchmark (``figures/bench_fedlsm_ham_tdma.csv``) as
    sentences: TDMA's gain with each client loss (with its verdict), and what accuracy and F1
    score against the classifier that always answers the most frequent class.  The FedAvg
    column is the paper's FedAvg (``FedAvg-PL``; ``FedAvg`` in tables written before the
    display names)."""
    from ..report.tables import verdict

    avg = "FedAvg-PL" if "FedAvg-PL" in ham.columns else "FedAvg"
    trivial = ham["client loss"].str.startswith("always")
    lines = []
    for loss, r in ham[~trivial & (ham["metric"] == "AUC")].set_index("client loss").iterrows():
        p = None if r["p"] != r["p"] else r["p"]
        lines.append(f"{loss}: FedAvg* − {avg} = {r['TDMA gain (points)']:+.1f} AUC points "
                     f"({'no test' if p is None else f'p = {p:.2g}'}; paper +2.2): "
                     f"{verdict({'diff': r['TDMA gain (points)'], 'p': p})}")
    for metric in ("Accuracy", "F1"):
        runs = ham[~trivial & (ham["metric"] == metric)][[avg, "FedAvg*"]].to_numpy()
        base_ = ham[trivial & (ham["metric"] == metric)]
        lines.append(f"{metric}: the trained runs score {runs.min():.1f} to {runs.max():.1f}; "
                     f"{base_['client loss'].iloc[0]} scores {base_[avg].iloc[0]:.1f}")
    return lines


def last_coverage(res: pd.DataFrame, label: str = "FedLSM") -> float | None:
    """``label``'s pseudo-labelled share of the unknown entries at its last evaluated round,
    mean over seeds (None without ``pl/coverage`` records)."""
    from ..report.tables import curve_frame

    cv = curve_frame(res, metric="pl/coverage")
    cv = cv[cv["label"] == label] if len(cv) else cv
    return float(cv.sort_values("round").groupby("seed")["pl/coverage"].last().mean()) if len(cv) else None


def what_this_run_shows(claims: pd.DataFrame, table3: pd.DataFrame, tdma: pd.DataFrame,
                        coverage: dict[str, float] | None = None) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's claim
    (FedLSM above FedAvg* in each task's first metric), whether pseudo-labelling engaged
    (``coverage``: FedLSM's pseudo-labelled share at the last round, per task), what TDMA adds
    under each reading of FedAvg, and how many ablation rows fall significantly below FedLSM."""
    from ..report.tables import verdict

    out = []
    for _, r in claims[claims["vs"] == "FedAvg*"].iterrows() if len(claims) else []:
        if r["metric"] != CLAIM_METRICS[r["task"]][0]:
            continue
        word = verdict({"diff": r["diff (points)"], "p": r["p"]})
        out.append(f"{r['task']}: the paper's claim that FedLSM is above FedAvg* in {'mean AUROC' if r['task'] == 'Task 1' else 'AUC'} "
                   f"is {word} here (FedLSM {abs(r['diff (points)']):.1f} points "
                   f"{'above' if r['diff (points)'] > 0 else 'below'}"
                   + (f", 95 % CI {r['95 % CI']})." if r["95 % CI"] else ", one seed: no interval)."))
    for task, share in (coverage or {}).items():
        out.append(f"{task}: FedLSM's teacher pseudo-labelled {100 * share:.1f} % of the unknown entries by the last "
                   "round" + (": pseudo-labelling never engaged, so FedLSM here is its strong-view training alone."
                              if share == 0 else "."))
    if len(tdma):
        col = next((c for c in tdma.columns if "diff" in c or "gain" in c), None)
        if col is not None:
            out.append("TDMA's gain over FedAvg: " + "; ".join(f"{reading} {r[col]:+.1f} points"
                                                                for reading, r in tdma.iterrows()) + ".")
    if len(table3):
        below = table3[(table3["method"] != "FedLSM") & (table3["vs FedLSM"] < 0)
                       & table3["p"].map(lambda p: p is not None and p == p and p < 0.05)]
        n = int((table3["method"] != "FedLSM").sum())
        out.append(f"Removing a component lowers the score significantly in {len(below)} of the ablation's {n} rows.")
    return out



# =========================================================================== the paper's headline claims
def headline_claims() -> list:
    """FedLSM's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 02 on its runs, last round: ``frames`` keys ``"Task 1"`` and ``"Task 2"`` (Tables
    1-2), ``"ablation Task 1"`` / ``"ablation Task 2"`` (Table 3) and ``"HAM10000"`` (Table 2's
    methods on the real images, when the notebook was given them)."""
    from ..report.findings import Claim

    lsm, avg, star = (display_name(k) for k in ("fedlsm", "fedavg_pl", "fedavg_star"))
    pl = ("at the paper's thresholds the teacher labels nothing in the notebook's 10 rounds, so FedLSM is its "
          "strong-view training without pseudo-labels")
    where_pl = "notebook 02, the uncertainty split round by round; benchmarks/fedlsm_strong_view.py"
    drift = ("TDMA's gain needs unknown labels trained as negatives and long local training: the rows it drops drift "
             "further towards 'no' the longer clients train between aggregations")
    out = [Claim("FedLSM", f"Table 1: {lsm} above {avg}", lsm, avg, "Task 1", mechanism=pl, evidence=where_pl),
           Claim("FedLSM", f"Table 1: {lsm} above {star}", lsm, star, "Task 1", mechanism=pl, evidence=where_pl),
           Claim("FedLSM", f"Table 1: TDMA lifts FedAvg ({star} above {avg})", star, avg, "Task 1", mechanism=drift,
                 evidence="notebook 02, 'Which FedAvg?'; benchmarks/fedlsm_tdma_drift.py"),
           Claim("FedLSM", f"Table 2: {lsm} above {avg} in AUC", lsm, avg, "Task 2", mechanism=pl, evidence=where_pl),
           Claim("FedLSM", f"Table 2: {lsm} above {star} in AUC", lsm, star, "Task 2", mechanism=pl, evidence=where_pl),
           Claim("FedLSM", f"Table 2: {lsm} above {star} in F1", lsm, star, "Task 2", metric="f1", mechanism=pl,
                 evidence=where_pl)]
    for task in TASKS:
        out += [Claim("FedLSM", f"Table 3 ({task}): {lsm} above {lab}", lsm, lab, f"ablation {task}",
                      evidence="notebook 02, Table 3") for lab, _ in ABLATION[1:]]
    ham = ("with the engine's softmax over all 7 classes a client trains the rows of the classes it does not "
           "identify as negatives, and TDMA drops those rows")
    out += [Claim("FedLSM", f"HAM10000: {lsm} above {star} in AUC", lsm, star, "HAM10000",
                  evidence="notebook 02, real data; benchmarks/fedlsm_ham10000.py"),
            Claim("FedLSM", f"HAM10000: {star} above {avg} in AUC", star, avg, "HAM10000", mechanism=ham,
                  evidence="notebook 02, real data; benchmarks/fedlsm_ham_tdma.py")]
    return out

__all__ = ["TASKS", "PAPER_METHODS", "ABLATION", "TDMA_GRID", "tdma_methods", "tdma_effect", "code_mode_methods", "TABLE2_METRICS", "PAPER_TABLE1", "PAPER_TABLE2", "RANKING",
           "RANKING_METRICS", "PROFILES", "TRIED_VARIANTS", "CLAIM_METRICS", "PAPER_SETUP", "same_as_paper",
           "label_sets_table", "claims_table", "claims_sentences", "tdma_sentences", "code_mode_table", "code_mode_sentences",
           "diagnostics",
           "diagnostics_table", "tried_table", "tried_sentences", "ablation_table", "ablation_sentences",
           "image_files_note", "ham_tdma_sentences", "last_coverage", "what_this_run_shows", "Settings", "check_data_roots", "settings", "methods", "missing_methods",
           "ablation_methods", "table1", "table2", "best_and_last", "paper_table", "with_paper", "ordering",
           "describe_ordering", "describe_tdma_drift", "DIAGNOSED", "plot_task_curves", "diagnostic_curves",
           "plot_diagnostics", "headline_claims"]


def imagenet_pair(s: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedLSM and FedAvg-PL (the paper's FedAvg) of Task 1 (Table 1), as the
    notebook's Table 1 runs them."""
    pair = dict(methods("Task 1", ["FedLSM", "FedAvg-PL"], first_order=s.profile != "full"))
    return [(lab, pair[lab]) for lab in ("FedLSM", "FedAvg-PL") if lab in pair]


def imagenet_start(s: Settings, base, results_dir: str, workers: int = 1,
                   force: bool = False) -> pd.DataFrame | None:
    """Does FedLSM's headline (above FedAvg on Task 1's chest X-rays) hold from an ImageNet start? FedLSM and
    FedAvg on ``base`` (the notebook's ``base["Task 1"]``), with the profile's backbone from scratch
    (the notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC; the gpu and full
    profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate 0.4
    min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from .pretrained import imagenet_start as run

    return run(base, imagenet_pair(s), s.seeds, results_dir, s.profile, which="final", workers=workers,
               force=force)


__all__ += ["imagenet_pair", "imagenet_start"]
