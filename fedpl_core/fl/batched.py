"""Many clients' local training as one vmapped step (issue 27, the CPU half).

The per-client loop (:meth:`fedpl_core.fl.site.Site.train`) trains the K sampled clients of a
round one after the other on one working model: K x steps small kernels.  Here the K clients'
copies of the model are stacked (``torch.func.stack_module_state``) and every local step of all
of them is one ``vmap`` over ``functional_call`` + ``grad``: a few large kernels per step, which
is what a GPU needs for small models and many clients.

What it supports, and why (anything else returns a reason from :func:`why_not_batched`, and
the caller keeps the loop):

* methods whose client round is "load the global model, reset the optimizer, run the
  supervised loss over the round's batches": FedAvg and FedAvg-PL (``fedavg``, ``fedavg_pl``)
  with the default blocks (BCE, plain head, own clients, no warm-up, BatchNorm aggregated).
  Methods with per-client control flow (teachers, pseudo-labels, prototypes) loop;
* models without BatchNorm (``model_kwargs={"norm": "gn"}``): BatchNorm's running statistics
  cannot be updated under ``vmap``;
* Adam or SGD (momentum 0.9 as the engine's), optimizer state reset each round, no autocast;
* sampled clients whose rounds have the same number of steps and batch sizes (equal client
  sizes, or ``local_iters`` with ``batch_size`` dividing every client's size).

The batches are the loop's own (each client's ``ClientContext.batches()``: the same seeded
generator per (seed, round, client), so the same samples and augmentations); the updates go
through the method's ``make_update`` and the server's ``aggregate`` as in the loop.  The
numbers equal the loop's to float rounding (``tests/test_batched.py``); on a CPU the loop is
as fast or faster, so the engine keeps it there (``benchmarks/gpu_throughput.py``).
"""
from __future__ import annotations

from typing import Any

import torch
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from ..losses import masked_bce
from .federation import ClientUpdate
from .site import check_metadata

#: Registry names whose client round the batched path reproduces.
BATCHABLE = ("fedavg", "fedavg_pl")


def why_not_batched(sim: Any, clients: list[int]) -> str | None:
    """None when ``clients`` of the simulation ``sim`` can train as one vmapped step in
    this round, else the reason (the caller then uses the per-client loop)."""
    m, cfg = sim.method, sim.cfg
    if m.name not in BATCHABLE:
        return f"method {m.name!r} has per-client steps the batched path does not run (batchable: {BATCHABLE})"
    if getattr(m, "bn_policy", "aggregate") != "aggregate" or getattr(m, "local_keys", set()):
        return "arrays that stay on the clients"
    if getattr(m, "warmup_epochs", 0):
        return "the head warm-up"
    if sim.info.task != "multilabel":
        return "single-label tasks (softmax cross-entropy) are not batched yet"
    if any(isinstance(x, torch.nn.modules.batchnorm._BatchNorm) for x in sim.work.model.modules()):
        return "BatchNorm cannot update running statistics under vmap: use model_kwargs={'norm': 'gn'}"
    if cfg.optimizer not in ("adam", "sgd") or cfg.optimizer_state != "reset" or cfg.amp:
        return "the batched path runs Adam or SGD with the optimizer state reset each round, without autocast"
    return None


def _stack_batches(sim: Any, clients: list[int], round_idx: int):
    """The clients' rounds of batches (each drawn as the loop draws it), stacked
    ``[K, steps, B, ...]``; the clients have the same round shape (:func:`_round_shape`)."""
    rounds = [list(sim.sites[k].context(round_idx).batches()) for k in clients]
    return tuple(torch.stack([torch.stack([getattr(b, f) for b in r]) for r in rounds]) for f in ("x", "y", "mask"))


class NotBatchable(ValueError):
    """A round the batched path cannot run (the reason is the message); the simulation
    then trains it with the per-client loop."""


