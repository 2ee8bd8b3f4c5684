"""The FedAvg family and the non-federated reference points.

Each baseline is :class:`~fedpl_core.methods.fedavg.FedAvg` (missing labels as
negatives) with one thing changed, most of them a block option
(:mod:`fedpl_core.methods.blocks`): ``partial``, ``clients`` (pooled data, true labels),
``bn_policy``; FedProx adds the proximal term.
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, ClientUpdate
from ..fl.server import Server
from .base import Method
from .blocks import Proximal
from .fedavg import FedAvg
from .registry import register


@register
class FedAvgPL(FedAvg):
    """FedAvg with the partial loss: BCE over each client's annotated classes only
    (Surgical Aggregation Eq. 4, FedMLP's FedAvg-PL, FedPSL's FedAVG baseline)."""

    name = "fedavg_pl"
    display_name = "FedAvg-PL"
    color = "#ff7f0e"
    paper = "baseline"
    partial = True


@register
class FedProx(Method):
    """FedProx (Li et al. 2020): local loss + mu/2 ||w - w_global||^2 over all trainable
    parameters (the :class:`~fedpl_core.methods.blocks.Proximal` term).  ``partial``
    selects the partial loss (FedPSL compares FedProx with the labelled-classes-only loss,
    mu = 0.001).  With mu = 0 it equals FedAvg exactly."""

    name = "fedprox"
    display_name = "FedProx"
    color = "#17becf"
    paper = "baseline"
    option_ranges = {"mu": ">=0"}

    def __init__(self, mu: float = 0.01, partial: bool = False, **kw: Any):
        super().__init__(partial=partial, **kw)
        self.prox = Proximal(float(mu))

    @property
    def mu(self) -> float:
        return self.prox.mu

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        self.prox.anchor(ctx)

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        return self.supervised_loss(ctx, logits, batch) + self.prox(ctx)


@register
class FedBN(FedAvg):
    """FedBN (Li et al. 2021): BatchNorm layers stay on the clients.  The global test set
    is scored by the clients' own models (personalised evaluation, see Method)."""

    name = "fedbn"
    display_name = "FedBN"
    color = "#bcbd22"
    paper = "baseline"

    def __init__(self, partial: bool = False, **kw: Any):
        kw.setdefault("bn_policy", "local")
        super().__init__(partial=partial, **kw)


@register
class Centralized(FedAvg):
    """All clients' data pooled on one machine, each sample keeping its client's
    partial labels.  ``partial=False`` (default): missing = negative (Surgical
    Aggregation's Centralized); ``partial=True``: ignore missing labels (FedPSL's
    centralised IML).  One round = one epoch over the pooled data."""

    name = "centralized"
    display_name = "Centralized"
    color = "#8c8c8c"
    paper = "baseline"
    federated = False
    default_clients = "pooled"

    def __init__(self, partial: bool = False, **kw: Any):
        super().__init__(partial=partial, **kw)


@register
class Oracle(FedAvg):
    """The upper bound: pooled data with every true label (fully supervised)."""

    name = "oracle"
    display_name = "Oracle"
    color = "#222222"
    paper = "baseline"
    federated = False
    default_clients = "pooled_true_labels"


@register
class FedAvgOracle(FedAvg):
    """FedAvg with 100% labels (FedLSM's upper bound): the same clients and samples, each
    client annotating every class with the true labels."""

    name = "fedavg_oracle"
    display_name = "FedAvg (100% labels)"
    color = "#222222"
    paper = "FedLSM"
    default_clients = "true_labels"


@register
class Local(FedAvg):
    """Each client trains alone (no communication).  Scored per class by the clients
    that annotate the class (personalised evaluation)."""

    name = "local"
    display_name = "Local"
    color = "#8c564b"
    paper = "baseline"
    evaluation = "personalised"
    federated = False

    def __init__(self, partial: bool = True, **kw: Any):
        super().__init__(partial=partial, **kw)

    local_arrays = "all"

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        """Nothing is shared."""


@register
class PFL(FedAvg):
    """Personalised FL: the encoder is shared (FedAvg, or FedBN / FedBN+ through
    ``bn_policy``), each client keeps its own head, trained with the partial loss."""

    name = "pfl"
    display_name = "PFL"
    color = "#8c564b"
    paper = "baseline"
    evaluation = "personalised"
    partial = True
    local_arrays = "head"  # and the BatchNorm policy's arrays
