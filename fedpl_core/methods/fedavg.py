"""FedAvg (McMahan et al., AISTATS 2017): the smallest complete method.

Clients train on their labels with missing labels as negatives (``partial=False``) or
with the partial loss (``partial=True``, :class:`~fedpl_core.methods.baselines.FedAvgPL`);
the server replaces every shared array by the client-size-weighted mean.  Every other
method of the package is this class with a few hooks changed.
"""
from __future__ import annotations

from ..aggregation import weighted_average
from .base import Method


class FedAvg(Method):
    """FedAvg (McMahan et al. 2017): missing labels are negatives; size-weighted mean."""

    name = "fedavg"

    def aggregate(self, server, updates) -> None:
        """``theta = sum_k w_k theta_k / sum_k w_k`` for every shared array."""
        server.global_state.update(weighted_average([u.state for u in updates], self.client_weights(updates)))

    def loss(self, ctx, logits, features, batch):
        """BCE (CE for a single-label task) over every entry, or over the annotated
        entries only when ``partial``."""
        return self.supervised_loss(ctx, logits, batch)
