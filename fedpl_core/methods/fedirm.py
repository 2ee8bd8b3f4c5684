"""FedIRM (Liu, Yuan, Zhu, Xu, Heng; MICCAI 2021): inter-client relation matching,
adapted to partial labels and multi-label (FedMLP's FSSL baseline); any number of classes.

* **Class relation matrix.**  Row c of a relation matrix is the softened class-wise mean
  prediction of the samples of class c: ``R[c] = sigmoid(mean_{x: y_c = 1} z(x) / tau)``,
  tau = 2 (FedIRM: softmax of the class-wise mean logits / tau, tau = 2; multi-label: a
  per-class sigmoid, as the FedMLP code's ``get_confuse_matrix``).  Each client computes
  the rows of its *annotated* classes from its labelled positives (logits of the round's
  training forwards, detached, summed per class, softened once at the end of the round)
  and sends them as declared metadata (``relation`` [C, C], ``relation_counts`` [C]: the
  positives behind each row, 0 for unannotated classes).  The server's row c is the
  count-weighted mean of the clients' rows c (**[choice]**: the pooled weighting; the
  FedMLP code weighs by client size); a row no client reports this round keeps its
  previous value; a class never reported has no global row.
* **Matching on the unlabelled part.**  For each *missing* class c with a global row, the
  client builds its own row from the samples the model calls confidently positive for c
  (``sigmoid(z_c) > confidence = 0.7``, **[choice]**: the FedMLP code's R bound; FedIRM
  uses entropy-filtered argmax pseudo-labels), *with* gradient, and the loss is FedIRM's
  symmetric KL ``(KL(R_local || R_glob) + KL(R_glob || R_local)) / 2``, per entry as
  Bernoulli, summed over the row, averaged over the rows (FedIRM's ``batchmean``).  Rows
  without a confident sample this batch are skipped (**[choice]**; the FedMLP code
  matches a constant 0.5 matrix instead).
* **Mean teacher** (FedIRM's unlabelled clients): an EMA teacher per client (decay 0.99,
  FedIRM / FedMLP code), MSE between student and teacher probabilities on the missing
  entries, student and teacher on two weak views.
* ``L = BCE_annotated + lambda_t (L_MSE + L_IRM)``, ``lambda_t = consistency *
  sigmoid_rampup(t, 0, rampup)``, consistency = 1, rampup = 30 rounds (FedIRM).  The
  confidently called missing entries (p > 0.7 or p < 0.3) are kept in
  ``ctx.state["pseudo_labels"]``.
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, ClientUpdate
from ..fl.server import Server
from ..fl.views import weak_view
from ..nn.losses import masked_bce
from .blocks import clean_local_train, ema_update, init_teacher, record_pseudo_labels, sgd_step, sigmoid_rampup
from .fedavg import FedAvg
from .registry import register


def relation_matrix(logits: torch.Tensor, positives: torch.Tensor, temperature: float = 2.0):
    """``(R, counts)``: ``R[c] = sigmoid(mean of logits over the rows with positives[:, c] / T)``
    (``[C, C]``; rows without a positive are 0.5) and ``counts[c]`` = those rows."""
    pos = positives.to(logits.dtype)
    counts = pos.sum(0)
    mean = pos.t() @ logits / counts.clamp_min(1.0)[:, None]
    return torch.sigmoid(mean / temperature), counts


def symmetric_bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``(KL(p||q) + KL(q||p)) / 2`` per entry, Bernoulli; = ``(p - q)(logit p - logit q) / 2``."""
    p, q = p.clamp(eps, 1 - eps), q.clamp(eps, 1 - eps)
    return (p - q) * (torch.logit(p) - torch.logit(q)) / 2


