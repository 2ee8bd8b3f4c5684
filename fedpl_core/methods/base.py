"""The method interface: what a federated partial-label method may change.

A method is a small class with hooks on two sides that never share objects.  Every hook
is listed here, in the order the engine calls it; a method overrides the few it needs.

Once per run (harness):
    ``setup(model, info)``       the working model's structure and the :class:`FederationInfo`;
    ``prepare_clients(clients, dataset)``   pooled baselines reshape the clients (Centralized, Oracle);
    ``init_client(ctx)``         per client, on its training data: constants its losses read
                                 (class weights), so that they exist before its first round.

Server side (sees :class:`~fedpl_core.fl.server.Server` and ``ClientUpdate`` objects only):
    ``init_server(server)``      initialise ``server.state``;
    ``payload(server, k)``       what client k receives (may be personalised);
    ``aggregate(server, updates)``   the new global arrays (default: the ``head`` block,
                                 FedAvg unless ``head`` names a row-wise aggregation).

Client side (sees a :class:`~fedpl_core.fl.federation.ClientContext`: its own data and
batches, the working model, the optimizer, its state; never the engine):
    ``receive(ctx, payload)``    load the payload (and the client's local arrays);
    ``before_training(ctx)``     pseudo-labels, prototypes, difficulty estimates;
    ``local_train(ctx)``         the round's local steps, calling ``train_step`` and ``loss``;
    ``loss(ctx, logits, features, batch)``   **abstract**: the local objective;
    ``supervised_loss(ctx, logits, batch)``   the loss on the annotated labels alone, with
    no per-round state (FedAvg's ``loss``; a per-client class weighting may enter);
    ``validation_loss(ctx, logits, features, batch)``   the score of a client's validation
    split (default: ``supervised_loss``, so that it never needs a round's state);
    ``after_training(ctx)``;
    ``update_metadata(ctx)``     declared metadata (keys listed in ``metadata_keys``);
    ``make_update(ctx)``         model arrays + metadata -> ``ClientUpdate``.

Per-client state that must survive between rounds (local heads, BatchNorm layers kept
local, teachers, pseudo-label tags, optimizer state) lives in ``ctx.state``, a dict the
engine keeps for each client and checkpoints (tensors and plain containers only).
FedAvg (:class:`~fedpl_core.methods.fedavg.FedAvg`) is the smallest complete method.
"""
from __future__ import annotations

import functools
import math
from abc import ABCMeta, abstractmethod
from typing import Any, ClassVar

import torch

from ..config import ConfigError
from ..fl.federation import Batch, ClientContext, ClientUpdate, FederationInfo
from ..fl.server import Server
from ..models import HEAD_KEYS, is_bn_key
from .blocks import CLIENTS, HeadWarmup, bn_modules, make_head, make_loss, prepare_clients

BN_POLICIES = ("aggregate", "local", "frozen")
HEAD = HEAD_KEYS


_bn_modules = bn_modules


def _in_range(x: float, rule: str) -> bool:
    """``rule``: ``">=0"``, ``">0"``, ``"[0,1]"``, ``"(0,1]"``, ``"[0,1)"``..."""
    if rule[0] in "([":
        lo, hi = (float(v) for v in rule[1:-1].split(","))
        return (x > lo if rule[0] == "(" else x >= lo) and (x < hi if rule[-1] == ")" else x <= hi)
    if rule.startswith(">="):
        return x >= float(rule[2:])
    return x > float(rule[1:])


def _then_warm_up(before_training):
    """``before_training`` followed, at its outermost call, by the method's head warm-up
    (:class:`~fedpl_core.methods.blocks.HeadWarmup`), so that the warm-up sees whatever the
    method's own ``before_training`` prepared (and a method need not call it)."""
    if getattr(before_training, "_then_warm_up", False):
        return before_training

    @functools.wraps(before_training)
    def wrapped(self, ctx):
        depth = ctx.scratch.get("_before_training_depth", 0)
        ctx.scratch["_before_training_depth"] = depth + 1
        try:
            before_training(self, ctx)
        finally:
            ctx.scratch["_before_training_depth"] = depth
        if depth == 0:
            del ctx.scratch["_before_training_depth"]
            self.warmup(self, ctx)

    wrapped._then_warm_up = True
    return wrapped


