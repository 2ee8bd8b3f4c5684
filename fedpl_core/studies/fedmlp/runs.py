"""What notebook 04 runs: the paper's methods as ``(label, config overrides)`` rows for
:func:`~fedpl_core.runs.study.run_many` (:func:`methods`), the missing levels of each table
(:func:`level_settings`), Table 3's ablation and its one-class setting, the FedMLP variants
that locate a loss, and the ImageNet start of the headline pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...methods import available_methods
from ...runs.experiment_config import ExperimentConfig
from .paper import ABLATION, PAPER_METHODS
from .profile import Settings


def methods(st: Settings, labels: Sequence[str] | None = None) -> list[tuple[str, dict]]:
    """``(label, overrides)`` of the paper's methods that are registered; FedMLP gets the
    profile's warm-up and detection ratios."""
    have = set(available_methods())
    keep = set(labels) if labels is not None else None
    out = []
    for lab, name in PAPER_METHODS:
        if name in have and (keep is None or lab in keep):
            over: dict[str, Any] = {"method": name}
            if name == "fedmlp":
                over["method_kwargs"] = st.fedmlp_kwargs()
            out.append((lab, over))
    return out


def missing_methods() -> list[str]:
    have = set(available_methods())
    return [name for _, name in PAPER_METHODS if name not in have]


def level_settings(st: Settings, table: str) -> dict[str, dict]:
    """``{"m=<missing>": overrides}`` for the missing levels of ``table``."""
    return {f"m={m}": {"partition_kwargs": {"missing": m}} for m in st.missing[table]}


def ablation_methods(st: Settings) -> list[tuple[str, dict]]:
    """Table 3's rows as ``fedmlp`` with switches; the last row (every switch on: FedMLP
    itself in paper mode) is given as Tables 1-2 give FedMLP, so at the same missing level
    the run is shared with them instead of repeated."""
    return [
        (lab, {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(**({} if all(sw.values()) else sw))})
        for lab, sw in ABLATION
    ]


def one_class_setting(table: str, num_classes: int) -> dict[str, dict]:
    """Table 3's setting: each client labels one class (misses ``C - 1``)."""
    return {f"m={num_classes - 1}": {"partition_kwargs": {"missing": num_classes - 1}}}


def variant_methods(st: Settings) -> list[tuple[str, dict]]:
    """The two FedMLP variants that locate a loss: the paper's own detection ratios (far
    fewer tags) and missing-label detection switched off (WPC + CR only)."""
    return [
        ("FedMLP, paper T0/T1", {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(t0=0.005, t1=0.01)}),
        ("FedMLP without MLD", {"method": "fedmlp", "method_kwargs": st.fedmlp_kwargs(mld=False)}),
    ]


def imagenet_pair(st: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedMLP and FedAvg, the first row of the
    paper's Tables 1-2, as the tables run them."""
    return methods(st, ["FedMLP", "FedAvg"])[::-1]


def imagenet_start(
    st: Settings, base: ExperimentConfig, results_dir: str, workers: int = 1, force: bool = False
) -> pd.DataFrame | None:
    """Does FedMLP's headline (above FedAvg in Table 1) hold from an ImageNet start? FedMLP and FedAvg on
    ``base`` (the notebook's ``base["ICH"]``) at the table's highest missing level, with the profile's
    backbone from scratch (the notebook's own runs, read from the cache) and with EfficientNet-Lite0
    from ImageNet weights: :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC;
    the gpu and full profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add
    an estimate 0.5 min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from ..pretrained import imagenet_start as run

    top = f"m={st.missing['ICH'][-1]}"
    return run(
        base,
        imagenet_pair(st),
        st.seeds,
        results_dir,
        st.profile,
        level_settings(st, "ICH")[top],
        which="final",
        workers=workers,
        force=force,
    )
