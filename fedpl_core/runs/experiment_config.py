"""The experiment's config: :class:`ExperimentConfig`, the one description of a run.

Every field is checked on construction: its type and range (:func:`fedpl_core.base.validation.validate`),
the names the registries know (partition, split, model, method) and the options of the
method, the model and the data source (:func:`check_settings`).  A config is read from a
mapping or a YAML / JSON file (:meth:`ExperimentConfig.from_file`) and written back
(:meth:`~ExperimentConfig.to_dict`); :meth:`~ExperimentConfig.run_id` hashes every field
that changes the numbers, the name of the run's results file.

The bottom layer of :mod:`fedpl_core.runs`: it imports no other module of it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import partitions as P
from ..base.config_files import check_config_size, check_engine_conflicts, read_config_file
from ..base.validation import ConfigError, check_kwargs_types, check_seed, validate
from ..data.sources import check_data_settings
from ..fl.engine_config import EngineConfig
from ..methods import METHODS, available_methods
from ..nn.models import MODELS, check_model_kwargs

PARTITIONS = (
    "iid",
    "dirichlet",
    "missing_classes",
    "label_set_mismatch",
    "explicit",
    "by_source",
    "shared_classes_split",
)


@dataclass
class ExperimentConfig:
    """Everything that defines one run.  Each field's docstring below is its ``--help``
    text (:func:`fedpl_core.base.validation.field_docs`); every field is checked on construction
    (:func:`fedpl_core.base.validation.validate`)."""

    name: str = ""
    """Label of the run in tables and grids; it does not change the numbers (not in the run id)."""
    # data
    dataset: str = "synthetic-cxr"
    """Data source: a built-in synthetic set, a real data set read from data_root, or a
    source registered by the studies."""
    data_root: str | None = None
    """Folder holding a real data set as its publisher ships it (not used by the synthetic sets)."""
    classes: list | None = None
    """Class names to keep, in this order (default: all classes of the data set)."""
    image_size: int = 32
    """Side of the square images in pixels; images are resized to it."""
    n_train: int = 8000
    """Training images of a synthetic set (real data sets use their own splits)."""
    n_test: int = 2000
    """Test images of a synthetic set (real data sets use their own splits)."""
    data_seed: int = 0
    """Seed of the synthetic images, and of a real set's subset and split, so every method
    and seed sees the same data."""
    dataset_kwargs: dict = field(default_factory=dict)
    """Options of the data source's loader, e.g. {"skip_missing": true}."""
    # partition
    partition: str = "missing_classes"
    """Partition builder (iid, dirichlet, missing_classes, label_set_mismatch, explicit,
    by_source, ...); with split: the label-set rule applied to the sample split."""
    num_clients: int | None = 8
    """Number of clients (none: the partition or the data source fixes it)."""
    partition_kwargs: dict = field(default_factory=dict)
    """Options of the partition, e.g. {"missing": 7}; its "seed" seeds the partition (default: seed)."""
    split: str | None = None
    """Sample split (iid, dirichlet, ...) composed with the label-set rule named by
    partition (none: partition alone builds the partition)."""
    split_kwargs: dict = field(default_factory=dict)
    """Options of the sample split, e.g. {"alpha": 0.5}."""
    # model and method
    model: str = "cnn"
    """Network: cnn, resnet18 or densenet121."""
    model_kwargs: dict = field(default_factory=dict)
    """Options of the model, e.g. {"norm": "gn"} or {"weights_path": "w.pt"}."""
    calibrate_bn: bool = False
    """Set the initial model's BatchNorm statistics from the data source's public images
    (Surgical Aggregation's FedBN+ without pre-trained weights)."""
    method: str = "fedavg"
    """Federated method (list: python -m fedpl_core methods)."""
    method_kwargs: dict = field(default_factory=dict)
    """Options of the method, e.g. {"mu": 0.01}."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """Training loop settings (EngineConfig); given as their own flags or config keys."""
    seed: int = 0
    """Seed of model initialisation, client sampling, batching and (unless partition_kwargs
    names its own seed) the partition."""

    _RANGES: typing.ClassVar[dict[str, str]] = {
        "image_size": ">=8",
        "n_train": ">=1",
        "n_test": ">=1",
        "num_clients": ">=1",
        "data_seed": ">=0",
    }

    def __post_init__(self) -> None:
        if isinstance(self.engine, dict):
            self.engine = EngineConfig(**self.engine)
        # lists and mappings shared in Python (or by YAML aliases) are copied out by to_dict: bounded first
        check_config_size(
            [
                self.classes,
                self.dataset_kwargs,
                self.partition_kwargs,
                self.split_kwargs,
                self.model_kwargs,
                self.method_kwargs,
            ]
        )
        validate(self)
        check_seed(self.seed)
        if self.classes is not None:
            self.classes = [str(c) for c in self.classes]
        if self.split is None and self.partition not in PARTITIONS:
            raise ConfigError(f"unknown partition {self.partition!r}; choose one of {', '.join(PARTITIONS)}")
        if self.split is not None and self.split not in P.SPLITS:
            raise ConfigError(f"unknown split {self.split!r}; choose one of {', '.join(P.SPLITS)}")
        if self.split is None and self.split_kwargs:
            raise ConfigError(
                f"split_kwargs {self.split_kwargs!r} would be ignored: there is no split (split is none); "
                "name a split, or leave split_kwargs out"
            )
        if self.split is not None and self.partition not in P.LABEL_SETS:
            raise ConfigError(
                f"with a split, partition names a label-set rule; choose one of "
                f"{', '.join(P.LABEL_SETS)}, got {self.partition!r}"
            )
        if self.model not in MODELS:
            raise ConfigError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}")
        if self.method not in available_methods():
            raise ConfigError(f"unknown method {self.method!r}; available: {', '.join(available_methods())}")
        check_settings(self)  # options of the method, the model and the data source

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentConfig:
        """From a nested dict (``to_dict``'s form); engine fields may also stand at the
        top level (``rounds: 7``).  The experiment's ``seed`` is the engine's seed."""
        if not isinstance(d, dict):
            raise ConfigError(f"a config must be a mapping of field names to values, got {type(d).__name__}")
        check_engine_conflicts(d, ENGINE_FIELDS)
        names = {f.name for f in dataclasses.fields(cls)}
        top, engine = {}, d.get("engine") or {}
        if not isinstance(engine, dict):
            raise ConfigError(f"engine must be a mapping, got {type(engine).__name__}")
        engine = dict(engine)
        for k, v in d.items():
            if k == "engine":
                continue
            if k in names:
                top[k] = v
            elif k in ENGINE_FIELDS:
                engine[k] = v
            else:
                raise ConfigError(f"unknown config key {k!r}")
        unknown = set(engine) - ENGINE_FIELDS - {"seed"}
        if unknown:
            raise ConfigError(f"unknown engine config key(s) {sorted(unknown)}")
        if "seed" in engine:
            top.setdefault("seed", engine.pop("seed"))
        try:
            return cls(**top, engine=EngineConfig(**engine))
        except TypeError as e:
            raise ConfigError(str(e)) from None

    @classmethod
    def from_file(cls, path: str | Path) -> ExperimentConfig:
        """A YAML (``.yaml``/``.yml``) or JSON file with :meth:`from_dict`'s fields (any
        other name is read by its content: :func:`fedpl_core.base.config_files.read_config_file`)."""
        d = read_config_file(path)
        try:
            return cls.from_dict({} if d is None else d)
        except ConfigError as e:
            raise ConfigError(f"config file {path}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["engine"].pop("seed")  # the experiment's seed is the engine's
        return d

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with top-level or engine fields changed (``cfg.replace(rounds=5)``)."""
        eng = {k: changes.pop(k) for k in list(changes) if k in ENGINE_FIELDS}
        engine = changes.pop("engine", self.engine)
        if isinstance(engine, dict):
            engine = EngineConfig(**engine)
        return dataclasses.replace(self, engine=dataclasses.replace(engine, **eng), **changes)

    def engine_config(self) -> EngineConfig:
        return dataclasses.replace(self.engine, seed=self.seed)

    def run_id(self) -> str:
        """``<method>-s<seed>-<hash of everything that changes the numbers>``
        (:func:`run_identity`)."""
        d = run_identity(self.to_dict())
        h = hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:10]
        return f"{self.method}-s{self.seed}-{h}"


