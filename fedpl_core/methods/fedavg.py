"""FedAvg (McMahan et al., AISTATS 2017): the smallest complete method.

Clients train on their labels with missing labels as negatives (``partial=False``) or
with the partial loss (``partial=True``, :class:`~fedpl_core.methods.baselines.FedAvgPL`);
the server replaces every shared array by the client-size-weighted mean (the default
``head`` block of :class:`~fedpl_core.methods.base.Method`).  The variants are options:
``get_method("fedavg", partial=True, loss="wbce", head="tdma")`` is FedPSL's "w/ TDMA"
ablation (see :mod:`fedpl_core.methods.blocks`).
"""
from __future__ import annotations

from .base import Method

#: The hooks that make a client's round (with ``setup``, which may reshape the model, and
#: ``payload``, which may personalise what a client starts from).
CLIENT_ROUND_HOOKS = ("setup", "init_client", "payload", "receive", "local_train", "loss", "make_update",
                      "supervised_loss")


class FedAvg(Method):
    """FedAvg (McMahan et al. 2017): missing labels are negatives; size-weighted mean."""

    name = "fedavg"
    display_name = "FedAvg"
    color = "#1f77b4"
    paper = "baseline"

    @property
    def batchable(self) -> bool:
        """Whether :mod:`fedpl_core.fl.batched` may train this method's clients as one
        vmapped step: its client round is FedAvg's (no hook of
        :data:`CLIENT_ROUND_HOOKS` overridden; the server's ``aggregate`` and ``head`` are
        free, they see only the updates).  The engine checks the rest (BatchNorm, local
        arrays, warm-up, the task, the optimizer) in ``why_not_batched``."""
        return all(getattr(type(self), h) is getattr(FedAvg, h) for h in CLIENT_ROUND_HOOKS)

    def loss(self, ctx, logits, features, batch):
        """BCE (CE for a single-label task) over every entry, or over the annotated
        entries only when ``partial`` (weighted with ``loss="wbce"``)."""
        return self.supervised_loss(ctx, logits, batch)
