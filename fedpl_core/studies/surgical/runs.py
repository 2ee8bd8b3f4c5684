"""What notebook 03 runs: the base configs of the ablation and the non-IID experiment
(:func:`ablation_config`, :func:`noniid_config`), the ablations' iterations
(:func:`ablation_settings`), the rows of each experiment as ``(label, config overrides)``
(:func:`ablation_methods`, :func:`noniid_methods`, every one with the paper's head warm-up),
the real data, the partition a config trains on (and :func:`random_label_sets`, the reference
of the ablation's label sets), and the ImageNet start of the headline pair."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import partitions as P
from ...data.sources.surgical import real_data
from ...runs.build import build_partition, load_data
from ...runs.experiment_config import ExperimentConfig
from .profile import STRATEGIES, Settings


def load_real_data(data_root: str, st: Settings, **kwargs: Any) -> dict[str, Any]:
    """:func:`real_data` with the settings' image size, seed, ``max_images`` and
    public images (``n_public`` when ``calibrate_bn``); ``kwargs`` (or
    ``st.data_kwargs``) name the folders, ``mimic_lt_csv`` and ``cache_dir``."""
    return real_data(
        data_root,
        st.image_size,
        st.seed,
        st.max_images,
        st.n_public if st.calibrate_bn else 0,
        **{**st.data_kwargs, **kwargs},
    )


def _data_kwargs(st: Settings) -> dict[str, Any]:
    kw: dict[str, Any] = {"n_external": st.n_external, "n_public": st.n_public if st.calibrate_bn else 0}
    if st.data_root:
        kw.update(max_images=st.max_images, **st.data_kwargs)
    else:
        kw.update(prevalence_floor=st.prevalence_floor, strength=st.strength)
    return kw


def _config(st: Settings, **fields: Any) -> ExperimentConfig:
    return ExperimentConfig(
        data_root=st.data_root,
        image_size=st.image_size,
        data_seed=st.seed,
        model=st.model,
        model_kwargs=dict(st.model_kwargs),
        calibrate_bn=st.calibrate_bn,
        engine=st.engine(),
        seed=st.seed,
        **fields,
    )


def ablation_config(st: Settings) -> ExperimentConfig:
    """The ablation's base config: the ``surgical-ablation`` source, an IID split (no
    patient in two clients) with random covering label sets; :func:`ablation_settings`
    gives each iteration's clients and partition."""
    return _config(
        st,
        name="surgical-ablation",
        dataset="surgical-ablation",
        n_train=st.n_train,
        n_test=st.n_test,
        dataset_kwargs=_data_kwargs(st),
        split="iid",
        split_kwargs={"group_aware": True},
        partition="random_cover",
        num_clients=st.k_values[0],
        partition_kwargs={"seed": st.seed * 1000},
    )


def ablation_settings(st: Settings, kind: str) -> dict[int, dict[str, Any]]:
    """The iterations of ablation ``kind`` as ``{value: config overrides}``, partition
    seeds ``seed * 1000 + i``: (a) ``"clients"``: K in ``st.k_values`` equal IID shares
    (no patient in two clients) with random covering label sets; (b) ``"shared"``:
    ``st.shared_clients`` clients, ``value`` classes shared by all, the others unique to
    one client."""
    split = {"split": "iid", "split_kwargs": {"group_aware": True}}
    if kind == "clients":
        return {
            k: {
                **split,
                "num_clients": k,
                "partition": "random_cover",
                "partition_kwargs": {"seed": st.seed * 1000 + i},
            }
            for i, k in enumerate(st.k_values)
        }
    if kind == "shared":
        return {
            v: {
                **split,
                "num_clients": st.shared_clients,
                "partition": "shared_classes",
                "partition_kwargs": {"num_shared": v, "seed": st.seed * 1000 + i},
            }
            for i, v in enumerate(st.shared_values)
        }
    raise ValueError(f"unknown ablation kind {kind!r}; use 'clients' or 'shared'")


def _protocol(st: Settings, **kw: Any) -> dict[str, Any]:
    """``method_kwargs`` with the paper's head warm-up."""
    return {**kw, "warmup_epochs": st.warmup_epochs, "warmup_lr": st.warmup_lr}