class _CheckedOptions(ABCMeta):
    """Builds a method only once its keyword options pass :meth:`Method.check_options`."""

    def __call__(cls, *args: Any, **kwargs: Any):
        cls.check_options(kwargs)
        return super().__call__(*args, **kwargs)


class Method(metaclass=_CheckedOptions):
    """Abstract federated method (see the module docstring for the hooks).

    Class attributes a subclass sets:
        name: registry name.
        partial: loss over annotated entries only (True) or missing = negative (False).
        metadata_keys: the metadata a client may send; anything else is refused.
        evaluation: ``"global"`` (the server's model) or ``"personalised"`` (each
            client's own model; class c's score is the mean over the clients that
            annotate c, over all clients when none does).
        federated: False for pooled baselines (Centralized, Oracle) and Local.
        tasks: the tasks the method is defined for (``"multilabel"``, ``"multiclass"``);
            :meth:`setup` refuses any other with a clear error (FedRS and FedPU are
            single-label methods).

    Hyper-parameters (constructor keywords): ``bn_policy`` in ``aggregate`` (FedAvg),
    ``local`` (FedBN: BatchNorm layers never leave the client) or ``frozen`` (FedBN+,
    Kulkarni et al. 2023, as in the Surgical Aggregation code: every BatchNorm layer
    stays at the initial, ideally pre-trained, model on the clients and in the global
    model: inference-mode statistics, affine parameters not trained, not aggregated.
    With a randomly initialised model that means BatchNorm is the identity unless its
    statistics are first calibrated, see
    :func:`fedpl_core.methods.blocks.calibrate_batchnorm`); ``weighting`` ``size``
    (n_k / n) or ``uniform``.  The blocks (:mod:`fedpl_core.methods.blocks`): ``partial``
    (None: the class's choice), ``loss`` (``bce`` / ``wbce``; ``pos_weight`` switches the
    class weighting on or off), ``head`` (``plain`` / ``tdma`` / ``positive`` / ``awpa``),
    ``clients`` (``own`` / ``pooled`` / ``pooled_true_labels`` / ``true_labels``),
    ``warmup_epochs`` / ``warmup_lr`` (Surgical Aggregation's head warm-up); a class sets
    its defaults in ``default_loss``, ``default_head``, ``default_clients``.

    ``option_ranges`` (a class attribute, merged along the MRO) declares the range of each
    numeric constructor option: ``">=0"``, ``">0"``, ``"[0,1]"``, ``"(0,1]"``...,
    ``"int>=1"`` for a whole number.  A value out of range, NaN, infinite or not a number
    is refused before the method is built (:meth:`check_options`).
    """

    name: ClassVar[str] = "method"
    partial: ClassVar[bool] = False
    metadata_keys: ClassVar[tuple[str, ...]] = ("class_mask", "label_counts", "positive_counts")
    evaluation: ClassVar[str] = "global"
    federated: ClassVar[bool] = True
    tasks: ClassVar[tuple[str, ...]] = ("multilabel", "multiclass")
    option_ranges: ClassVar[dict[str, str]] = {"warmup_epochs": ">=0", "warmup_lr": ">0"}
    default_loss: ClassVar[str] = "bce"
    default_head: ClassVar[str] = "plain"
    default_clients: ClassVar[str] = "own"

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """A :class:`~fedpl_core.config.ConfigError` naming the first option of
        ``options`` outside its declared range (``option_ranges``); None is left to the
        constructor (it means "the default")."""
        ranges: dict[str, str] = {}
        for c in reversed(cls.__mro__):
            ranges.update(vars(c).get("option_ranges", {}))
        for key, rule in ranges.items():
            v = options.get(key)
            if v is None:
                continue
            whole, rule = rule.startswith("int"), rule.removeprefix("int")
            try:
                x = None if isinstance(v, bool) else float(v)
            except (TypeError, ValueError, OverflowError):
                x = None
            if x is None:
                raise ConfigError(f"method {cls.name!r}: option {key} must be a number, got {v!r}")
            if not (math.isfinite(x) and _in_range(x, rule) and (not whole or x.is_integer())):
                what = f"a whole number {rule}" if whole else rule
                raise ConfigError(f"method {cls.name!r}: option {key} must be {what.replace(',', ', ')}, got {v!r}")

    def __init__(self, bn_policy: str = "aggregate", weighting: str = "size", *, partial: bool | None = None,
                 loss: str | None = None, pos_weight: bool | None = None, head: str | None = None,
                 clients: str | None = None, warmup_epochs: float = 0, warmup_lr: float = 5e-3, **hparams: Any):
        if bn_policy not in BN_POLICIES:
            raise ValueError(f"unknown bn_policy {bn_policy!r}; choose one of {BN_POLICIES}")
        if weighting not in ("size", "uniform"):
            raise ValueError(f"unknown weighting {weighting!r}; use 'size' or 'uniform'")
        if hparams:
            raise TypeError(f"{type(self).__name__} got unknown hyper-parameter(s) {sorted(hparams)}")
        self.bn_policy = bn_policy
        self.weighting = weighting
        if partial is not None:
            self.partial = bool(partial)
        # the blocks (methods/blocks.py): supervised loss, head aggregation, clients, warm-up
        self.loss_block = make_loss(self.default_loss if loss is None else loss, pos_weight)
        self.pos_weight = self.loss_block.weighted
        self.head_block = make_head(self.default_head if head is None else head)
        self.clients = self.default_clients if clients is None else clients
        if self.clients not in CLIENTS:
            raise ValueError(f"unknown clients {self.clients!r}; use one of {CLIENTS}")
        if self.clients in ("pooled", "pooled_true_labels"):
            self.federated = False
        self.warmup = HeadWarmup(float(warmup_epochs), float(warmup_lr))
        if bn_policy == "local" and self.evaluation == "global":
            self.evaluation = "personalised"

    @property
    def warmup_epochs(self) -> float:
        return self.warmup.epochs

    @property
    def warmup_lr(self) -> float:
        return self.warmup.lr

    def __init_subclass__(cls, **kw: Any):
        super().__init_subclass__(**kw)
        if not getattr(cls.before_training, "_then_warm_up", False):  # defined here or by a mixin
            cls.before_training = _then_warm_up(cls.before_training)

    # ------------------------------------------------------------------ setup
    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        """Called once with the working model (structure only) and the federation info."""
        if info.task not in self.tasks:
            raise ValueError(f"method {self.name!r} is defined for {' / '.join(self.tasks)} tasks only, "
                             f"not for this {info.task} data set")
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
        """Harness hook for pooled baselines (Centralized, Oracle): reshape the clients
        (the ``clients`` block, :func:`~fedpl_core.methods.blocks.prepare_clients`)."""
        return prepare_clients(clients, dataset, self.clients)

    def init_client(self, ctx: ClientContext) -> None:
        """Runs once per client (again after a resume; keep it idempotent) on its training
        data, before any round: per-client constants that :meth:`supervised_loss` reads
        (a class weighting) go into ``ctx.state`` here, so that a client's validation
        split can be scored before the client is first sampled."""
        self.loss_block.init_client(self, ctx)

    def configure_model(self, model: torch.nn.Module, train: bool) -> None:
        """Set train/eval modes of the working model before local training or evaluation
        (FedBN+: BatchNorm layers stay in inference mode while training)."""
        model.train(train)
        if train and self.bn_policy == "frozen":
            for m in _bn_modules(model):
                m.eval()

    # ------------------------------------------------------------ server side
    def init_server(self, server: Server) -> None:
        """Initialise ``server.state`` (method-specific server memory)."""

    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        """What the server sends to client ``client_id`` (default: every global array;
        a client overlays its local arrays, so they only act before its first round)."""
        return {"state": server.global_state}

    def client_weights(self, updates: list[ClientUpdate]) -> list[float]:
        """Aggregation weight of each update: ``n_k`` (``size``) or 1 (``uniform``)."""
        if self.weighting == "uniform":
            return [1.0] * len(updates)
        return [float(u.num_samples) for u in updates]

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        """Update ``server.global_state`` (and ``server.state``) from the round's updates:
        the ``head`` block (default FedAvg, :class:`~fedpl_core.methods.blocks.HeadAggregation`)."""
        self.head_block(self, server, updates)

    # ------------------------------------------------------------ client side
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        """Load the payload into the working model, then the client's own local arrays."""
        ctx.load_state(payload["state"])
        local = ctx.state.get("local")
        if local:
            ctx.load_state(local)

    def before_training(self, ctx: ClientContext) -> None:
        """Runs on the client after ``receive``, before local training (then, at a
        client's first round, the head warm-up when ``warmup_epochs`` > 0)."""

    @abstractmethod
    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The local objective on one batch (a scalar tensor)."""

    def supervised_loss(self, ctx: ClientContext, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The loss on the batch's annotated labels alone: BCE (CE for a single-label task)
        over the annotated entries (``partial``) or over every entry (missing = negative).
        It reads no per-round state (no teacher, anchor, pseudo-label or ``ctx.scratch``),
        only what :meth:`init_client` put in ``ctx.state``; a method whose supervised term
        is weighted (FedPSL's class weights) takes ``loss="wbce"``
        (:class:`~fedpl_core.methods.blocks.SupervisedLoss`)."""
        return self.loss_block(self, ctx, logits, batch)

    def validation_loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor,
                        batch: Batch) -> torch.Tensor:
        """The loss that scores a client's validation split for model selection (called
        by the harness, outside local training, on any client, sampled or not: ``ctx.scratch``
        is empty and ``ctx.state`` is a copy, so nothing written there is kept).  Default:
        :meth:`supervised_loss`, comparable from round to round (no ramped weights, no
        teacher, no pseudo-labels, whose rows index the training split)."""
        return self.supervised_loss(ctx, logits, batch)

    def train_step(self, ctx: ClientContext, batch: Batch) -> torch.Tensor:
        """One optimisation step; returns the detached loss."""
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, features = ctx.model.forward_features(batch.x)
            loss = self.loss(ctx, logits.float(), features, batch)
        loss.backward()
        ctx.optimizer.step()
        return loss.detach()

    def local_train(self, ctx: ClientContext) -> float:
        """The local epochs / iterations of one round; returns the mean loss."""
        total, steps = torch.zeros((), device=ctx.device), 0
        for batch in ctx.batches():
            total += self.train_step(ctx, batch)
            steps += 1
        return float(total) / max(steps, 1)

    def after_training(self, ctx: ClientContext) -> None:
        """Runs on the client after local training, before ``make_update``."""

    def update_metadata(self, ctx: ClientContext) -> dict[str, Any]:
        """Declared metadata: annotated classes and labelled / positive counts per class."""
        d = ctx.data
        return {
            "class_mask": d.class_mask.cpu(),
            "label_counts": d.mask.sum(0).cpu(),
            "positive_counts": (d.labels * d.mask).sum(0).cpu(),
        }

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        """The client's shared arrays (its local ones stay in ``ctx.state["local"]``) and
        its declared metadata."""
        state = ctx.extract_state()
        if self.local_keys:
            ctx.state["local"] = {k: state.pop(k) for k in self.local_keys}
        meta = self.update_metadata(ctx)
        undeclared = set(meta) - set(self.metadata_keys)
        if undeclared:
            raise ValueError(f"{self.name}: metadata {sorted(undeclared)} not declared in metadata_keys")
        return ClientUpdate(ctx.client_id, state, ctx.data.n, meta)


Method.before_training = _then_warm_up(Method.before_training)


__all__ = ["Method", "ClientUpdate", "BN_POLICIES", "HEAD"]
