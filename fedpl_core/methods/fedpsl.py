"""FedPSL (Dong, Kampffmeyer, Voiculescu, Xing; IEEE TMI): federated partially supervised
multi-label classification under data scarcity.  No official code exists; the paper is the
specification, and every choice it leaves open is marked **[choice]** below.

Two modules on top of FedAvg with the partial loss:

* **TDMA** (task-dependent model aggregation, Eq. 9).  The encoder (and, **[choice]**,
  every BatchNorm buffer, which belongs to the encoder) is averaged with ``n_k / sum n``;
  head row ``phi^c`` and its bias with ``n_k^c / sum_k n_k^c``, where ``n_k^c`` is client
  k's number of examples *labelled* for class c (``label_counts``: ``n_k`` when k annotates
  c, 0 otherwise).  A client that never saw a label of c is a straggler for ``phi^c`` (its
  row only moves when the server overwrites it) and gets weight 0.  ``head_weights=
  "positive"`` uses the number of positive examples of c instead (an option the paper does
  not evaluate).  A class no participating client labels in a round keeps its previous
  global row **[choice]** (only possible with partial participation).
* **TADL** (task-agnostic decoupling learning, Alg. 1, Eqs. 10-11).  Each minibatch is split
  into halves ``B_train`` (first half) and ``B_val`` (second half) **[choice: the batch is
  already a random draw, so halves are random]**:

  1. ``theta' = theta - alpha * grad_theta L_train(phi, theta)``, a differentiable SGD
     look-ahead of the encoder (``alpha`` = 1e-3 as the paper's alpha; **[choice]** plain
     SGD for the virtual step, as the package's specification of FedPSL asked; the paper used ``higher`` and does
     not say which inner optimiser);
  2. the head ``phi`` takes one optimiser step (Adam, lr = ``EngineConfig.lr``) on
     ``grad_phi L_train(phi, theta)``.  **[choice]** Alg. 1 line 7 writes the step size
     alpha; the paper sets alpha = beta = 1e-3 ("we use the same learning rates for the
     standard SL setup and the meta-learning setup"), so in paper mode it is alpha.  Where
     ``EngineConfig.lr`` differs from ``alpha`` (notebook 01's cpu profile: lr 3e-3, alpha
     1e-3) the head moves at ``EngineConfig.lr``, like FedAVG's head;
  3. the encoder takes one optimiser step (Adam, lr = beta = ``EngineConfig.lr``) on the
     meta-gradient ``d/dtheta L_val(phi_updated, theta'(theta))`` taken *through* the
     look-ahead (second order: a Hessian-vector product).  ``first_order=True`` drops the
     Hessian term (FOMAML: the gradient of L_val at ``theta'`` is used as is).

  **BatchNorm under the look-ahead [choice]:** both forwards run in training mode (batch
  statistics).  The ``B_train`` forward is the model's ordinary forward and updates the
  running statistics once per step; the ``B_val`` forward through ``theta'`` is a
  :func:`torch.func.functional_call` with *copies* of the buffers, so its running-stat
  update is discarded.  Each step therefore moves the running statistics exactly once, like
  an ordinary step (on half the batch), and evaluation uses statistics of real data only.
* **Loss** (Sec. VII-D-3): BCE per class over the client's annotated classes only, the
  positive term weighted by ``N_neg / N_pos`` of that class in the client's labelled data
  (:func:`class_pos_weight`; **[choice]** weight 1 where a class has no positive or no
  negative, so the weight is finite and never zero; the mean is over known entries, see
  :func:`~fedpl_core.nn.losses.masked_bce`).  The paper trains *all* methods with this
  weighting, so the baselines of its tables are registered here with it too.
* **Preprocessing**: per-image instance normalisation is ``EngineConfig(normalize=
  "instance")``; Adam with alpha = beta = 1e-3 is ``EngineConfig(optimizer="adam",
  lr=1e-3)``.  These belong to the engine configuration, not to the method.

Findings
--------
**Audit of TADL against Alg. 1 / Eqs. 10-11** (``tests/test_tadl_algorithm1.py`` computes
Alg. 1 by hand with explicit second-order autograd on a linear encoder + linear head,
with SGD and with Adam, with and without BatchNorm, and matches ``tadl_step`` and
``FedPSL.train_step`` to 1e-6; the wrong readings below fail it):

* order: line 6 (look-ahead), line 7 (head on ``B_train``), line 9 (encoder on
  ``B_val``); the code runs them in that order.  Agrees.
* head of the meta-loss: line 9 uses ``g_phi`` after line 7 has replaced ``phi_k``, so
  the *updated* head, held constant (Eq. 11 writes ``g_{phi_k}`` with no dependence on
  theta).  The code: updated head, detached.  Agrees.
* optimisers: line 6 is a plain gradient step of size alpha (the code: SGD, ``alpha``);
  lines 7 and 9 are the client's optimiser, Adam, "alpha = beta = 1e-3" (the code: the
  engine's Adam at ``EngineConfig.lr``; see the **[choice]** of step 2 for alpha != lr).
  Agrees in paper mode.
* BatchNorm: the paper is silent (it used ``higher``); the **[choice]** above (each half
  normalised by its own batch statistics, running statistics from ``B_train`` once).
* encoder step: line 9 has only the meta-gradient ``grad_theta L_val(g_phi o
  f_theta')``; the code adds nothing from ``L_train``.  Agrees.

No defect found; nothing in ``tadl_step`` changed.

**TADL's cost depends on whether local training over-fits** (the small CNN, 28 px, Adam
3e-3, first-order TADL, FedPSL Table II federation, K = 4; ``benchmarks/tadl_overfit.py``,
2 workers on 2 shared cores; recorded at commit 10466f8).  TADL slows fitting: the encoder and the head each see half
of the minibatch.  That is pure cost where FedAVG under-fits and stops costing where it
over-fits, but in neither regime did it beat FedAVG's best round.

* ``python benchmarks/tadl_overfit.py --n 60 --rounds 10 --local-epochs 10 --seeds 0 1 2 3 4``
  (60 images per client, 100 epochs; 182 s): FedAVG under-fits (weighted training
  loss 1.27 -> 1.07, best round = last in 4 of 5 seeds).  Last round: FedAVG 0.737 +-
  0.020, FedPSL w/ TADL 0.669 +- 0.028 (-6.8 points, paired p = 0.017), FedPSL 0.683
  +- 0.018 (-5.4, p = 0.010).  Best round: -6.5 (p = 0.019) and -5.1 (p = 0.021).
  TADL's training loss ends at 1.17.
* ``python benchmarks/tadl_overfit.py --n 30 --rounds 20 --local-epochs 20 --seeds 0 1 2 3``
  (30 images per client, 400 epochs; 597 s, partly beside other jobs): FedAVG over-fits
  (training loss 1.07 -> 0.30; best round 8 or 9 of 20 in every seed, test AUROC 0.724 at
  round 9 down to 0.697 at round 20).  Last round: FedAVG 0.697 +- 0.030, FedPSL w/ TADL
  0.701 +- 0.014 (+0.4, p = 0.83), FedPSL 0.700 +- 0.029 (+0.4, p = 0.89).  Best round
  (test-selected): all three 0.733 (p = 0.99).  TADL's training loss ends at 0.54; its
  seed-mean AUROC curve peaks later (0.715 in rounds 12-17, FedAVG's 0.724 in round 9).

Registered methods (``get_method(name, **kw)``):

=================  ============================================================================
``fedpsl``         TDMA + TADL (``tdma``, ``tadl``, ``head_weights``, ``first_order``,
                   ``alpha``, ``pos_weight`` switches)
``fedpsl_tdma``    ablation "FedPSL w/ TDMA": standard joint local training, TDMA aggregation
``fedpsl_tadl``    ablation "FedPSL w/ TADL": TADL local training, plain FedAvg aggregation
``fedavg_star``    FedLSM's FedAvg*: ``fedpsl_tdma`` under FedLSM's name
``fedavg_wbce``    the paper's FedAVG: partial loss with N_neg/N_pos weights, FedAvg
                   (= ``fedpsl`` with ``tdma=False, tadl=False``)
``fedprox_wbce``   the paper's FedProx: the same loss + proximal term (``mu`` = 0.001)
``iml_wbce``       centralised IML (pooled data, missing labels ignored), weighted BCE
``oracle_wbce``    pooled data, full labels, weighted BCE (entries a source data set never
                   annotated, e.g. Tuberculosis on ChestX-ray14 images, stay ignored)
=================  ============================================================================

Engine hook this module would like (implemented here by its own ``train_step``, which its ``local_train`` runs): a
functional forward ``ctx.forward(params, x, buffers=...)`` in the engine, so that
meta-learning methods do not need to know that a model is ``encoder`` + linear ``head``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call

from ..fl.federation import Batch, ClientContext
from ..nn.models import FedModel
from .base import Method
from .baselines import FedProx
from .blocks import rowwise_head_aggregate, sgd_step, train_batches
from .fedavg import FedAvg
from .registry import register

HEAD_WEIGHTS = {"labelled": "label_counts", "positive": "positive_counts"}
HEAD_BLOCK = {"labelled": "tdma", "positive": "positive"}


def tdma_aggregate(server, updates, encoder_weights, key: str = "label_counts") -> None:
    """Eq. 9 on the server: encoder arrays by ``encoder_weights``; head row c and its bias by
    each client's count of c in its metadata ``key`` (``label_counts`` = n_k^c, FedPSL;
    ``positive_counts``).  A class with zero total weight keeps its previous global row.
    The row-wise average is the ``head="tdma"`` block
    (:func:`~fedpl_core.methods.blocks.rowwise_head_aggregate`), which any method can take."""
    rowwise_head_aggregate(server, updates, encoder_weights, key)


# ----------------------------------------------------------------------------- TADL
def _check_model(model: torch.nn.Module) -> None:
    if not (hasattr(model, "encoder") and isinstance(getattr(model, "head", None), torch.nn.Linear)):
        raise TypeError("TADL needs a FedModel (an `encoder` module and a linear `head`)")
    outside = [n for n, _ in model.named_parameters() if not n.startswith(("encoder.", "head."))]
    if outside:
        raise TypeError(f"TADL: parameters outside encoder/head: {outside}")


LossFn = Callable[[torch.Tensor, torch.Tensor, Any], torch.Tensor]


def tadl_step(
    model: FedModel,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    b_train,
    b_val,
    alpha: float = 1e-3,
    first_order: bool = False,
    autocast: Callable[[], Any] = contextlib.nullcontext,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One TADL step (FedPSL Alg. 1, lines 4-9) on ``model`` = ``encoder`` + linear ``head``.

    ``loss_fn(logits, features, batch)`` is the local loss; ``b_train`` / ``b_val`` carry
    ``x`` plus whatever ``loss_fn`` reads.  ``optimizer`` holds the model's parameters;
    it steps the head on ``grad_phi L_train(phi, theta)`` and then the encoder on
    ``d/dtheta L_val(phi_new, theta - alpha grad_theta L_train(phi, theta))`` (through
    the look-ahead unless ``first_order``).  Returns the detached ``(L_train, L_val)``.
    """
    _check_model(model)
    enc, head = model.encoder, model.head
    theta_named = [(n, p) for n, p in enc.named_parameters() if p.requires_grad]
    theta = [p for _, p in theta_named]
    phi = [head.weight, head.bias]
    # phi enters L_train as a fresh leaf, so that the in-place optimiser step of the real
    # head below does not touch a tensor the second-order graph has saved
    phi_leaf = [p.detach().clone().requires_grad_(True) for p in phi]

    # lines 6-7: L_train and its gradients (create_graph for the second-order term)
    with autocast():
        f_tr = enc(b_train.x)  # ordinary forward: updates BatchNorm running statistics
        logits_tr = F.linear(f_tr, phi_leaf[0], phi_leaf[1])
    loss_tr = loss_fn(logits_tr.float(), f_tr.float(), b_train)
    grads = torch.autograd.grad(loss_tr, theta + phi_leaf, create_graph=not first_order, allow_unused=True)
    g_theta = [torch.zeros_like(p) if g is None else g for p, g in zip(theta, grads[: len(theta)])]
    g_phi = [torch.zeros_like(p) if g is None else g.detach() for p, g in zip(phi, grads[len(theta) :])]
    if first_order:
        g_theta = [g.detach() for g in g_theta]
    theta_prime = {n: p - alpha * g for (n, p), g in zip(theta_named, g_theta)}

    # line 7: update the head on B_train (the optimiser skips parameters whose grad is None)
    optimizer.zero_grad(set_to_none=True)
    for p, g in zip(phi, g_phi):
        p.grad = g
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    # line 9: meta-update of the encoder with L_val(phi_new, theta'); BatchNorm buffers
    # are copies, so this forward leaves the running statistics alone
    scratch = {n: b.detach().clone() for n, b in enc.named_buffers()}
    with autocast():
        f_val = functional_call(enc, {**theta_prime, **scratch}, (b_val.x,))
        logits_val = F.linear(f_val, head.weight.detach(), head.bias.detach())
    loss_val = loss_fn(logits_val.float(), f_val.float(), b_val)
    meta = torch.autograd.grad(loss_val, theta, allow_unused=True)
    for p, g in zip(theta, meta):
        p.grad = torch.zeros_like(p) if g is None else g
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_tr.detach(), loss_val.detach()


