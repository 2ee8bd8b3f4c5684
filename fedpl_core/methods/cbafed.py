"""CBAFed (Li, Lyu, Zhang, Wang, Lu; CVPR 2023): class-balanced adaptive pseudo-labelling
for federated semi-supervised learning, adapted to partial labels (FedMLP's FSSL baseline).

Partial labels as semi-supervision: annotated entries are labelled, missing entries are
pseudo-labelled (per-class sigmoid, multi-label only).

* **Class-balanced adaptive thresholds.**  From the previous round's class distribution of
  labels and pseudo-labels ``p_c`` (summed over the clients' metadata), CBAFed sets
  ``tau_c = p_c + T_base - std(p)`` (sample std, ``Tensor.std()``), clipped above at
  T_upper; ``T_base = 0.84``, ``T_upper = 0.95`` (CBAFed ``train_main.py``; 0.9 on SVHN /
  ISIC).  Rare classes get lower thresholds.  Multi-label **[choice]**: ``p_c`` = positive
  (pseudo-)labels of class c over all positive (pseudo-)labels (a distribution over
  classes, as CBAFed's); an unannotated entry becomes positive when ``sigmoid(z) > tau_c``,
  negative when ``sigmoid(z) < 1 - tau_c`` (the FedMLP code's symmetric rule), which needs
  ``tau_c > 0.5``: **[choice]** a floor ``lower = 0.55`` (the FedMLP code's floor; its base
  is 0.45 and it counts labelled *entries*, not positives).  Before any count (round 0)
  ``p`` is uniform.
* **Pseudo-labels** come from the received model in eval mode on the client's un-augmented
  images, once per round before training (CBAFed: one labelling pass with the received
  model, then training on the selected samples), and are kept in
  ``ctx.state["pseudo_labels"]``.  Loss: BCE over annotated + pseudo-labelled entries,
  averaged over them.
* **Aggregation.**  Client weights = labelled + pseudo-labelled entries (CBAFed weighs
  an unlabelled client by its number of pseudo-labelled samples).  **Residual weight
  connection**: every ``res_every = 5`` rounds (server round r > 0, r % 5 == 0),
  ``theta = res_weight theta_avg + (1 - res_weight) theta_res`` and ``theta_res = theta``,
  ``res_weight = 0.5`` (CBAFed; the FedMLP code: 0.2 in its warm-up, 0.5 after).
  **[choice]** ``theta_res`` starts as the round-0 aggregate (the FedMLP code's; CBAFed's
  is its supervised warm-up model, which here would be the untrained initial model).
"""

from __future__ import annotations

from typing import Any

import torch

from ..fl.federation import Batch, ClientContext, ClientUpdate, copy_arrays
from ..fl.server import Server
from ..nn.aggregation import weighted_average
from ..nn.losses import masked_bce
from .blocks import record_pseudo_labels
from .fedavg import FedAvg
from .registry import register


def cbafed_thresholds(
    counts: torch.Tensor, t_base: float = 0.84, upper: float = 0.95, lower: float = 0.55
) -> torch.Tensor:
    """``clip(p + t_base - std(p), lower, upper)`` with ``p = counts / counts.sum()``
    (uniform when there is no count)."""
    c = torch.as_tensor(counts, dtype=torch.float64).flatten()
    p = c / c.sum() if c.sum() > 0 else torch.full_like(c, 1.0 / c.numel())
    std = p.std() if p.numel() > 1 else torch.zeros(())
    return (p + t_base - std).clamp(lower, upper).float()


@register
class CBAFed(FedAvg):
    """CBAFed: class-balanced adaptive thresholds, residual weight connection."""

    name = "cbafed"
    display_name = "CBAFed"
    color = "#ff9896"
    paper = "FedMLP"
    train_cost = 1.7  # pseudo-labels: teachers / prototypes
    option_ranges = {
        "t_base": "[0,1]",
        "upper": "[0,1]",
        "lower": "[0,1]",
        "res_every": "int>=0",
        "res_weight": "[0,1]",
    }
    partial = True
    tasks = ("multilabel",)
    metadata_keys = FedAvg.metadata_keys + ("pl_positive_counts", "labelled_entries")

    def __init__(
        self,
        t_base: float = 0.84,
        upper: float = 0.95,
        lower: float = 0.55,
        res_every: int = 5,
        res_weight: float = 0.5,
        **kw: Any,
    ):
        super().__init__(**kw)
        if not 0.5 < lower <= upper <= 1:
            raise ValueError("need 0.5 < lower <= upper <= 1 (symmetric positive / negative thresholds)")
        self.t_base, self.upper, self.lower = float(t_base), float(upper), float(lower)
        self.res_every, self.res_weight = int(res_every), float(res_weight)

    def thresholds(self, counts) -> torch.Tensor:
        return cbafed_thresholds(counts, self.t_base, self.upper, self.lower)

    # ---------------------------------------------------------------- server
    def init_server(self, server: Server) -> None:
        server.state["tau"] = self.thresholds(torch.zeros(server.info.num_classes))

    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        return {"state": server.global_state, "tau": server.state["tau"]}

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        r = int(server.state.get("round", 0))
        server.state["round"] = r + 1
        w = [float(u.metadata["labelled_entries"]) for u in updates]
        new = weighted_average([u.state for u in updates], w if sum(w) > 0 else None)
        if r == 0 or "residual" not in server.state:
            server.state["residual"] = copy_arrays(new)
        elif self.res_every > 0 and r % self.res_every == 0:
            new = weighted_average([new, server.state["residual"]], [self.res_weight, 1 - self.res_weight])
            server.state["residual"] = copy_arrays(new)
        server.global_state.update(new)
        counts = torch.stack(
            [torch.as_tensor(u.metadata["pl_positive_counts"], dtype=torch.float64) for u in updates]
        ).sum(0)
        server.state["tau"] = self.thresholds(counts)

    # ---------------------------------------------------------------- client
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        ctx.scratch["tau"] = payload["tau"].to(ctx.device)
        # pseudo-label every unannotated entry the received model is confident about
        tau = ctx.scratch["tau"]
        probs = torch.cat(
            [
                torch.sigmoid(ctx.forward_with({}, b.x)[0])  # type: ignore[arg-type]  # a made batch has x
                for b in ctx.iterate_all()
            ]
        )
        miss = ~ctx.data.mask.to(ctx.device)
        pos, neg = probs > tau, probs < 1 - tau
        mask = miss & (pos | neg)
        ctx.scratch["pl_mask"], ctx.scratch["pl_target"] = mask, pos.float()
        record_pseudo_labels(ctx, torch.arange(ctx.data.n), mask, pos.float())
        ctx.log(pl_share=float(mask.sum()) / max(int(miss.sum()), 1))

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        m = ctx.scratch["pl_mask"][batch.pos.to(ctx.device)]
        y = torch.where(batch.mask, batch.y, ctx.scratch["pl_target"][batch.pos.to(ctx.device)])
        return masked_bce(logits, y, batch.mask | m)

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        upd = super().make_update(ctx)
        meta = upd.metadata
        m, t = ctx.scratch["pl_mask"].cpu(), ctx.scratch["pl_target"].cpu()
        meta["pl_positive_counts"] = meta["positive_counts"] + (t * m).sum(0)
        meta["labelled_entries"] = int(ctx.data.mask.sum()) + int(m.sum())
        return upd


__all__ = ["CBAFed", "cbafed_thresholds"]