@register
class FedIRM(FedAvg):
    """FedIRM: class relation matrices from labelled data, matched on the missing classes."""

    name = "fedirm"
    display_name = "FedIRM"
    color = "#b5cf6b"
    paper = "FedMLP"
    train_cost = 1.7  # teachers / prototypes
    option_ranges = {
        "temperature": ">0",
        "consistency": ">=0",
        "rampup": ">=0",
        "ema_decay": "[0,1]",
        "confidence": "[0,1]",
    }
    partial = True
    tasks = ("multilabel",)
    metadata_keys = FedAvg.metadata_keys + ("relation", "relation_counts")

    def __init__(
        self,
        temperature: float = 2.0,
        consistency: float = 1.0,
        rampup: float = 30,
        ema_decay: float = 0.99,
        confidence: float = 0.7,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.temperature, self.consistency, self.rampup = float(temperature), float(consistency), float(rampup)
        self.ema_decay, self.confidence = float(ema_decay), float(confidence)

    # ---------------------------------------------------------------- server
    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        return {
            "state": server.global_state,
            "relation": server.state.get("relation"),
            "relation_known": server.state.get("relation_known"),
        }

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        super().aggregate(server, updates)
        rel = torch.stack([torch.as_tensor(u.metadata["relation"], dtype=torch.float64) for u in updates])
        cnt = torch.stack([torch.as_tensor(u.metadata["relation_counts"], dtype=torch.float64) for u in updates])
        total = cnt.sum(0)
        new = (cnt[:, :, None] * rel).sum(0) / total.clamp_min(1.0)[:, None]
        c = server.info.num_classes
        old = server.state.get("relation", torch.full((c, c), 0.5, dtype=torch.float64))
        known = server.state.get("relation_known", torch.zeros(c, dtype=torch.bool))
        server.state["relation"] = torch.where((total > 0)[:, None], new, old)
        server.state["relation_known"] = known | (total > 0)

    # ---------------------------------------------------------------- client
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        init_teacher(ctx)
        rel, known = payload.get("relation"), payload.get("relation_known")
        ctx.scratch["relation"] = None if rel is None else rel.to(ctx.device, torch.float32)
        ctx.scratch["relation_known"] = None if known is None else known.to(ctx.device)
        c = ctx.info.num_classes
        ctx.scratch["sum_logits"] = torch.zeros(c, c, device=ctx.device)
        ctx.scratch["sum_counts"] = torch.zeros(c, device=ctx.device)
        ctx.scratch["weight"] = self.consistency * sigmoid_rampup(ctx.round, 0, self.rampup)

    def local_train(self, ctx: ClientContext) -> float:
        return clean_local_train(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        x_s, x_t = weak_view(batch.x, ctx.generator), weak_view(batch.x, ctx.generator)
        ctx.scratch["teacher"], _ = ctx.forward_with(ctx.state["teacher"], x_t)
        loss = sgd_step(self, ctx, Batch(x_s, batch.y, batch.mask, batch.pos, batch.index))
        ema_update(ctx.state["teacher"], ctx.model, self.ema_decay, int(ctx.state["ema_step"]))
        ctx.state["ema_step"] = int(ctx.state["ema_step"]) + 1
        p = ctx.scratch.pop("probs")
        conf = (p > self.confidence) | (p < 1 - self.confidence)
        record_pseudo_labels(ctx, batch.pos, ~batch.mask & conf, (p > 0.5).float())
        return loss

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        sup = masked_bce(logits, batch.y, batch.mask)
        labelled_pos = batch.y * batch.mask
        ctx.scratch["sum_logits"] += labelled_pos.t() @ logits.detach()
        ctx.scratch["sum_counts"] += labelled_pos.sum(0)
        p = torch.sigmoid(logits)
        ctx.scratch["probs"] = p.detach()
        miss = ~batch.mask
        mse = ((p - torch.sigmoid(ctx.scratch["teacher"])) ** 2 * miss).sum() / miss.sum().clamp_min(1)
        irm = logits.new_zeros(())
        glob = ctx.scratch.get("relation")
        if glob is not None:
            conf_pos = miss & (p.detach() > self.confidence)
            local, counts = relation_matrix(logits, conf_pos, self.temperature)
            rows = (counts > 0) & ctx.scratch["relation_known"] & ~ctx.data.class_mask.to(logits.device)
            if rows.any():
                irm = symmetric_bernoulli_kl(local[rows], glob[rows]).sum(1).mean()
        return sup + ctx.scratch["weight"] * (mse + irm)

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        upd = super().make_update(ctx)
        cnt = ctx.scratch["sum_counts"]
        rel = torch.sigmoid(ctx.scratch["sum_logits"] / cnt.clamp_min(1.0)[:, None] / self.temperature)
        upd.metadata["relation"] = torch.where((cnt > 0)[:, None], rel, torch.full_like(rel, 0.5)).cpu()
        upd.metadata["relation_counts"] = cnt.cpu()
        return upd


__all__ = ["FedIRM", "relation_matrix", "symmetric_bernoulli_kl"]
