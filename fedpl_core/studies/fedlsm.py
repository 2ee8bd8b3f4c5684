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
(Task 1) and the synthetic skin-lesion mode with HAM10000's class priors (Task 2);
``data_root`` switches to NIH ChestX-ray14 (``nih``) and HAM10000 / ISIC 2018 Task 3
(``ham10000``) read from disk in their published layouts.

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
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import pandas as pd

from ..config import EngineConfig
from ..data import synthetic as S
from ..experiments import ExperimentConfig
from ..methods import available_methods
from ..profiles import engine_options, pick
from ..tables import fmt_mean_std

TASKS = ("Task 1", "Task 2")
#: (label, registry name, task(s)): the methods of Tables 1 and 2 in the paper's order.
PAPER_METHODS: list[tuple[str, str, tuple[str, ...]]] = [
    ("FedAvg (100% labels)", "fedavg_oracle", TASKS),
    ("FedAvg", "fedavg_pl", TASKS),
    ("FedAvg*", "fedavg_star", TASKS),
    ("FedProx*", "fedprox_star", TASKS),
    ("MOON*", "moon_star", TASKS),
    ("FedRS", "fedrs", ("Task 2",)),
    ("FedPU", "fedpu", ("Task 2",)),
    ("FPSL", "fedpsl", ("Task 1",)),
    ("FedAvg-FixMatch*", "fedavg_fixmatch_star", TASKS),
    ("FSSL*", "fssl_star", TASKS),
    ("FedLSM", "fedlsm", TASKS),
]
ABLATION = [("FedLSM", "fedlsm"), ("w/o AWPA", "fedlsm_no_awpa"), ("w/o UDE", "fedlsm_no_ude"),
            ("w/o UE", "fedlsm_no_ue")]
TABLE2_METRICS = {"AUC": "auroc_mean", "Accuracy": "accuracy", "F1": "f1", "Precision": "precision",
                  "Recall": "recall"}


@dataclass
class Settings:
    """What the notebook varies between profiles."""

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
    data_root: str | None = None
    data_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def engine(self, task: str) -> EngineConfig:
        return EngineConfig(rounds=self.rounds, local_iters=self.local_iters[task], batch_size=32,
                            optimizer="adam", lr=self.lr, weight_decay=self.weight_decay,
                            augment="flip_shift", eval_every=self.eval_every, client_val_fraction=0.1,
                            selection="val_loss", device=self.device, progress=False, **engine_options(self.profile))

    def config(self, task: str) -> ExperimentConfig:
        """The base config of ``task`` (``"Task 1"`` or ``"Task 2"``)."""
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
        one = task == "Task 1"
        real = self.data_root is not None
        dataset = ("nih" if one else "ham10000") if real else ("synthetic-cxr" if one else "synthetic-skin")
        return ExperimentConfig(
            name=f"fedlsm-{'t1' if one else 't2'}", dataset=dataset, data_root=self.data_root,
            classes=list(S.NIH14) if one and not real else None, image_size=self.image_size,
            n_train=self.n_train[task], n_test=self.n_test[task], data_seed=self.data_seed,
            partition="label_set_mismatch", num_clients=8 if one else 5,
            partition_kwargs={"classes_per_client": 3, "seed": 523},
            model=self.model, model_kwargs=dict(self.model_kwargs), engine=self.engine(task))


def settings(profile: str = "cpu", seeds: Sequence[int] | None = None, device: str = "auto",
             data_root: str | None = None, data_seed: int = 0) -> Settings:
    """The notebook's settings for a profile (:mod:`fedpl_core.profiles`).

    * ``smoke``: 28 px, a tiny CNN, a few hundred images, 2 rounds of 3 iterations, 1 seed.
    * ``cpu``: 28 px, the small CNN (width 16), 1,600 (Task 1) / 1,000 (Task 2) training
      images, 10 rounds of 12 / 10 local iterations, Adam lr 3e-3, 3 seeds (FPSL with
      first-order TADL, as in notebook 01's cpu profile), so the notebook fits its 15 minutes.
    * ``full``: DenseNet-121 at 224 px, 50 rounds of 200 / 30 iterations, Adam lr 1e-4 with
      weight decay 5e-4 (Table 4), 3 seeds: the paper's protocol (a GPU; real data by
      ``data_root``).
    """
    st = pick(profile,
              smoke=Settings("smoke", [0], 28, "cnn", {"width": 8}, {"Task 1": 240, "Task 2": 200},
                             {"Task 1": 160, "Task 2": 160}, 2, {"Task 1": 3, "Task 2": 3}, 1e-3, 0.0, 1),
              cpu=Settings("cpu", [0, 1, 2], 28, "cnn", {"width": 16}, {"Task 1": 1600, "Task 2": 1000},
                           {"Task 1": 800, "Task 2": 600}, 10, {"Task 1": 12, "Task 2": 10}, 3e-3, 0.0, 2),
              full=Settings("full", [0, 1, 2], 224, "densenet121", {}, {"Task 1": 20000, "Task 2": 7000},
                            {"Task 1": 5000, "Task 2": 2000}, 50, {"Task 1": 200, "Task 2": 30}, 1e-4, 5e-4, 1))
    st = replace(st, device=device, data_root=data_root, data_seed=data_seed)
    if seeds is not None:
        st.seeds = list(seeds)
    return st


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


def missing_methods() -> list[str]:
    """Registry names of the paper's methods that this package does not offer (yet)."""
    have = set(available_methods())
    return [name for _, name, _ in PAPER_METHODS + [(a, b, TASKS) for a, b in ABLATION] if name not in have]


def ablation_methods() -> list[tuple[str, dict]]:
    have = set(available_methods())
    return [(lab, {"method": name}) for lab, name in ABLATION if name in have]


def table1(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Table 1: per-class AUROC (x 100, mean ± std over seeds) and the mean, per method."""
    from ..tables import per_class_mean_std

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


__all__ = ["TASKS", "PAPER_METHODS", "ABLATION", "Settings", "settings", "methods", "missing_methods",
           "ablation_methods", "table1", "table2", "best_and_last"]
