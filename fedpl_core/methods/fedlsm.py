"""FedLSM (Deng, Luo, Chen; MICCAI 2023): "Scale Federated Learning for Label Set Mismatch in
Medical Image Classification".  Sec. 2.3-2.4, Eqs. 3-7, Table 4.

Each client k identifies a class set I_k (its labels) and not U_k.  Per round:

* **UE** (uncertainty estimation, Sec. 2.3, Eq. 3), in ``receive`` with the received
  global model in eval mode over every local sample: multi-label, the binary entropy of
  each class of U_k divided by ln 2 (in [0, 1]), averaged over U_k; single-label, the
  softmax entropy (Eq. 3) divided by ln C.  The n_l lowest form D_l, the n_h highest D_h,
  the rest D_m.  **[choice]** The paper "empirically determine[s]" n_l, n_h without values
  (Table 4 has none): defaults are fractions of the client's data from the released
  configs, ``certain_num`` 2000 / ``uncertain_num`` 500 of ~9,800 CXR images per client
  (0.2 / 0.05) and 200 / 50 of ~1,400 ISIC images (0.14 / 0.036); a whole number >= 1
  is a count (the paper's "top-n"), a number in [0, 1) a share.
* **Pseudo-labelling** on D_l u D_m (Eqs. 4-5): an EMA teacher (decay 0.999, Table 4;
  parameters averaged, buffers copied) labels a weak view, the student trains on a strong
  view.  **[choice]** ``augment="paper"`` (default): the paper's views (Sec. 3.2: weak =
  horizontal flip; strong = flips, rotation, translation, scaling, one of Gaussian blur /
  noise / median blur; :func:`paper_strong_view`, magnitudes from the released pipeline);
  ``augment="fixmatch"``: the package's shared ``views.weak_view`` / ``views.strong_view``
  (RandAugment + Cutout), which on 28 px colour lesions slowed learning markedly in a
  smoke run (colour operations and Cutout hide the class cue).  Pseudo-labels of the main
  batch are kept in ``ctx.state["pseudo_labels"]`` (latest per sample).  Multi-label (Eq. 5): class
  c of U_k is 1 when p >= tau_p, 0 when p <= tau_n, ignored otherwise; known classes keep
  their labels with BCE whose positive term is weighted N_neg / N_pos of the client's
  labels ("weighted binary cross-entropy as in FPSL", Sec. 3.2; ``losses.class_pos_weight``,
  weight 1 on U_k).  Single-label (Eq. 4): a sample without a label (its class is not in
  I_k) gets y_hat = argmax of the teacher's softmax when that probability >= tau and
  **[choice, literal Eq. 4]** y_hat is in U_k; labelled samples keep CE.
  **[choice] Reduction:** both terms of Eq. 5 (and L_I) are summed over classes and
  divided by the number of samples N of the batch, as Eq. 5 writes; Eq. 4's L_U divides by
  N_U (unlabelled samples of the batch), L_I is the mean CE over labelled samples.
* **UDE** (Eq. 6): ``mix_batch`` = 4 pairs per step ("total batch size 64 with 4 generated
  samples", Sec. 3.2), x_l from D_l and x_h from D_h (**[choice]** un-augmented images,
  labelled by the teacher on those same images, as the released code), one lambda ~ Beta(0.2,
  0.2) per batch, targets = labels / teacher pseudo-labels, with tau_lp / tau_ln (tau_l
  single-label) for D_h, weight lambda_u = 0.1 (Table 4).  **[choice]** an entry (a pair,
  single-label) enters L_UDE only when it is labelled or confidently pseudo-labelled in
  both samples; L_UDE is BCE summed over classes (known classes' positive term weighted
  as in L_I) / soft-target CE, averaged over the pairs.
* **Batches [choice, as the released code]:** the main batch (``batch_size - mix_batch``)
  is drawn from D_l u D_m only; D_h enters through UDE only.
* **Warm-up [paper]:** "After local models are trained and aggregated on the central
  server, the resulting global model can identify the entire class set C.  Thereafter, we
  can use pseudo labeling" (Sec. 2.3, Pseudo Labeling): for ``warmup_rounds`` = 1 round
  clients train on their own labels only (no UE / pseudo-labels / UDE; batches of the
  engine's ``ctx.batches()``, known-label loss as above).
* **AWPA** (Eq. 7, Sec. 2.4): encoder (and BatchNorm buffers) by size-weighted FedAvg; head
  row c and its bias by q_c^k, sent as metadata ``class_counts``: the client's positive
  labels of c for c in I_k, and for c in U_k the number of its samples whose latest
  pseudo-label of c is positive (q_c^k = sum_i y_hat_c^i over its n_k samples, Eq. 7;
  ``ctx.state["pseudo_labels"]``).  A class with zero total weight keeps its previous row.
  ``awpa=False`` is Table 3's "Ours* w/o AWPA" with "masked aggregation of proxies":
  **[choice]** FedPSL's TDMA weights (n_k for the classes client k labels, 0 otherwise).
  Both are row-wise head blocks (``head="awpa"`` / ``"tdma"``,
  :func:`~fedpl_core.methods.blocks.rowwise_head_aggregate`).
* **Teacher [choice, flag for review]:** the paper says "the teacher model and student
  model both are initialized from the global model" and the released code rebuilds the
  EMA from the received model every round (``hooks.EMA.before_train``): ``teacher_reset=
  True`` (default).  ``teacher_reset=False`` keeps each client's teacher across rounds in
  ``ctx.state["teacher"]`` (first initialised from the global model), as the package's first
  specification of FedLSM read it;
  with decay 0.999 and 30 steps a round that teacher stays near the random initial model
  for many rounds.
* **Optimiser:** Adam with momentum terms 0.9 / 0.99 (Sec. 3.2; set on the optimizer's
  parameter groups, ``adam_betas``).  lr 1e-4 and "lr_decay" 5e-4 (Table 4; **[choice]**
  read as Adam weight decay, as the released config's ``weight_decay``), batch 64 and the
  local iterations (200 multi-label / 30 single-label, Sec. 3.2) belong to the engine:
  ``EngineConfig(optimizer="adam", lr=1e-4, weight_decay=5e-4, batch_size=64,
  local_iters=200 or 30)`` (:data:`PAPER_ENGINE`, :data:`LOCAL_ITERS`); the notebook sets them.

Ablations (Table 3): ``ue=False`` ("w/o UE"): **[choice]** no split: every sample is in the
pseudo-labelling pool and UDE mixes random pairs of the whole data with the D_l thresholds;
``ude=False``: no MixUp (the main batch takes the full ``batch_size``; D_h is unused);
``awpa=False``: masked aggregation (above).

``mode="code"`` switches to the released code's behaviour.  The code (dzp2095/FedLSM at
c1c0e6f) was read: ``src/modules/cxr_trainer.py`` (multi-label step), ``skin_trainer.py``
(single-label step), ``src/datasets/data_pool_cxr.py`` (UE split), ``dataset_cxr.py``,
``src/fl/server.py`` / ``client.py``, ``src/modules/hooks.py``, ``src/model/ema.py`` and
``configs/*/run_conf.yaml``.  Each switch is also a keyword, ``None`` = follow ``mode``:

* ``scalar_reduction``: multi-label ``mean(BCE(z, t)) * mean(W)`` with W = pos-weights on
  known classes and pos-weight x confidence mask on U_k (``cxr_trainer.py`` L110-112, L147;
  the mask and weights only scale the loss); unconfident U_k entries get soft targets t =
  sigmoid(teacher).  The client's pos-weights here are 1 on U_k (``class_pos_weight``), so
  on U_k W is the mask unless other pos-weights are given.  UDE likewise with the mask
  "confident in both" over all classes.  Single-label: CE averaged over all rows, a row
  without (pseudo-)label contributing 0.
* ``lambda_on_uncertain``: UDE's MixUp puts lambda on the D_h sample, ``lam * x_h + (1 -
  lam) * x_l`` (``cxr_trainer.py`` L142, L157-165; ``skin_trainer.py`` L133, L147-155), where
  Eq. 6 is read as lambda on x_l (:func:`ude_mix`).
* ``code_entropy``: multi-label score = mean over *all* C classes of -p ln p with p =
  sigmoid on U_k and 0 on I_k; single-label: -sum p ln p, unnormalised.
* ``swap_negative_thresholds``: tau_n and tau_ln swapped (code 0.01 for D_l u D_m, 0.005 for D_h).
* ``entropy_train_mode``: the UE pass in train mode (BatchNorm uses batch statistics and
  updates its running statistics, which the student and teacher then start from).
* ``pseudo_from_round0``: no warm-up round.
* ``adam_betas`` (0.9, 0.9999) from the released configs.  Not reproduced: the code's global
  pos-weights (computed from every client's labels), its kept Adam state across rounds
  (``EngineConfig(optimizer_state="keep")``), its single-label UDE pseudo-labels, which
  never apply (``~any(softmax)`` is always False), and its AWPA counts (q_c^k counted per
  sampled batch over the round's steps, ``cxr_trainer.py`` L106-107, ``skin_trainer.py`` L109).
  Nor its schedule: the released chest X-ray config trains ``local_iter: 10`` a round, not the
  paper's 200 (Sec. 3.2), which the paper profile follows.  With 10 steps the EMA teacher stays
  within 1 % of the global model; with 200 it drifts with its student, and in paper mode the
  student's false positives on rare unknown classes then take over the head through AWPA's
  pseudo-label counts (``benchmarks/fedlsm_teacher.py``).

**Findings** (notebook 02's cpu profile, 3 seeds, last round; recorded at commit 98c26c6, so re-run
notebook 02 to check them on today's code):

* *Which FedAvg?*  The paper's TDMA adds 5 points in Task 1 (FedAvg 0.710 -> FedAvg* 0.760).
  The released code has no FedAvg, so both readings run (``studies.fedlsm.TDMA_GRID``, same
  weighted BCE, each pair differing by the aggregation only): with the partial loss TDMA adds
  +1.8 points (p = 0.29), with unknown labels trained as negatives +0.6 (p = 0.55).  Neither
  reproduces the paper's gain here (``figures/02_tdma_readings.md``).
* *Paper mode and code mode*: ``mode="code"`` is not better than paper mode (Task 1 -1.8,
  p = 0.49; Task 2 AUC -1.2, p = 0.57) and is below FedAvg* in both tasks
  (``figures/02_code_mode.md``).
* Why FedLSM trails FedAvg and FedAvg* in Task 1: its pseudo-labels never engage in the 10 rounds (at
  the paper's thresholds the teacher's probabilities on unknown classes stay near 0.5, mean
  uncertainty 0.99; ``pl/coverage`` 0 every round, ``figures/02_diagnostics_1.md``), so FedLSM
  is its strong-view training on D_l u D_m without pseudo-labels, and the strong view alone
  accounts for the gap: FedAvg* trained on it (``benchmarks/fedlsm_strong_view.py``) falls
  from 73.7 to 65.6 (-8.1, p = 0.13), level with FedLSM's 67.3 (p = 0.37); Task 2 AUC
  90.6 -> 88.2 (-2.4, p = 0.12), FedLSM 87.2.
* *Real data* (HAM10000, Task 2, 28 px, the small CNN, 40 rounds x 30 iterations):
  FedLSM - FedAvg* AUC +1.2 (p = 0.52), accuracy -8.2 (p = 0.051), F1 +0.7 (p = 0.81);
  FedAvg* - FedAvg AUC -4.5 (p = 0.020) (``figures/02_real_ham10000_long.md``).

Logged per client and round (``ctx.log``): ``share_dl`` / ``share_dm`` / ``share_dh`` (the
split), ``uncertainty`` (mean score), ``pl_share`` (share of the unknown entries of the
round's main batches that got a pseudo-label; single-label: of the unlabelled samples).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from ..fl import views
from ..fl.federation import Batch, ClientContext, ClientUpdate
from ..nn.losses import class_pos_weight
from .base import Method
from .blocks import sgd_step
from .registry import register

PAPER_ENGINE = dict(optimizer="adam", lr=1e-4, weight_decay=5e-4, batch_size=64)
LOCAL_ITERS = {"multilabel": 200, "multiclass": 30}
# Table 4 (tau_l: D_h's single-label threshold; tau_lp / tau_ln: D_h's multi-label ones)
TABLE4 = dict(
    tau=0.95,
    tau_l=0.85,
    tau_p=0.85,
    tau_n=5e-3,
    tau_lp=0.7,
    tau_ln=1e-2,
    lambda_u=0.1,
    ema_decay=0.999,
    mixup_alpha=0.2,
)
SPLIT = {"multilabel": (0.2, 0.05), "multiclass": (0.14, 0.036)}  # (n_l, n_h), released configs
CODE_SWITCHES = (
    "scalar_reduction",
    "code_entropy",
    "swap_negative_thresholds",
    "entropy_train_mode",
    "pseudo_from_round0",
    "lambda_on_uncertain",
)


# ------------------------------------------------------------------ pure pieces (tested)
def uncertainty(logits: torch.Tensor, class_mask: torch.Tensor, task: str, code: bool = False) -> torch.Tensor:
    """``[n]`` uncertainty scores from the global model's logits (Eq. 3, see module doc)."""
    z = logits.double()
    if task == "multiclass":
        p = z.softmax(1)
        h = torch.special.entr(p).sum(1)
        return h if code else h / math.log(z.shape[1])
    unknown = ~class_mask.to(torch.bool)
    p = torch.sigmoid(z)
    if code:
        return torch.special.entr(p * unknown).mean(1)
    if not unknown.any():
        return torch.zeros(z.shape[0], dtype=z.dtype)
    h = (torch.special.entr(p) + torch.special.entr(1 - p)) / math.log(2.0)
    return h[:, unknown].mean(1)


