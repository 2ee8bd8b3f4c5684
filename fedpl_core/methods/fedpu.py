"""FedPU (Lin, Chen, Xu, Xu, Gui, Deng, Wang, "Federated learning with positive and
unlabeled data", ICML 2022), a FedLSM baseline (Table 2, single-label only).

Client k labels the samples of its classes ``P_k`` (positives) and holds unlabelled
samples U_k.  FedPU minimises the expected risk of the negative classes, which a client
cannot label, by a PU estimate over its own classes and leaves the rest to the clients
that label them (FedAvg aggregation).  With the one-vs-rest negative loss on the softmax,
``l_-(p_i) = -log(1 - p_i)``, the local objective is::

    L_k = CE over labelled rows
          + w_pu * (1 / |P_k|) * sum_{i in P_k} [ E_U l_-(p_i) - pi_i^U * E_{P_i} l_-(p_i) ]

``E_U``: mean over the batch's unlabelled rows; ``E_{P_i}``: mean over its rows labelled i;
``pi_i^U``: the share of class i among the unlabelled data.  The second term is the PU
correction (E_U contains the positives of i in proportion pi_i^U); it is the form of the
released code (``MPULoss_V2`` in ``littleSunlxy/FedPU-torch``: per-class ``-log(1 - p)``
terms normalised by ``|U|`` and ``|P_k|``, minus the prior-weighted positive term).

* **Class priors**: FedPU, like PU learning in general, assumes the priors known.  In the
  label-set-mismatch setting every sample of a class the client identifies is labelled,
  so the unlabelled data holds no positive of ``P_k``: ``pi_i^U = 0`` exactly, the
  default (``prior=0.0``); a float or a ``[C]`` sequence gives other priors.
* **[choice]** ``w_pu = 1`` (the code's ``pu_weight`` is a command-line value with no
  documented default), ``eps = 1e-6`` inside the log (``MPULoss_V2``); the released code
  also adds a term over the labelled rows normalised by ``C - |P_k|`` that the paper's
  risk does not contain: left out.  No non-negativity clamp (neither paper nor code has one).
* Single-label semantics: the unlabelled rows (a sample whose class the client does not
  identify, label row all zero) are exactly FedPU's U_k; they are *used*, as negatives of
  every class the client identifies.
* Multi-label tasks are refused (FedLSM: FedPU "was not applicable to multi-label
  classification").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, FederationInfo
from ..nn.losses import masked_ce
from .blocks import require_single_label
from .fedavg import FedAvg
from .registry import register


def fedpu_risk(
    logits: torch.Tensor,
    y: torch.Tensor,
    labelled: torch.Tensor,
    client_classes: torch.Tensor,
    prior: torch.Tensor | float = 0.0,
    eps: float = 1e-6,
) -> torch.Tensor:
    """The PU term of :mod:`fedpu` (without the CE): ``[B, C]`` logits, one-hot ``y``,
    ``[B]`` bool ``labelled``, ``[C]`` bool ``client_classes``, ``prior`` pi^U."""
    p = logits.softmax(1)
    neg = -torch.log(1.0 - p + eps)  # [B, C] l_-(p_i)
    cls = client_classes.to(torch.bool).to(logits.device)
    n_cls = int(cls.sum())
    if n_cls == 0:
        return logits.sum() * 0.0
    unl = (~labelled).to(neg.dtype)
    e_u = (neg * unl[:, None]).sum(0) / unl.sum().clamp_min(1.0)  # [C]
    lab = (y > 0).to(neg.dtype) * labelled.to(neg.dtype)[:, None]  # rows labelled i
    e_p = (neg * lab).sum(0) / lab.sum(0).clamp_min(1.0)  # [C] E_{P_i} l_-(p_i)
    pi = torch.as_tensor(prior, dtype=neg.dtype, device=neg.device).expand_as(e_u)
    return ((e_u - pi * e_p) * cls.to(neg.dtype)).sum() / n_cls


@register
class FedPU(FedAvg):
    """FedPU: CE on labelled rows + ``w_pu`` * PU risk of the client's classes on its
    unlabelled rows; FedAvg aggregation.

    Options:

    * ``pu_weight``: w_pu (default 1).
    * ``prior``: pi^U of each class among the unlabelled data (default 0: label set mismatch).
    * ``eps``: inside ``log(1 - p + eps)``.
    """

    name = "fedpu"
    display_name = "FedPU"
    color = "#e7969c"
    paper = "FedLSM"
    option_ranges = {"pu_weight": ">=0", "eps": ">=0"}
    tasks = ("multiclass",)
    partial = True

    def __init__(self, pu_weight: float = 1.0, prior: float | Sequence[float] = 0.0, eps: float = 1e-6, **kw: Any):
        super().__init__(**kw)
        self.pu_weight, self.eps = float(pu_weight), float(eps)
        self.prior = torch.as_tensor(prior, dtype=torch.float32)
        if (self.prior < 0).any() or (self.prior > 1).any():
            raise ValueError(f"prior must be in [0, 1], got {prior}")

    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        require_single_label(self, info)
        if self.prior.numel() not in (1, info.num_classes):
            raise ValueError(f"prior needs 1 or {info.num_classes} values, got {self.prior.numel()}")
        super().setup(model, info)

    def supervised_loss(self, ctx: ClientContext, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        """CE + w_pu * PU risk: it needs no per-round state, so it also scores validation."""
        ce = masked_ce(logits, batch.y, batch.mask)
        labelled = ((batch.y > 0) & batch.mask.to(torch.bool)).any(1)
        pu = fedpu_risk(logits, batch.y, labelled, ctx.data.class_mask, self.prior, self.eps)
        return ce + self.pu_weight * pu