# ----------------------------------------------------------------------------- FedPSL
@register
class FedPSL(Method):
    """FedPSL: TDMA aggregation + TADL local training, weighted partial BCE.

    Options:

    * ``tdma``: task-dependent aggregation of the head (Eq. 9); False = FedAvg.
    * ``tadl``: meta-learned decoupled local training (Alg. 1); False = one joint step per batch.
    * ``head_weights``: ``"labelled"`` (n_k^c, Eq. 9) or ``"positive"`` (positives of c).
    * ``first_order``: drop the second-order term of the TADL meta-gradient (faster).
    * ``alpha``: step of the differentiable look-ahead theta' = theta - alpha grad.
    * ``pos_weight``: weight the positive BCE term by N_neg / N_pos (the paper's loss).
    * ``bn_policy``, ``weighting``: see :class:`~fedpl_core.methods.base.Method`.
    """

    name = "fedpsl"
    display_name = "FedPSL"
    color = "#d62728"
    paper = "FedPSL"
    train_cost = 2.5  # TADL: a look-ahead step and a meta step on the other half
    option_ranges = {"alpha": ">=0"}
    partial = True
    default_loss = "wbce"

    def __init__(
        self,
        tdma: bool = True,
        tadl: bool = True,
        head_weights: str = "labelled",
        first_order: bool = False,
        alpha: float = 1e-3,
        **kw: Any,
    ):
        if head_weights not in HEAD_WEIGHTS:
            raise ValueError(f"unknown head_weights {head_weights!r}; use one of {sorted(HEAD_WEIGHTS)}")
        kw.setdefault("head", HEAD_BLOCK[head_weights] if tdma else "plain")
        super().__init__(**kw)
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.tdma, self.tadl = bool(tdma), bool(tadl)
        self.head_weights = head_weights
        self.first_order = bool(first_order)
        self.alpha = float(alpha)

    # ---------------------------------------------------------------- server (TDMA: the head block)
    def head_weight_matrix(self, updates) -> torch.Tensor:
        """``[K, C]`` per-class client weights n_k^c (or positive counts) from the metadata."""
        key = HEAD_WEIGHTS[self.head_weights]
        return torch.stack([torch.as_tensor(u.metadata[key], dtype=torch.float64).flatten() for u in updates])

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The weighted partial BCE (the ``wbce`` loss block)."""
        return self.supervised_loss(ctx, logits, batch)

    # ---------------------------------------------------------------- client (TADL)
    def local_train(self, ctx: ClientContext) -> float:
        return train_batches(ctx, lambda batch: self.train_step(ctx, batch))

    def train_step(self, ctx, batch) -> torch.Tensor:
        if not self.tadl or len(batch.pos) < 2:
            return sgd_step(self, ctx, batch)
        b_tr, b_val = batch.split(len(batch.pos) // 2)
        l_tr, l_val = tadl_step(
            ctx.model,
            ctx.optimizer,
            lambda lg, ft, b: self.loss(ctx, lg, ft, b),
            b_tr,
            b_val,
            alpha=self.alpha,
            first_order=self.first_order,
            autocast=ctx.autocast,
        )
        return 0.5 * (l_tr + l_val)


@register
class FedPSLTDMA(FedPSL):
    """Ablation "FedPSL w/ TDMA": TDMA aggregation, ordinary joint local training."""

    name = "fedpsl_tdma"
    display_name = "FedPSL w/ TDMA"
    color = "#e377c2"
    paper = "FedPSL"
    ablation = True
    train_cost = 1.0  # TADL off

    def __init__(self, **kw: Any):
        kw.setdefault("tadl", False)
        super().__init__(**kw)


@register
class FedPSLTADL(FedPSL):
    """Ablation "FedPSL w/ TADL": TADL local training, plain FedAvg aggregation."""

    name = "fedpsl_tadl"
    display_name = "FedPSL w/ TADL"
    color = "#9467bd"
    paper = "FedPSL"
    ablation = True

    def __init__(self, **kw: Any):
        kw.setdefault("tdma", False)
        super().__init__(**kw)


@register
class FedAvgStar(FedPSL):
    """FedLSM's FedAvg*: FedAvg with the partial weighted loss and TDMA aggregation,
    i.e. ``fedpsl_tdma`` (FedPSL with TADL off) under FedLSM's name."""

    name = "fedavg_star"
    display_name = "FedAvg*"
    color = "#6baed6"
    paper = "FedLSM"
    train_cost = 1.0  # TADL off

    def __init__(self, **kw: Any):
        kw.setdefault("tadl", False)
        super().__init__(**kw)