def split_counts(n: int, n_l: float, n_h: float) -> tuple[int, int]:
    """(n_l, n_h) as counts: a whole number >= 1 is a count of samples (the paper's
    "top-n_k^l lowest entropy", Sec. 2.3), a number in [0, 1) a share of n (rounded);
    capped so that D_l and D_h are disjoint (D_h first)."""

    def count(v):
        return int(v) if float(v) >= 1 else int(round(float(v) * n))

    h = min(count(n_h), n)
    return min(count(n_l), n - h), h


def split_by_uncertainty(scores: torch.Tensor, n_l: int, n_h: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Positions of D_l (n_l lowest), D_m (the rest) and D_h (n_h highest); ties by position."""
    order = torch.sort(scores, stable=True).indices
    n = scores.numel()
    low, high = order[:n_l], order[n - n_h :] if n_h else order[:0]
    mid = order[n_l : n - n_h]
    return low.sort().values, mid.sort().values, high.sort().values


def multilabel_targets(
    probs: torch.Tensor, labels: torch.Tensor, known: torch.Tensor, tau_p: float, tau_n: float, soft: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. 5's targets: ``(target, mask, confident)``.  Known entries keep their labels;
    an unknown entry is 1 when p >= tau_p, 0 when p <= tau_n (``confident``), otherwise
    ignored (``mask`` False; target p when ``soft``, else 0)."""
    pos, neg = probs >= tau_p, probs <= tau_n
    confident = (pos | neg) & ~known
    pseudo = torch.where(
        pos,
        torch.ones_like(probs),
        torch.where(neg, torch.zeros_like(probs), probs if soft else torch.zeros_like(probs)),
    )
    target = torch.where(known, labels, pseudo)
    return target, known | confident, confident


def multilabel_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    known: torch.Tensor,
    pos_weight: torch.Tensor | None = None,
    scalar: bool = False,
) -> torch.Tensor:
    """L_I + L_U of Eq. 5.  Paper: sum over the entries in ``mask`` of BCE (positive term
    weighted by ``pos_weight``), divided by the number of samples.  ``scalar`` (code):
    ``mean(BCE) * mean(W)``, W = pos_weight on known entries and pos_weight x ``mask``
    elsewhere (dzp2095/FedLSM ``src/modules/cxr_trainer.py`` L111-112 ``p_weight = pos_weight *
    pseudo_mask`` then ``p_weight[:, label_mask==1] = pos_weight[label_mask==1]``; L147
    ``(BCE_mean * p_weight).mean()``)."""
    if scalar:
        pw = torch.ones(logits.shape[1], device=logits.device) if pos_weight is None else pos_weight
        pw = pw.to(logits).expand_as(logits)
        w = torch.where(known, pw, pw * mask.to(logits.dtype))
        return F.binary_cross_entropy_with_logits(logits, target) * w.mean()
    per = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight, reduction="none")
    return (per * mask).sum() / max(logits.shape[0], 1)


