"""Validated configuration dataclasses.

:func:`validate` checks (and, where it is lossless, converts) every field of a dataclass
against its annotation before any work is done: ``Literal`` values, ``int`` / ``float``
(YAML reads ``1e-3`` as the string ``'1e-3'``: converted), strict booleans (``"ture"`` is
refused, not read as False), optional values, and the ranges a class declares in
``_RANGES``.  A bad value raises :class:`ConfigError` with one line naming the field.
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

ConfigError = type("ConfigError", (ValueError,), {"__doc__": "A configuration value is invalid."})

_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def parse_bool(value: Any, name: str = "value") -> bool:
    """Strict boolean: True/False, 0/1, or one of true/false/yes/no/on/off/1/0 (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{name} must be a boolean (true/false), got {value!r}")


def _convert(value: Any, tp: Any, name: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in (a for a in args if a is not type(None)):
            try:
                return _convert(value, a, name)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{name}: invalid value {value!r}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{name} must be one of {', '.join(map(repr, args))}; got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is bool:
        return parse_bool(value, name)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, str, float)):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        try:
            f = float(value)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        return int(f) if not isinstance(value, int) else value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, got {value!r}")
        return value
    base = origin or tp
    if isinstance(base, type) and not isinstance(value, base):
        raise ConfigError(f"{name} must be a {base.__name__}, got {type(value).__name__} {value!r}")
    return value


def _check_range(name: str, value: Any, rule: str) -> None:
    """``rule``: ``">=1"``, ``">0"``, ``"(0,1]"``, ``"[0,1)"``..."""
    if value is None:
        return
    if rule.startswith(("(", "[")):
        lo, hi = (float(x) for x in rule[1:-1].split(","))
        ok = (value > lo if rule[0] == "(" else value >= lo) and (value < hi if rule[-1] == ")" else value <= hi)
    elif rule.startswith(">="):
        ok = value >= float(rule[2:])
    elif rule.startswith(">"):
        ok = value > float(rule[1:])
    else:  # pragma: no cover - a programming error in _RANGES
        raise AssertionError(rule)
    if not ok or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigError(f"{name} must be {rule.replace(',', ', ')}, got {value!r}")


def validate(obj: Any, prefix: str = "") -> None:
    """Check and convert every field of dataclass ``obj`` in place (see module docstring)."""
    hints = typing.get_type_hints(type(obj), include_extras=False)
    ranges = getattr(type(obj), "_RANGES", {})
    for f in dataclasses.fields(obj):
        if f.name.startswith("_") or f.name not in hints:
            continue
        name = prefix + f.name
        value = _convert(getattr(obj, f.name), hints[f.name], name)
        if f.name in ranges:
            _check_range(name, value, ranges[f.name])
        object.__setattr__(obj, f.name, value)


def check_seed(seed: int, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ConfigError(f"{name} {seed!r} is out of range: use an integer in [0, 2**63)")
    return seed


#: Record keys that are losses (lower is better); every other selection key is maximised.
LOSS_KEYS = ("val_loss", "train_loss")
#: Metric names a selection key may end with (``"external/auroc_mean"`` is fine too).
SELECTION_METRICS = LOSS_KEYS + ("auroc_mean", "map", "bacc", "f1", "precision", "recall", "accuracy")


@dataclass
class EngineConfig:
    """Training schedule and numerics shared by every method.

    ``local_iters`` (a fixed number of local steps, FedLSM) overrides ``local_epochs``.
    ``optimizer_state``: ``reset`` each round (a fresh Adam per round, as most released
    codes do) or ``keep`` (each client keeps its optimizer state across rounds).
    ``normalize``: ``fixed`` ((x/255 - 0.5) / 0.25), ``imagenet`` or ``instance``
    (per-image (x - mean) / std, FedPSL).  ``augment``: ``none``, ``flip``, ``shift``,
    ``flip_shift`` (random horizontal flip, random translation by up to 1/8 of the size,
    reflect padding) or ``flip_affine`` (FedMLP's released transform: rotation +-10
    degrees, translation +-2 %, flip); see :func:`fedpl_core.preprocess.augment_batch`.
    ``eval_every``: evaluate every that many rounds (and after the last).
    ``selection``: the history key that picks the best round (``val_loss``, the default,
    reads the clients' validation splits only, never the test set; ``auroc_mean`` picks on
    the test set: optimistic), ``None`` for none; ``selection_mode`` ``auto`` minimises
    losses and maximises everything else.  ``patience`` (evaluations without improvement)
    stops early.  ``client_val_fraction`` > 0 holds out that share of every client's
    samples (seeded) as a local validation split; each evaluation then records
    ``val_loss``, the mean over clients of the loss on their validation data.
    ``channels_last``: run convolutions in the channels-last memory format (faster on
    CPU and on GPU tensor cores; numbers agree to float rounding).
    """

    rounds: int = 20
    local_epochs: float = 1.0
    local_iters: int | None = None
    batch_size: int = 64
    client_fraction: float = 1.0
    optimizer: Literal["adam", "adamw", "sgd"] = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    momentum: float = 0.9
    optimizer_state: Literal["reset", "keep"] = "reset"
    normalize: Literal["fixed", "imagenet", "instance"] = "fixed"
    augment: Literal["none", "flip", "shift", "flip_shift", "flip_affine"] = "none"
    eval_every: int = 1
    eval_batch_size: int = 512
    selection: str | None = "val_loss"
    selection_mode: Literal["auto", "max", "min"] = "auto"
    patience: int | None = None
    device: str = "auto"
    amp: bool = False
    seed: int = 0
    client_val_fraction: float = 0.0
    checkpoint_every: int = 0
    channels_last: bool = False
    progress: bool = True

    _RANGES: typing.ClassVar[dict[str, str]] = {
        "rounds": ">=1", "local_epochs": ">0", "local_iters": ">=1", "batch_size": ">=1",
        "client_fraction": "(0,1]", "lr": ">0", "weight_decay": ">=0", "momentum": "[0,1)", "eval_every": ">=1",
        "eval_batch_size": ">=1", "patience": ">=1", "client_val_fraction": "[0,1)", "checkpoint_every": ">=0"}

    def __post_init__(self) -> None:
        validate(self)
        check_seed(self.seed)
        if self.selection is not None and self.selection.rsplit("/", 1)[-1] not in SELECTION_METRICS:
            raise ConfigError(f"unknown selection key {self.selection!r}; use one of {', '.join(SELECTION_METRICS)} "
                              "(optionally '<eval set>/<metric>'), or None")

    @property
    def maximise(self) -> bool:
        """Whether a larger ``selection`` value is better."""
        if self.selection_mode != "auto":
            return self.selection_mode == "max"
        return (self.selection or "").rsplit("/", 1)[-1] not in LOSS_KEYS
