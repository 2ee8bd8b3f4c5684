"""What notebook 01 runs: the paper's methods as ``(label, config overrides)`` rows for
:func:`~fedpl_core.runs.study.run_many` (:func:`paper_methods`; the TADL diagnosis
:func:`tadl_variants`), the settings of Tables II / IV, Fig. 3, Fig. 4 and Table V as
``{setting: overrides}`` (and the number in a setting's label, :func:`setting_value`), the
partition a config trains on, and the ImageNet start of the headline pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ... import partitions as P
from ...methods import available_methods
from ...report.names import display_name
from ...runs.build import build_partition, load_data
from ...runs.experiment_config import ExperimentConfig
from .paper import PRETRAIN_METHODS, PRETRAIN_ROUNDS, TABLE_II_METHODS, TADL_METHODS, sizes_kwargs
from .profile import Settings


def paper_methods(
    labels: Sequence[str] | None = None,
    first_order: bool = False,
    verbose: bool = True,
    rounds: int | None = None,
    cache_dir: str | None = None,
) -> list[tuple[str, dict]]:
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
    rows = [
        (avg, {"method": "fedavg_wbce", "method_kwargs": {}}),
        (f"{avg}, batch 16", {"method": "fedavg_wbce", "method_kwargs": {}, "batch_size": 16}),
        (display_name("fedpsl_tadl"), tadl),
        ("TADL, batch 64", {**tadl, "batch_size": 64}),
        ("TADL, alpha = 0.1", {"method": "fedpsl_tadl", "method_kwargs": {"first_order": first_order, "alpha": 0.1}}),
    ]
    if first_order:
        rows.append(("TADL, second order", {"method": "fedpsl_tadl", "method_kwargs": {"first_order": False}}))
    return rows


def partition(cfg: ExperimentConfig) -> P.Partition:
    """The partition a run of ``cfg`` trains on."""
    return build_partition(cfg, load_data(cfg).train)


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


def imagenet_pair(s: Settings) -> list[tuple[str, dict]]:
    """The headline pair of :func:`imagenet_start`: FedPSL and FedAvg (wBCE), the paper's FedAVG, as Table II
    runs them."""
    pair = dict(paper_methods([display_name("fedavg_wbce"), "FedPSL"], first_order=s.first_order, verbose=False))
    return [(lab, pair[lab]) for lab in ("FedPSL", display_name("fedavg_wbce")) if lab in pair]


def imagenet_start(s: Settings, base, results_dir: str, workers: int = 1, force: bool = False) -> pd.DataFrame | None:
    """Does FedPSL's headline (above FedAVG in Table II) hold from an ImageNet start? FedPSL and FedAvg (wBCE) on
    ``base`` (the notebook's ``base2``) in Table II's setting, with the profile's backbone from scratch
    (the notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (last round, mean AUROC; the gpu and full
    profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate 0.3
    min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from ..pretrained import imagenet_start as run

    return run(
        base,
        imagenet_pair(s),
        s.seeds,
        results_dir,
        s.profile,
        table2_settings(s)["table"],
        which="final",
        workers=workers,
        force=force,
    )
