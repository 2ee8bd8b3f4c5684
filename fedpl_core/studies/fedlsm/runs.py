"""What notebook 02 runs: the paper's methods of each task as ``(label, config overrides)``
rows for :func:`~fedpl_core.runs.study.run_many` (:func:`methods`), Table 3's ablation, both
readings of "FedAvg" with and without TDMA (:data:`TDMA_GRID`), FedLSM in the released code's
mode, the variants tried when pseudo-labelling does not engage, and the ImageNet start of the
headline pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...methods import available_methods
from .paper import ABLATION, PAPER_METHODS, TASKS
from .profile import Settings


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


#: A FedLSM local step's time against a FedAvg step's: the teacher's forward pass on the weak views
#: and the strong views cost the difference.  Measured in the paper profile's run (Task 1, one
#: thread a run, two workers): a FedLSM run 1,396-1,420 s, a FedAvg-PL or FedAvg* run 832-851 s.
FEDLSM_STEP_COST = 1.7


def run_cost(cfg) -> float:
    """A run's expected time in FedAvg local steps: rounds x local iterations, times
    :data:`FEDLSM_STEP_COST` for FedLSM and its ablations.  ``run_many(..., cost=run_cost)``
    starts the longest runs first: in the paper profile FedLSM's five Task 1 runs would
    otherwise start last, and the last would run alone for about 23 minutes while the other core
    idles."""
    steps = cfg.engine.rounds * (cfg.engine.local_iters or 1)
    return steps * (FEDLSM_STEP_COST if cfg.method.startswith("fedlsm") else 1.0)


#: Task 1's FedAvg under both readings of "FedAvg", each with FedAvg and with TDMA
#: head aggregation and the same weighted BCE, so that each pair differs by the aggregation only:
#: (label, registry name, method kwargs, reading).
TDMA_GRID = [
    ("FedAvg, partial", "fedavg_wbce", {}, "partial loss"),
    ("FedAvg*, partial", "fedavg_star", {}, "partial loss"),
    ("FedAvg, unknown = 0", "fedavg_wbce", {"partial": False}, "unknown = negative"),
    ("FedAvg*, unknown = 0", "fedavg_star", {"partial": False}, "unknown = negative"),
]


def tdma_methods() -> list[tuple[str, dict]]:
    """``(label, overrides)`` of :data:`TDMA_GRID`: FedAvg and FedAvg* with the partial loss
    and with unknown labels trained as negatives.  TDMA averages head row c over the clients
    that label c only, so it can matter only where the other clients' rows of c carry
    something harmful: with the partial loss they carry nothing new (their row of c gets no
    gradient), with unknown = 0 they were trained to say "no" to c."""
    return [(lab, {"method": name, "method_kwargs": dict(kw)}) for lab, name, kw, _ in TDMA_GRID]


def code_mode_methods() -> list[tuple[str, dict]]:
    """FedLSM in paper mode and in ``mode="code"`` (the released code's loss reduction,
    MixUp order and thresholds; :mod:`fedpl_core.methods.fedlsm`), side by side."""
    return [
        ("FedLSM", {"method": "fedlsm"}),
        ("FedLSM (code)", {"method": "fedlsm", "method_kwargs": {"mode": "code"}}),
    ]


def missing_methods() -> list[str]:
    """Registry names of the paper's methods that this package does not offer (yet)."""
    have = set(available_methods())
    return [name for _, name, _ in PAPER_METHODS + [(a, b, TASKS) for a, b in ABLATION] if name not in have]


def ablation_methods() -> list[tuple[str, dict]]:
    have = set(available_methods())
    return [(lab, {"method": name}) for lab, name in ABLATION if name in have]


#: The variants tried when pseudo-labelling does not engage: (label, FedLSM options) per task.
TRIED_VARIANTS = {
    "Task 1": [
        ("FedLSM, reachable thresholds", {"tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6, "tau_ln": 0.1}),
        ("FedLSM, both", {"pos_weight": False, "tau_p": 0.7, "tau_n": 0.05, "tau_lp": 0.6, "tau_ln": 0.1}),
    ],
    "Task 2": [("FedLSM, reachable thresholds", {"tau": 0.8, "tau_l": 0.7})],
}


def imagenet_pair(s: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedLSM and FedAvg-PL (the paper's FedAvg) of Task 1
    (Table 1), as the notebook's Table 1 runs them."""
    pair = dict(methods("Task 1", ["FedLSM", "FedAvg-PL"], first_order=s.profile != "full"))
    return [(lab, pair[lab]) for lab in ("FedLSM", "FedAvg-PL") if lab in pair]


def imagenet_start(s: Settings, base, results_dir: str, workers: int = 1, force: bool = False) -> pd.DataFrame | None:
    """Does FedLSM's headline (above FedAvg on Task 1's chest X-rays) hold from an ImageNet start? FedLSM and
    FedAvg on ``base`` (the notebook's ``base["Task 1"]``), with the profile's backbone from scratch
    (the notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC; the gpu and full
    profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate 0.4
    min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from ..pretrained import imagenet_start as run

    return run(base, imagenet_pair(s), s.seeds, results_dir, s.profile, which="final", workers=workers, force=force)
