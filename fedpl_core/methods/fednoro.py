"""FedNoRo stage 2 (Wu, Yu, Jiang, Cheng, Yan; IJCAI 2023): logit-adjusted distillation
from the global model, adapted to partial labels (FedMLP's FNLL baseline).

FedMLP trains only FedNoRo's second stage, since every client is noisy in its setting
(a missing class reads as a negative label).  FedNoRo's noisy-client loss is
``L = (1 - w_t) L_LA(z + tau log pi, y) + w_t KL(softmax(z_g / T) || softmax(z + tau log pi))``
with the client's class prior pi, the received global model's logits z_g, T = 0.8, and the
ramp ``w_t = a * exp(-5 (1 - clip((t - begin) / (end - begin), 0, 1))^2)``, a = 0.8,
begin = 10, end = 49 of 100 rounds (FedNoRo ``options.py``; the FedMLP code: 10 and 499 of
500 rounds).  Multi-label, per class:

* logit adjustment: ``z'_c = z_c + tau ln(pi_c1 / pi_c0)`` (tau = 1), pi_c1 the client's
  positive rate of class c over the entries the supervised term uses (FedMLP Eq. 3 is this
  adjustment written on probabilities: ``sigmoid(z'_c)``).  **[choice]** no adjustment for a
  class without a positive or without a negative there (ln 0; FedNoRo zeroes the infinite
  log-probabilities such a class produces);
* supervised: BCE-with-logits on ``z'``; distillation: Bernoulli KL
  ``KL(sigmoid(z_g / T) || sigmoid(z'))`` per entry (the student's adjusted logits, as
  FedNoRo's ``LA_KD``), each averaged over its entries.
* **[choice]** ``partial=True`` (default, the FedMLP code's split): BCE on the annotated
  entries, distillation on the missing ones; ``partial=False``: FedNoRo's own noisy-label
  view, both terms over every entry with missing labels as negatives.  The FedMLP code
  comments the logit adjustment out and distils by MSE on probabilities; here it is the
  method as published.
* ``end=None`` (default) ends the ramp at the last round of the run (``cfg.rounds - 1``,
  as the FedMLP code's 499 of 500).  Aggregation: FedAvg (**[choice]**, FedNoRo's
  distance-aware aggregation weighs noisy clients by their distance to the *clean* ones,
  and here there is none; the FedMLP code uses FedAvg too).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..fl.federation import Batch, ClientContext
from .blocks import logit_adjusted_bce, sgd_step, sigmoid_rampup, train_batches
from .fedavg import FedAvg
from .registry import register


def logit_shift(labels: torch.Tensor, mask: torch.Tensor | None, tau: float = 1.0) -> torch.Tensor:
    """``[C]`` multi-label logit adjustment ``tau ln(pi_1 / pi_0)`` over the known entries
    (all entries when ``mask`` is None); 0 for a class lacking positives or negatives."""
    m = torch.ones_like(labels) if mask is None else mask.to(labels.dtype)
    pos = (labels * m).sum(0)
    neg = ((1 - labels) * m).sum(0)
    ok = (pos > 0) & (neg > 0)
    return torch.where(ok, tau * (pos.clamp_min(1).log() - neg.clamp_min(1).log()), torch.zeros_like(pos))


def bernoulli_kl_logits(q: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Per-entry ``KL(Ber(q) || Ber(sigmoid(z)))``, stable in ``z``."""
    return torch.xlogy(q, q) + torch.xlogy(1 - q, 1 - q) - q * F.logsigmoid(z) - (1 - q) * F.logsigmoid(-z)


@register
class FedNoRo(FedAvg):
    """FedNoRo stage 2: logit-adjusted BCE + ramped distillation from the global model."""

    name = "fednoro"
    display_name = "FedNoRo"
    color = "#74c476"
    paper = "FedMLP"
    train_cost = 1.4  # the received global model's logits
    option_ranges = {"a": "[0,1]", "begin": "int>=0", "end": "int>=0", "temperature": ">0", "tau": ">=0"}
    partial = True
    tasks = ("multilabel",)

    def __init__(
        self,
        a: float = 0.8,
        begin: int = 10,
        end: int | None = None,
        temperature: float = 0.8,
        tau: float = 1.0,
        partial: bool = True,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.a, self.begin, self.end = float(a), int(begin), end
        # partial: a class attribute the instance overrides
        self.temperature, self.tau, self.partial = float(temperature), float(tau), bool(partial)  # type: ignore[misc]

    def kd_weight(self, ctx) -> float:
        end = ctx.cfg.rounds - 1 if self.end is None else self.end
        return self.a * sigmoid_rampup(ctx.round, self.begin, end)

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        ctx.scratch["global"] = ctx.extract_state()
        d = ctx.data
        ctx.scratch["shift"] = logit_shift(d.labels, d.mask if self.partial else None, self.tau).to(ctx.device)
        ctx.scratch["w"] = self.kd_weight(ctx)
        ctx.log(kd_weight=ctx.scratch["w"])

    def local_train(self, ctx: ClientContext) -> float:
        return train_batches(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch: Batch) -> torch.Tensor:
        ctx.scratch["teacher"], _ = ctx.forward_with(ctx.scratch["global"], batch.x)
        return sgd_step(self, ctx, batch)

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        z = logits + ctx.scratch["shift"]
        w = ctx.scratch["w"]
        sup = logit_adjusted_bce(logits, batch.y, batch.mask if self.partial else None, ctx.scratch["shift"])
        q = torch.sigmoid(ctx.scratch["teacher"] / self.temperature)
        kd_mask = (~batch.mask if self.partial else torch.ones_like(batch.mask)).to(z.dtype)
        kd = (bernoulli_kl_logits(q, z) * kd_mask).sum() / kd_mask.sum().clamp_min(1.0)
        return (1 - w) * sup + w * kd


__all__ = ["FedNoRo", "sigmoid_rampup", "logit_shift", "bernoulli_kl_logits"]
