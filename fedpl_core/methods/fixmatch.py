"""FixMatch (Sohn et al., NeurIPS 2020) on partial labels: the one implementation behind
FedMLP's FedFixMatch, FedLSM's FedAvg-FixMatch* and FSSL*, and FedPSL's centralised
FixMatch.

Each batch is read without the engine's augmentation and turned into a *weak* view
(flip + translation, :func:`~fedpl_core.fl.views.weak_view`) and a *strong* view
(RandAugment-style, 2 ops at magnitude 10, + Cutout, :func:`~fedpl_core.fl.views.strong_view`).
One forward of ``[weak; strong]`` in training mode (as FixMatch's official code, which
interleaves both views in one batch) gives

* ``L_s``: the supervised loss on the weak view over the *annotated* entries only (the
  partial loss; BCE, or FedPSL's ``N_neg / N_pos`` weighted BCE when ``pos_weight``, for
  multi-label; CE over labelled rows for single-label);
* ``L_u``: hard pseudo-labels from the teacher's prediction on the weak view, for the
  client's *unannotated* entries only, trained on the strong view (FixMatch Eq. 4):

  - single-label (softmax): a row without a label gets ``argmax p`` when ``max p >= tau``;
    **[choice]** a pseudo-label naming an annotated entry of the row (a class the
    sample's client identifies) is rejected: the sample is known not to be of that class
    (in the label-set-mismatch setting every sample of an identified class is labelled;
    FedLSM Eq. 4 likewise only sums over the unknown classes).  Row-wise, so pooled data
    keeps each sample's own client's classes.  ``L_u = sum_accepted CE(strong, argmax) / #unlabelled rows``
    (FixMatch divides by the whole unlabelled batch mu*B, below-threshold samples
    included).
  - multi-label (sigmoid, per class): an unannotated entry is a positive when
    ``p >= tau``, a negative when ``p <= 1 - tau``, otherwise ignored.
    ``L_u = sum_confident BCE(strong, hard) / #unannotated entries`` **[choice]** (the
    per-entry analogue of FixMatch's normalisation).

  ``L = L_s + lambda_u L_u`` with ``lambda_u = 1`` (FixMatch Sec. 4).
* **[choice] one batch serves both terms**: FixMatch draws a labelled batch B and an
  unlabelled batch mu*B (mu = 7); with partial labels every sample has annotated *and*
  unannotated entries, so each batch of the client's data feeds its annotated entries to
  ``L_s`` and its unannotated entries to ``L_u``.

Teacher: ``"current"`` (FixMatch: the model being trained, its weak-view logits of the
same forward, detached) or ``"global"`` (the model received this round, frozen, in eval
mode via ``ctx.forward_with``; FSSL*).  The latest pseudo-labels of every sample seen are
kept in ``ctx.state["pseudo_labels"] = {"mask": [n, C] bool, "target": [n, C] float}``.

Single-label semantics: a sample whose class the client does not identify has no label at
all (its label row is all zero); FixMatch is the baseline that uses those samples (as
``L_u``), FedAvg ignores them.

Registered methods:

========================  =====================================================================
``fedfixmatch``           FedMLP's FedFixMatch: FedAvg aggregation, tau = 0.95, plain BCE
``fedavg_fixmatch_star``  FedLSM's FedAvg-FixMatch*: FixMatch + TDMA head aggregation
                          (FedPSL Eq. 9, label counts), tau = 0.95, weighted BCE as FedLSM's
                          Task 1 (``pos_weight``)
``fssl_star``             FedLSM's FSSL* (Yang et al., MedIA 2021): teacher = received global
                          model, tau = 0.5, TDMA (see :class:`FSSLStar`)
``fixmatch``              FedPSL's centralised FixMatch: pooled data, partial labels,
                          tau = 0.75 (FedPSL: "the same set of hyperparameters of FedMatch";
                          FedMatch's ``config.py``: ``confidence = 0.75``), weighted BCE
========================  =====================================================================
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..fl.federation import Batch, ClientContext
from ..fl.views import strong_view, weak_view
from .base import Method
from .registry import register

TEACHERS = ("current", "global")


# ----------------------------------------------------------------------------- helpers
def labelled_rows(y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B]`` bool: single-label rows that carry a label (a known positive)."""
    return ((y > 0) & mask.to(torch.bool)).any(1)