# ------------------------------------------------------------ the paper's baselines
@register
class FedAvgWBCE(FedAvg):
    """The paper's FedAVG: FedAvg with the partial loss, positive term weighted N_neg/N_pos."""

    name = "fedavg_wbce"
    display_name = "FedAvg (wBCE)"
    color = "#1f77b4"
    paper = "FedPSL"
    partial = True
    default_loss = "wbce"


@register
class FedProxWBCE(FedProx):
    """The paper's FedProx: weighted partial BCE + mu/2 ||w - w_global||^2 (mu = 0.001)."""

    name = "fedprox_wbce"
    display_name = "FedProx (wBCE)"
    color = "#17becf"
    paper = "FedPSL"
    default_loss = "wbce"

    def __init__(self, mu: float = 0.001, partial: bool = True, **kw: Any):
        super().__init__(mu=mu, partial=partial, **kw)


@register
class IMLWBCE(FedAvg):
    """The paper's centralised IML: all clients' images pooled with their partial labels,
    missing labels ignored, weighted BCE (weights over the pooled labelled data)."""

    name = "iml_wbce"
    display_name = "IML"
    color = "#8c8c8c"
    paper = "FedPSL"
    federated = False
    default_loss = "wbce"
    default_clients = "pooled"

    def __init__(self, partial: bool = True, **kw: Any):
        super().__init__(partial=partial, **kw)


@register
class OracleWBCE(FedAvg):
    """The paper's Oracle: pooled data with every true label, weighted BCE.  Entries the
    source data set itself never annotated (``ImageDataset.label_mask``) stay ignored."""

    name = "oracle_wbce"
    display_name = "Oracle (wBCE)"
    color = "#222222"
    paper = "FedPSL"
    partial = True
    federated = False
    default_loss = "wbce"
    default_clients = "pooled_true_labels"
