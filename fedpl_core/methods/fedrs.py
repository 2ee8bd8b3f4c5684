"""FedRS (Li & Zhan, "FedRS: Federated learning with restricted softmax for label
distribution non-IID data", KDD 2021), a FedLSM baseline (Table 2, single-label).

A client that has no data of some classes pushes their proxies (head rows) away during
local training.  FedRS restricts the softmax: in local training the logit of a class the
client does not own is scaled by ``alpha`` (Sec. 4, "restricted softmax")::

    p_c = exp(a_c z_c) / sum_j exp(a_j z_j),   a_c = 1 if the client owns c, else alpha

with ``alpha = 0.5`` (the paper's default; alpha = 1 is FedAvg).  Evaluation and the
server use the unscaled model; aggregation is FedAvg (FedLSM: FedRS and FedPU are run
without TDMA, "specifically designed for the similar scenario").

* "Classes the client owns" = the classes it identifies (``ctx.data.class_mask``).
* **[choice]** the scale multiplies the whole logit ``w_c^T h + b_c`` (FedRS's code
  scales ``w_c^T h`` of a bias-free classifier; the package's head has a bias).
* Single-label semantics: a sample whose class the client does not identify has no label
  and is not used (FedRS assumes a client only holds samples of its own classes); the
  loss is CE over the labelled rows.
* Multi-label tasks are refused: a restricted *softmax* is not defined for independent
  sigmoid outputs.  FedLSM's Table 1 (NIH, multi-label) does list FedRS (column f) without
  saying how it was adapted; that adaptation is not reproduced here.
* The loss hook scales only while the model is in training mode (validation loss and
  evaluation see the plain softmax).
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, FederationInfo
from ..nn.losses import masked_ce
from .blocks import require_single_label
from .fedavg import FedAvg
from .registry import register


def restricted_logits(logits: torch.Tensor, class_mask: torch.Tensor, alpha: float) -> torch.Tensor:
    """Logits of the classes outside ``class_mask`` ``[C]`` multiplied by ``alpha``."""
    scale = torch.where(
        class_mask.to(torch.bool).to(logits.device),
        torch.ones((), dtype=logits.dtype, device=logits.device),
        torch.full((), float(alpha), dtype=logits.dtype, device=logits.device),
    )
    return logits * scale


@register
class FedRS(FedAvg):
    """FedRS: CE over labelled rows on restricted-softmax logits (``alpha`` = 0.5)."""

    name = "fedrs"
    display_name = "FedRS"
    color = "#637939"
    paper = "FedLSM"
    option_ranges = {"alpha": "[0,1]"}
    tasks = ("multiclass",)
    partial = True

    def __init__(self, alpha: float = 0.5, **kw: Any):
        super().__init__(**kw)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.alpha = float(alpha)

    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        require_single_label(self, info)
        super().setup(model, info)

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        z = restricted_logits(logits, ctx.data.class_mask, self.alpha) if ctx.model.training else logits
        return masked_ce(z, batch.y, batch.mask)
