"""RSCFed (Liang, Lin, Fu, Zhu, Li; CVPR 2022): random sampling consensus federated
semi-supervised learning, adapted to partial labels (FedMLP's FSSL baseline).

Partial labels as semi-supervision: a client's annotated classes are its labelled part
(BCE over the annotated entries), its missing classes the unlabelled part (per-class
sigmoid, multi-label only).

* **Local training.**  Each client keeps an EMA teacher (``ctx.state["teacher"]``, every
  floating array of the model), initialised from the model it receives the first time it
  trains (RSCFed's ``flag``), updated after every step with
  ``alpha = min(1 - 1/(step+1), ema_decay)`` (``ema_decay = 0.999``, RSCFed ``options.py``).
  The teacher sees one weak view, the student another (:func:`~fedpl_core.fl.views.weak_view`;
  RSCFed: two weak augmentations); the teacher's probability is sharpened (SimPLE's
  ``sharpen``, T = 0.5, which for a Bernoulli is ``sigmoid(z_teacher / T)``) and the student's
  probability is pulled to it by MSE on the *missing* entries:
  ``L = BCE_annotated + lambda_u * mean_missing (sigmoid(z) - sigmoid(z_t / T))^2``.
  **[choice]** ``lambda_u = 1`` (the FedMLP code's weight; RSCFed's 0.02 multiplies a *sum*
  over classes on clients that have no labels at all, trained with SGD at lr 0.021).
  **[choice]** the EMA covers the BatchNorm statistics too (as the FedMLP code; RSCFed
  averages parameters only and leaves its teacher's statistics at their initial values).
  The soft targets of the missing entries of the samples seen are kept in
  ``ctx.state["pseudo_labels"]``.
* **Aggregation: M sub-consensus models, distance-reweighted (DMA).**  Each round the
  server draws ``num_subsets`` (M = 3) subsets of ``subset_size`` (K' = 5, at most the
  number of updates) distinct clients, uniformly, independently per subset (RSCFed
  ``train_main.py``: ``random.sample`` per meta round).  For subset S_m with sizes n_k,
  ``N_m = sum_{k in S_m} n_k``::

      theta_hat_m = sum_k (n_k / N_m) theta_k
      d_k         = sum_arrays ||theta_k - theta_hat_m||_2      (every floating array)
      w_k         = (n_k / N_m) exp(-beta d_k / n_k) / sum_j (n_j / N_m) exp(-beta d_j / n_j)
      theta_m     = sum_k w_k theta_k
      theta       = (1 / M) sum_m theta_m

  with ``beta = dist_scale = 1e4`` (RSCFed ``options.py``; the FedMLP code uses 0.01, which
  makes the weights n_k / N_m to within 1e-6, i.e. plain FedAvg; its sub-federations are
  M = 10 of K' = 6).  **[choice] server-side simulation**: in RSCFed every client of every
  subset trains separately for that subset; here each client trains once per round and
  the server draws the subsets over the round's updates (as the FedMLP code does), seeded
  by ``(seed, server round)``, so runs are reproducible.  With K' >= K every subset is the
  whole round and RSCFed's aggregation is DMA over all clients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..fl.federation import Batch, ClientContext, ClientUpdate, derive_seed
from ..fl.server import Server
from ..fl.views import weak_view
from ..nn.aggregation import weighted_average
from ..nn.losses import masked_bce
from .blocks import clean_batches, clean_local_train, ema_update, init_teacher, record_pseudo_labels, sgd_step  # noqa: F401
from .fedavg import FedAvg
from .registry import register


# ------------------------------------------------------------ DMA
def sample_subsets(num_updates: int, num_subsets: int, subset_size: int, seed: int) -> list[list[int]]:
    """M subsets of ``min(subset_size, num_updates)`` distinct update positions (sorted)."""
    rng = np.random.default_rng(seed)
    k = min(int(subset_size), num_updates)
    return [sorted(rng.choice(num_updates, size=k, replace=False).tolist()) for _ in range(int(num_subsets))]


def dma_weights(states: list[dict[str, torch.Tensor]], sizes: list[float], beta: float) -> list[float]:
    """RSCFed's distance-reweighted weights of one subset (see the module docstring);
    computed in log space so that large ``beta d / n`` cannot underflow to 0 / 0."""
    n = torch.as_tensor(sizes, dtype=torch.float64)
    base = n / n.sum()
    mean = weighted_average(states, base.tolist())
    d = torch.tensor(
        [
            sum(float(torch.linalg.vector_norm((s[k] - mean[k]).double())) for k in mean if mean[k].is_floating_point())
            for s in states
        ],
        dtype=torch.float64,
    )
    return torch.softmax(base.log() - beta * d / n, 0).tolist()


@register
class RSCFed(FedAvg):
    """RSCFed: EMA-teacher consistency on the missing classes, M distance-reweighted
    sub-consensus models averaged (see the module docstring)."""

    name = "rscfed"
    display_name = "RSCFed"
    color = "#6b6ecf"
    paper = "FedMLP"
    train_cost = 1.7  # teachers / prototypes
    option_ranges = {
        "num_subsets": "int>=1",
        "subset_size": "int>=1",
        "dist_scale": ">0",
        "ema_decay": "[0,1]",
        "lambda_u": ">=0",
        "sharpen_t": ">0",
    }
    partial = True
    tasks = ("multilabel",)

    def __init__(
        self,
        num_subsets: int = 3,
        subset_size: int = 5,
        dist_scale: float = 1e4,
        ema_decay: float = 0.999,
        lambda_u: float = 1.0,
        sharpen_t: float = 0.5,
        seed: int = 0,
        **kw: Any,
    ):
        super().__init__(**kw)
        if num_subsets < 1 or subset_size < 1:
            raise ValueError("num_subsets and subset_size must be >= 1")
        self.num_subsets, self.subset_size = int(num_subsets), int(subset_size)
        self.dist_scale, self.ema_decay = float(dist_scale), float(ema_decay)
        self.lambda_u, self.sharpen_t, self.seed = float(lambda_u), float(sharpen_t), int(seed)

    # ---------------------------------------------------------------- server
    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        r = int(server.state.get("round", 0))
        server.state["round"] = r + 1
        subsets = sample_subsets(len(updates), self.num_subsets, self.subset_size, derive_seed(self.seed, r, 4099))
        server.state["last_subsets"] = subsets
        subs = []
        for s in subsets:
            states = [updates[i].state for i in s]
            subs.append(
                weighted_average(states, dma_weights(states, [updates[i].num_samples for i in s], self.dist_scale))
            )
        server.global_state.update(weighted_average(subs))

    # ---------------------------------------------------------------- client
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        init_teacher(ctx)

    def local_train(self, ctx: ClientContext) -> float:
        return clean_local_train(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        x_s, x_t = weak_view(batch.x, ctx.generator), weak_view(batch.x, ctx.generator)
        z_t, _ = ctx.forward_with(ctx.state["teacher"], x_t)
        target = torch.sigmoid(z_t / self.sharpen_t)
        ctx.scratch["target"] = target
        loss = sgd_step(self, ctx, Batch(x_s, batch.y, batch.mask, batch.pos, batch.index))
        ema_update(ctx.state["teacher"], ctx.model, self.ema_decay, int(ctx.state["ema_step"]))
        ctx.state["ema_step"] = int(ctx.state["ema_step"]) + 1
        record_pseudo_labels(ctx, batch.pos, ~batch.mask, target)
        return loss

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        sup = masked_bce(logits, batch.y, batch.mask)
        target = ctx.scratch.get("target")
        if target is None or self.lambda_u == 0:
            return sup
        miss = (~batch.mask).to(logits.dtype)
        unsup = ((torch.sigmoid(logits) - target) ** 2 * miss).sum() / miss.sum().clamp_min(1.0)
        return sup + self.lambda_u * unsup


__all__ = [
    "RSCFed",
    "dma_weights",
    "sample_subsets",
    "ema_update",
    "init_teacher",
    "record_pseudo_labels",
    "clean_batches",
    "clean_local_train",
]
