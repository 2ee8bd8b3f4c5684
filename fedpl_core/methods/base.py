"""The method interface: what a federated partial-label method may change.

A method is a small class with hooks on two sides that never share objects:

* **client side** (runs where the data is, sees a :class:`~fedpl_core.engine.ClientContext`):
  ``receive`` a payload into the working model, ``before_training`` (pseudo-labels,
  prototypes, difficulty estimates), ``loss`` / ``train_step`` / ``local_train``,
  ``after_training``, and ``make_update`` which packs model arrays plus *declared*
  metadata into a :class:`ClientUpdate`;
* **server side** (sees only :class:`ClientUpdate` objects and its own
  :class:`~fedpl_core.engine.Server`): ``aggregate`` and ``payload``, which may be
  personalised per client.

Per-client state that must survive between rounds (local heads, BatchNorm layers kept
local, teachers, pseudo-label tags, optimizer state) lives in ``ctx.state``, a dict the
engine keeps for each client and checkpoints.  The engine carries everything else:
batching, optimizers, rounds, evaluation, checkpoints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from ..aggregation import weighted_average
from ..losses import masked_bce, masked_ce
from ..models import HEAD_KEYS, is_bn_key

if TYPE_CHECKING:  # pragma: no cover
    from ..engine import Batch, ClientContext, Server

BN_POLICIES = ("aggregate", "local", "frozen")


def _bn_modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]


@dataclass
class ClientUpdate:
    """What a client sends to the server: model arrays and declared metadata only."""

    client_id: int
    state: dict[str, torch.Tensor]
    num_samples: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, v in self.state.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"update state {k!r} is {type(v).__name__}, expected a tensor")
        for k, v in self.metadata.items():
            if not isinstance(v, (torch.Tensor, np.ndarray, int, float, str, bool, list, tuple, type(None))):
                raise TypeError(f"metadata {k!r} of type {type(v).__name__} cannot be sent to the server")


class Method:
    """Base class: FedAvg with missing labels as negatives.

    Class attributes a subclass sets:
        name: registry name.
        partial: loss over annotated entries only (True) or missing = negative (False).
        metadata_keys: the metadata a client may send; anything else is refused.
        evaluation: ``"global"`` (the server's model) or ``"personalised"`` (each
            client's own model; class c's score is the mean over the clients that
            annotate c, over all clients when none does).
        federated: False for pooled baselines (Centralized, Oracle) and Local.

    Hyper-parameters (constructor keywords): ``bn_policy`` in ``aggregate`` (FedAvg),
    ``local`` (FedBN: BatchNorm layers never leave the client) or ``frozen`` (FedBN+,
    Kulkarni et al. 2023, as in the Surgical Aggregation code: every BatchNorm layer
    stays at the initial, ideally pre-trained, model on the clients and in the global
    model: inference-mode statistics, affine parameters not trained, not aggregated.
    With a randomly initialised model that means BatchNorm is the identity unless its
    statistics are first calibrated, see
    :func:`fedpl_core.methods.surgical.calibrate_batchnorm`); ``weighting`` ``size``
    (n_k / n) or ``uniform``.
    """

    name: ClassVar[str] = "fedavg"
    partial: ClassVar[bool] = False
    metadata_keys: ClassVar[tuple[str, ...]] = ("class_mask", "label_counts", "positive_counts")
    evaluation: ClassVar[str] = "global"
    federated: ClassVar[bool] = True

    def __init__(self, bn_policy: str = "aggregate", weighting: str = "size", **hparams: Any):
        if bn_policy not in BN_POLICIES:
            raise ValueError(f"unknown bn_policy {bn_policy!r}; choose one of {BN_POLICIES}")
        if weighting not in ("size", "uniform"):
            raise ValueError(f"unknown weighting {weighting!r}; use 'size' or 'uniform'")
        if hparams:
            raise TypeError(f"{type(self).__name__} got unknown hyper-parameter(s) {sorted(hparams)}")
        self.bn_policy = bn_policy
        self.weighting = weighting
        if bn_policy == "local" and self.evaluation == "global":
            self.evaluation = "personalised"

    # ------------------------------------------------------------------ setup
    def setup(self, model: torch.nn.Module, info) -> None:
        """Called once with the working model (structure only) and the federation info."""
        self.info = info
        self._local_keys = {k for k in model.state_dict() if self.is_local_key(k, model)}
        if self.bn_policy == "frozen":  # FedBN+: BatchNorm affine parameters never train
            for m in _bn_modules(model):
                for p in m.parameters(recurse=False):
                    p.requires_grad_(False)

    def is_local_key(self, key: str, model: torch.nn.Module) -> bool:
        """Arrays that never leave a client (FedBN's BatchNorm, PFL's head)."""
        return self.bn_policy in ("local", "frozen") and is_bn_key(key, model)

    @property
    def local_keys(self) -> set[str]:
        return self._local_keys

    def prepare_clients(self, clients: list, dataset) -> list:
        """Harness hook for pooled baselines (Centralized, Oracle): reshape the clients."""
        return clients

    def configure_model(self, model: torch.nn.Module, train: bool) -> None:
        """Set train/eval modes of the working model before local training or evaluation
        (FedBN+: BatchNorm layers stay in inference mode while training)."""
        model.train(train)
        if train and self.bn_policy == "frozen":
            for m in _bn_modules(model):
                m.eval()

    # ------------------------------------------------------------ server side
    def init_server(self, server: "Server") -> None:
        """Initialise ``server.state`` (method-specific server memory)."""

    def payload(self, server: "Server", client_id: int) -> dict[str, Any]:
        """What the server sends to client ``client_id`` (default: every global array;
        a client overlays its local arrays, so they only act before its first round)."""
        return {"state": server.global_state}

    def client_weights(self, updates: list[ClientUpdate]) -> list[float]:
        if self.weighting == "uniform":
            return [1.0] * len(updates)
        return [float(u.num_samples) for u in updates]

    def aggregate(self, server: "Server", updates: list[ClientUpdate]) -> None:
        """FedAvg (McMahan et al. 2017): weighted mean of every shared array."""
        new = weighted_average([u.state for u in updates], self.client_weights(updates))
        server.global_state.update(new)

    # ------------------------------------------------------------ client side
    def receive(self, ctx: "ClientContext", payload: dict[str, Any]) -> None:
        """Load the payload into the working model, then the client's own local arrays."""
        ctx.load_state(payload["state"])
        local = ctx.state.get("local")
        if local:
            ctx.load_state(local)

    def before_training(self, ctx: "ClientContext") -> None:
        """Runs on the client after ``receive``, before local training."""

    def loss(self, ctx: "ClientContext", logits: torch.Tensor, features: torch.Tensor, batch: "Batch") -> torch.Tensor:
        """Missing labels as negatives (``partial=False``) or the partial loss."""
        mask = batch.mask if self.partial else None
        if ctx.info.task == "multiclass":
            return masked_ce(logits, batch.y, mask)
        return masked_bce(logits, batch.y, mask)

    def train_step(self, ctx: "ClientContext", batch: "Batch") -> torch.Tensor:
        """One optimisation step; returns the detached loss."""
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, features = ctx.model.forward_features(batch.x)
            loss = self.loss(ctx, logits.float(), features, batch)
        loss.backward()
        ctx.optimizer.step()
        return loss.detach()

    def local_train(self, ctx: "ClientContext") -> float:
        """The local epochs / iterations of one round; returns the mean loss."""
        total, steps = torch.zeros((), device=ctx.device), 0
        for batch in ctx.batches():
            total += self.train_step(ctx, batch)
            steps += 1
        return float(total) / max(steps, 1)

    def after_training(self, ctx: "ClientContext") -> None:
        """Runs on the client after local training, before ``make_update``."""

    def update_metadata(self, ctx: "ClientContext") -> dict[str, Any]:
        """Declared metadata: annotated classes and labelled / positive counts per class."""
        d = ctx.data
        return {
            "class_mask": d.class_mask.cpu(),
            "label_counts": d.mask.sum(0).cpu(),
            "positive_counts": (d.labels * d.mask).sum(0).cpu(),
        }

    def make_update(self, ctx: "ClientContext") -> ClientUpdate:
        state = ctx.extract_state()
        if self.local_keys:
            ctx.state["local"] = {k: state.pop(k) for k in self.local_keys}
        meta = self.update_metadata(ctx)
        undeclared = set(meta) - set(self.metadata_keys)
        if undeclared:
            raise ValueError(f"{self.name}: metadata {sorted(undeclared)} not declared in metadata_keys")
        return ClientUpdate(ctx.client_id, state, ctx.data.n, meta)

    # ------------------------------------------------------------- hooks
    def on_round_end(self, engine, round_idx: int, record: dict) -> None:
        """Harness hook after aggregation (and evaluation): may add entries to ``record``."""


HEAD = HEAD_KEYS
