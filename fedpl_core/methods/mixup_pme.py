"""MixUp-PME, FedPSL's reference [9]: N. Dong, J. Wang, I. Voiculescu, "Revisiting vicinal
risk minimization for partially supervised multi-label classification under data
scarcity", CVPR 2022 (Workshops, L3D-IVU), pp. 4212-4220; arXiv:2204.08954.  FedPSL
(Sec. VII-C) runs it centralised ("a centralized PSL method based on data augmentation
and pseudo labeling ... the default hyperparameters of [9]").

**What could not be checked.**  Only the abstract of [9] was available to this
implementation (no method section, no code), so the pseudo-label handling below is our
reading of FedPSL's description and of mixup (Zhang et al., ICLR 2018), every step a
**[choice]**:

* pooled data as :class:`~fedpl_core.methods.baselines.Centralized` (one round = one
  epoch), the paper's weighted BCE (``N_neg / N_pos`` over the pooled labelled entries);
* pseudo-labels: each unannotated entry is completed by the current model's probability
  ``p = sigmoid(f(x))`` (a soft pseudo-label, the expected label; eval mode, no gradient,
  on the same augmented batch); annotated entries keep their label;
* mixup: ``lam ~ Beta(alpha, alpha)`` once per batch, the batch mixed with a seeded
  permutation of itself, ``x~ = lam x_i + (1 - lam) x_j``, ``y~ = lam y^_i + (1 - lam) y^_j``
  (:func:`pme_targets`);
* the loss covers the mixed entries where at least one of the two samples is annotated
  (an entry unannotated in both is pure self-training and is left out); during the first
  ``warmup_rounds`` rounds (the model's predictions are still random) no pseudo-label is
  used: only entries annotated in *both* samples count;
* ``alpha`` = 1.0 (mixup's CIFAR default; [9]'s value unknown), ``warmup_rounds`` = 1.
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import ClientContext
from ..fl.views import mixup, sample_lambda
from ..nn.losses import masked_bce
from .blocks import train_batches
from .fedavg import FedAvg
from .registry import register


def pme_targets(
    y: torch.Tensor, mask: torch.Tensor, probs: torch.Tensor | None, perm: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixed targets and their loss mask for a batch mixed with ``batch[perm]``.

    ``y``: ``[B, C]`` labels (0 where unannotated), ``mask``: ``[B, C]`` annotated entries,
    ``probs``: ``[B, C]`` pseudo-label probabilities (None: no pseudo-labels).  With
    pseudo-labels, ``y^ = y`` on annotated and ``probs`` on unannotated entries, the loss
    mask is ``mask | mask[perm]``; without, ``y^ = y`` and the mask is ``mask & mask[perm]``.
    """
    m = mask.bool()
    y_hat = y if probs is None else torch.where(m, y, probs)
    keep = (m | m[perm]) if probs is not None else (m & m[perm])
    return lam * y_hat + (1 - lam) * y_hat[perm], keep


@register
class MixUpPME(FedAvg):
    """MixUp-PME (FedPSL's [9]) as read here: centralised mixup with soft pseudo-labels on
    the unannotated entries (see the module docstring for every choice)."""

    name = "mixup_pme"
    display_name = "MixUp-PME"
    color = "#c49c94"
    paper = "FedPSL"
    train_cost = 1.4  # mixup with pseudo-labels
    option_ranges = {"alpha": ">0", "warmup_rounds": "int>=0"}
    federated = False
    default_loss = "wbce"
    default_clients = "pooled"

    def __init__(self, alpha: float = 1.0, warmup_rounds: int = 1, partial: bool = True, **kw: Any):
        super().__init__(partial=partial, **kw)
        self.alpha, self.warmup_rounds = float(alpha), int(warmup_rounds)

    def local_train(self, ctx: ClientContext) -> float:
        return train_batches(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        use_pseudo = ctx.round >= self.warmup_rounds
        probs = torch.sigmoid(ctx.forward_with({}, batch.x)[0]) if use_pseudo else None
        perm = torch.randperm(len(batch.pos), generator=ctx.generator).to(batch.x.device)
        lam = sample_lambda(self.alpha, ctx.generator)
        target, keep = pme_targets(batch.y, batch.mask, probs, perm, lam)
        x, _ = mixup(batch.x, batch.y, batch.x[perm], batch.y[perm], lam)
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits = ctx.model(x)
        pw = self.loss_block.class_pos_weight(self, ctx).to(logits.device) if self.loss_block.weighted else None
        loss = masked_bce(logits.float(), target, keep, pos_weight=pw)
        loss.backward()
        ctx.optimizer.step()
        return loss.detach()
