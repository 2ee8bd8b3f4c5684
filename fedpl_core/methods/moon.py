"""MOON (Li, He, Song, "Model-contrastive federated learning", CVPR 2021) and FedLSM's
"*" baselines (FedAvg*, FedProx*, MOON*: "* denotes the use of task-dependent model
aggregation in FPSL", FedLSM Tables 1-2).

MOON's local objective (Eq. 3-4): ``L = L_sup + mu * L_con`` with::

    L_con = -log( exp(sim(z, z_glob) / T) / (exp(sim(z, z_glob) / T) + exp(sim(z, z_prev) / T)) )

averaged over the batch; ``z`` the representation of the model being trained, ``z_glob``
that of the global model received this round (positive pair), ``z_prev`` that of the
client's own model at the end of its previous round (negative pair), ``sim`` the cosine
similarity.  Defaults: ``T = 0.5`` (MOON, Sec. 4.1) and ``mu = 1`` (MOON's value for
CIFAR-100 and Tiny-ImageNet and its code's default; 5 for CIFAR-10) **[choice]**: the
medical tasks are closer to the harder data sets.

* **[choice] representation**: MOON's ``z`` is the output of a projection head (2-layer
  MLP) before the classifier; the package's models are encoder + linear head, so ``z`` is
  the encoder's feature vector (no architecture change, no extra parameters).
* ``z_glob`` / ``z_prev`` come from ``ctx.forward_with`` (eval mode, no gradient); MOON's
  code keeps the global and previous models frozen as well.
* Before a client's first round there is no previous local model: the previous model is
  the received one (MOON's code initialises its model pool with the round-0 models), so
  ``z_prev = z_glob`` and ``L_con`` is the constant log 2 with zero gradient.
* The previous local model (every array) is kept in ``ctx.state["moon_prev"]``.
* Loss: the partial loss (annotated entries only), with FedPSL's ``N_neg / N_pos``
  weighted BCE for multi-label (FedLSM Task 1: "we used the weighted binary cross-entropy
  as in FPSL") **[choice: applied to all FedLSM baselines]**; single-label: CE over rows
  with a label (a sample whose class the client does not identify has no label and is
  not used by MOON, FedAvg*, FedProx*).

FedAvg* (``fedavg_star``: partial weighted loss + TDMA, the same method as FedPSL's
``fedpsl_tdma`` ablation) is registered in :mod:`fedpl_core.methods.fedpsl`.

Registered here:

================  ==================================================================
``moon``          MOON, FedAvg aggregation
``moon_star``     MOON* (FedLSM): MOON + TDMA head aggregation (FedPSL Eq. 9,
                  ``head="tdma"``)
``fedprox_star``  FedProx* (FedLSM): FedProx with the weighted partial loss (mu = 0.001,
                  FedPSL's value; FedLSM gives none **[choice]**) + TDMA
                  (``get_method("fedprox", mu=0.001, partial=True, loss="wbce", head="tdma")``)
================  ==================================================================
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, ClientUpdate
from .base import Method
from .baselines import FedProx
from .blocks import moon_contrastive, train_batches
from .registry import register


@register
class MOON(Method):
    """MOON (Li et al. 2021): supervised partial loss + mu * model-contrastive loss.

    Options:

    * ``mu``: weight of the contrastive term (MOON: 1 for CIFAR-100 / Tiny-ImageNet, 5 for
      CIFAR-10).
    * ``temperature``: T of Eq. 3 (MOON: 0.5).
    * ``pos_weight``: FedPSL's weighted BCE (multi-label).
    """

    name = "moon"
    display_name = "MOON"
    color = "#5254a3"
    paper = "FedLSM"
    train_cost = 1.7  # the global and the previous model's representations
    option_ranges = {"mu": ">=0", "temperature": ">0"}
    partial = True
    default_loss = "wbce"

    def __init__(self, mu: float = 1.0, temperature: float = 0.5, pos_weight: bool = True, **kw: Any):
        super().__init__(pos_weight=pos_weight, **kw)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.mu, self.temperature = float(mu), float(temperature)

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        ctx.scratch["moon_global"] = ctx.extract_state()

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The supervised term (weighted partial BCE); ``train_step`` adds mu * L_con."""
        return self.supervised_loss(ctx, logits, batch)

    def local_train(self, ctx: ClientContext) -> float:
        return train_batches(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        glob = ctx.scratch["moon_global"]
        prev = ctx.state.get("moon_prev", glob)
        _, z_glob = ctx.forward_with(glob, batch.x)
        _, z_prev = ctx.forward_with(prev, batch.x)
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, z = ctx.model.forward_features(batch.x)
        sup = self.loss(ctx, logits.float(), z, batch)
        con = moon_contrastive(z.float(), z_glob.float(), z_prev.float(), self.temperature)
        loss = sup + self.mu * con
        loss.backward()
        ctx.optimizer.step()
        return loss.detach()

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        ctx.state["moon_prev"] = ctx.extract_state()
        return super().make_update(ctx)


@register
class MOONStar(MOON):
    """FedLSM's MOON*: MOON local training, TDMA head aggregation."""

    name = "moon_star"
    display_name = "MOON*"
    color = "#9c9ede"
    paper = "FedLSM"
    default_head = "tdma"


@register
class FedProxStar(FedProx):
    """FedLSM's FedProx*: FedProx (weighted partial loss, mu = 0.001) + TDMA."""

    name = "fedprox_star"
    display_name = "FedProx*"
    color = "#9edae5"
    paper = "FedLSM"
    default_loss = "wbce"
    default_head = "tdma"

    def __init__(self, mu: float = 0.001, partial: bool = True, **kw: Any):
        super().__init__(mu=mu, partial=partial, **kw)