ENGINE_FIELDS = {f.name for f in dataclasses.fields(EngineConfig)} - {"seed"}


def run_identity(d: dict[str, Any]) -> dict[str, Any]:
    """The fields of a config (:meth:`ExperimentConfig.to_dict`'s form) that change the
    numbers, which :meth:`ExperimentConfig.run_id` hashes: all but the ``name``, the
    device, the progress bars and the checkpoint interval; ``batched_clients`` and
    ``deterministic`` only when on (ids made before those fields existed stay valid).
    A copy; ``d`` is not changed."""
    d = {k: v for k, v in d.items() if k != "name"}
    engine = {
        k: v for k, v in dict(d.get("engine") or {}).items() if k not in ("progress", "device", "checkpoint_every")
    }
    for k in ("batched_clients", "deterministic"):  # off (the default): ids made before the fields existed
        if not engine.get(k):
            engine.pop(k, None)
    d["engine"] = engine
    return d


def check_settings(cfg: Any) -> None:
    """The options of an ``ExperimentConfig`` that its field types do not cover: the
    method's and the model's keyword options (names, types), and the data settings that
    would otherwise be ignored (``data_root`` with built-in data, an empty class list)."""
    check_kwargs_types(METHODS[cfg.method], cfg.method_kwargs, "method_kwargs")
    check_model_kwargs(cfg.model, cfg.model_kwargs)
    check_data_settings(cfg.dataset, cfg.data_root, cfg.classes, cfg.image_size)


__all__ = ["ExperimentConfig", "ENGINE_FIELDS", "PARTITIONS", "check_settings", "run_identity", "ConfigError"]

# The options this config passes on are checked against the code they configure after its own
# fields (registered with its validation; a module of its own, so that no check is part of a
# run's code fingerprint).
from .options import check_experiment_options as _check_options  # noqa: E402, F401
