"""Partial-label losses.

The papers store an unannotated label as 0.  "Missing as negative" (FedAvg,
Centralized) is plain BCE over every entry; the *partial loss* (FedAvg-PL, Surgical
Aggregation's Eq. 4, FedPSL's IML, FedMLP's FedAvg-PL) averages BCE over the known
entries only, so unannotated classes get no gradient at all.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_bce(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    pos_weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """Binary cross-entropy, averaged over the known entries.

    Args:
        logits, targets: ``[B, C]``.
        mask: ``[B, C]`` bool, True where the label is known; ``None`` = every entry
            (missing labels count as negatives).
        pos_weight: optional ``[C]`` weight of the positive term (e.g. N_neg / N_pos).

    Normalisation (our choice; the papers write a sum): the sum of per-entry losses
    divided by the number of known entries, so the loss scale does not depend on how
    many classes a client annotates.  With no known entry the loss is 0 (still
    differentiable, zero gradient).
    """
    loss = F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight, reduction="none")
    if mask is None:
        return loss.mean()
    m = mask.to(loss.dtype)
    return (loss * m).sum() / m.sum().clamp_min(1.0)


def masked_ce(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Cross-entropy for single-label tasks (one-hot ``targets``).

    Rows whose label is unknown (``mask`` all False in the row, or a target row with no
    positive among known classes) are left out of the mean.
    """
    y = targets.argmax(1)
    has = targets.sum(1) > 0
    if mask is not None:
        has = has & (mask.to(torch.bool) & (targets > 0)).any(1)
    loss = F.cross_entropy(logits, y, reduction="none")
    w = has.to(loss.dtype)
    return (loss * w).sum() / w.sum().clamp_min(1.0)


def supervised_term(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    pos_weight: torch.Tensor | None = None,
    *,
    partial: bool = False,
    multiclass: bool = False,
) -> torch.Tensor:
    """The supervised loss of a batch on its annotated labels, as a pure tensor function:
    the rule of :class:`~fedpl_core.methods.blocks.SupervisedLoss` (``Method.supervised_loss``),
    which the batched client path (:mod:`fedpl_core.fl.batched`) also runs under
    ``torch.func.vmap``, one client per slice.

    ``partial``: over the known entries of ``mask`` (else over every entry, missing labels
    as negatives, and ``mask`` is not read); ``multiclass``: cross-entropy for a
    single-label task (:func:`masked_ce`; ``pos_weight`` is not read), else BCE
    (:func:`masked_bce`, with the client's ``pos_weight`` when given).
    """
    known = mask if partial else None
    if multiclass:
        return masked_ce(logits, targets, known)
    return masked_bce(logits, targets, known, pos_weight=pos_weight)


def class_pos_weight(labels: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``[C]`` weights ``N_neg / N_pos`` of each class over the known entries (FedPSL's
    weighted BCE, Sec. VII-D-3; the ``pos_weight`` of :func:`masked_bce`).

    ``labels``: ``[n, C]`` 0/1; ``mask``: ``[n, C]`` bool known entries (``None``: all).
    A class without a known positive or without a known negative gets weight 1.
    """
    y = labels.to(torch.float64)
    m = torch.ones_like(y) if mask is None else mask.to(torch.float64)
    pos = (y * m).sum(0)
    neg = ((1.0 - y) * m).sum(0)
    ok = (pos > 0) & (neg > 0)
    return torch.where(ok, neg / pos.clamp_min(1.0), torch.ones_like(pos)).to(torch.float32)