def ablation_methods(st: Settings) -> list[tuple[str, dict[str, Any]]]:
    """The ablation's rows, all with BatchNorm strategy ``st.bn`` (the paper: FedBN+).
    The Oracle trains on the whole pool as one client with every label (its config is
    the same in every iteration, so it runs once and is cached)."""
    kw = _protocol(st, bn_policy=st.bn)
    oracle = {
        "method": "oracle",
        "method_kwargs": kw,
        "num_clients": 1,
        "split": "iid",
        "split_kwargs": {},
        "partition": "all",
        "partition_kwargs": {},
    }
    return [
        ("Oracle", oracle),
        ("Central", {"method": "centralized", "method_kwargs": kw}),
        ("FL", {"method": "fedavg", "method_kwargs": kw}),
        ("FL + PL", {"method": "fedavg_pl", "method_kwargs": kw}),
        ("FL + SA", {"method": "surgical", "method_kwargs": kw}),
    ]


def noniid_config(st: Settings, heterogeneous: bool) -> ExperimentConfig:
    """The non-IID base config: the ``surgical-noniid`` source, one client per source.
    (i) ``heterogeneous=False``: the 7 shared classes; (ii) True: all 20."""
    kw = {**_data_kwargs(st), "heterogeneous": bool(heterogeneous), "n_nih": st.n_nih, "n_chexpert": st.n_chexpert}
    return _config(
        st,
        name=f"surgical-noniid-{'heterogeneous' if heterogeneous else 'shared'}",
        dataset="surgical-noniid",
        n_train=st.n_nih + st.n_chexpert,
        n_test=st.n_noniid_test,
        dataset_kwargs=kw,
        partition="by_source",
        num_clients=None,
        partition_kwargs={"name": "by source"},
    )


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
        rows += [
            (f"{fam} ({s})", method, _protocol(st, bn_policy=STRATEGIES[s], **extra)) for s in ("FedAvg", "FedBN+")
        ]
    return [(label, {"method": m, "method_kwargs": kw}) for label, m, kw in rows]


def partition(cfg: ExperimentConfig) -> P.Partition:
    """The partition a run of ``cfg`` trains on."""
    return build_partition(cfg, load_data(cfg).train)


def random_label_sets(
    num_classes: int, num_clients: int, seed: int = 0, extra: float = 0.25, min_classes: int = 2
) -> np.ndarray:
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


def imagenet_pair(st: Settings, orders: dict[str, list[str]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The headline pair of :func:`imagenet_start`: FL + SA and FL + PL with FedAvg, as the
    non-IID tables run them (``orders``: :func:`class_orders`)."""
    pair = dict(noniid_methods(st, orders))
    return [(lab, pair[lab]) for lab in ("FL + SA (FedAvg)", "FL + PL (FedAvg)")]


def imagenet_start(
    st: Settings, base: ExperimentConfig, results_dir: str, workers: int = 1, force: bool = False
) -> pd.DataFrame | None:
    """Does Surgical Aggregation's headline (FL + SA above FL with the partial loss when the clients' label
    spaces differ) hold from an ImageNet start? FL + SA and FL + PL with FedAvg on ``base`` (the
    notebook's class-heterogeneous ``het_base``), with the profile's backbone from scratch (the
    notebook's own runs, read from the cache) and with EfficientNet-Lite0 from ImageNet weights:
    :func:`fedpl_core.studies.pretrained.imagenet_start` (the selected model, mean AUROC; the gpu and
    full profiles, None elsewhere unless ``force``). The 6 Lite0 runs of the gpu profile add an estimate
    0.2 min on paper (``python tests/test_profile_runs.py --gpu-budget``)."""
    from ..pretrained import imagenet_start as run

    if _imagenet_skipped(st.profile, force):
        return None
    return run(
        base,
        imagenet_pair(st, class_orders(base)),
        st.seeds,
        results_dir,
        st.profile,
        which="best",
        workers=workers,
        force=force,
    )


def _imagenet_skipped(profile: str, force: bool = False) -> bool:
    """True (after one printed line) where :func:`imagenet_start` runs nothing, before the data
    are loaded for the class orders."""
    from ..parameters import pretrained_backbone

    return pretrained_backbone(profile, verbose=True, force=force) is None