def singlelabel_targets(
    probs: torch.Tensor, labels: torch.Tensor, labelled: torch.Tensor, class_mask: torch.Tensor, tau: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4: ``(target [B, C], pseudo [B])``: a labelled row keeps its one-hot label; an
    unlabelled row gets the one-hot teacher argmax when its probability >= tau and the
    class is unknown to the client, else a zero row."""
    conf, arg = probs.max(1)
    pseudo = ~labelled & (conf >= tau) & ~class_mask.to(torch.bool)[arg]
    onehot = F.one_hot(arg, probs.shape[1]).to(probs.dtype)
    target = torch.where(labelled[:, None], labels, onehot * pseudo[:, None])
    return target, pseudo


def soft_ce(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-row ``-sum_c t_c log softmax(z)_c`` (0 for a zero row)."""
    return -(target * F.log_softmax(logits, 1)).sum(1)


def singlelabel_loss(logits, target, labelled, pseudo, scalar: bool = False) -> torch.Tensor:
    """L_I (mean CE over labelled rows) + L_U (Eq. 4: CE over pseudo-labelled rows / N_U).
    ``scalar`` (code): CE averaged over every row."""
    ce = soft_ce(logits, target)
    if scalar:
        return ce.mean()
    n_lab = labelled.sum()
    l_i = (ce * labelled).sum() / n_lab.clamp_min(1)
    l_u = (ce * pseudo).sum() / (~labelled).sum().clamp_min(1)
    return l_i + l_u


def ude_mix(x_l, y_l, x_h, y_h, lam: float, lam_on_uncertain: bool = False):
    """Eq. 6's MixUp of a D_l sample with a D_h sample: ``(x_mix, y_mix)``.  Paper
    (default): ``lam * x_l + (1 - lam) * x_h``.  ``lam_on_uncertain`` (code):
    ``lam * x_h + (1 - lam) * x_l``, as dzp2095/FedLSM ``src/modules/cxr_trainer.py`` L142
    ``self._mixup(u_img, c_img, u_label, c_label)`` with L157-165 ``weight * img1 + (1 -
    weight) * img2`` (img1 = the uncertain sample); ``skin_trainer.py`` L133 / L147-155 alike."""
    if lam_on_uncertain:
        return views.mixup(x_h, y_h, x_l, y_l, lam)
    return views.mixup(x_l, y_l, x_h, y_h, lam)


def ude_multilabel(
    x_l,
    x_h,
    p_l,
    p_h,
    y_l,
    y_h,
    known,
    lam: float,
    taus_l: tuple[float, float],
    taus_h: tuple[float, float],
    scalar: bool = False,
    lam_on_uncertain: bool = False,
):
    """UDE (Eq. 6) for a multi-label batch of pairs: ``(x_mix, y_mix, mask)``.

    Targets: labels on known classes, teacher pseudo-labels elsewhere with ``taus_l`` =
    (tau_p, tau_n) for D_l and ``taus_h`` = (tau_lp, tau_ln) for D_h (soft probabilities
    on unconfident entries when ``scalar``).  ``mask``: paper, entries labelled or
    confidently pseudo-labelled in both samples; code (``scalar``), entries the teacher
    is confident about in both samples, on every class (the released code's mask).
    Mixing: :func:`ude_mix` (``lam_on_uncertain``: lambda on x_h, as the released code)."""
    t_l, m_l, _ = multilabel_targets(p_l, y_l, known, *taus_l, soft=scalar)
    t_h, m_h, _ = multilabel_targets(p_h, y_h, known, *taus_h, soft=scalar)
    if scalar:
        mask = ((p_l >= taus_l[0]) | (p_l <= taus_l[1])) & ((p_h >= taus_h[0]) | (p_h <= taus_h[1]))
    else:
        mask = m_l & m_h
    x_mix, y_mix = ude_mix(x_l, t_l, x_h, t_h, lam, lam_on_uncertain)
    return x_mix, y_mix, mask


@torch.no_grad()
def ema_update(
    teacher: dict[str, torch.Tensor], params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], decay: float
) -> None:
    """In place: teacher parameters ``decay * t + (1 - decay) * s``; buffers copied."""
    for k, p in params.items():
        teacher[k].mul_(decay).add_(p.detach(), alpha=1.0 - decay)
    for k, b in buffers.items():
        teacher[k].copy_(b)


