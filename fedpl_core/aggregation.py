"""Server-side aggregation of model arrays.

All functions take plain ``dict[str, Tensor]`` states (never client data), so every
aggregation rule can be unit-tested on hand-made arrays.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

State = dict[str, torch.Tensor]


def _norm_weights(weights: Sequence[float] | torch.Tensor, n: int) -> torch.Tensor:
    w = torch.as_tensor(weights, dtype=torch.float64).flatten()
    if w.numel() != n:
        raise ValueError(f"{w.numel()} weights for {n} states")
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"aggregation weights must be >= 0 with a positive sum, got {w.tolist()}")
    return w / w.sum()


def weighted_average(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float] | None = None,
                     keys: Sequence[str] | None = None) -> State:
    """FedAvg: ``sum_k w_k theta_k / sum_k w_k`` for every floating-point array.

    Integer buffers (BatchNorm's ``num_batches_tracked``) take the maximum.  ``weights``
    default to uniform; ``keys`` default to the keys of the first state.
    """
    if not states:
        raise ValueError("nothing to aggregate")
    w = _norm_weights([1.0] * len(states) if weights is None else weights, len(states))
    out: State = {}
    wl = w.tolist()  # once, not per array
    for k in keys if keys is not None else states[0].keys():
        ts = [s[k] for s in states]
        if ts[0].is_floating_point():
            # float64 accumulator; add_ promotes each float32 array in the kernel (the same
            # sums as an explicit .to(float64) copy, without allocating one per client)
            acc = torch.zeros_like(ts[0], dtype=torch.float64)
            for wi, t in zip(wl, ts):
                acc.add_(t, alpha=wi)
            out[k] = acc.to(ts[0].dtype)
        else:
            out[k] = torch.stack(ts).max(0).values
    return out


def rowwise_average(rows: Sequence[torch.Tensor], weights: torch.Tensor,
                    fallback: torch.Tensor | None = None) -> torch.Tensor:
    """Average a head array class by class with per-class client weights.

    ``rows[k]`` is client k's ``[C, ...]`` array (head weight ``[C, d]`` or bias ``[C]``);
    ``weights`` is ``[K, C]``.  Row c of the result is
    ``sum_k weights[k, c] rows[k][c] / sum_k weights[k, c]`` (FedPSL Eq. 9, FedLSM Eq. 7,
    Surgical Aggregation Eq. 2 with 0/1 weights).  A class with zero total weight keeps
    ``fallback[c]`` (the previous global row) or, without a fallback, the plain mean.
    """
    stack = torch.stack([r.to(torch.float64) for r in rows])  # [K, C, ...]
    w = torch.as_tensor(weights, dtype=torch.float64)
    if w.shape != stack.shape[:2]:
        raise ValueError(f"weights shape {tuple(w.shape)} != [clients, classes] {tuple(stack.shape[:2])}")
    if (w < 0).any():
        raise ValueError("row weights must be >= 0")
    total = w.sum(0)  # [C]
    safe = torch.where(total > 0, total, torch.ones_like(total))
    wn = w / safe
    extra = (1,) * (stack.dim() - 2)
    out = (wn.view(*w.shape, *extra) * stack).sum(0)
    empty = total <= 0
    if empty.any():
        fb = stack.mean(0) if fallback is None else fallback.to(torch.float64)
        out[empty] = fb[empty]
    return out.to(rows[0].dtype)


def aggregate_with_head_weights(states: Sequence[Mapping[str, torch.Tensor]], encoder_weights: Sequence[float],
                                head_weights: torch.Tensor, head_keys: Sequence[str] = ("head.weight", "head.bias"),
                                previous: Mapping[str, torch.Tensor] | None = None) -> State:
    """Encoder by :func:`weighted_average` with ``encoder_weights``; head rows by
    :func:`rowwise_average` with ``head_weights [K, C]`` (previous global rows as fallback)."""
    keys = [k for k in states[0] if k not in head_keys]
    out = weighted_average(states, encoder_weights, keys=keys)
    for hk in head_keys:
        if hk in states[0]:
            fb = None if previous is None else previous[hk]
            out[hk] = rowwise_average([s[hk] for s in states], head_weights, fallback=fb)
    return out