def train_round(sim: Any, clients: list[int], round_idx: int,
                chunk: int | None = None) -> tuple[list[ClientUpdate], list[float]]:
    """The local rounds of ``clients`` as one vmapped step per local step, ``chunk`` clients
    at a time (None: all at once; a chunk bounds the memory of the stacked models and
    batches); returns their updates (through the method's ``make_update``) and mean
    training losses, as the loop would.  Raises :class:`NotBatchable` with the reason when
    the round cannot be batched."""
    reason = why_not_batched(sim, clients)
    if reason:
        raise NotBatchable(f"round {round_idx + 1} cannot be batched: {reason}")
    shapes = {_round_shape(sim.sites[k].context(round_idx)) for k in clients}  # checked before any training
    if len(shapes) != 1 or 0 in next(iter(shapes)):
        raise NotBatchable(f"round {round_idx + 1} cannot be batched: "
                           "the clients' rounds differ in steps or batch sizes")
    size = len(clients) if not chunk else max(1, int(chunk))
    updates, losses = [], []
    for i in range(0, len(clients), size):  # one chunk's batches in memory at a time
        part = clients[i:i + size]
        u, lo = _train_chunk(sim, part, round_idx, _stack_batches(sim, part, round_idx))
        updates += u
        losses += lo
    return updates, losses


def _round_shape(ctx) -> tuple[int, int]:
    """(local steps, batch size) of a client's round, as ``ClientContext.batch_positions``
    draws them (full batches only; one batch of all when the client has fewer samples)."""
    return ctx.num_steps(), min(ctx.cfg.batch_size, ctx.data.n)


def _train_chunk(sim: Any, clients: list[int], round_idx: int, stacked) -> tuple[list[ClientUpdate], list[float]]:
    """One chunk of clients: every local step one ``vmap`` over the stacked models."""
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
    partial = bool(getattr(method, "partial", False))

    def loss_of(p, x, y, mask):
        logits = functional_call(model, ({**p, **frozen}, buffers), (x,))
        return masked_bce(logits.float(), y, mask if partial else None)

    step_fn = vmap(grad_and_value(loss_of))
    lr, wd = cfg.lr, cfg.weight_decay
    b1, b2, eps = 0.9, 0.999, 1e-8
    m1 = {n: torch.zeros_like(v) for n, v in params.items()}
    m2 = {n: torch.zeros_like(v) for n, v in params.items()}
    losses = torch.zeros(K, device=X.device)
    steps = X.shape[1]
    for s in range(steps):
        grads, loss = step_fn(params, X[:, s], Y[:, s], M[:, s])
        losses += loss.detach()
        with torch.no_grad():
            for n in params:
                g = grads[n] + wd * params[n] if wd else grads[n]
                if cfg.optimizer == "adam":  # torch.optim.Adam's update, term by term
                    t = s + 1
                    m1[n].mul_(b1).add_(g, alpha=1 - b1)
                    m2[n].mul_(b2).addcmul_(g, g, value=1 - b2)
                    denom = (m2[n].sqrt() / (1 - b2 ** t) ** 0.5).add_(eps)
                    params[n] = params[n].addcdiv(m1[n], denom, value=-lr / (1 - b1 ** t))
                else:  # SGD with the engine's momentum (torch.optim.SGD: buffer = g at the first step)
                    m1[n] = g.clone() if s == 0 else m1[n].mul_(cfg.momentum).add_(g)
                    params[n] = params[n] - lr * m1[n]
    updates, out_losses = [], (losses / max(steps, 1)).tolist()
    for i, k in enumerate(clients):
        with torch.no_grad():
            for n, p in trainable.items():
                p.copy_(params[n][i])
        ctx = sim.sites[k].context(round_idx)
        update = method.make_update(ctx)
        check_metadata(method, update)
        updates.append(update)
    return updates, out_losses


__all__ = ["BATCHABLE", "NotBatchable", "why_not_batched", "train_round"]