def fixmatch_pseudo_labels(
    logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, task: str, tau: float, restrict_known: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hard pseudo-labels of the unannotated entries from (teacher) logits of the weak view.

    Returns ``(pl_mask [B, C] bool, pl_target [B, C] float)``: ``pl_mask`` True on the
    unannotated entries that got a pseudo-label, ``pl_target`` its 0/1 value (0 elsewhere).
    Single-label: rows without a label whose softmax maximum is ``>= tau`` (and, when
    ``client_classes`` is given, whose argmax is not a class the client identifies) get
    the one-hot argmax on their unannotated entries.  Multi-label: per entry, positive if
    ``sigmoid >= tau``, negative if ``<= 1 - tau``.
    """
    logits = logits.detach().float()
    unknown = ~mask.to(torch.bool)
    if task == "multiclass":
        p = logits.softmax(1)
        conf, arg = p.max(1)
        ok = (conf >= tau) & ~labelled_rows(y, mask)
        if restrict_known:
            ok &= ~mask.to(torch.bool).gather(1, arg[:, None]).squeeze(1)
        onehot = F.one_hot(arg, logits.shape[1]).to(logits.dtype)
        pl_mask = ok[:, None] & unknown
        return pl_mask, onehot * pl_mask
    p = logits.sigmoid()
    pos = (p >= tau) & unknown
    neg = (p <= 1 - tau) & unknown & ~pos
    return pos | neg, pos.to(logits.dtype)


def unlabelled_loss(
    logits_s: torch.Tensor,
    pl_mask: torch.Tensor,
    pl_target: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    task: str,
) -> torch.Tensor:
    """FixMatch's ``L_u`` on the strong-view logits (normalisation in the module docstring)."""
    if task == "multiclass":
        rows = pl_mask.any(1)
        n_unl = (~labelled_rows(y, mask)).sum().clamp_min(1)
        ce = F.cross_entropy(logits_s, pl_target.argmax(1), reduction="none")
        return (ce * rows.to(ce.dtype)).sum() / n_unl
    n_unk = (~mask.to(torch.bool)).sum().clamp_min(1)
    bce = F.binary_cross_entropy_with_logits(logits_s, pl_target, reduction="none")
    return (bce * pl_mask.to(bce.dtype)).sum() / n_unk


# ----------------------------------------------------------------------------- FixMatch
class FixMatch(Method):
    """FixMatch on partial labels (see the module docstring).

    Options:

    * ``tau``: confidence threshold (FixMatch: 0.95).
    * ``lambda_u``: weight of the unlabelled loss (FixMatch: 1).
    * ``teacher``: ``"current"`` (FixMatch) or ``"global"`` (the received global model).
    * ``num_ops``, ``magnitude``: RandAugment of the strong view (FixMatch: 2 ops; magnitude
      10 on the 0-30 scale **[choice]**, FixMatch samples it at random).
    * ``restrict_known``: single-label: reject pseudo-labels naming an identified class.
    * ``pos_weight``: FedPSL's ``N_neg / N_pos`` weight of the supervised BCE (multi-label).
    * ``bn_policy``, ``weighting``: see :class:`~fedpl_core.methods.base.Method`.

    ``loss`` (also used for validation loss) is the supervised term; ``train_step`` adds
    ``lambda_u L_u``.
    """

    name = "fixmatch_base"
    train_cost = 1.7  # weak + strong view
    option_ranges = {"tau": "[0,1]", "lambda_u": ">=0", "num_ops": "int>=0", "magnitude": ">=0"}
    partial = True
    default_loss = "wbce"

    def __init__(
        self,
        tau: float = 0.95,
        lambda_u: float = 1.0,
        teacher: str = "current",
        num_ops: int = 2,
        magnitude: float = 10,
        restrict_known: bool = True,
        pos_weight: bool = False,
        **kw: Any,
    ):
        super().__init__(pos_weight=pos_weight, **kw)
        if not 0.0 < tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {tau}")
        if teacher not in TEACHERS:
            raise ValueError(f"unknown teacher {teacher!r}; use one of {TEACHERS}")
        self.tau, self.lambda_u, self.teacher = float(tau), float(lambda_u), teacher
        self.num_ops, self.magnitude, self.restrict_known = int(num_ops), float(magnitude), bool(restrict_known)

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        if self.teacher == "global":
            ctx.scratch["global_state"] = ctx.extract_state()
        if "pseudo_labels" not in ctx.state:
            n, c = ctx.data.labels.shape
            ctx.state["pseudo_labels"] = {"mask": torch.zeros(n, c, dtype=torch.bool), "target": torch.zeros(n, c)}

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The supervised term (``train_step`` adds ``lambda_u L_u``)."""
        return self.supervised_loss(ctx, logits, batch)

    def local_train(self, ctx: ClientContext) -> float:
        total, steps = 0.0, 0
        for batch in ctx.batches(train=False):  # the views are the augmentation
            total += float(self.train_step(ctx, batch))
            steps += 1
        return total / max(steps, 1)

    def pseudo_labels(self, ctx, batch, logits_w: torch.Tensor, xw: torch.Tensor):
        t = logits_w if self.teacher == "current" else ctx.forward_with(ctx.scratch["global_state"], xw)[0]
        return fixmatch_pseudo_labels(t, batch.y, batch.mask, ctx.info.task, self.tau, self.restrict_known)

    def train_step(self, ctx, batch) -> torch.Tensor:
        xw = weak_view(batch.x, ctx.generator)
        xs = strong_view(batch.x, ctx.generator, self.num_ops, self.magnitude)
        # the global teacher does not read logits_w
        pl_mask, pl_target = (None, None) if self.teacher == "current" else self.pseudo_labels(ctx, batch, None, xw)  # type: ignore[arg-type]
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, feats = ctx.model.forward_features(torch.cat([xw, xs]))
        b = len(batch.pos)
        lw, ls = logits.float()[:b], logits.float()[b:]
        if pl_mask is None:
            pl_mask, pl_target = self.pseudo_labels(ctx, batch, lw, xw)
        sup = self.loss(ctx, lw, feats[:b], batch)
        unsup = unlabelled_loss(ls, pl_mask, pl_target, batch.y, batch.mask, ctx.info.task)  # type: ignore[arg-type]
        loss = sup + self.lambda_u * unsup
        loss.backward()
        ctx.optimizer.step()
        self.record(ctx, batch, pl_mask, pl_target)
        return loss.detach()

    def record(self, ctx, batch, pl_mask, pl_target) -> None:
        """Keep the latest pseudo-labels of the batch's samples; log the acceptance rate."""
        st = ctx.state["pseudo_labels"]
        pos = batch.pos.cpu()
        st["mask"][pos] = pl_mask.cpu()
        st["target"][pos] = pl_target.float().cpu()
        unk = (~batch.mask.to(torch.bool)).sum()
        ctx.log(pl_rate=float(pl_mask.sum()) / max(int(unk), 1))


@register
class FedFixMatch(FixMatch):
    """FedMLP's FedFixMatch: FixMatch local training (confidence on every missing class,
    hard labels), FedAvg aggregation, plain partial BCE."""

    name = "fedfixmatch"
    display_name = "FedFixMatch"
    color = "#e7cb94"
    paper = "FedMLP"


@register
class FedAvgFixMatchStar(FixMatch):
    """FedLSM's FedAvg-FixMatch*: FixMatch local training + TDMA head aggregation; the
    supervised BCE weighted by N_neg / N_pos as FedLSM's Task 1 ("as in FPSL")."""

    name = "fedavg_fixmatch_star"
    display_name = "FedAvg-FixMatch*"
    color = "#bd9e39"
    paper = "FedLSM"
    default_head = "tdma"

    def __init__(self, pos_weight: bool = True, **kw: Any):
        super().__init__(pos_weight=pos_weight, **kw)


@register
class FSSLStar(FixMatch):
    """FedLSM's FSSL* [22] (Yang et al., "Federated semi-supervised learning for COVID
    region segmentation in chest CT", MedIA 2021) with TDMA aggregation.

    FSSL trains the unlabelled data on pseudo-labels predicted by the *global* model of
    the previous round; FedLSM only says it is a FedSemi method "easily translated" to
    label set mismatch.  **[choice]** the translation here: the teacher is the received
    global model (frozen for the round, eval mode, weak view), the student trains on the
    strong view (FedLSM uses weak/strong views for all its experiments), and the
    threshold is ``tau = 0.5``, i.e. the global model's hard decision (multi-label: every
    unannotated entry becomes positive (p >= 0.5) or negative; single-label: argmax
    accepted when its probability is >= 0.5).  The FSSL paper's own text could not be
    checked here; pass ``tau=0.95`` for a FixMatch-strength filter.
    """

    name = "fssl_star"
    display_name = "FSSL*"
    color = "#e7298a"
    paper = "FedLSM"
    default_head = "tdma"

    def __init__(self, tau: float = 0.5, teacher: str = "global", pos_weight: bool = True, **kw: Any):
        super().__init__(tau=tau, teacher=teacher, pos_weight=pos_weight, **kw)


@register
class CentralFixMatch(FixMatch):
    """FedPSL's centralised FixMatch: every client's images pooled with their partial
    labels (like :class:`~fedpl_core.methods.baselines.Centralized`), one round = one
    epoch; tau = 0.75 (FedMatch's confidence, which FedPSL reuses), weighted BCE (FedPSL
    Sec. VII-D-3, used for all its methods)."""

    name = "fixmatch"
    display_name = "FixMatch"
    color = "#98df8a"
    paper = "FedPSL"
    federated = False
    default_clients = "pooled"

    def __init__(self, partial: bool = True, tau: float = 0.75, pos_weight: bool = True, **kw: Any):
        super().__init__(partial=partial, tau=tau, pos_weight=pos_weight, **kw)
