"""The engine's settings: :class:`EngineConfig`, the training schedule and numerics every
method shares, each field checked when the config is made (:mod:`fedpl_core.base.validation`)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

from ..base.validation import ConfigError, check_device, check_float32, check_ignored, check_seed, validate

#: Record keys that are losses (lower is better); every other selection key is maximised.
LOSS_KEYS = ("val_loss", "train_loss")
#: Metric names a selection key may end with (``"external/auroc_mean"`` is fine too).
SELECTION_METRICS = LOSS_KEYS + ("auroc_mean", "map", "bacc", "f1", "precision", "recall", "accuracy")


@dataclass
class EngineConfig:
    """Training schedule and numerics shared by every method.  Each field's docstring
    below is its ``--help`` text (:func:`field_docs`)."""

    rounds: int = 20
    """Communication rounds."""
    local_epochs: float = 1.0
    """Passes over its data a client makes each round (fractions allowed)."""
    local_iters: int | None = None
    """A fixed number of local steps each round (FedLSM); overrides local_epochs."""
    batch_size: int = 64
    """Training batch size."""
    client_fraction: float = 1.0
    """Share of the clients sampled each round."""
    optimizer: Literal["adam", "adamw", "sgd"] = "adam"
    """Local optimizer."""
    lr: float = 1e-3
    """Learning rate."""
    weight_decay: float = 0.0
    """Weight decay of the optimizer."""
    momentum: float = 0.9
    """Momentum of sgd (the other optimizers ignore it)."""
    optimizer_state: Literal["reset", "keep"] = "reset"
    """reset: a fresh optimizer each round (as most released codes do); keep: each client
    keeps its optimizer state across rounds."""
    normalize: Literal["fixed", "imagenet", "instance"] = "fixed"
    """Input normalisation: fixed ((x/255 - 0.5) / 0.25), imagenet (ImageNet mean and std)
    or instance (per-image (x - mean) / std, FedPSL)."""
    augment: Literal["none", "flip", "shift", "flip_shift", "flip_affine"] = "none"
    """Training augmentation: random horizontal flip, random translation by up to 1/8 of
    the size (reflect padding), both, or flip_affine (FedMLP's released transform: rotation
    +-10 degrees, translation +-2 %, flip)."""
    eval_every: int = 1
    """Evaluate every that many rounds (and after the last)."""
    eval_batch_size: int = 512
    """Batch size of evaluation."""
    selection: str | None = "val_loss"
    """History key that picks the best round: val_loss reads the clients' validation splits
    only, never the test set; auroc_mean picks on the test set (optimistic); none: no
    selection."""
    selection_mode: Literal["auto", "max", "min"] = "auto"
    """Whether selection maximises or minimises; auto minimises losses and maximises
    everything else."""
    patience: int | None = None
    """Stop early after that many evaluations without improvement of selection (none: never)."""
    device: str = "auto"
    """auto, cpu, cuda, cuda:N or mps."""
    amp: bool = False
    """Mixed precision (bfloat16 autocast) on CUDA."""
    seed: int = 0
    """Seed of the engine (an experiment sets it to its own seed)."""
    client_val_fraction: float = 0.0
    """Share of every client's samples held out (seeded) as its validation split; each
    evaluation then records val_loss, the mean over clients of their validation loss."""
    checkpoint_every: int = 0
    """With a results folder, save a checkpoint every that many rounds, from which an
    interrupted run resumes (0: never)."""
    channels_last: bool = False
    """Run convolutions in the channels-last memory format (faster on CPU and on GPU tensor
    cores; numbers agree to float rounding)."""
    deterministic: bool = False
    """On CUDA, deterministic kernels (``torch.use_deterministic_algorithms``, cuDNN's
    deterministic convolutions): the same numbers bit for bit on every run.  Off, cuDNN
    times its convolution algorithms for the run's shapes and keeps the fastest
    (``cudnn.benchmark``), which can move the numbers by float rounding from run to run.
    No effect on a CPU, whose numbers are the same on every run either way."""
    batched_clients: int = 0
    """Train up to this many of a round's sampled clients at a time as one vmapped step
    (``fedpl_core.fl.batched``, for GPUs: methods whose client round is FedAvg's, listed by
    ``fedpl_core.methods.batchable_methods()``, on a model without BatchNorm, clients with
    equal steps; any other round falls back to the loop, saying why once; halved while it
    runs out of GPU memory); 0: one client after the other (the default; on a CPU the loop
    is faster)."""
    progress: bool = True
    """Show progress bars."""

    _RANGES: typing.ClassVar[dict[str, str]] = {
        "batched_clients": ">=0",
        "rounds": ">=1",
        "local_epochs": ">0",
        "local_iters": ">=1",
        "batch_size": ">=1",
        "client_fraction": "(0,1]",
        "lr": ">0",
        "weight_decay": ">=0",
        "momentum": "[0,1)",
        "eval_every": ">=1",
        "eval_batch_size": ">=1",
        "patience": ">=1",
        "client_val_fraction": "[0,1)",
        "checkpoint_every": ">=0",
    }
    #: Settings that other settings make meaningless: ``field -> (applies(config), why not)``;
    #: a value other than the default where it does not apply is refused (:func:`check_ignored`).
    _IGNORED: typing.ClassVar[dict[str, tuple[typing.Callable[[Any], bool], str]]] = {
        "momentum": (lambda c: c.optimizer == "sgd", "it is sgd's momentum, and optimizer is {optimizer}"),
        "local_epochs": (lambda c: c.local_iters is None, "local_iters ({local_iters}) sets the local steps"),
        "patience": (
            lambda c: c.selection is not None,
            "early stopping follows the selection key, and selection is none",
        ),
        "selection_mode": (lambda c: c.selection is not None, "there is no selection key (selection is none)"),
    }

    def __post_init__(self) -> None:
        validate(self)
        check_seed(self.seed)
        check_float32(self, ("lr", "weight_decay", "local_epochs"))
        check_device(self.device)
        if self.selection is not None and self.selection.rsplit("/", 1)[-1] not in SELECTION_METRICS:
            raise ConfigError(
                f"unknown selection key {self.selection!r}; use one of {', '.join(SELECTION_METRICS)} "
                "(optionally '<eval set>/<metric>'), or None"
            )
        check_ignored(self, self._IGNORED)

    @property
    def maximise(self) -> bool:
        """Whether a larger ``selection`` value is better."""
        if self.selection_mode != "auto":
            return self.selection_mode == "max"
        return (self.selection or "").rsplit("/", 1)[-1] not in LOSS_KEYS