def paper_weak_view(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """FedLSM's weak augmentation: "horizontal flip" (Sec. 3.2), p = 0.5 per sample."""
    flip = torch.rand(x.shape[0], generator=generator).lt(0.5).to(x.device).view(-1, 1, 1, 1)
    return torch.where(flip, x.flip(-1), x)


def paper_strong_view(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """FedLSM's strong augmentation (Sec. 3.2: "random flip, rotation, translation, scaling
    and one of the blur transformations in gaussian blur, gaussian noise and median
    blur").  **[choice]** Magnitudes and probabilities from the released albumentations
    pipeline: horizontal and vertical flips (p 0.5 each), brightness shift of up to 0.2 of
    the image's range (p 0.75), one of median blur / Gaussian blur (kernel 3 or 5, drawn per
    batch) / Gaussian noise (std 2.2-5.5 of 255 levels, of the image's range) (p 0.7), then
    shift <= 0.1, scale 1 +- 0.1, rotation <= 15 degrees (p 0.85, zero fill).  On the
    preprocessed float batch; photometric magnitudes relative to each image's own range."""
    g, b, dev = generator, x.shape[0], x.device
    u = lambda *s: torch.rand(*s, generator=g).to(dev)  # noqa: E731
    x = torch.where(u(b).lt(0.5).view(-1, 1, 1, 1), x.flip(-1), x)
    x = torch.where(u(b).lt(0.5).view(-1, 1, 1, 1), x.flip(-2), x)
    lo, hi = x.amin(dim=(1, 2, 3), keepdim=True), x.amax(dim=(1, 2, 3), keepdim=True)
    span = (hi - lo).clamp_min(1e-6)
    bright = (u(b) * 0.4 - 0.2) * u(b).lt(0.75)
    x = x + bright.view(-1, 1, 1, 1) * span
    op = torch.where(u(b).lt(0.7), (u(b) * 3).long().clamp_max(2), torch.full((b,), -1, device=dev))
    k = 3 if float(u(1)) < 0.5 else 5
    out = x.clone()
    pad = (k // 2,) * 4
    if bool((op == 0).any()):  # median blur
        xs = F.pad(x[op == 0], pad, mode="replicate")
        patches = xs.unfold(2, k, 1).unfold(3, k, 1)
        out[op == 0] = patches.reshape(*patches.shape[:4], -1).median(-1).values
    if bool((op == 1).any()):  # Gaussian blur, sigma as OpenCV's default for the kernel size
        sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8
        t = torch.arange(k, device=dev, dtype=x.dtype) - k // 2
        w1 = torch.exp(-(t**2) / (2 * sigma**2))
        w2 = (w1[:, None] * w1[None, :]) / w1.sum() ** 2
        c = x.shape[1]
        out[op == 1] = F.conv2d(F.pad(x[op == 1], pad, mode="replicate"), w2.expand(c, 1, k, k).contiguous(), groups=c)
    if bool((op == 2).any()):  # Gaussian noise, variance 5-30 on 0-255 levels
        n2 = int((op == 2).sum())
        std = torch.sqrt(u(n2) * 25 + 5) / 255.0
        noise = torch.randn(x[op == 2].shape, generator=g).to(dev)
        out[op == 2] = x[op == 2] + noise * (std.view(-1, 1, 1, 1) * span[op == 2])
    theta = torch.zeros(b, 2, 3, device=dev, dtype=x.dtype)
    ang = torch.deg2rad((u(b) * 30 - 15).to(x.dtype))
    scale = (1 + (u(b) * 0.2 - 0.1)).to(x.dtype)
    on = u(b).lt(0.85)
    ang, scale = torch.where(on, ang, torch.zeros_like(ang)), torch.where(on, scale, torch.ones_like(scale))
    shift = (u(2, b) * 0.2 - 0.1).to(x.dtype) * 2 * on  # grid units span 2
    theta[:, 0, 0], theta[:, 0, 1] = torch.cos(ang) / scale, -torch.sin(ang) / scale
    theta[:, 1, 0], theta[:, 1, 1] = torch.sin(ang) / scale, torch.cos(ang) / scale
    theta[:, 0, 2], theta[:, 1, 2] = shift[0], shift[1]
    grid = F.affine_grid(theta, list(out.shape), align_corners=False)
    return F.grid_sample(out, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _cycle(pool: torch.Tensor, bs: int, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Endless seeded shuffled batches of ``pool`` (one batch of all when it is smaller)."""
    bs = min(bs, pool.numel())
    while True:
        perm = pool[torch.randperm(pool.numel(), generator=generator)]
        for s in range(0, pool.numel() - bs + 1, bs):
            yield perm[s : s + bs]


# ------------------------------------------------------------------ the method
@register
class FedLSM(Method):
    """FedLSM (MICCAI 2023): UE + pseudo-labelling + UDE locally, AWPA on the server.

    Options (defaults: Table 4 / Sec. 3.2 unless noted; see the module docstring):

    * ``mode``: ``"paper"`` or ``"code"`` (sets every switch of :data:`CODE_SWITCHES`).
    * ``awpa``, ``ude``, ``ue``: the components of Table 3.
    * ``tau``, ``tau_l``: single-label thresholds (D_l u D_m, D_h).
    * ``tau_p``, ``tau_n``, ``tau_lp``, ``tau_ln``: multi-label positive / negative thresholds
      (D_l u D_m, D_h).
    * ``lambda_u``: weight of L_UDE; ``mixup_alpha``: Beta(alpha, alpha); ``mix_batch``: pairs
      per step.
    * ``ema_decay``: the teacher's EMA decay; ``teacher_reset``: rebuild the teacher from the
      global model each round.
    * ``n_l``, ``n_h``: sizes of D_l, D_h: a whole number >= 1 is a count of samples (the
      paper's top-n), a number in [0, 1) a share of the client's samples; ``None`` =
      :data:`SPLIT` by task.
    * ``warmup_rounds``: rounds on own labels before pseudo-labelling (paper 1).
    * ``pos_weight``: N_neg / N_pos weighting of the known-class BCE (Task 1).
    * ``augment``: ``"paper"`` (the paper's views) or ``"fixmatch"`` (``fedpl_core.fl.views``).
    * ``strong_ops``, ``strong_magnitude``: ``views.strong_view``'s settings (``fixmatch`` only).
    * ``adam_betas``: set on the optimizer when it has betas (``None``: leave it).
    """

    name = "fedlsm"
    display_name = "FedLSM"
    color = "#7f3c8d"
    paper = "FedLSM"
    train_cost = 2.0  # EMA teacher, MixUp batch
    option_ranges = {
        "tau": "[0,1]",
        "tau_l": "[0,1]",
        "tau_p": "[0,1]",
        "tau_n": "[0,1]",
        "tau_lp": "[0,1]",
        "tau_ln": "[0,1]",
        "lambda_u": ">=0",
        "ema_decay": "[0,1]",
        "mixup_alpha": ">0",
        "mix_batch": "int>=0",
        "n_l": "[0,1)|int>=1",
        "n_h": "[0,1)|int>=1",
        "warmup_rounds": "int>=0",
        "strong_ops": "int>=0",
        "strong_magnitude": ">=0",
    }
    partial = True
    metadata_keys = Method.metadata_keys + ("class_counts",)

    def __init__(
        self,
        mode: str = "paper",
        awpa: bool = True,
        ude: bool = True,
        ue: bool = True,
        tau: float = TABLE4["tau"],
        tau_l: float = TABLE4["tau_l"],
        tau_p: float = TABLE4["tau_p"],
        tau_n: float = TABLE4["tau_n"],
        tau_lp: float = TABLE4["tau_lp"],
        tau_ln: float = TABLE4["tau_ln"],
        lambda_u: float = TABLE4["lambda_u"],
        ema_decay: float = TABLE4["ema_decay"],
        mixup_alpha: float = TABLE4["mixup_alpha"],
        mix_batch: int = 4,
        teacher_reset: bool = True,
        n_l: float | None = None,
        n_h: float | None = None,
        warmup_rounds: int | None = None,
        pos_weight: bool = True,
        augment: str = "paper",
        strong_ops: int = 2,
        strong_magnitude: float = 10,
        adam_betas: tuple[float, float] | None | str = "auto",
        scalar_reduction: bool | None = None,
        code_entropy: bool | None = None,
        swap_negative_thresholds: bool | None = None,
        entropy_train_mode: bool | None = None,
        pseudo_from_round0: bool | None = None,
        lambda_on_uncertain: bool | None = None,
        **kw: Any,
    ):
        kw.setdefault("head", "awpa" if awpa else "tdma")  # AWPA (Eq. 7) / masked aggregation
        super().__init__(**kw)
        if mode not in ("paper", "code"):
            raise ValueError(f"unknown mode {mode!r}; use 'paper' or 'code'")
        code = mode == "code"
        pick = lambda v: code if v is None else bool(v)  # noqa: E731
        self.mode = mode
        self.scalar_reduction, self.code_entropy = pick(scalar_reduction), pick(code_entropy)
        self.swap_negative_thresholds, self.entropy_train_mode = (
            pick(swap_negative_thresholds),
            pick(entropy_train_mode),
        )
        self.pseudo_from_round0, self.lambda_on_uncertain = pick(pseudo_from_round0), pick(lambda_on_uncertain)
        self.awpa, self.ude, self.ue = bool(awpa), bool(ude), bool(ue)
        self.tau, self.tau_l, self.tau_p, self.tau_lp = float(tau), float(tau_l), float(tau_p), float(tau_lp)
        self.tau_n, self.tau_ln = (
            (float(tau_ln), float(tau_n)) if self.swap_negative_thresholds else (float(tau_n), float(tau_ln))
        )
        self.lambda_u, self.ema_decay, self.mixup_alpha = float(lambda_u), float(ema_decay), float(mixup_alpha)
        self.mix_batch, self.teacher_reset = int(mix_batch), bool(teacher_reset)
        self.n_l, self.n_h = n_l, n_h
        if warmup_rounds is None:
            warmup_rounds = 0 if self.pseudo_from_round0 else 1
        self.warmup_rounds = int(warmup_rounds)
        self.pos_weight = bool(pos_weight)
        if augment not in ("paper", "fixmatch"):
            raise ValueError(f"unknown augment {augment!r}; use 'paper' or 'fixmatch'")
        self.augment, self.strong_ops, self.strong_magnitude = augment, int(strong_ops), float(strong_magnitude)
        if adam_betas == "auto":
            adam_betas = (0.9, 0.9999) if code else (0.9, 0.99)
        self.adam_betas = None if adam_betas is None else tuple(float(b) for b in adam_betas)
        if not 0 <= self.ema_decay <= 1:
            raise ValueError(f"ema_decay must be in [0, 1], got {ema_decay}")

    # ---------------------------------------------------------------- server (AWPA: the head block)
    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        upd = super().make_update(ctx)
        upd.metadata["class_counts"] = self.class_counts(ctx)
        return upd

    def class_counts(self, ctx) -> torch.Tensor:
        """q_k^c: the labelled positives of a class the client annotates, its positive
        pseudo-labels of any other class."""
        d = ctx.data
        known = d.class_mask.to(torch.bool)
        q = (d.labels * d.mask).sum(0).cpu().to(torch.float32).clone()
        pl = ctx.state.get("pseudo_labels")
        if pl is not None:
            pseudo_pos = (pl["mask"] & (pl["target"] > 0.5)).sum(0).to(torch.float32).cpu()
            q = torch.where(known, q, pseudo_pos)
        else:
            q[~known] = 0.0
        return q

    # ---------------------------------------------------------------- client
    def _multilabel(self, ctx) -> bool:
        return ctx.info.task != "multiclass"

    def _warmup(self, ctx) -> bool:
        return ctx.round < self.warmup_rounds

    def uncertainty_scores(self, ctx) -> torch.Tensor:
        """UE pass with the working model (= the received global model) over every sample."""
        model = ctx.model
        modes = [m.training for m in model.modules()]
        model.train(self.entropy_train_mode)
        try:
            with torch.no_grad(), ctx.autocast():
                logits = torch.cat([model(b.x).float().cpu() for b in ctx.iterate_all()])
        finally:
            for m, t in zip(model.modules(), modes):
                m.training = t
        return uncertainty(logits, ctx.data.class_mask, ctx.info.task, self.code_entropy)

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        self.prepare(ctx)

    def prepare(self, ctx) -> None:
        """The round's preparation on the received model: Adam's betas, the UE split, the teacher."""
        if self.adam_betas is not None and ctx.optimizer is not None:
            for g in ctx.optimizer.param_groups:
                if "betas" in g:
                    g["betas"] = self.adam_betas
        d, n = ctx.data, ctx.data.n
        self.init_client(ctx)
        if "pseudo_labels" not in ctx.state:
            ctx.state["pseudo_labels"] = {
                "mask": torch.zeros(d.labels.shape, dtype=torch.bool),
                "target": torch.zeros(d.labels.shape),
            }
        if self._warmup(ctx):
            ctx.log(pl_share=0.0)
        else:
            everything = torch.arange(n)
            if self.ue:
                scores = self.uncertainty_scores(ctx)
                low, mid, high = split_by_uncertainty(scores, *split_counts(n, *self._split_sizes(ctx)))
                ctx.scratch.update(pool=torch.cat([low, mid]).sort().values, low=low, high=high)
                ctx.log(
                    share_dl=low.numel() / n,
                    share_dm=mid.numel() / n,
                    share_dh=high.numel() / n,
                    uncertainty=float(scores.mean()),
                )
            else:  # w/o UE: one pool, UDE mixes random pairs of it
                ctx.scratch.update(pool=everything, low=everything, high=everything)
                ctx.log(share_dl=0.0, share_dm=1.0, share_dh=0.0)
        # the teacher starts from the model as it is now (the global model; after a train-mode UE pass
        # with its updated BatchNorm statistics, as the released code)
        if self.teacher_reset or "teacher" not in ctx.state:
            teacher = ctx.extract_state()
            if self.teacher_reset:
                ctx.scratch["teacher"] = teacher
            else:
                ctx.state["teacher"] = teacher
        if not self.teacher_reset:
            ctx.scratch["teacher"] = ctx.state["teacher"]

    def _split_sizes(self, ctx) -> tuple[float, float]:
        dl, dh = SPLIT["multiclass" if ctx.info.task == "multiclass" else "multilabel"]
        return (dl if self.n_l is None else self.n_l), (dh if self.n_h is None else self.n_h)

    def _ema(self, ctx) -> None:
        ema_update(
            ctx.scratch["teacher"], dict(ctx.model.named_parameters()), dict(ctx.model.named_buffers()), self.ema_decay
        )

    def init_client(self, ctx: ClientContext) -> None:
        """The class weights of the client's training labels (kept for the run)."""
        d = ctx.data
        if self._multilabel(ctx) and "pos_weight" not in ctx.state:
            ctx.state["pos_weight"] = (
                class_pos_weight(d.labels, d.mask) if self.pos_weight else torch.ones(d.labels.shape[1])
            )

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        return self.supervised_loss(ctx, logits, batch)

    def supervised_loss(self, ctx: ClientContext, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The known-label loss (warm-up round): L_I only."""
        if self._multilabel(ctx):
            pw = ctx.state["pos_weight"].to(logits.device)
            return multilabel_loss(logits, batch.y, batch.mask, batch.mask, pw, self.scalar_reduction)
        labelled = (batch.y * batch.mask).sum(1) > 0
        return singlelabel_loss(logits, batch.y, labelled, torch.zeros_like(labelled), self.scalar_reduction)

    def local_train(self, ctx: ClientContext) -> float:
        if self._warmup(ctx):
            total, steps = 0.0, 0
            for batch in ctx.batches():
                total += float(sgd_step(self, ctx, batch))
                self._ema(ctx)
                steps += 1
            return total / max(steps, 1)
        g = ctx.generator
        pool, low, high = ctx.scratch["pool"], ctx.scratch["low"], ctx.scratch["high"]
        mixb = min(self.mix_batch, low.numel(), high.numel()) if self.ude else 0
        main = _cycle(pool, max(1, ctx.cfg.batch_size - mixb), g)
        lows, highs = (_cycle(low, mixb, g), _cycle(high, mixb, g)) if mixb else (None, None)
        stats = ctx.scratch["pl_stats"] = [0.0, 0.0]  # pseudo-labelled, open (unknown entries / unlabelled)
        total, steps = 0.0, ctx.num_steps()
        for _ in range(steps):
            pm = next(main)
            pl, ph = (next(lows), next(highs)) if mixb else (pm[:0], pm[:0])  # type: ignore[arg-type]  # set when mixb
            total += float(self.fedlsm_step(ctx, pm, pl, ph))
        ctx.log(pl_share=stats[0] / stats[1] if stats[1] else 0.0)
        return total / max(steps, 1)

    def _record(self, ctx, pos: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> None:
        st = ctx.state["pseudo_labels"]
        st["mask"][pos] = mask.cpu()
        st["target"][pos] = target.float().cpu()

    def fedlsm_step(self, ctx, pm: torch.Tensor, pl: torch.Tensor, ph: torch.Tensor) -> torch.Tensor:
        """One step: teacher on weak views, student on strong views + the mixed pairs."""
        g, nm, nx = ctx.generator, pm.numel(), pl.numel()
        b = ctx.make_batch(torch.cat([pm, pl, ph]), train=False)
        x_main = b.x[:nm]
        if self.augment == "paper":
            weak, strong = paper_weak_view(x_main, g), paper_strong_view(x_main, g)
        else:
            weak = views.weak_view(x_main, g)
            strong = views.strong_view(x_main, g, num_ops=self.strong_ops, magnitude=self.strong_magnitude)
        x_mix_src = b.x[nm:]  # UDE mixes the un-augmented images, as the released code
        t_logits, _ = ctx.forward_with(ctx.scratch["teacher"], torch.cat([weak, x_mix_src]))
        y, m = b.y, b.mask
        known = ctx.data.class_mask.to(device=y.device, dtype=torch.bool).expand_as(y)
        ml = self._multilabel(ctx)
        if ml:
            probs = torch.sigmoid(t_logits)
            pw = ctx.state["pos_weight"].to(y.device)
            soft = self.scalar_reduction
            tm, mm, cm = multilabel_targets(probs[:nm], y[:nm], known[:nm], self.tau_p, self.tau_n, soft)
            self._record(ctx, pm, tm, cm)
            stats = ctx.scratch["pl_stats"]
            stats[0] += float(cm.sum())
            stats[1] += float((~known[:nm]).sum())
        else:
            probs = t_logits.softmax(1)
            labelled = (y * m).sum(1) > 0
            cls = ctx.data.class_mask.to(y.device)
            tm, pseudo = singlelabel_targets(probs[:nm], y[:nm], labelled[:nm], cls, self.tau)
            self._record(ctx, pm, torch.where(pseudo[:, None], tm, torch.zeros_like(tm)), pseudo[:, None].expand_as(tm))
            stats = ctx.scratch["pl_stats"]
            stats[0] += float(pseudo.sum())
            stats[1] += float((~labelled[:nm]).sum())
        x_in = strong
        if nx:
            lam = views.sample_lambda(self.mixup_alpha, g)
            sl, sh = slice(nm, nm + nx), slice(nm + nx, nm + 2 * nx)
            h_taus = (self.tau_lp, self.tau_ln, self.tau_l) if self.ue else (self.tau_p, self.tau_n, self.tau)
            if ml:
                x_mix, t_mix, mix_mask = ude_multilabel(
                    x_mix_src[:nx],
                    x_mix_src[nx:],
                    probs[sl],
                    probs[sh],
                    y[sl],
                    y[sh],
                    known[sl],
                    lam,
                    (self.tau_p, self.tau_n),
                    h_taus[:2],
                    self.scalar_reduction,
                    self.lambda_on_uncertain,
                )
            else:
                tl, ql = singlelabel_targets(probs[sl], y[sl], labelled[sl], cls, self.tau)
                th, qh = singlelabel_targets(probs[sh], y[sh], labelled[sh], cls, h_taus[2])
                mix_mask = (labelled[sl] | ql) & (labelled[sh] | qh)
                x_mix, t_mix = ude_mix(x_mix_src[:nx], tl, x_mix_src[nx:], th, lam, self.lambda_on_uncertain)
            x_in = torch.cat([strong, x_mix])
        ctx.optimizer.zero_grad(set_to_none=True)
        with ctx.autocast():
            logits, _ = ctx.model.forward_features(x_in)
        logits = logits.float()
        if ml:
            loss = multilabel_loss(logits[:nm], tm, mm, known[:nm], pw, self.scalar_reduction)
        else:
            loss = singlelabel_loss(logits[:nm], tm, labelled[:nm], pseudo, self.scalar_reduction)
        if nx:
            zx = logits[nm:]
            if ml:
                if self.scalar_reduction:
                    l_ude = F.binary_cross_entropy_with_logits(zx, t_mix) * mix_mask.float().mean()
                else:
                    per = F.binary_cross_entropy_with_logits(zx, t_mix, pos_weight=pw, reduction="none")
                    l_ude = (per * mix_mask).sum() / nx
            else:
                ce = soft_ce(zx, t_mix) * mix_mask
                l_ude = ce.mean() if self.scalar_reduction else ce.sum() / mix_mask.sum().clamp_min(1)
            loss = loss + self.lambda_u * l_ude
        loss.backward()
        ctx.optimizer.step()
        self._ema(ctx)
        return loss.detach()


@register
class FedLSMNoAWPA(FedLSM):
    """Table 3 "Ours* w/o AWPA": masked aggregation of the proxies instead of Eq. 7."""

    name = "fedlsm_no_awpa"
    display_name = "FedLSM w/o AWPA"
    color = "#a55194"
    paper = "FedLSM"
    ablation = True

    def __init__(self, **kw: Any):
        kw.setdefault("awpa", False)
        super().__init__(**kw)


@register
class FedLSMNoUDE(FedLSM):
    """Table 3 "Ours w/o UDE": no MixUp of D_l with D_h."""

    name = "fedlsm_no_ude"
    display_name = "FedLSM w/o UDE"
    color = "#de9ed6"
    paper = "FedLSM"
    ablation = True
    train_cost = 1.5  # no MixUp batch

    def __init__(self, **kw: Any):
        kw.setdefault("ude", False)
        super().__init__(**kw)


@register
class FedLSMNoUE(FedLSM):
    """Table 3 "Ours w/o UE": no uncertainty split (see the module docstring)."""

    name = "fedlsm_no_ue"
    display_name = "FedLSM w/o UE"
    color = "#d6616b"
    paper = "FedLSM"
    ablation = True

    def __init__(self, **kw: Any):
        kw.setdefault("ue", False)
        super().__init__(**kw)
