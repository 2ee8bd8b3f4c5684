"""FedLSR (Jiang, Sun, Wang, Chen, Wang; CIKM 2022): local self-regularisation against
noisy labels, multi-label (per-class sigmoid) for FedMLP's FNLL baseline.

A missing class reads as a (noisy) negative label: ``partial=False``, every entry is
supervised.  Per batch, two views x1, x2 (**[choice]** two weak views,
:func:`~fedpl_core.fl.views.weak_view`; FedLSR: the image and a mildly augmented copy; the
FedMLP code: two augmented copies), logits z1, z2 from one forward of ``[x1; x2]``:

* self-distillation: ``p_i = sigmoid(z_i / T_d)``, ``T_d = 1/3`` (FedLSR's ``* 3``), clamped
  to [1e-6, 1 - 1e-6]; ``L_JS`` = Jensen-Shannon divergence of p1 and p2, per entry as
  Bernoulli distributions (``JS = (KL(p1||m) + KL(p2||m)) / 2``, ``m = (p1 + p2) / 2``),
  averaged over entries (FedLSR's ``KLDivLoss(reduction='mean')``);
* the supervised term on the sharpened mix of the two predictions:
  ``p = lam sigmoid(z1) + (1 - lam) sigmoid(z2)``, ``lam ~ Beta(1, 1)`` per batch,
  sharpened at T = 1/2 (FedLSR's ``p**2 / sum p**2``; for a Bernoulli this is
  ``sigmoid(2 logit p)``), ``L_CE = BCE(p_s, y)``;
* ``L = L_CE + beta_t L_JS`` with ``beta_t = gamma min(1, t / t_w)``, gamma = 0.4,
  ``t_w = 0.2 x`` total rounds (FedLSR notebook: ``gamma``, ``global_t_w``; the FedMLP code:
  ``t_w = 40`` of 500 rounds).  FedLSR's extra entropy term (``lambda_e = 0.6``, from its
  Discussion section) is left out, as in the FedMLP code (**[choice]**).

**Known bug of the FedMLP code**: it feeds the sharpened *probability* ``p_s`` to
``BCEWithLogitsLoss``, i.e. computes ``BCE(sigmoid(p_s), y)``.  Since ``sigmoid(p_s)`` lies
in (0.5, 0.73), the loss is bounded and its gradient in p_s is ``sigmoid(p_s) - y`` instead of
``(p_s - y) / (p_s (1 - p_s))``: a different (MAE-like, noise-robust) objective, so it changes
the model FedMLP reports.  Here the loss is computed correctly (``BCE(p_s, y)`` via the logit
``2 logit p``); ``bce_on_probabilities=True`` reproduces the bug (the FedMLP code's
``mode="code"`` behaviour; its class weights ``n / n_pos``, counted on the *true* labels, are
not reproduced).
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext
from ..fl.views import sample_lambda, weak_view
from ..nn.losses import masked_bce
from .blocks import clean_local_train
from .fedavg import FedAvg
from .registry import register

EPS = 1e-6


def bernoulli_js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Per-entry Jensen-Shannon divergence of Bernoulli(p) and Bernoulli(q) (nats)."""
    p, q = p.clamp(EPS, 1 - EPS), q.clamp(EPS, 1 - EPS)
    m = (p + q) / 2

    def kl(a):
        return a * (a / m).log() + (1 - a) * ((1 - a) / (1 - m)).log()

    return (kl(p) + kl(q)) / 2


@register
class FedLSR(FedAvg):
    """FedLSR: BCE on the sharpened mix of two views + ramped JS self-distillation."""

    name = "fedlsr"
    display_name = "FedLSR"
    color = "#c7c7c7"
    paper = "FedMLP"
    train_cost = 2.0  # two views a batch
    option_ranges = {"gamma": ">=0", "t_w": ">=0", "distill_t": ">0", "sharpen_t": ">0", "mix_alpha": ">0"}
    partial = False
    tasks = ("multilabel",)

    def __init__(
        self,
        gamma: float = 0.4,
        t_w: float = 0.2,
        distill_t: float = 1 / 3,
        sharpen_t: float = 0.5,
        mix_alpha: float = 1.0,
        partial: bool = False,
        bce_on_probabilities: bool = False,
        **kw: Any,
    ):
        """``t_w``: warm-up of beta in rounds when >= 1, as a share of ``cfg.rounds`` when < 1."""
        super().__init__(**kw)
        self.gamma, self.t_w = float(gamma), float(t_w)
        self.distill_t, self.sharpen_t, self.mix_alpha = float(distill_t), float(sharpen_t), float(mix_alpha)
        # partial: a class attribute the instance overrides
        self.partial, self.bce_on_probabilities = bool(partial), bool(bce_on_probabilities)  # type: ignore[misc]

    def beta(self, ctx) -> float:
        t_w = self.t_w if self.t_w >= 1 else self.t_w * ctx.cfg.rounds
        return self.gamma if t_w <= 0 else self.gamma * min(1.0, ctx.round / t_w)

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        ctx.scratch["beta"] = self.beta(ctx)
        ctx.log(beta=ctx.scratch["beta"])

    def local_train(self, ctx: ClientContext) -> float:
        return clean_local_train(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        x = torch.cat([weak_view(batch.x, ctx.generator), weak_view(batch.x, ctx.generator)])
        ctx.scratch["lam"] = sample_lambda(self.mix_alpha, ctx.generator)
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, features = ctx.model.forward_features(x)
            loss = self.loss(ctx, logits.float(), features, batch)
        loss.backward()
        ctx.optimizer.step()
        return loss.detach()

    def lsr_loss(
        self, z1: torch.Tensor, z2: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None, lam: float, beta: float
    ) -> torch.Tensor:
        """The FedLSR objective on the two views' logits (see the module docstring)."""
        js = bernoulli_js(torch.sigmoid(z1 / self.distill_t), torch.sigmoid(z2 / self.distill_t)).mean()
        p = (lam * torch.sigmoid(z1) + (1 - lam) * torch.sigmoid(z2)).clamp(EPS, 1 - EPS)
        s = torch.logit(p) / self.sharpen_t  # logit of the sharpened probability p_s
        if self.bce_on_probabilities:
            s = torch.sigmoid(s)  # the FedMLP code's bug: BCE-with-logits applied to p_s
        return masked_bce(s, y, mask) + beta * js

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        z1, z2 = logits.chunk(2)
        return self.lsr_loss(
            z1, z2, batch.y, batch.mask if self.partial else None, ctx.scratch["lam"], ctx.scratch["beta"]
        )


__all__ = ["FedLSR", "bernoulli_js"]
