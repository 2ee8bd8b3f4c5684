"""The building blocks every method is composed from, in one place.

A method (:class:`~fedpl_core.methods.base.Method`) holds a few *slots* that its keyword
options fill with a block (see ``Method.__init__``); a paper's file says which blocks it
uses and adds only its own step.  No method file builds on another paper's file: what two
methods share lives here.

Slots (options accepted by every method unless a class fixes them):

* ``loss`` - the supervised term (:meth:`Method.supervised_loss`): ``"bce"`` (BCE, CE for a
  single-label task, over the annotated entries with ``partial`` or over every entry with
  missing labels as negatives) or ``"wbce"`` (the same with the positive term of class c
  weighted by the client's ``N_neg / N_pos``, FedPSL Sec. VII-D-3; ``pos_weight=False``
  turns the weighting off).  :class:`SupervisedLoss`.
* ``head`` - how the server averages the head (the default ``Method.aggregate``):
  ``"plain"`` (FedAvg: every shared array by the client weights), or row-wise by per-class
  counts through :func:`~fedpl_core.nn.aggregation.rowwise_average`: ``"tdma"`` (labelled
  counts n_k^c, FedPSL Eq. 9), ``"positive"`` (positive counts), ``"awpa"`` (the
  ``class_counts`` a client declares, FedLSM Eq. 7).  :class:`HeadAggregation`.
* ``warmup_epochs`` / ``warmup_lr`` - Surgical Aggregation's head warm-up at a client's
  first round (encoder frozen), at the end of ``receive`` (after the method's own
  preparation).  :class:`HeadWarmup`.
* ``clients`` - ``"own"`` (federated), ``"pooled"`` (every client's data on one machine with
  its partial labels), ``"pooled_true_labels"`` (pooled, every true label: the Oracle) or
  ``"true_labels"`` (the same clients, every true label).  :class:`Clients`, which the
  harness applies before ``setup`` (``method.clients_block``).
* ``bn_policy`` - ``"aggregate"``, ``"local"`` (FedBN) or ``"frozen"`` (FedBN+): which
  BatchNorm arrays stay on a client, whether they train, and the model's modes while
  training (``method.batchnorm``, :class:`BatchNormPolicy`); with the class attribute
  ``local_arrays`` (``"batchnorm"``, ``"head"``: PFL, ``"all"``: Local) it gives
  ``method.local_keys`` (:func:`local_keys`).
* ``weighting`` - ``"size"`` (n_k) or ``"uniform"``: each update's aggregation weight
  (``method.weights``, :class:`ClientWeighting`).

Local training helpers: :func:`sgd_step` (one step of ``method.loss``: Method's default
step) and :func:`train_batches` (a step function over the round's batches, Method's
default ``local_train``); :func:`model_update` is Method's default ``make_update``
(the shared arrays, the local ones kept in ``ctx.state["local"]``, and
:func:`default_metadata`).

Terms a method adds to its loss: :class:`Proximal` (FedProx), :func:`moon_contrastive`
(MOON); :func:`logit_adjusted_bce` is the logit-adjusted supervised term (FedMLP's WPC,
FedNoRo).  Client-side helpers shared by the semi-supervised baselines: an EMA teacher
(:func:`init_teacher`, :func:`ema_update`), un-augmented batches (:func:`clean_batches`,
:func:`clean_local_train`), pseudo-label bookkeeping (:func:`record_pseudo_labels`) and
the sigmoid ramp (:func:`sigmoid_rampup`).  BatchNorm: :func:`calibrate_batchnorm`
(FedBN+ with a randomly initialised model).  Federated SimSiam pre-training (FedSSP and
FedMatch+) is a component of its own, mixed in as a class: :mod:`fedpl_core.methods.simsiam`.

A new method is a :class:`~fedpl_core.methods.base.Method` subclass that names its
blocks in ``default_loss`` / ``default_head`` / ``default_clients`` and writes only its own
step (``tests/test_blocks_example.py`` builds one in under 50 lines); a paper's variant
is a registered subclass that changes those defaults, never a deeper chain (at most two
levels below ``Method``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..fl.federation import Batch, ClientContext, ClientData, ClientUpdate, derive_seed
from ..fl.preprocess import Preprocess
from ..nn.aggregation import aggregate_with_head_weights, weighted_average
from ..nn.losses import class_pos_weight, masked_bce, supervised_term
from ..nn.models import HEAD_KEYS, is_bn_key


def bn_modules(model: torch.nn.Module) -> list[torch.nn.modules.batchnorm._BatchNorm]:
    return [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]


# ============================================================================ configuration
BN_POLICIES = ("aggregate", "local", "frozen")


@dataclass(frozen=True)
class BatchNormPolicy:
    """The ``bn_policy`` option: ``aggregate`` (FedAvg), ``local`` (FedBN: BatchNorm
    arrays never leave the client) or ``frozen`` (FedBN+: every BatchNorm layer stays at
    the initial model, in inference mode while training, affine parameters not trained)."""

    policy: str = "aggregate"

    def __post_init__(self):
        if self.policy not in BN_POLICIES:
            raise ValueError(f"unknown bn_policy {self.policy!r}; choose one of {BN_POLICIES}")

    def is_local(self, key: str, model: torch.nn.Module) -> bool:
        """Whether the array ``key`` stays on the client (``local`` and ``frozen``)."""
        return self.policy in ("local", "frozen") and is_bn_key(key, model)

    def freeze(self, model: torch.nn.Module) -> None:
        """FedBN+: BatchNorm affine parameters never train (called by ``Method.setup``)."""
        if self.policy == "frozen":
            for m in bn_modules(model):
                for p in m.parameters(recurse=False):
                    p.requires_grad_(False)

    def set_mode(self, model: torch.nn.Module, train: bool) -> None:
        """The model's train / eval modes for local training (``train``) or scoring; FedBN+
        keeps BatchNorm layers in inference mode while training."""
        model.train(train)
        if train and self.policy == "frozen":
            for m in bn_modules(model):
                m.eval()


LOCAL_ARRAYS = ("batchnorm", "head", "all")


def local_keys(model: torch.nn.Module, local_arrays: str, batchnorm: BatchNormPolicy) -> set[str]:
    """The arrays that never leave a client: the BatchNorm policy's (``batchnorm``), those
    and the head (``head``: PFL), or every array (``all``: Local)."""
    if local_arrays not in LOCAL_ARRAYS:
        raise ValueError(f"unknown local_arrays {local_arrays!r}; use one of {LOCAL_ARRAYS}")
    return {
        k
        for k in model.state_dict()
        if local_arrays == "all" or (local_arrays == "head" and k in HEAD_KEYS) or batchnorm.is_local(k, model)
    }


@dataclass(frozen=True)
class ClientWeighting:
    """The ``weighting`` option: each update's aggregation weight, ``n_k`` (``size``) or 1
    (``uniform``)."""

    mode: str = "size"

    def __post_init__(self):
        if self.mode not in ("size", "uniform"):
            raise ValueError(f"unknown weighting {self.mode!r}; use 'size' or 'uniform'")

    def __call__(self, updates: list[ClientUpdate]) -> list[float]:
        if self.mode == "uniform":
            return [1.0] * len(updates)
        return [float(u.num_samples) for u in updates]


# ============================================================================ local training, updates
def sgd_step(method, ctx, batch: Batch) -> torch.Tensor:
    """One optimisation step of ``method.loss`` on ``batch``; returns the detached loss."""
    ctx.optimizer.zero_grad(set_to_none=True)
    with ctx.autocast():
        logits, features = ctx.model.forward_features(batch.x)
        loss = method.loss(ctx, logits.float(), features, batch)
    loss.backward()
    ctx.optimizer.step()
    return loss.detach()


def train_batches(ctx, step, batches=None) -> float:
    """``step(batch)`` over the round's batches (``ctx.batches()`` unless ``batches``);
    the mean of the losses it returns."""
    total, steps = torch.zeros((), device=ctx.device), 0
    for batch in ctx.batches() if batches is None else batches:
        total += step(batch)
        steps += 1
    return float(total) / max(steps, 1)


def default_metadata(ctx) -> dict[str, Any]:
    """What every client declares: its annotated classes and its labelled / positive
    counts per class."""
    d = ctx.data
    return {
        "class_mask": d.class_mask.cpu(),
        "label_counts": d.mask.sum(0).cpu(),
        "positive_counts": (d.labels * d.mask).sum(0).cpu(),
    }


def model_update(method, ctx) -> ClientUpdate:
    """The client's shared arrays (its local ones, ``method.local_keys``, go to
    ``ctx.state["local"]``) and :func:`default_metadata`."""
    state = ctx.extract_state()
    if method.local_keys:
        ctx.state["local"] = {k: state.pop(k) for k in method.local_keys}
    return ClientUpdate(ctx.client_id, state, ctx.data.n, default_metadata(ctx))


# ============================================================================ losses
@dataclass(frozen=True)
class SupervisedLoss:
    """The supervised term on the annotated labels: BCE (CE for a single-label task), over
    the annotated entries when the method is ``partial``, else over every entry (missing =
    negative).  ``weighted``: the positive term of class c weighted by the client's ``N_neg
    / N_pos`` of c (FedPSL, Sec. VII-D-3, used for every method of that paper).

    The weights are computed once per client from its training labels (over its known
    entries with the partial loss, over all entries when missing labels are negatives)
    and kept in ``ctx.state["pos_weight"]``.

    The rule itself is a pure tensor function (:meth:`rule`,
    :func:`~fedpl_core.nn.losses.supervised_term`): the block calls it on one client's batch,
    the batched client path (:mod:`fedpl_core.fl.batched`) under ``vmap`` on many clients'
    batches, each with its :meth:`client_pos_weight`.
    """

    weighted: bool = False

    def class_pos_weight(self, method, ctx) -> torch.Tensor:
        pw = ctx.state.get("pos_weight")
        if pw is None:
            d = ctx.data
            pw = class_pos_weight(d.labels, d.mask if method.partial else None)
            ctx.state["pos_weight"] = pw
        return pw

    def init_client(self, method: Any, ctx: ClientContext) -> None:  # method: a Method (base.py imports blocks)
        if self.weighted and ctx.info.task != "multiclass":
            self.class_pos_weight(method, ctx)

    def rule(self, method, task: str):
        """``(logits, targets, mask, pos_weight) -> loss``: the loss of ``method`` on a
        ``task`` as a pure tensor function (:func:`~fedpl_core.nn.losses.supervised_term`
        with the method's ``partial``)."""
        return functools.partial(supervised_term, partial=bool(method.partial), multiclass=task == "multiclass")

    def client_pos_weight(self, method, ctx, like: torch.Tensor | None = None) -> torch.Tensor | None:
        """The ``pos_weight`` the rule gets on the client of ``ctx``: its class weights
        (:meth:`class_pos_weight`, on ``like``'s device and dtype when given, kept in
        ``ctx.scratch`` for the round) when the block is weighted on a multi-label task,
        else None."""
        if not self.weighted or ctx.info.task == "multiclass":
            return None
        if like is None:
            return self.class_pos_weight(method, ctx)
        scratch = getattr(ctx, "scratch", {})
        pw = scratch.get("pos_weight")
        if pw is None or pw.device != like.device or pw.dtype != like.dtype:
            pw = scratch["pos_weight"] = self.class_pos_weight(method, ctx).to(device=like.device, dtype=like.dtype)
        return pw

    def __call__(self, method, ctx, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        pw = self.client_pos_weight(method, ctx, like=logits)
        return self.rule(method, ctx.info.task)(logits, batch.y, batch.mask, pw)


LOSSES = ("bce", "wbce")


def make_loss(loss: str | SupervisedLoss, pos_weight: bool | None = None) -> SupervisedLoss:
    """The block of the ``loss`` option; ``pos_weight`` (when not None) switches the class
    weighting on or off whatever ``loss`` says (the older spelling of ``"wbce"``)."""
    if isinstance(loss, SupervisedLoss):
        return loss
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use one of {LOSSES}")
    return SupervisedLoss(weighted=loss == "wbce" if pos_weight is None else bool(pos_weight))


def logit_adjusted_bce(
    logits: torch.Tensor,
    targets: torch.Tensor,
    known: torch.Tensor | None,
    shift: torch.Tensor | None = None,
    denom: float | None = None,
) -> torch.Tensor:
    """BCE on logit-adjusted logits ``logits + shift`` (``shift[c] = tau ln(pi_c1 / pi_c0)``,
    the class prior's log-odds; FedMLP's WPC, Eq. 3-4, FedNoRo's ``L_LA``) over the
    ``known`` entries (None: every entry, missing = negative).  ``denom``: the sum is
    divided by it (FedMLP: B x C); None: the mean over the known entries
    (:func:`~fedpl_core.nn.losses.masked_bce`)."""
    z = logits if shift is None else logits + shift.to(logits)
    if denom is None:
        return masked_bce(z, targets, known)
    bce = F.binary_cross_entropy_with_logits(z, targets, reduction="none")
    return (bce * known.to(bce.dtype)).sum() / max(float(denom), 1.0)  # type: ignore[union-attr]  # given with denom


@dataclass(frozen=True)
class Proximal:
    """FedProx's term (Li et al. 2020): ``mu/2 ||w - w_global||^2`` over all trainable
    parameters, ``w_global`` taken by :meth:`anchor` before local training."""

    mu: float = 0.0

    def anchor(self, ctx) -> None:
        ctx.scratch["anchor"] = [p.detach().clone() for p in ctx.model.parameters() if p.requires_grad]

    def __call__(self, ctx) -> torch.Tensor:
        params = [p for p in ctx.model.parameters() if p.requires_grad]
        prox = sum(((p - a) ** 2).sum() for p, a in zip(params, ctx.scratch["anchor"]))
        return 0.5 * self.mu * prox


def moon_contrastive(
    z: torch.Tensor, z_glob: torch.Tensor, z_prev: torch.Tensor, temperature: float = 0.5
) -> torch.Tensor:
    """MOON's model-contrastive loss (Eq. 3), mean over the batch; ``[B, d]`` inputs."""
    z, z_glob, z_prev = z.flatten(1), z_glob.flatten(1), z_prev.flatten(1)
    pos = F.cosine_similarity(z, z_glob, dim=1) / temperature
    neg = F.cosine_similarity(z, z_prev, dim=1) / temperature
    logits = torch.stack([pos, neg], dim=1)
    return F.cross_entropy(logits, torch.zeros(len(z), dtype=torch.long, device=z.device))


def sigmoid_rampup(current: float, begin: float, end: float) -> float:
    """``exp(-5 (1 - clip((current - begin) / (end - begin), 0, 1))^2)`` (Laine & Aila 2017);
    a step from exp(-5) to 1 at ``begin`` when ``end <= begin`` (a run shorter than ``begin``)."""
    if end <= begin:
        return 1.0 if current >= begin else float(math.exp(-5.0))
    phase = 1.0 - (min(max(current, begin), end) - begin) / (end - begin)
    return float(math.exp(-5.0 * phase * phase))


# ============================================================================ heads
def rowwise_head_aggregate(server, updates, encoder_weights, key: str = "label_counts") -> None:
    """Row-wise head aggregation on the server: encoder arrays by ``encoder_weights``; head
    row c and its bias by each client's count of c in its metadata ``key`` (``label_counts``
    = n_k^c, FedPSL's TDMA, Eq. 9; ``positive_counts``; ``class_counts``, FedLSM's AWPA,
    Eq. 7), through :func:`~fedpl_core.nn.aggregation.rowwise_average`.  A class with zero
    total weight keeps its previous global row."""
    states = [u.state for u in updates]
    head = [k for k in HEAD_KEYS if k in states[0]]
    w = torch.stack([torch.as_tensor(u.metadata[key], dtype=torch.float64).flatten() for u in updates])
    server.global_state.update(
        aggregate_with_head_weights(states, encoder_weights, w, head_keys=head, previous=server.global_state)
    )


class HeadAggregation:
    """The server's aggregation rule, a method's ``head`` block: called as ``rule(method,
    server, updates)`` to update ``server.global_state``.  Each rule registers itself under
    its option name (:func:`head_rule`), so that :func:`make_head` reaches a rule only through
    the table: a run's code fingerprint holds the rule its method uses, not every rule."""

    def __call__(self, method, server, updates) -> None:
        raise NotImplementedError


#: head option -> its rule (:func:`head_rule` fills it)
HEADS: dict[str, HeadAggregation] = {}


def head_rule(option: str, **fields: Any):
    """Class decorator registering ``cls(**fields)`` as the rule of head option ``option``."""

    def deco(cls: type) -> type:
        if option in HEADS:
            raise ValueError(f"head option {option!r} is registered twice")
        HEADS[option] = cls(**fields)
        return cls

    return deco


@head_rule("plain")
@dataclass(frozen=True)
class FedAvgHead(HeadAggregation):
    """FedAvg's aggregation: every shared array, head included, by the method's client
    weights (``weights``: n_k or uniform)."""

    def __call__(self, method, server, updates) -> None:
        server.global_state.update(weighted_average([u.state for u in updates], method.weights(updates)))


@head_rule("tdma", counts="label_counts")
@head_rule("positive", counts="positive_counts")
@head_rule("awpa", counts="class_counts")
@dataclass(frozen=True)
class RowwiseHead(HeadAggregation):
    """The encoder by the method's client weights and head row c by each client's ``counts``
    metadata of c (:func:`rowwise_head_aggregate`): ``label_counts`` is FedPSL's TDMA,
    ``class_counts`` FedLSM's AWPA."""

    counts: str

    def __call__(self, method, server, updates) -> None:
        rowwise_head_aggregate(server, updates, method.weights(updates), self.counts)


def make_head(head: str | HeadAggregation) -> HeadAggregation:
    """The rule of head option ``head`` (a rule object is taken as it is)."""
    if isinstance(head, HeadAggregation):
        return head
    if head not in HEADS:
        raise ValueError(f"unknown head {head!r}; use one of {sorted(HEADS)}")
    return HEADS[head]


# ============================================================================ warm-up
@dataclass(frozen=True)
class HeadWarmup:
    """Surgical Aggregation's head warm-up (Sec. 2.4) for any method: at a client's first
    participation, right after the method's ``receive`` (the harness runs it: ``Site.train``), :func:`warm_up_head` for
    ``epochs`` epochs at ``lr`` (0 epochs: off)."""

    epochs: float = 0.0
    lr: float = 5e-3

    def __post_init__(self):
        if self.epochs < 0 or self.lr <= 0:
            raise ValueError(f"warmup_epochs must be >= 0 and warmup_lr > 0, got {self.epochs}, {self.lr}")

    def __call__(self, method, ctx) -> None:
        if self.epochs > 0 and not ctx.state.get("warmed_up"):
            warm_up_head(method, ctx, self.epochs, self.lr)
            ctx.state["warmed_up"] = True


def warm_up_head(method, ctx, epochs: float, lr: float) -> float:
    """Train the head alone (encoder frozen, in inference mode) for ``epochs`` epochs of
    the client's data with its own Adam, on the method's ``supervised_loss`` (the client's
    annotated labels; a teacher's or pseudo-labels' terms, which some methods prepare per
    step, are not part of a head warm-up; for FedAvg's family and Surgical Aggregation it is
    their ``loss``); returns the mean loss.  Leaves every encoder array (parameters and
    BatchNorm buffers) untouched."""
    model, data, cfg = ctx.model, ctx.data, ctx.cfg
    head, enc = model.head, model.encoder
    was_training = model.training
    model.train(True)
    enc.eval()
    gen = torch.Generator().manual_seed(derive_seed(cfg.seed, ctx.client_id, 48611))
    n = data.n
    bs = min(cfg.batch_size, n)
    per_epoch = max(1, n // bs)
    steps = max(1, int(math.ceil(per_epoch * epochs)))
    cached = None
    if cfg.augment == "none":
        with torch.no_grad(), ctx.autocast():
            cached = torch.cat([enc(b.x).float() for b in ctx.iterate_all()])
    opt = torch.optim.Adam([head.weight, head.bias], lr=lr)
    total, done = 0.0, 0
    try:
        while done < steps:
            perm = torch.randperm(n, generator=gen)
            for s in range(0, n - bs + 1, bs):
                pos = perm[s : s + bs]
                batch = Batch(
                    None, data.labels[pos].to(ctx.device), data.mask[pos].to(ctx.device), pos, data.indices[pos]
                )
                if cached is not None:
                    feats = cached[pos.to(cached.device)]
                else:
                    batch.x = ctx.make_batch(pos, train=True, generator=gen).x
                    with torch.no_grad(), ctx.autocast():
                        feats = enc(batch.x).float()
                opt.zero_grad(set_to_none=True)
                loss = method.supervised_loss(ctx, head(feats).float(), batch)
                loss.backward()
                opt.step()
                total += float(loss.detach())
                done += 1
                if done == steps:
                    break
    finally:
        head.weight.grad = head.bias.grad = None
        model.train(was_training)
    return total / max(done, 1)


@torch.no_grad()
def calibrate_batchnorm(
    model: torch.nn.Module,
    images,
    normalize: str = "fixed",
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> torch.nn.Module:
    """Set every BatchNorm layer's running statistics to those of ``images`` under the
    current weights (cumulative average over the batches); nothing else changes.

    A stand-in for *pre-trained* BatchNorm statistics when no pre-trained weights are
    available: FedBN+ freezes BatchNorm at the initial model, which for a randomly
    initialised network means no normalisation at all.  Calibrating once on a public
    set of images that belongs to no client (and giving every method the same
    calibrated initial model) keeps FedBN+ meaningful.  ``images``: uint8 ``[N, C, H, W]``.
    """
    bns = bn_modules(model)
    if not bns or len(images) == 0:
        return model
    dev = device if device is not None else next(model.parameters()).device
    pre = Preprocess(normalize)
    was, moms = model.training, [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    try:
        for s in range(0, len(images), batch_size):
            model(pre(torch.as_tensor(images[s : s + batch_size]).to(dev)))
    finally:
        for m, mom in zip(bns, moms):
            m.momentum = mom
        model.train(was)
    return model


# ============================================================================ clients
CLIENTS = ("own", "pooled", "pooled_true_labels", "true_labels")


def pool_clients(clients: list, labels=None, mask=None, name="pooled") -> list:
    """All clients' data as one client, each sample keeping its client's partial labels."""
    idx = torch.cat([c.indices for c in clients])
    vals = [c.val for c in clients if c.val is not None]
    return [
        ClientData(
            idx,
            torch.cat([c.labels for c in clients]) if labels is None else labels,
            torch.cat([c.mask for c in clients]) if mask is None else mask,
            torch.stack([c.class_mask for c in clients]).any(0),
            name,
            val=pool_clients(vals, name=f"{name}-val")[0] if vals else None,
        )
    ]


def with_true_labels(c, dataset):
    """A copy of client data carrying every true label (and its val split too)."""

    idx = c.indices.numpy()
    return ClientData(
        c.indices,
        torch.from_numpy(dataset.labels[idx]).float(),
        torch.from_numpy(dataset.known[idx]),
        torch.ones_like(c.class_mask),
        c.name,
        val=None if c.val is None else with_true_labels(c.val, dataset),
    )


@dataclass(frozen=True)
class Clients:
    """The ``clients`` option: the harness reshapes the federation's clients with it
    (``method.clients_block(clients, dataset)``) before ``Method.setup``."""

    how: str = "own"

    def __post_init__(self):
        if self.how not in CLIENTS:
            raise ValueError(f"unknown clients {self.how!r}; use one of {CLIENTS}")

    def __call__(self, clients: list, dataset) -> list:
        return prepare_clients(clients, dataset, self.how)


def prepare_clients(clients: list, dataset, how: str = "own") -> list:
    """The clients a method trains on (the ``clients`` option, see the module docstring)."""
    if how == "own":
        return clients
    if how == "pooled":
        return pool_clients(clients)
    if how == "pooled_true_labels":
        return [with_true_labels(c, dataset) for c in pool_clients(clients, name="oracle")]
    if how == "true_labels":
        return [with_true_labels(c, dataset) for c in clients]
    raise ValueError(f"unknown clients {how!r}; use one of {CLIENTS}")


def require_single_label(method, info) -> None:
    if info.task != "multiclass":
        raise ValueError(
            f"{method.name} is defined for single-label (softmax) tasks only; this federation's task is "
            f"{info.task!r} (multi-label: one sigmoid per class, no softmax over classes to restrict)"
        )


# ============================================================================ teachers, views
def clean_batches(ctx) -> Iterator[Batch]:
    """The round's batches without the engine's augmentation (methods make their own views)."""
    for pos in ctx.batch_positions():
        yield ctx.make_batch(pos, train=False)


def clean_local_train(ctx, step) -> float:
    """``step(batch)`` over :func:`clean_batches`; the mean loss."""
    total, steps = 0.0, 0
    for batch in clean_batches(ctx):
        total += float(step(batch))
        steps += 1
    return total / max(steps, 1)


def init_teacher(ctx) -> None:
    """The EMA teacher starts as the model a client holds the first time it trains."""
    if "teacher" not in ctx.state:
        ctx.state["teacher"] = ctx.extract_state()
        ctx.state["ema_step"] = 0


def record_pseudo_labels(ctx, pos: torch.Tensor, mask: torch.Tensor, target: torch.Tensor) -> None:
    """Rows ``pos`` of ``ctx.state["pseudo_labels"]``: ``mask`` where an entry now has a
    pseudo-label, ``target`` in [0, 1] (0 elsewhere)."""
    pl = ctx.state.get("pseudo_labels")
    if pl is None:
        n, c = ctx.data.n, ctx.info.num_classes
        pl = ctx.state["pseudo_labels"] = {"mask": torch.zeros(n, c, dtype=torch.bool), "target": torch.zeros(n, c)}
    m = mask.detach().bool().cpu()
    pl["mask"][pos.cpu()] = m
    pl["target"][pos.cpu()] = torch.where(m, target.detach().float().cpu(), torch.zeros(()))


def ema_update(teacher: dict[str, torch.Tensor], model: torch.nn.Module, decay: float, step: int) -> None:
    """Mean-teacher EMA: ``t = a t + (1 - a) s`` with ``a = min(1 - 1/(step+1), decay)``
    for every floating array; integer buffers are copied."""
    a = min(1.0 - 1.0 / (step + 1), decay)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            t = teacher[k]
            if t.is_floating_point():
                t.mul_(a).add_(v.to(t.dtype), alpha=1.0 - a)
            else:
                t.copy_(v)


__all__ = [
    "BN_POLICIES",
    "BatchNormPolicy",
    "LOCAL_ARRAYS",
    "local_keys",
    "ClientWeighting",
    "Clients",
    "sgd_step",
    "train_batches",
    "default_metadata",
    "model_update",
    "SupervisedLoss",
    "LOSSES",
    "make_loss",
    "logit_adjusted_bce",
    "Proximal",
    "moon_contrastive",
    "sigmoid_rampup",
    "rowwise_head_aggregate",
    "HEADS",
    "HeadAggregation",
    "FedAvgHead",
    "RowwiseHead",
    "head_rule",
    "make_head",
    "HeadWarmup",
    "warm_up_head",
    "calibrate_batchnorm",
    "CLIENTS",
    "pool_clients",
    "with_true_labels",
    "prepare_clients",
    "require_single_label",
    "clean_batches",
    "clean_local_train",
    "init_teacher",
    "record_pseudo_labels",
    "ema_update",
    "bn_modules",
    "class_pos_weight",
]
