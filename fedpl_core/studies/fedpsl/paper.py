"""What the FedPSL paper fixes: its methods in the order of Table II (and those of Table IV),
the ones that pre-train or meta-learn, its published numbers (:data:`PAPER_TABLE_II`,
:data:`PAPER_TABLE_IV`, :data:`PAPER_TABLE_V`; Figs. 3 and 4 are plots whose values the text
does not state) and its federations as one base config: the Table I / III clients of the data
source ``"fedpsl"`` (:mod:`fedpl_core.data.sources.fedpsl`), each of the size
:func:`sizes_kwargs` gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...fl.engine_config import EngineConfig
from ...report.names import display_name
from ...runs.experiment_config import ExperimentConfig

#: (label, registry name, kwargs): the paper's methods in the order of Table II, each labelled
#: by its class's ``display_name`` (the paper's FedAVG, FedProx and Oracle train with the
#: weighted partial BCE: "FedAvg (wBCE)", "FedProx (wBCE)", "Oracle (wBCE)").  Methods that are
#: not registered (yet) are skipped by :func:`paper_methods`.
TABLE_II_METHODS: list[tuple[str, str, dict]] = [
    (display_name(key), key, kw)
    for key, kw in (
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
    )
]

TABLE_IV_LABELS = [
    display_name(k) for k in ("fedavg_wbce", "fedmatch_plus", "fedpsl_tdma", "fedpsl_tadl", "fedpsl", "oracle_wbce")
]

#: The paper's Table II (K = 4 clients, C = 6 classes), column "Average" (mean AUROC over the six
#: classes, mean of three seeds), by our method labels (the paper's "FedAVG" is FedAvg (wBCE)).
PAPER_TABLE_II: dict[str, float] = {
    display_name(key): v
    for key, v in (
        ("fedavg_wbce", 0.731),
        ("fedprox_wbce", 0.728),
        ("fedssp", 0.697),
        ("fedmatch", 0.680),
        ("fedmatch_plus", 0.736),
        ("iml_wbce", 0.646),
        ("fixmatch", 0.628),
        ("mixup_pme", 0.659),
        ("fedpsl_tdma", 0.741),
        ("fedpsl_tadl", 0.757),
        ("fedpsl", 0.763),
        ("oracle_wbce", 0.855),
    )
}

#: The paper's Table IV (the Table III federation with two one-class clients): AUROC on the
#: classes of the one-class clients and the "Average" over all eight, by our method labels.
PAPER_TABLE_IV: dict[str, dict[str, float]] = {
    display_name(key): dict(zip(("Tuberculosis", "COVID-19", "Average"), v))
    for key, v in (
        ("fedavg_wbce", (0.914, 0.837, 0.774)),
        ("fedmatch_plus", (0.905, 0.780, 0.768)),
        ("fedpsl_tdma", (0.971, 0.832, 0.773)),
        ("fedpsl_tadl", (0.941, 0.862, 0.799)),
        ("fedpsl", (0.967, 0.862, 0.809)),
        ("oracle_wbce", (0.884, 0.833, 0.825)),
    )
}

#: The paper's Table V: mean AUROC over the six classes by the number of local epochs E between
#: synchronisations (100 epochs in all), by our method labels.
PAPER_TABLE_V: dict[str, dict[int, float]] = {
    display_name(key): dict(zip((10, 20, 50, 100), v))
    for key, v in (
        ("fedavg_wbce", (0.731, 0.693, 0.645, 0.628)),
        ("fedpsl", (0.763, 0.713, 0.658, 0.639)),
        ("oracle_wbce", (0.855, 0.855, 0.855, 0.855)),
    )
}

TADL_METHODS = ("fedpsl", "fedpsl_tadl")

#: Methods that pre-train the encoder (federated SimSiam) before the supervised rounds.
PRETRAIN_METHODS = ("fedssp", "fedmatch_plus")

PRETRAIN_ROUNDS = 5


def config(
    table: str = "II",
    pool: int = 1000,
    image_size: int = 32,
    test_pos: int = 300,
    test_neg: int = 300,
    data_seed: int = 0,
    data_root: str | None = None,
    n: int | None = None,
    model: str = "cnn",
    model_kwargs: dict | None = None,
    engine: EngineConfig | None = None,
    **dataset_kwargs: Any,
) -> ExperimentConfig:
    """The base config of a FedPSL experiment: the Table I / III federation with every
    client of size ``n`` (None: the whole pool), the model and the schedule."""
    return ExperimentConfig(
        dataset="fedpsl",
        data_root=data_root,
        image_size=image_size,
        data_seed=data_seed,
        dataset_kwargs={"table": table, "pool": pool, "test_pos": test_pos, "test_neg": test_neg, **dataset_kwargs},
        partition="explicit",
        partition_kwargs=sizes_kwargs(n),
        model=model,
        model_kwargs=dict(model_kwargs or {}),
        engine=engine or EngineConfig(),
    )


def sizes_kwargs(sizes: int | Sequence[int] | None) -> dict[str, Any]:
    """``partition_kwargs`` for clients of size ``sizes`` (one n for all, one per client,
    or None for the whole pool), each taking the first n images of its pool."""
    if sizes is not None and not isinstance(sizes, (int, np.integer)):
        sizes = [int(x) for x in sizes]
    return {
        "sizes": None if sizes is None else (int(sizes) if isinstance(sizes, (int, np.integer)) else sizes),
        "take": "first",
        "name": "FedPSL Table I/III",
    }
