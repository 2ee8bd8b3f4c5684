"""The FedAvg family and the non-federated reference points.

Each baseline is :class:`~fedpl_core.methods.fedavg.FedAvg` (missing labels as
negatives) with one thing changed.
"""
from __future__ import annotations

from typing import Any

import torch

from ..federation import ClientData
from .base import HEAD
from .fedavg import FedAvg


class FedAvgPL(FedAvg):
    """FedAvg with the partial loss: BCE over each client's annotated classes only
    (Surgical Aggregation Eq. 4, FedMLP's FedAvg-PL, FedPSL's FedAVG baseline)."""

    name = "fedavg_pl"
    partial = True


class FedProx(FedAvg):
    """FedProx (Li et al. 2020): local loss + mu/2 ||w - w_global||^2 over all trainable
    parameters.  ``partial`` selects the partial loss (FedPSL compares FedProx with the
    labelled-classes-only loss, mu = 0.001).  With mu = 0 it equals FedAvg exactly."""

    name = "fedprox"
    option_ranges = {"mu": ">=0"}

    def __init__(self, mu: float = 0.01, partial: bool = False, **kw: Any):
        super().__init__(**kw)
        self.mu = float(mu)
        self.partial = bool(partial)

    def before_training(self, ctx) -> None:
        ctx.scratch["anchor"] = [p.detach().clone() for p in ctx.model.parameters() if p.requires_grad]

    def loss(self, ctx, logits, features, batch):
        base = super().loss(ctx, logits, features, batch)
        params = [p for p in ctx.model.parameters() if p.requires_grad]
        prox = sum(((p - a) ** 2).sum() for p, a in zip(params, ctx.scratch["anchor"]))
        return base + 0.5 * self.mu * prox


class FedBN(FedAvg):
    """FedBN (Li et al. 2021): BatchNorm layers stay on the clients.  The global test set
    is scored by the clients' own models (personalised evaluation, see Method)."""

    name = "fedbn"

    def __init__(self, partial: bool = False, **kw: Any):
        kw.setdefault("bn_policy", "local")
        super().__init__(**kw)
        self.partial = bool(partial)


def _pool(clients: list, labels=None, mask=None, name="pooled") -> list:
    idx = torch.cat([c.indices for c in clients])
    vals = [c.val for c in clients if c.val is not None]
    return [ClientData(idx,
                       torch.cat([c.labels for c in clients]) if labels is None else labels,
                       torch.cat([c.mask for c in clients]) if mask is None else mask,
                       torch.stack([c.class_mask for c in clients]).any(0), name,
                       val=_pool(vals, name=f"{name}-val")[0] if vals else None)]


def _with_true_labels(c, dataset):
    """A copy of pooled client data carrying every true label (and its val split too)."""

    idx = c.indices.numpy()
    return ClientData(c.indices, torch.from_numpy(dataset.labels[idx]).float(), torch.from_numpy(dataset.known[idx]),
                      torch.ones_like(c.class_mask), c.name,
                      val=None if c.val is None else _with_true_labels(c.val, dataset))


class Centralized(FedAvg):
    """All clients' data pooled on one machine, each sample keeping its client's
    partial labels.  ``partial=False`` (default): missing = negative (Surgical
    Aggregation's Centralized); ``partial=True``: ignore missing labels (FedPSL's
    centralised IML).  One round = one epoch over the pooled data."""

    name = "centralized"
    federated = False

    def __init__(self, partial: bool = False, **kw: Any):
        super().__init__(**kw)
        self.partial = bool(partial)

    def prepare_clients(self, clients, dataset):
        return _pool(clients)


class Oracle(FedAvg):
    """The upper bound: pooled data with every true label (fully supervised)."""

    name = "oracle"
    federated = False

    def prepare_clients(self, clients, dataset):
        return [_with_true_labels(c, dataset) for c in _pool(clients, name="oracle")]


class FedAvgOracle(FedAvg):
    """FedAvg with 100% labels (FedLSM's upper bound): the same clients and samples, each
    client annotating every class with the true labels."""

    name = "fedavg_oracle"

    def prepare_clients(self, clients, dataset):
        return [_with_true_labels(c, dataset) for c in clients]


class Local(FedAvg):
    """Each client trains alone (no communication).  Scored per class by the clients
    that annotate the class (personalised evaluation)."""

    name = "local"
    evaluation = "personalised"
    federated = False

    def __init__(self, partial: bool = True, **kw: Any):
        super().__init__(**kw)
        self.partial = bool(partial)

    def is_local_key(self, key, model) -> bool:
        return True

    def aggregate(self, server, updates) -> None:
        """Nothing is shared."""


class PFL(FedAvg):
    """Personalised FL: the encoder is shared (FedAvg, or FedBN / FedBN+ through
    ``bn_policy``), each client keeps its own head, trained with the partial loss."""

    name = "pfl"
    evaluation = "personalised"
    partial = True

    def is_local_key(self, key, model) -> bool:
        return key in HEAD or super().is_local_key(key, model)
