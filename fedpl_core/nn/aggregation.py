"""Server-side aggregation of model arrays.

All functions take plain ``dict[str, Tensor]`` states (never client data), so every
aggregation rule can be unit-tested on hand-made arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

State = dict[str, torch.Tensor]


def _norm_weights(weights: Sequence[float] | torch.Tensor, n: int) -> torch.Tensor:
    w = torch.as_tensor(weights, dtype=torch.float64).flatten()
    if w.numel() != n:
        raise ValueError(f"{w.numel()} weights for {n} states")
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"aggregation weights must be >= 0 with a positive sum, got {w.tolist()}")
    return w / w.sum()


def weighted_average(
    states: Sequence[Mapping[str, torch.Tensor]],
    weights: Sequence[float] | None = None,
    keys: Sequence[str] | None = None,
) -> State:
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


def rowwise_average(
    rows: Sequence[torch.Tensor], weights: torch.Tensor, fallback: torch.Tensor | None = None
) -> torch.Tensor:
    """Average a head array class by class with per-class client weights.

    ``rows[k]`` is client k's ``[C, ...]`` array (head weight ``[C, d]`` or bias ``[C]``);
    ``weights`` is ``[K, C]``.  Row c of the result is
    ``sum_k weights[k, c] rows[k][c] / sum_k weights[k, c]`` (FedPSL Eq. 9, FedLSM Eq. 7,
    Surgical Aggregation Eq. 2 with 0/1 weights).  A class with zero total weight keeps
    ``fallback[c]`` (the previous global row) or, without a fallback, the plain mean.
    The rows sharing one weight column are one :func:`weighted_average` of the clients
    with a positive weight (the same arithmetic, so equal weights give FedAvg's bits).
    """
    K = len(rows)
    w = torch.as_tensor(weights, dtype=torch.float64)
    if w.shape != (K, rows[0].shape[0]):
        raise ValueError(f"weights shape {tuple(w.shape)} != [clients, classes] {(K, rows[0].shape[0])}")
    if (w < 0).any():
        raise ValueError("row weights must be >= 0")
    total = w.sum(0)  # [C]
    out = torch.zeros_like(rows[0], dtype=torch.float64)
    # one FedAvg per distinct weight column, with weighted_average's very arithmetic on the
    # full arrays of the clients whose weight is positive (so that equal weights give FedAvg's
    # bits, whatever the classes)
    groups: dict[tuple[float, ...], list[int]] = {}
    for c, col in enumerate(w.t().tolist()):
        if total[c] > 0:
            groups.setdefault(tuple(col), []).append(c)
    for col, classes in groups.items():
        members = [k for k in range(K) if col[k] > 0]
        avg = weighted_average([{"a": rows[k]} for k in members], [col[k] for k in members])["a"]
        idx = torch.tensor(classes, dtype=torch.long, device=out.device)
        out[idx] = avg[idx].to(torch.float64)
    empty = total <= 0
    if empty.any():
        fb = (
            torch.stack([r.to(torch.float64) for r in rows]).mean(0)
            if fallback is None
            else fallback.to(out.device, torch.float64)
        )
        out[empty.to(out.device)] = fb[empty.to(fb.device)].to(out.device)
    return out.to(rows[0].dtype)


def aggregate_with_head_weights(
    states: Sequence[Mapping[str, torch.Tensor]],
    encoder_weights: Sequence[float],
    head_weights: torch.Tensor,
    head_keys: Sequence[str] = ("head.weight", "head.bias"),
    previous: Mapping[str, torch.Tensor] | None = None,
) -> State:
    """Encoder by :func:`weighted_average` with ``encoder_weights``; head rows by
    :func:`rowwise_average` with ``head_weights [K, C]`` (previous global rows as fallback)."""
    keys = [k for k in states[0] if k not in head_keys]
    out = weighted_average(states, encoder_weights, keys=keys)
    for hk in head_keys:
        if hk in states[0]:
            fb = None if previous is None else previous[hk]
            out[hk] = rowwise_average([s[hk] for s in states], head_weights, fallback=fb)
    return out
