"""The method interface: what a federated partial-label method may change.

A method is a small class with hooks on two sides that never share objects.  These are
all of its hooks, in the order the harness calls them (:class:`~fedpl_core.fl.simulation.Simulation`,
:meth:`Site.train <fedpl_core.fl.site.Site.train>`, :mod:`fedpl_core.fl.evaluation`,
:mod:`fedpl_core.apps.flower`); a method overrides the few it needs, calling ``super()``.

Once per run:

    1. ``setup(model, info)``: the working model's structure and the :class:`FederationInfo`
       (on each party: the simulation, every Flower site).
    2. ``init_server(server)``: [server] initialise ``server.state`` from the initial
       ``server.global_state`` (when the server is built).
    3. ``init_client(ctx)``: [client] per client, on its training data: constants its losses
       read (class weights), so that they exist before its first round (again after a
       resume: keep it idempotent).

Each round (the server sees :class:`~fedpl_core.fl.server.Server` and ``ClientUpdate`` objects
only; a client sees a :class:`~fedpl_core.fl.federation.ClientContext`: its own data and
batches, the working model, the optimizer, its state; never the engine):

    4. ``payload(server, k)``: [server] what sampled client k receives (may be personalised).
    5. ``receive(ctx, payload)``: [client] load the payload and the client's local arrays (the
       default), then everything the round needs before training: an override calls
       ``super().receive`` first, then prepares (teachers, pseudo-labels, prototypes,
       anchors).  The harness then runs the ``warmup`` block (a client's first round, when
       ``warmup_epochs`` > 0), so it sees what ``receive`` prepared.
    6. ``local_train(ctx)``: [client] the round's local steps; returns the mean loss (default:
       :func:`~fedpl_core.methods.blocks.sgd_step` over ``ctx.batches()``; a method with a
       step of its own overrides it with :func:`~fedpl_core.methods.blocks.train_batches`).
    7. ``loss(ctx, logits, features, batch)``: [client] **abstract**: the local objective on a
       batch (called by ``local_train``).
    8. ``make_update(ctx)``: [client] after training: the shared arrays and the declared
       metadata (default :func:`~fedpl_core.methods.blocks.model_update`); an override does
       its after-training work, calls ``super()`` and adds its metadata (keys listed in
       ``metadata_keys``).
    9. ``aggregate(server, updates)``: [server] the new global arrays (default: the ``head``
       block, FedAvg unless ``head`` names a row-wise aggregation).

Whenever a model is scored (the loss reference of the divergence check, each client's
validation split), outside local training, with ``ctx.state`` a copy and ``ctx.scratch`` empty:

    10. ``supervised_loss(ctx, logits, batch)``: [client] the loss on the annotated labels
        alone, with no per-round state (FedAvg's ``loss``; a per-client class weighting from
        ``init_client`` may enter).

Configuration, not hooks (the blocks a method holds, :mod:`fedpl_core.methods.blocks`; the
harness reads them, no method overrides them): ``clients_block`` (pooled baselines reshape the
clients before ``setup``), ``batchnorm`` (FedBN / FedBN+: which BatchNorm arrays stay local, the
model's modes while training; the harness sets them after ``receive``), ``local_keys`` (from
``batchnorm`` and the class attribute ``local_arrays``: PFL's head, Local's everything),
``weights`` (``weighting``: n_k or uniform), ``loss_block``, ``head_block``, ``warmup``; and the
class attributes ``metadata_keys`` (the harness refuses an update with any other key),
``evaluation``, ``federated``, ``tasks``.  ``check_options`` validates the options.

Per-client state that must survive between rounds (local heads, BatchNorm layers kept
local, teachers, pseudo-label tags, optimizer state) lives in ``ctx.state``, a dict the
engine keeps for each client and checkpoints (tensors and plain containers only); what a
round passes between its hooks lives in ``ctx.scratch`` (fresh each round).
FedAvg (:class:`~fedpl_core.methods.fedavg.FedAvg`) is the smallest complete method.
"""

from __future__ import annotations

import math
from abc import ABCMeta, abstractmethod
from typing import Any, ClassVar

import torch

