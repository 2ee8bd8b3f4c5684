"""From a config to a ready simulation: the run's data, its partition, its model and
method, the :class:`~fedpl_core.fl.simulation.Simulation`.

Everything here changes a run's numbers: :data:`fedpl_core.runs.provenance.ENGINE_ROOTS`
starts every result's code fingerprint from these functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import torch

from .. import partitions as P
from ..base.validation import ConfigError
from ..data.base import ImageDataset
from ..data.sources import load_bundle
from ..data.sources.base import DataBundle
from ..fl.selection import check_selection_key
from ..fl.simulation import Simulation
from ..methods import METHODS, get_method
from ..methods.blocks import calibrate_batchnorm
from ..nn.models import build_model
from .experiment_config import ExperimentConfig


def load_data(cfg: ExperimentConfig) -> DataBundle:
    """The run's data (:mod:`fedpl_core.data.sources`, cached in memory per process)."""
    return load_bundle(
        cfg.dataset,
        cfg.data_root,
        cfg.classes,
        cfg.image_size,
        cfg.n_train,
        cfg.n_test,
        cfg.data_seed,
        cfg.dataset_kwargs,
        progress=cfg.engine.progress,
    )


def check_data_fit(cfg: ExperimentConfig, data: DataBundle) -> None:
    """What a run's data makes impossible, found before anything is built: a method not
    defined for the data's task (a single-label method on multi-label data), a selection
    key the run never records, ``calibrate_bn`` without public images to calibrate with.
    A :class:`~fedpl_core.base.validation.ConfigError` naming it."""
    METHODS[cfg.method].check_task(data.train.task, f"data set {cfg.dataset!r}, a")
    check_selection_key(
        cfg.engine.selection,
        {**({"": data.test.task} if data.test is not None else {}), **{k: v.task for k, v in data.extra.items()}},
        cfg.engine.client_val_fraction > 0,
    )
    if cfg.calibrate_bn and (data.public is None or not len(data.public)):
        raise ConfigError(
            f"calibrate_bn would be ignored: data set {cfg.dataset!r} provides no public images to "
            "calibrate BatchNorm with; leave it out"
        )


def partition_builder(cfg: ExperimentConfig) -> Callable[..., P.Partition]:
    """The function that builds the partition of ``cfg``: :func:`~fedpl_core.partitions.make_partition`
    when a ``split`` rule is named, else the builder ``partition`` names (``iid``,
    ``missing_classes``...).  A run's code fingerprint starts from it too."""
    if cfg.split is not None:
        return P.make_partition
    return getattr(P, cfg.partition)


def build_partition(cfg: ExperimentConfig, train: ImageDataset) -> P.Partition:
    """The partition of ``cfg`` (see :class:`ExperimentConfig`); ``explicit`` takes its
    client classes and pools from the data source when it provides them (``train.extra``).
    ``missing_classes`` (a builder, or a label-set rule with ``split``) defaults to the
    fewest classes per client that still covers every class."""
    kw = dict(cfg.partition_kwargs)
    kw.setdefault("seed", cfg.seed)
    if cfg.partition == "missing_classes" and "missing" not in kw and cfg.num_clients is not None:
        if cfg.num_clients < 2:
            raise ConfigError(
                "partition 'missing_classes' needs num_clients >= 2 (each client misses classes "
                "another one labels); with one client use partition 'iid'"
            )
        # one class per client when K >= C
        kw["missing"] = train.num_classes - -(-train.num_classes // cfg.num_clients)
    if (
        cfg.split is None
        and cfg.partition == "explicit"
        and "client_classes" not in kw
        and "client_classes" not in train.extra
    ):
        raise ConfigError(
            "partition 'explicit' needs partition_kwargs {\"client_classes\": {client: [class, ...]}} "
            f"(data set {cfg.dataset!r} provides no table)"
        )
    try:
        if cfg.split is not None:
            seed = kw.pop("seed")
            return partition_builder(cfg)(
                train,
                cfg.num_clients,
                split=cfg.split,
                split_kwargs=cfg.split_kwargs,
                labels=cfg.partition,
                label_kwargs=kw,
                seed=seed,
            )
        fn = partition_builder(cfg)
        if cfg.partition == "explicit":
            if "client_classes" not in kw and "client_classes" in train.extra:
                kw["client_classes"] = train.extra["client_classes"]
            if "pools" not in kw and "pools" in train.extra:
                kw["pools"] = train.extra["pools"]
            return fn(train, **kw)
        if cfg.partition == "by_source":
            return fn(train, **kw)
        return fn(train, num_clients=cfg.num_clients, **kw)
    except TypeError as e:  # a required option left out, an unknown one given
        raise ConfigError(partition_option_error(cfg, e)) from None


def partition_option_error(cfg: ExperimentConfig, e: TypeError) -> str:
    """``"split 'dirichlet' (split_kwargs): missing 1 required ... 'alpha'"`` from the
    ``TypeError`` of a partition builder or rule called with the options of ``cfg``."""
    import re

    text = str(e)
    m = re.match(r"^([\w.]+)\(\) (.*)$", text)
    owner, why = (m[1].split(".")[0], m[2]) if m else ("", text)
    if cfg.split is not None and owner in {c.__name__ for c in P.SPLITS.values()}:
        return f"split {cfg.split!r} (split_kwargs): {why}"
    return f"partition {cfg.partition!r} (partition_kwargs): {why}"


#: Held while a model draws its initial weights from torch's global generator, so that runs
#: built in threads of one process (``benchmarks/grid_throughput.py --backends streams``)
#: each get their seed's weights.
_INIT_LOCK = threading.Lock()


def build_simulation(cfg: ExperimentConfig, checkpoint_path: str | Path | None = None) -> Simulation:
    method = get_method(cfg.method, **cfg.method_kwargs)  # fail fast on a bad hyper-parameter
    data = load_data(cfg)
    check_data_fit(cfg, data)
    partition = build_partition(cfg, data.train)
    train = data.train
    with _INIT_LOCK:
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.model, train.num_classes, train.channels, train.image_size, **cfg.model_kwargs)
    if cfg.calibrate_bn:
        calibrate_batchnorm(model, data.public, normalize=cfg.engine.normalize)
    return Simulation(
        method,
        model,
        train,
        partition,
        data.test,
        cfg.engine_config(),
        extra_eval=data.extra,
        checkpoint_path=checkpoint_path,
    )


__all__ = ["load_data", "check_data_fit", "build_partition", "partition_option_error", "build_simulation"]
