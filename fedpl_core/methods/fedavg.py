"""FedAvg (McMahan et al., AISTATS 2017): the smallest complete method.

Clients train on their labels with missing labels as negatives (``partial=False``) or
with the partial loss (``partial=True``, :class:`~fedpl_core.methods.baselines.FedAvgPL`);
the server replaces every shared array by the client-size-weighted mean (the default
``head`` block of :class:`~fedpl_core.methods.base.Method`).  The variants are options:
``get_method("fedavg", partial=True, loss="wbce", head="tdma")`` is FedPSL's "w/ TDMA"
ablation (see :mod:`fedpl_core.methods.blocks`).
"""

from __future__ import annotations

import torch

from ..fl.federation import Batch, ClientContext
from .base import Method, supervised_only
from .registry import register


@register
class FedAvg(Method):
    """FedAvg (McMahan et al. 2017): missing labels are negatives; size-weighted mean."""

    name = "fedavg"
    display_name = "FedAvg"
    color = "#1f77b4"
    paper = "baseline"

    @supervised_only  # its client round is the one the engine's batched path reproduces (Method.batchable)
    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """BCE (CE for a single-label task) over every entry, or over the annotated
        entries only when ``partial`` (weighted with ``loss="wbce"``)."""
        return self.supervised_loss(ctx, logits, batch)