from ..base.validation import ConfigError
from ..fl.federation import Batch, ClientContext, ClientUpdate, FederationInfo
from ..fl.server import Server
from ..nn.models import HEAD_KEYS
from .blocks import (
    BN_POLICIES,
    BatchNormPolicy,
    Clients,
    ClientWeighting,
    HeadWarmup,
    local_keys,
    make_head,
    make_loss,
    model_update,
    sgd_step,
    train_batches,
)

#: the hooks, in call order (the module docstring); tests/test_method_interface.py holds every method to them
HOOKS = (
    "setup",
    "init_server",
    "init_client",
    "payload",
    "receive",
    "local_train",
    "loss",
    "make_update",
    "aggregate",
    "supervised_loss",
)
HEAD = HEAD_KEYS
#: The hooks that make a client's round (with ``setup``, which may reshape the model, and
#: ``payload``, which may personalise what a client starts from).  A method that keeps
#: ``Method``'s own of them all but ``loss``, and whose ``loss`` is the supervised loss alone
#: (:func:`supervised_only`), has FedAvg's client round (:attr:`Method.batchable`).
CLIENT_ROUND_HOOKS = (
    "setup",
    "init_client",
    "payload",
    "receive",
    "local_train",
    "loss",
    "make_update",
    "supervised_loss",
)


def supervised_only(loss: Any) -> Any:
    """Decorator marking a ``loss`` hook that is the supervised loss alone (FedAvg's:
    ``return self.supervised_loss(ctx, logits, batch)``), which the engine's batched path
    computes itself (:attr:`Method.batchable`)."""
    loss.supervised_only = True
    return loss


def _in_range(x: float, rule: str) -> bool:
    """``rule``: ``">=0"``, ``">0"``, ``"[0,1]"``, ``"(0,1]"``, ``"[0,1)"``..."""
    if rule[0] in "([":
        lo, hi = (float(v) for v in rule[1:-1].split(","))
        return (x > lo if rule[0] == "(" else x >= lo) and (x < hi if rule[-1] == ")" else x <= hi)
    if rule.startswith(">="):
        return x >= float(rule[2:])
    return x > float(rule[1:])


def _rule_holds(x: float, rule: str) -> bool:
    """One rule of ``option_ranges``: a range, ``int`` before it for a whole number."""
    whole, rule = rule.startswith("int"), rule.removeprefix("int")
    return _in_range(x, rule) and (not whole or x.is_integer())


class _CheckedOptions(ABCMeta):
    """Builds a method only once its keyword options pass :meth:`Method.check_options`."""

    def __call__(cls: Any, *args: Any, **kwargs: Any) -> Any:
        cls.check_options(kwargs)
        return super().__call__(*args, **kwargs)


