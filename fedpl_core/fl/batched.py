"""Many clients' local training as one vmapped step (the engine's batched path).

The per-client loop (:meth:`fedpl_core.fl.site.Site.train`) trains the K sampled clients of a
round one after the other on one working model: K x steps small kernels.  Here the K clients'
copies of the model are stacked (``torch.func.stack_module_state``) and every local step of all
of them is one ``vmap`` over ``functional_call`` + ``grad``: a few large kernels per step, which
is what a GPU needs for small models and many clients.

What it supports, and why (anything else returns a reason from :func:`why_not_batched`, and
the caller keeps the loop):

* methods whose ``Method.batchable`` is true (the method side, decided there alone: its
  client round is FedAvg's, "load the global model, reset the optimizer, run the
  supervised loss over the round's batches", with no arrays kept on the clients and no
  head warm-up; ``fedpl_core.methods.batchable_methods()`` lists them).  Their loss is the
  loss block's own rule (:meth:`SupervisedLoss.rule <fedpl_core.methods.blocks.SupervisedLoss.rule>`,
  :func:`fedpl_core.nn.losses.supervised_term`: BCE over every entry or the annotated ones,
  weighted BCE with each client's class weights), run under ``vmap``; the server's
  aggregation is free.  Methods with per-client control flow (teachers, pseudo-labels,
  prototypes, proximal anchors) loop;
* multi-label tasks;
* models without BatchNorm (``model_kwargs={"norm": "gn"}``): BatchNorm's running statistics
  cannot be updated under ``vmap``;
* the loop's optimizer (:func:`fedpl_core.fl.site.make_optimizer`: Adam, AdamW, or SGD with
  the configured momentum and weight decay), a ``torch.optim`` one over the stacked
  ``[K, ...]`` parameters: these optimisers update each element from its own gradient and
  state, so each client's slice gets its own moments, as its own optimizer would give it.
  Its state is reset each round (``optimizer_state="reset"``); no autocast;
* sampled clients whose rounds have the same number of steps and batch sizes (equal client
  sizes, or ``local_iters`` with ``batch_size`` dividing every client's size): the stacked
  optimizer counts one step for all of them.

Memory: ``chunk`` clients train at a time (``EngineConfig.batched_clients``).  When a chunk
does not fit on the GPU (``torch.OutOfMemoryError``), it is halved and retried, down to one
client, and the simulation keeps the smaller size for its later rounds; a retried chunk starts
again from the global model on the same batches, so the numbers do not depend on it.

The batches are the loop's own (each client's ``ClientContext.batches()``: the same seeded
generator per (seed, round, client), so the same samples and augmentations); the updates go
through the method's ``make_update`` and the server's ``aggregate`` as in the loop.  The
numbers equal the loop's to float rounding (``tests/test_batched.py``); on a CPU the loop is
as fast or faster, so the engine keeps it there (``benchmarks/gpu_throughput.py``).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from .federation import ClientContext, ClientUpdate
from .site import check_metadata, make_optimizer

log = logging.getLogger("fedpl")

#: The optimisers (``EngineConfig.optimizer``) whose step is element-wise: one over the stacked
#: ``[K, ...]`` parameters steps each client's slice as the client's own optimizer would.
ELEMENTWISE_OPTIMIZERS = ("adam", "adamw", "sgd")


def why_not_batched(sim: Any, clients: list[int]) -> str | None:
    """None when ``clients`` of the simulation ``sim`` can train as one vmapped step in
    this round, else the reason (the caller then uses the per-client loop).  The method's
    side is its ``batchable`` alone; the rest are the engine's: the task, the model, the
    optimizer."""
    m, cfg = sim.method, sim.cfg
    if not m.batchable:
        why = getattr(m, "why_not_batchable", None) or f"method {m.name!r} is not batchable"
        return f"{why} (Method.batchable; fedpl_core.methods.batchable_methods() lists the methods it runs)"
    if sim.info.task != "multilabel":
        return "single-label tasks (softmax cross-entropy) are not batched yet"
    if any(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in sim.work.model.modules()):
        return "BatchNorm cannot update running statistics under vmap: use model_kwargs={'norm': 'gn'}"
    if cfg.optimizer not in ELEMENTWISE_OPTIMIZERS or cfg.optimizer_state != "reset" or cfg.amp:
        return (
            f"the batched path runs {', '.join(ELEMENTWISE_OPTIMIZERS)} with the optimizer state reset each "
            "round, without autocast"
        )
    return None


def _stack_batches(contexts: list[ClientContext]) -> tuple[torch.Tensor, ...]:
    """The clients' rounds of batches (each drawn from its round's context, as the loop
    draws it), stacked ``[K, steps, B, ...]``; the clients have the same round shape
    (:func:`_round_shape`)."""
    rounds = [list(ctx.batches()) for ctx in contexts]
    return tuple(torch.stack([torch.stack([getattr(b, f) for b in r]) for r in rounds]) for f in ("x", "y", "mask"))


class NotBatchable(ValueError):
    """A round the batched path cannot run (the reason is the message); the simulation
    then trains it with the per-client loop."""


def train_round(
    sim: Any, clients: list[int], round_idx: int, chunk: int | None = None
) -> tuple[list[ClientUpdate], list[float]]:
    """The local rounds of ``clients`` as one vmapped step per local step, ``chunk`` clients
    at a time (None: all at once; a chunk bounds the memory of the stacked models and
    batches; a chunk that runs out of GPU memory is halved, see the module's docstring);
    returns their updates (through the method's ``make_update``) and mean
    training losses, as the loop would.  Raises :class:`NotBatchable` with the reason when
    the round cannot be batched."""
    reason = why_not_batched(sim, clients)
    if reason:
        raise NotBatchable(f"round {round_idx + 1} cannot be batched: {reason}")
    shapes = {_round_shape(sim.sites[k].context(round_idx)) for k in clients}  # checked before any training
    if len(shapes) != 1 or 0 in next(iter(shapes)):
        raise NotBatchable(
            f"round {round_idx + 1} cannot be batched: the clients' rounds differ in steps or batch sizes"
        )
    size = min(int(chunk or len(clients)), sim.batched_fit or len(clients))
    updates, losses = [], []
    i = 0
    while i < len(clients):  # one chunk's batches in memory at a time
        part = clients[i : i + size]
        try:
            contexts = [sim.sites[k].context(round_idx) for k in part]  # fresh generators on a retry
            u, lo = _train_chunk(sim, part, contexts, _stack_batches(contexts))
        except torch.OutOfMemoryError:
            if len(part) == 1:
                raise
            size = (len(part) + 1) // 2
            sim.batched_fit = size  # later rounds start from the size that fitted
            log.info(
                "batched_clients: %d clients did not fit on %s; training %d at a time", len(part), sim.device, size
            )
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            continue
        updates += u
        losses += lo
        i += len(part)
    return updates, losses


def _round_shape(ctx: ClientContext) -> tuple[int, int]:
    """(local steps, batch size) of a client's round, as ``ClientContext.batch_positions``
    draws them (full batches only; one batch of all when the client has fewer samples)."""
    return ctx.num_steps(), min(ctx.cfg.batch_size, ctx.data.n)


def _train_chunk(
    sim: Any, clients: list[int], contexts: list[ClientContext], stacked: tuple[torch.Tensor, ...]
) -> tuple[list[ClientUpdate], list[float]]:
    """One chunk of clients (with their round's contexts): every local step one ``vmap``
    over the stacked models."""
    X, Y, M = stacked
    method, cfg, work = sim.method, sim.cfg, sim.work
    model = work.model
    work.load_state(sim.server.payload(clients[0])["state"])  # FedAvg's payload: the global arrays
    method.batchnorm.set_mode(model, train=True)  # the method's BatchNorm block (configuration)
    K = len(clients)
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    frozen = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    buffers = {n: b.detach() for n, b in model.named_buffers()}
    params, _ = stack_module_state([model] * K)
    params = {n: params[n].detach().clone() for n in trainable}
    block = method.loss_block  # the loss the loop's supervised_loss computes, as a pure tensor function
    rule = block.rule(method, sim.info.task)
    weights = [block.client_pos_weight(method, ctx) for ctx in contexts]  # each client's class weights (wbce)
    # the list becomes one stacked tensor (or None)
    weights = (
        None
        if weights[0] is None  # type: ignore[assignment]
        else torch.stack(weights).to(device=X.device, dtype=torch.float32)
    )

    def loss_of(
        p: dict[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        mask: torch.Tensor,
        pos_weight: torch.Tensor | None = None,
    ) -> torch.Tensor:
        logits = functional_call(model, ({**p, **frozen}, buffers), (x,))
        return rule(logits.float(), y, mask, pos_weight)

    step_fn = vmap(grad_and_value(loss_of))
    optimizer = make_optimizer(list(params.values()), cfg)  # the loop's optimizer, fresh: state reset each round
    losses = torch.zeros(K, device=X.device)
    steps = X.shape[1]
    for s in range(steps):
        args = (params, X[:, s], Y[:, s], M[:, s]) + (() if weights is None else (weights,))
        grads, loss = step_fn(*args)  # type: ignore[arg-type]  # weights: a tensor here
        losses += loss.detach()
        for n, p in params.items():
            p.grad = grads[n]
        optimizer.step()
    updates, out_losses = [], (losses / max(steps, 1)).tolist()
    for i, ctx in enumerate(contexts):
        with torch.no_grad():
            for n, p in trainable.items():
                p.copy_(params[n][i])
        update = method.make_update(ctx)  # the context that drew the batches, as in the loop
        check_metadata(method, update)
        updates.append(update)
    return updates, out_losses


__all__ = ["NotBatchable", "ELEMENTWISE_OPTIMIZERS", "why_not_batched", "train_round"]
