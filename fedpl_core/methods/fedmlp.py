"""FedMLP (Sun, Wu, Shi, Yu, Cheng, Yan; MICCAI 2024): federated multi-label classification
under task heterogeneity (each client annotates a subset of the classes).  The paper is the
specification (``mode="paper"``, default); the released code (szbonaldo/FedMLP at 2ad28b8)
differs, and ``mode="code"`` sets switches that follow it, each also a keyword (see the end
of this docstring; read: ``utils/local_training.py`` ``train_FedMLP``, ``utils/FedAvg.py``,
``utils/FedNoRo.py``, ``main.py``, ``dataset/dataset.py``, ``utils/options.py``).
Notation: AC_k / NC_k the client's active (annotated) / negative (missing) classes, S_c the
clients that annotate class c.

* **Stage 1, warm-up** (rounds ``< warmup_rounds`` = t1; paper 50 of 500 rounds, default 10
  here for short runs): the WPC loss (Eq. 4) over AC_k on logit-adjusted probabilities
  (Eq. 3, ``y' = y pi1 / (y pi1 + (1-y) pi0)`` = ``sigmoid(l + ln(pi1/pi0))`` exactly, so it
  is computed as BCE-with-logits on ``l + ln(pi1/pi0)``; pi_c,1 = the client's positive rate
  of c, clamped to [1e-6, 1-1e-6] **[choice]**), normalised ``1/C`` per sample (Eq. 4), mean
  over the batch; FedAvg (size-weighted, Sec. 2.2).  Augmentation (Sec. 2.2, "data
  augment techniques, inspired by semi-supervised learning", during the warm-up): the
  views are the **engine's** training augmentation (``EngineConfig.augment``; the study
  sets ``flip_affine``, the released code's dataset transform, for every method as the
  released code does), ``num_views`` of them per step in stage 1 (default 2 when WPC is
  on: the released code's ``image_aug_1`` / ``image_aug_2``, losses averaged,
  ``utils/local_training.py`` L935-953), one in stage 2 (L1176-1188) and one whenever
  WPC is off, so that **every component off is FedAvg exactly** (Table 3's first row is
  Table 2's FedAvg).  **[finding, recorded at commit 3d210db]** The views were FixMatch's flip-and-shift
  (1/8 of the size, zero padding) on top of an un-augmented FedAvg: on the cpu
  profile's CXR m = 7 the all-off chain lost 6 points to FedAvg through the views
  alone (``benchmarks/augmentation_cost.py``).
* **Stage 2**: at the end of every round from t1 - 1 on **[choice: so that prototypes
  exist at round t1]** each client computes, with its trained local model on its
  unaugmented data, the dual prototypes P_0, P_1 of its active classes (Eq. 5; true labels
  only, never tags) and its learning degrees d_c^k (Eq. 10, share of sigmoid outputs
  strictly outside [L, R], every class) and sends them as declared metadata.  The server
  averages the prototypes over S_c (Eq. 6: plain mean; a client of S_c without a negative /
  positive of c is left out of P_0 / P_1 **[choice]**) and the degrees (Eq. 10: size-weighted
  over S_c) and sends both back in the payload.  At the start of the next round
  (``receive``) missing-label detection (MLD, Eq. 7-9) runs on the features of the
  *received* model **[choice: the paper does not say which model's features; the released code
  does the same: prototypes from the trained local model at the end of a round, L971-996, MLD
  features from the received model at the start of the next, L1020-1047]**: for each
  missing class with both global prototypes, ``Z = cos(P_0, F) - cos(P_1, F)`` over the
  samples not yet tagged for c; of those with Z >= 0 the ``floor(tau_0 * count)`` largest Z
  are tagged 0, of those with Z < 0 the ``floor(tau_1 * count)`` smallest tagged 1
  (Eq. 8-9's "top tau percent"; **[choice]** floor counts with a 1e-9 tolerance, ties by
  ``torch.topk``); tags are permanent (``ctx.state["pseudo_labels"]``).  tau_0 = d_c T_0,
  tau_1 = d_c T_1 (ST; T_0 = 0.5 %, T_1 = 1 %, L = 0.3, R = 0.7).  With floor counts a
  client of n samples tags nothing for c until ``tau n >= 1``: scale T for small clients.
  Local loss: WPC over active + tagged entries (Sec. 2.4; tagged missing classes use the
  pooled positive rate of the clients in S_c, sent by the server, as pi **[choice: pi of a
  missing class is not defined by the paper]**) + consistency regularisation (CR, Sec. 2.4):
  ``cr_weight`` x MSE between the sigmoid outputs of the local model and of the received
  global model (``ctx.forward_with``, eval mode, same view) over the still-untagged missing
  entries, normalised like WPC, sum / (B C) **[choice: weight 1 and normalisation not given]**.
* **[finding, recorded at commit 5cdc5cd] ST needs a warmed-up model.**  tau = d_c T, and d_c is the share of
  sigmoid outputs outside [L, R] = [0.3, 0.7].  After 3 of the 4 warm-up rounds of notebook
  04's cpu profile (one epoch of ~150 images a round, about 15 local steps a client so far)
  the 5-95 % range of a client's outputs is 0.48-0.50 (mean over classes), so d_c = 0 and
  tau = 0: ST switches tagging off until the model leaves 0.5
  (``benchmarks/fedmlp_tagging.py`` plots ``log/learning_degree`` per round).  The paper
  warms up for 50 epochs of ~3,000 images a client, thousands of steps.
* Table 3 ablation switches: ``mld``, ``wpc`` (off = Eq. 1, BCE over all classes with
  untagged missing entries as 0 and no logit adjustment, i.e. FedAvg), ``cr``, ``st`` (off
  = tau = T).  All off is FedAvg exactly (one engine-augmented view per step).
* Engine settings of the paper (not the method's): ResNet-18 (ImageNet weights), Adam lr
  3e-5 with L2 weight decay, batch 32, one local epoch a round, all clients every round,
  the last-round model (``EngineConfig(selection=None)``).

``mode="code"`` (the released code; each a keyword; files of szbonaldo/FedMLP, lines at
2ad28b8): ``logit_adjust=False`` (``LogitAdjust_Multilabel`` is plain BCE on the sigmoid, its
adjustment commented out, ``utils/FedNoRo.py`` L16-22); ``wpc_norm="code"`` (stage 1: sum /
(nominal batch x ``|AC_k|``), ``local_training.py`` L956-957; stage 2: sum / number of supervised
entries, L1188); ``cr_schedule="code"`` (CR in stage 1 on all missing classes, L958-963; none
in stage 2, where ``loss_dis`` is computed but not added, L1185-1188); ``cr_norm="code"`` (CR
divided by nominal batch x ``|NC_k|``, L958-959; paper mode B x C); ``st=False`` (the counts use
T_0 / T_1 with the tau factor commented out, L1069-1072 and L1093-1094; d_c computed and
logged, tau = T); ``degree_clients="negative"`` (d_c averaged, size-weighted, over the
clients where c is missing: ``main.py`` L223 ``FedAvg_tao(taos, dict_len,
class_negative_client_list)``); ``prototype_weighting="size"`` (Eq. 6 weighted by client
size, ``utils/FedAvg.py`` L72-93).  ``degree_empty=1.0`` gives a class that no client
misses the degree 1.0, as ``FedAvg_tao`` (``utils/FedAvg.py`` L66-67), and is set by
``mode="code"`` (paper mode: ``None``, the mean over all clients); with every client in every
round no client uses that value (MLD and ST read d_c of missing classes only).
``degree_weighting`` (``"size"`` = Eq. 10, ``"mean"``) is the same in both modes.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ..fl.federation import Batch, ClientContext, ClientUpdate
from ..fl.server import Server
from ..nn.losses import masked_bce
from .base import Method
from .blocks import logit_adjusted_bce
from .fedavg import FedAvg
from .registry import register

PAPER = dict(
    logit_adjust=True,
    wpc_norm="classes",
    cr_schedule="paper",
    st=True,
    degree_clients="active",
    prototype_weighting="mean",
    cr_norm="classes",
    degree_empty=None,
)
CODE = dict(
    logit_adjust=False,
    wpc_norm="code",
    cr_schedule="code",
    st=False,
    degree_clients="negative",
    prototype_weighting="size",
    cr_norm="code",
    degree_empty=1.0,
)
EPS = 1e-6


# ============================================================================ pure functions
def adjustment(pos_rate: torch.Tensor) -> torch.Tensor:
    """``ln(pi1 / pi0)`` per class (pi clamped to [1e-6, 1 - 1e-6])."""
    p = torch.as_tensor(pos_rate, dtype=torch.float32).clamp(EPS, 1 - EPS)
    return torch.log(p) - torch.log1p(-p)


def adjusted_probability(prob: torch.Tensor, pos_rate: torch.Tensor) -> torch.Tensor:
    """Eq. 3 literally: ``y pi1 / (y pi1 + (1 - y) pi0)``."""
    p1 = torch.as_tensor(pos_rate, dtype=prob.dtype)
    return prob * p1 / (prob * p1 + (1 - prob) * (1 - p1))


def wpc_loss(
    logits: torch.Tensor, targets: torch.Tensor, known: torch.Tensor, shift: torch.Tensor | None, denom: float
) -> torch.Tensor:
    """Eq. 4 summed over the ``known`` entries on ``logits + shift`` (shift = ln(pi1/pi0)),
    divided by ``denom`` (paper: B x C): the logit-adjusted loss block
    (:func:`~fedpl_core.methods.blocks.logit_adjusted_bce`)."""
    return logit_adjusted_bce(logits, targets, known, shift, denom)


def cr_denominator(norm: str, batch: int, classes: int, nominal_batch: int, missing: int) -> float:
    """The normaliser of CR.  ``"classes"`` (paper mode, **[choice]**: the paper gives none):
    B x C.  ``"code"``: the nominal batch size x ``|NC_k|``, as szbonaldo/FedMLP
    ``utils/local_training.py`` L958-959 ``loss_dis[:, negetive_class_list_client].sum() /
    (self.args.batch_size * len(negetive_class_list_client))``."""
    if norm == "classes":
        return float(batch * classes)
    if norm == "code":
        return float(nominal_batch * missing)
    raise ValueError(f"unknown CR normalisation {norm!r}; use 'classes' or 'code'")


def consistency_loss(probs: torch.Tensor, global_probs: torch.Tensor, sel: torch.Tensor, denom: float) -> torch.Tensor:
    """CR (Sec. 2.4) on one view: ``sum over sel of (p - p_global)^2 / denom`` with p, p_global
    the sigmoid outputs of the local and the received global model (released code:
    ``utils/local_training.py`` L943-950, the MSE of the two per view, averaged over the views)."""
    sq = (probs - global_probs) ** 2
    return (sq * sel.to(sq.dtype)).sum() / max(float(denom), 1.0)


def dual_prototypes(features: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor):
    """Eq. 5: ``([C, 2, d] prototypes, [C, 2] counts)``; row (c, n) is the mean feature of the
    samples with known label ``y^c = n`` (zeros where there is none)."""
    f = features.flatten(1).float()
    out = torch.zeros(labels.shape[1], 2, f.shape[1], device=f.device)
    counts = torch.zeros(labels.shape[1], 2, device=f.device)
    for n in (0, 1):
        sel = (mask & (labels == n)).float()  # [N, C]
        counts[:, n] = sel.sum(0)
        out[:, n] = sel.t() @ f / counts[:, n].clamp_min(1).unsqueeze(1)
    return out, counts


def global_prototypes(
    protos: list[torch.Tensor],
    counts: list[torch.Tensor],
    class_masks: torch.Tensor,
    sizes: list[float],
    weighting: str = "mean",
):
    """Eq. 6: per class and n, the mean (``"mean"``) or client-size-weighted mean (``"size"``)
    of the prototypes of the clients in S_c that have one.  ``([C, 2, d], [C, 2] valid)``."""
    P = torch.stack([p.float() for p in protos])  # [K, C, 2, d]
    has = torch.stack([c > 0 for c in counts]) & class_masks.bool().view(len(protos), -1, 1)  # [K, C, 2]
    w = torch.ones(len(protos)) if weighting == "mean" else torch.as_tensor(sizes, dtype=torch.float32)
    w = has.float() * w.view(-1, 1, 1)
    total = w.sum(0)
    glob = (w.unsqueeze(-1) * P).sum(0) / total.clamp_min(1e-12).unsqueeze(-1)
    return glob, total > 0


def z_score(p0: torch.Tensor, p1: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """Eq. 7: ``cos(P_0, F) - cos(P_1, F)`` per sample (> 0: more likely negative)."""
    f = features.flatten(1).float()
    return F.cosine_similarity(f, p0.float().view(1, -1), dim=1) - F.cosine_similarity(f, p1.float().view(1, -1), dim=1)


def _floor(x: float) -> int:
    return int(math.floor(x + 1e-9))


def select_tags(z: torch.Tensor, tagged: torch.Tensor, tau0: float, tau1: float):
    """Eq. 8-9 over the untagged samples: the ``floor(tau0 * #{Z >= 0})`` largest Z >= 0
    (tag 0) and the ``floor(tau1 * #{Z < 0})`` most negative Z (tag 1).  Returns two index
    tensors into ``z``."""
    free = ~tagged.bool()
    out = []
    for cand, score, tau in ((free & (z >= 0), z, tau0), (free & (z < 0), -z, tau1)):
        idx = torch.nonzero(cand).flatten()
        k = min(_floor(tau * idx.numel()), idx.numel())
        out.append(idx[torch.topk(score[idx], k).indices] if k > 0 else idx[:0])
    return out[0], out[1]


def learning_degree(probs: torch.Tensor, lower: float = 0.3, upper: float = 0.7) -> torch.Tensor:
    """Eq. 10 (left): per class, the share of predictions strictly outside [lower, upper]."""
    return ((probs < lower) | (probs > upper)).float().mean(0)


def global_learning_degree(
    degrees: torch.Tensor,
    sizes: list[float],
    members: torch.Tensor,
    weighting: str = "size",
    empty: float | None = None,
) -> torch.Tensor:
    """Eq. 10 (right): per class the (size-weighted or plain) mean of ``degrees [K, C]`` over
    the clients with ``members[k, c]`` (S_c in the paper).  A class without members gets
    ``empty``; ``None``: the mean over all clients **[choice]**.  The released code's
    ``FedAvg_tao`` (szbonaldo/FedMLP ``utils/FedAvg.py`` L58-70, called at ``main.py`` L223
    with the clients that miss each class) sets 1.0 there."""
    w = torch.ones(len(sizes)) if weighting == "mean" else torch.as_tensor(sizes, dtype=torch.float32)
    m = members.bool()
    has = m.any(0)
    m = torch.where(has.view(1, -1), m, torch.ones_like(m))
    wk = m.float() * w.view(-1, 1)
    out = (wk * degrees.float()).sum(0) / wk.sum(0)
    return out if empty is None else torch.where(has, out, torch.full_like(out, float(empty)))


# ============================================================================ the method
@register
class FedMLP(FedAvg):
    """FedMLP: WPC warm-up, then prototype tagging (MLD + ST) with consistency regularisation.

    Args (paper defaults): mode ``"paper"`` | ``"code"``; warmup_rounds t1 (10 here, paper
    50); lower / upper L, R (0.3, 0.7); t0 / t1 T_0, T_1 (0.005, 0.01); mld, wpc, cr, st
    (Table 3 components); num_views (views per warm-up step; None = 2 with WPC, else
    1); cr_weight (1); logit_adjust, wpc_norm
    (``classes``/``code``), cr_schedule (``paper``/``code``), degree_clients
    (``active``/``negative``), degree_weighting (``size``/``mean``), prototype_weighting
    (``mean``/``size``), cr_norm (``classes``/``code``): see the module docstring.  None =
    the mode's value.  degree_empty: the degree of a class without member clients (None:
    the mean over all clients; the released code 1.0).
    """

    name = "fedmlp"
    display_name = "FedMLP"
    color = "#11a579"
    paper = "FedMLP"
    train_cost = 1.7  # prototypes / teachers
    option_ranges = {
        "warmup_rounds": "int>=0",
        "lower": "[0,1]",
        "upper": "[0,1]",
        "t0": ">=0",
        "t1": ">=0",
        "num_views": "int>=1",
        "cr_weight": ">=0",
        "degree_empty": "[0,1]",
    }
    partial = True
    tasks = ("multilabel",)
    metadata_keys = Method.metadata_keys + ("prototypes", "prototype_counts", "learning_degree")

    def __init__(
        self,
        mode: str = "paper",
        warmup_rounds: int = 10,
        lower: float = 0.3,
        upper: float = 0.7,
        t0: float = 0.005,
        t1: float = 0.01,
        mld: bool = True,
        wpc: bool = True,
        cr: bool = True,
        st: bool | None = None,
        num_views: int | None = None,
        cr_weight: float = 1.0,
        logit_adjust: bool | None = None,
        wpc_norm: str | None = None,
        cr_schedule: str | None = None,
        degree_clients: str | None = None,
        degree_weighting: str = "size",
        prototype_weighting: str | None = None,
        cr_norm: str | None = None,
        degree_empty: float | None = None,
        **kw: Any,
    ):
        super().__init__(**kw)
        if mode not in ("paper", "code"):
            raise ValueError(f"unknown mode {mode!r}; use 'paper' or 'code'")
        given = dict(
            logit_adjust=logit_adjust,
            wpc_norm=wpc_norm,
            cr_schedule=cr_schedule,
            st=st,
            degree_clients=degree_clients,
            prototype_weighting=prototype_weighting,
            cr_norm=cr_norm,
            degree_empty=degree_empty,
        )
        opts = {k: (PAPER if mode == "paper" else CODE)[k] if v is None else v for k, v in given.items()}
        for k, ok in (
            ("wpc_norm", ("classes", "code")),
            ("cr_schedule", ("paper", "code")),
            ("degree_clients", ("active", "negative")),
            ("prototype_weighting", ("mean", "size")),
            ("cr_norm", ("classes", "code")),
        ):
            if opts[k] not in ok:
                raise ValueError(f"unknown {k} {opts[k]!r}; use one of {ok}")
        if degree_weighting not in ("size", "mean"):
            raise ValueError(f"unknown degree_weighting {degree_weighting!r}; use 'size' or 'mean'")
        if num_views is None:
            num_views = 2 if wpc else 1
        if not (0 <= lower <= upper <= 1) or warmup_rounds < 0 or num_views < 1 or min(t0, t1, cr_weight) < 0:
            raise ValueError("need 0 <= lower <= upper <= 1, num_views >= 1, warmup_rounds, t0, t1, cr_weight >= 0")
        self.mode, self.warmup_rounds, self.lower, self.upper = mode, int(warmup_rounds), float(lower), float(upper)
        self.t0, self.t1, self.num_views, self.cr_weight = float(t0), float(t1), int(num_views), float(cr_weight)
        self.mld, self.wpc, self.cr = bool(mld), bool(wpc), bool(cr)
        self.st, self.logit_adjust = bool(opts["st"]), bool(opts["logit_adjust"])
        self.wpc_norm, self.cr_schedule = opts["wpc_norm"], opts["cr_schedule"]
        self.degree_clients, self.degree_weighting = opts["degree_clients"], degree_weighting
        self.prototype_weighting, self.cr_norm = opts["prototype_weighting"], opts["cr_norm"]
        # opts mixes the options' types (object to the checker)
        self.degree_empty = None if opts["degree_empty"] is None else float(opts["degree_empty"])  # type: ignore[arg-type]

    # ---------------------------------------------------------------- server
    def init_server(self, server: Server) -> None:
        server.state["round"] = 0

    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        extra = {
            k: server.state[k] for k in ("prototypes", "prototype_valid", "degree", "pos_rate") if k in server.state
        }
        return {"state": server.global_state, **extra}  # type: ignore[dict-item]

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        super().aggregate(server, updates)  # FedAvg
        server.state["round"] += 1
        md = [u.metadata for u in updates]
        pos = torch.stack([torch.as_tensor(m["positive_counts"], dtype=torch.float32) for m in md]).sum(0)
        cnt = torch.stack([torch.as_tensor(m["label_counts"], dtype=torch.float32) for m in md]).sum(0)
        server.state["pos_rate"] = torch.where(cnt > 0, pos / cnt.clamp_min(1), torch.full_like(cnt, 0.5))
        ups = [u for u in updates if "prototypes" in u.metadata]
        if not ups:
            return
        cm = torch.stack([torch.as_tensor(u.metadata["class_mask"]).bool() for u in ups])
        sizes = [float(u.num_samples) for u in ups]
        P, valid = global_prototypes(
            [u.metadata["prototypes"] for u in ups],
            [u.metadata["prototype_counts"] for u in ups],
            cm,
            sizes,
            self.prototype_weighting,  # type: ignore[arg-type]  # a str option
        )
        server.state["prototypes"], server.state["prototype_valid"] = P, valid
        members = cm if self.degree_clients == "active" else ~cm
        deg = torch.stack([torch.as_tensor(u.metadata["learning_degree"], dtype=torch.float32) for u in ups])
        server.state["degree"] = global_learning_degree(deg, sizes, members, self.degree_weighting, self.degree_empty)

    # ---------------------------------------------------------------- client
    def stage2(self, ctx) -> bool:
        return ctx.round >= self.warmup_rounds

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        ctx.scratch["teacher"] = payload["state"]
        ctx.scratch["payload"] = payload
        self.prepare(ctx)

    def _forward_all(self, ctx):
        """Logits and features of every local sample (unaugmented, eval mode)."""
        ctx.model.eval()
        lg, ft = [], []
        with torch.no_grad(), ctx.autocast():
            for b in ctx.iterate_all():
                logit, feat = ctx.model.forward_features(b.x)
                lg.append(logit.float())
                ft.append(feat.float().flatten(1))
        return torch.cat(lg), torch.cat(ft)

    def pseudo_labels(self, ctx) -> dict[str, torch.Tensor]:
        pl = ctx.state.get("pseudo_labels")
        if pl is None:
            n, C = ctx.data.labels.shape
            pl = ctx.state["pseudo_labels"] = {"mask": torch.zeros(n, C, dtype=torch.bool), "target": torch.zeros(n, C)}
        return pl

    def prepare(self, ctx) -> None:
        """The round's logit shift (the client's positive rates, the pooled rate of a missing
        class) and, in stage 2, MLD on the received model's features."""
        d, pay = ctx.data, ctx.scratch.get("payload", {})
        rate = (d.labels * d.mask).sum(0) / d.mask.sum(0).clamp_min(1)
        pooled = pay.get("pos_rate", torch.full_like(rate, 0.5)).to(rate)
        ctx.scratch["shift"] = adjustment(torch.where(d.class_mask.bool(), rate, pooled)).to(ctx.device)
        if self.stage2(ctx) and self.mld and "prototypes" in pay:
            self.detect(ctx, self._forward_all(ctx)[1], pay)

    def detect(self, ctx, features: torch.Tensor, pay: dict[str, Any]) -> None:
        """MLD (Eq. 7-9) with the ST ratios (Eq. 10) for every missing class; tags are permanent."""
        pl = self.pseudo_labels(ctx)
        P, valid, deg = pay["prototypes"], pay["prototype_valid"], pay["degree"]
        added = pos_added = 0
        missing = [c for c in range(P.shape[0]) if not bool(ctx.data.class_mask[c]) and bool(valid[c].all())]
        for c in missing:
            z = z_score(P[c, 0].to(features.device), P[c, 1].to(features.device), features).cpu()
            scale = float(deg[c]) if self.st else 1.0
            neg, pos = select_tags(z, pl["mask"][:, c], scale * self.t0, scale * self.t1)
            pl["mask"][neg, c] = pl["mask"][pos, c] = True
            pl["target"][neg, c], pl["target"][pos, c] = 0.0, 1.0
            added, pos_added = added + neg.numel() + pos.numel(), pos_added + pos.numel()
        if missing:
            ctx.log(
                tags_added=added,
                tags_positive=pos_added,
                tag_share=added / (ctx.data.n * len(missing)),
                learning_degree=float(torch.as_tensor(deg)[missing].mean()),
            )

    def local_train(self, ctx: ClientContext) -> float:
        """One pass over the round's batches, augmented by the engine (FedAvg's batches)."""
        total, steps = 0.0, 0
        for batch in ctx.batches(train=True):
            total += float(self.train_step(ctx, batch))
            steps += 1
        return total / max(steps, 1)

    def train_step(self, ctx, batch) -> torch.Tensor:
        """One step on the mean of the loss over the batch and, in the warm-up, ``num_views
        - 1`` more engine-augmented views of the same samples."""
        extra = 0 if self.stage2(ctx) else self.num_views - 1
        views = [batch.x] + [ctx.make_batch(batch.pos, train=True).x for _ in range(extra)]
        ctx.optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for x in views:
            with ctx.autocast():
                logits, features = ctx.model.forward_features(x)
            # loss: the float 0.0, then a tensor
            loss = loss + self.loss(
                ctx,
                logits.float(),
                features,  # type: ignore[assignment]
                Batch(x, batch.y, batch.mask, batch.pos, batch.index),
            )
        loss = loss / len(views)
        loss.backward()  # type: ignore[attr-defined]
        ctx.optimizer.step()
        return loss.detach()  # type: ignore[attr-defined]

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """WPC (Eq. 4) over active + tagged entries, + CR (Sec. 2.4) on untagged missing ones."""
        stage2 = self.stage2(ctx)
        B, C = logits.shape
        known, y = batch.mask.bool(), batch.y.float()
        pl = ctx.state.get("pseudo_labels")
        if stage2 and pl is not None:
            tags = pl["mask"][batch.pos].to(known.device)
            y = torch.where(tags, pl["target"][batch.pos].to(y), y)
            known = known | tags
        missing = ~ctx.data.class_mask.bool().to(known.device).view(1, -1).expand(B, C)
        if self.wpc:
            shift = ctx.scratch.get("shift") if self.logit_adjust else None
            if self.wpc_norm == "classes":
                denom = B * C
            elif stage2:
                denom = float(known.sum())  # type: ignore[assignment]
            else:
                denom = ctx.cfg.batch_size * int(ctx.data.class_mask.sum())
            total = wpc_loss(logits, y, known, shift, denom)
        else:  # Eq. 1: missing entries are negatives (tags replace them); FedAvg's own loss
            total = masked_bce(logits, y)
        if self.cr and self.cr_weight > 0:
            if self.cr_schedule == "paper":
                sel = missing & ~known if stage2 else None
            else:
                sel = missing if not stage2 else None
            if sel is not None and bool(sel.any()):
                teacher, _ = ctx.forward_with(ctx.scratch["teacher"], batch.x)  # type: ignore[arg-type]  # has x
                denom = cr_denominator(  # type: ignore[assignment]
                    self.cr_norm,  # type: ignore[arg-type]
                    B,
                    C,
                    ctx.cfg.batch_size,
                    int(missing[0].sum()),
                )
                total = total + self.cr_weight * consistency_loss(
                    torch.sigmoid(logits), torch.sigmoid(teacher.float().detach()), sel, denom
                )
        return total

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        """With, from the warm-up's last round on, the local prototypes (Eq. 5) and learning
        degrees (Eq. 10) of the trained model."""
        meta = {}
        if not (ctx.round < self.warmup_rounds - 1 or not (self.mld or self.st)):
            logits, feats = self._forward_all(ctx)
            d = ctx.data
            P, counts = dual_prototypes(feats, d.labels.to(feats.device), d.mask.to(feats.device).bool())
            meta = {
                "prototypes": P.cpu(),
                "prototype_counts": counts.cpu(),
                "learning_degree": learning_degree(torch.sigmoid(logits), self.lower, self.upper).cpu(),
            }
        upd = super().make_update(ctx)
        upd.metadata.update(meta)
        return upd