class Method(metaclass=_CheckedOptions):
    """Abstract federated method (see the module docstring for the hooks).

    Class attributes a subclass sets:

    * ``name``: registry name.
    * ``display_name``, ``color``, ``paper``: the name, colour and paper every figure, table and
      listing shows (:mod:`fedpl_core.report.names` reads them).
    * ``partial``: loss over annotated entries only (True) or missing = negative (False).
    * ``metadata_keys``: the metadata a client may send; anything else is refused.
    * ``evaluation``: ``"global"`` (the server's model) or ``"personalised"`` (each
      client's own model; class c's score is the mean over the clients that annotate c,
      over all clients when none does).
    * ``federated``: False for pooled baselines (Centralized, Oracle) and Local.
    * ``local_arrays``: the arrays that never leave a client besides the BatchNorm policy's:
      ``"batchnorm"`` (none), ``"head"`` (PFL) or ``"all"`` (Local).
    * ``tasks``: the tasks the method is defined for (``"multilabel"``, ``"multiclass"``);
      :meth:`setup` refuses any other with a clear error (FedRS and FedPU are single-label
      methods).
    * ``train_cost``: what a training image costs relative to plain supervised training
      (teachers, second views, look-aheads: 1.7, 2.5...); the GPU budget
      (:func:`fedpl_core.studies.budget.run_cost`) multiplies a run's training steps by it.  A
      variant inherits its parent's; one that switches the costly part off sets 1.
    * ``ablation``: True for a paper's ablation (a variant its table switches one part off in);
      a class's own, never inherited.  ``fedpl_core.methods.ablation_methods()`` lists them.

    Read from the instance (they follow the options): ``evaluation`` (``"personalised"`` with
    ``bn_policy="local"``) and :attr:`batchable`.

    Hyper-parameters (constructor keywords): ``bn_policy`` in ``aggregate`` (FedAvg),
    ``local`` (FedBN: BatchNorm layers never leave the client) or ``frozen`` (FedBN+,
    Kulkarni et al. 2023, as in the Surgical Aggregation code: every BatchNorm layer
    stays at the initial, ideally pre-trained, model on the clients and in the global
    model: inference-mode statistics, affine parameters not trained, not aggregated.
    With a randomly initialised model that means BatchNorm is the identity unless its
    statistics are first calibrated, see
    :func:`fedpl_core.methods.blocks.calibrate_batchnorm`; the ``batchnorm`` block); ``weighting`` ``size``
    (n_k / n) or ``uniform`` (the ``weights`` block).  The blocks (:mod:`fedpl_core.methods.blocks`): ``partial``
    (None: the class's choice), ``loss`` (``bce`` / ``wbce``; ``pos_weight`` switches the
    class weighting on or off), ``head`` (``plain`` / ``tdma`` / ``positive`` / ``awpa``),
    ``clients`` (``own`` / ``pooled`` / ``pooled_true_labels`` / ``true_labels``),
    ``warmup_epochs`` / ``warmup_lr`` (Surgical Aggregation's head warm-up); a class sets
    its defaults in ``default_loss``, ``default_head``, ``default_clients``.

    ``option_ranges`` (a class attribute, merged along the MRO) declares the range of each
    numeric constructor option: ``">=0"``, ``">0"``, ``"[0,1]"``, ``"(0,1]"``...,
    ``"int>=1"`` for a whole number, alternatives joined by ``|`` (``"[0,1)|int>=1"``: a
    share or a count).  A value out of range, NaN, infinite or not a number is refused
    before the method is built (:meth:`check_options`).
    """

    name: ClassVar[str] = "method"
    #: What a reader sees for the method in every figure, table and ``python -m fedpl_core
    #: methods``: the name its paper prints (the papers' common spelling, FedAvg), unique in the
    #: registry; a variant that differs from a namesake says how ("FedAvg (wBCE)").
    display_name: ClassVar[str] = ""
    #: Its colour in every figure (a matplotlib colour); the variants of one concept may share it.
    color: ClassVar[str] = ""
    #: The paper whose tables hold it: ``"FedPSL"``, ``"FedLSM"``, ``"Surgical Aggregation"``,
    #: ``"FedMLP"``, or ``"baseline"`` (every paper's): a key of
    #: :data:`fedpl_core.methods.papers.PAPERS`, where the paper's own facts are.
    paper: ClassVar[str] = ""
    #: True for a paper's ablation: a variant its table switches one part of the method off in
    #: ("FedPSL w/ TDMA", "FedLSM w/o UDE"); a benchmark of methods leaves them out
    #: (``fedpl_core.methods.ablation_methods()``).
    ablation: ClassVar[bool] = False
    #: The facts above are a class's own, never inherited (with the value a class that does not
    #: declare them gets): a subclass that does not declare them (a user's variant of FedAvg) is
    #: not shown as FedAvg, in FedAvg's colour, among the baselines, nor counted as an ablation;
    #: it shows its registry name (:meth:`__init_subclass__`).
    OWN_FACTS: ClassVar[tuple[str, ...]] = ("display_name", "color", "paper", "ablation")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for fact in Method.OWN_FACTS:
            if fact not in vars(cls):
                setattr(cls, fact, type(vars(Method)[fact])())  # "" or False

    partial: ClassVar[bool] = False
    metadata_keys: ClassVar[tuple[str, ...]] = ("class_mask", "label_counts", "positive_counts")
    evaluation: ClassVar[str] = "global"
    federated: ClassVar[bool] = True
    tasks: ClassVar[tuple[str, ...]] = ("multilabel", "multiclass")
    option_ranges: ClassVar[dict[str, str]] = {"warmup_epochs": ">=0", "warmup_lr": ">0"}
    default_loss: ClassVar[str] = "bce"
    default_head: ClassVar[str] = "plain"
    default_clients: ClassVar[str] = "own"
    local_arrays: ClassVar[str] = "batchnorm"
    #: Training cost of an image relative to plain supervised training (3 forward passes):
    #: teachers, second views, look-aheads and local-data estimates cost more.  Inherited: a
    #: variant costs what its parent costs unless it says otherwise.
    train_cost: ClassVar[float] = 1.0

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """A :class:`~fedpl_core.base.validation.ConfigError` naming the first option of
        ``options`` outside its declared range (``option_ranges``); None is left to the
        constructor (it means "the default")."""
        ranges: dict[str, str] = {}
        for c in reversed(cls.__mro__):
            ranges.update(vars(c).get("option_ranges", {}))
        for key, rules in ranges.items():
            v = options.get(key)
            if v is None:
                continue
            try:
                x = None if isinstance(v, bool) else float(v)
            except (TypeError, ValueError, OverflowError):
                x = None
            if x is None:
                raise ConfigError(f"method {cls.name!r}: option {key} must be a number, got {v!r}")
            alternatives = rules.split("|")  # "[0,1)|int>=1": a share or a count
            if not (math.isfinite(x) and any(_rule_holds(x, r) for r in alternatives)):
                what = " or ".join(
                    (f"a whole number {r[3:]}" if r.startswith("int") else r).replace(",", ", ") for r in alternatives
                )
                raise ConfigError(f"method {cls.name!r}: option {key} must be {what}, got {v!r}")

    def __init__(
        self,
        bn_policy: str = "aggregate",
        weighting: str = "size",
        *,
        partial: bool | None = None,
        loss: str | None = None,
        pos_weight: bool | None = None,
        head: str | None = None,
        clients: str | None = None,
        warmup_epochs: float = 0,
        warmup_lr: float = 5e-3,
        **hparams: Any,
    ):
        if bn_policy not in BN_POLICIES:
            raise ValueError(f"unknown bn_policy {bn_policy!r}; choose one of {BN_POLICIES}")
        if weighting not in ("size", "uniform"):
            raise ValueError(f"unknown weighting {weighting!r}; use 'size' or 'uniform'")
        if hparams:
            raise TypeError(f"{type(self).__name__} got unknown hyper-parameter(s) {sorted(hparams)}")
        self.bn_policy = bn_policy
        self.weighting = weighting
        if partial is not None:
            self.partial = bool(partial)  # type: ignore[misc]  # per-instance override
        # the blocks (methods/blocks.py): supervised loss, head aggregation, clients, warm-up, BatchNorm, weights
        self.loss_block = make_loss(self.default_loss if loss is None else loss, pos_weight)
        self.pos_weight = self.loss_block.weighted
        self.head_block = make_head(self.default_head if head is None else head)
        self.clients = self.default_clients if clients is None else clients
        self.clients_block = Clients(self.clients)
        if self.clients in ("pooled", "pooled_true_labels"):
            self.federated = False  # type: ignore[misc]  # per-instance override
        self.warmup = HeadWarmup(float(warmup_epochs), float(warmup_lr))
        self.batchnorm = BatchNormPolicy(bn_policy)
        self.weights = ClientWeighting(weighting)
        if bn_policy == "local" and self.evaluation == "global":
            self.evaluation = "personalised"  # type: ignore[misc]  # per-instance override

    @property
    def why_not_batchable(self) -> str | None:
        """None when the engine may train this method's clients of a round as one vmapped
        step (:mod:`fedpl_core.fl.batched`), as far as the method decides it; else the reason.
        The one rule: its client round is FedAvg's (every hook of :data:`CLIENT_ROUND_HOOKS` is
        ``Method``'s but ``loss``, the supervised loss alone: :func:`supervised_only`, as
        :class:`~fedpl_core.methods.fedavg.FedAvg`'s; the server's ``aggregate`` and ``head``
        are free, they see only the updates), no array stays on the clients
        (``bn_policy="aggregate"``, ``local_arrays="batchnorm"``) and no head warm-up.  The
        engine checks the rest (the task, BatchNorm in the model, the optimizer)."""
        cls = type(self)
        own = [
            h
            for h in CLIENT_ROUND_HOOKS
            if (
                not getattr(cls.loss, "supervised_only", False)
                if h == "loss"
                else getattr(cls, h) is not getattr(Method, h)
            )
        ]
        if own:
            return f"method {self.name!r} has client steps of its own ({', '.join(own)})"
        if self.bn_policy != "aggregate" or self.local_arrays != "batchnorm":
            return "arrays that stay on the clients"
        if self.warmup_epochs:
            return "the head warm-up"
        return None

    @property
    def batchable(self) -> bool:
        """Whether the engine may train this method's clients as one vmapped step, as far as
        the method decides it: :attr:`why_not_batchable` is None."""
        return self.why_not_batchable is None

    @property
    def warmup_epochs(self) -> float:
        return self.warmup.epochs

    @property
    def warmup_lr(self) -> float:
        return self.warmup.lr

    @property
    def local_keys(self) -> set[str]:
        """The arrays that never leave a client (``batchnorm`` and ``local_arrays``)."""
        return self._local_keys

    # ------------------------------------------------------------ once per run
    @classmethod
    def check_task(cls, task: str, data: str = "this") -> None:
        """A :class:`~fedpl_core.base.validation.ConfigError` when the method is not defined for
        ``task`` (``"multilabel"`` / ``"multiclass"``, see ``tasks``), naming the data set
        ``data``: found before any training (a grid checks every run before the first)."""
        if task not in cls.tasks:
            words = {"multilabel": "multi-label", "multiclass": "single-label"}
            raise ConfigError(
                f"method {cls.name!r} is defined for {' / '.join(words.get(t, t) for t in cls.tasks)} "
                f"tasks only, not for {data} {words.get(task, task)} data set"
            )

    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        """Called once with the working model (structure only) and the federation info."""
        self.check_task(info.task)
        self.info = info
        self._local_keys = local_keys(model, self.local_arrays, self.batchnorm)
        self.batchnorm.freeze(model)

    def init_server(self, server: Server) -> None:
        """Initialise ``server.state`` (method-specific server memory)."""

    def init_client(self, ctx: ClientContext) -> None:
        """Runs once per client (again after a resume; keep it idempotent) on its training
        data, before any round: per-client constants that :meth:`supervised_loss` reads
        (a class weighting) go into ``ctx.state`` here, so that a client's validation
        split can be scored before the client is first sampled."""
        self.loss_block.init_client(self, ctx)

    # ------------------------------------------------------------ server side
    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        """What the server sends to client ``client_id`` (default: every global array;
        a client overlays its local arrays, so they only act before its first round)."""
        return {"state": server.global_state}

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        """Update ``server.global_state`` (and ``server.state``) from the round's updates:
        the ``head`` block (default FedAvg by ``weights``, :class:`~fedpl_core.methods.blocks.HeadAggregation`)."""
        self.head_block(self, server, updates)

    # ------------------------------------------------------------ client side
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        """Load the payload into the working model, then the client's own local arrays.
        An override calls this first, then prepares the round; the harness runs the head
        warm-up block after it (when ``warmup_epochs`` > 0, at a client's first round)."""
        ctx.load_state(payload["state"])
        local = ctx.state.get("local")
        if local:
            ctx.load_state(local)

    def local_train(self, ctx: ClientContext) -> float:
        """The local epochs / iterations of one round; returns the mean loss."""
        return train_batches(ctx, lambda batch: sgd_step(self, ctx, batch))

    @abstractmethod
    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The local objective on one batch (a scalar tensor)."""

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        """The client's shared arrays (its local ones stay in ``ctx.state["local"]``) and
        its declared metadata: annotated classes, labelled and positive counts per class."""
        return model_update(self, ctx)

    def supervised_loss(self, ctx: ClientContext, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The loss on the batch's annotated labels alone: BCE (CE for a single-label task)
        over the annotated entries (``partial``) or over every entry (missing = negative).
        It reads no per-round state (no teacher, anchor, pseudo-label or ``ctx.scratch``),
        only what :meth:`init_client` put in ``ctx.state``; a method whose supervised term
        is weighted (FedPSL's class weights) takes ``loss="wbce"``
        (:class:`~fedpl_core.methods.blocks.SupervisedLoss`).  It scores a client's
        validation split for model selection (on any client, sampled or not) and the
        loss reference of the divergence check: comparable from round to round."""
        return self.loss_block(self, ctx, logits, batch)


__all__ = ["Method", "HOOKS", "CLIENT_ROUND_HOOKS", "supervised_only", "ClientUpdate", "BN_POLICIES", "HEAD"]
