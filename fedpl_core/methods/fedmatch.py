"""FedMatch (Jeong, Yoon, Yang, Hwang, "Federated Semi-Supervised Learning with Inter-Client
Consistency & Disjoint Learning", ICLR 2021; official code wyjeong/FedMatch) adapted to
partial labels as FedPSL (Dong et al., IEEE TMI, Sec. VII-C) uses it, and FedMatch+
(the same on the FedSSP pre-trained encoder).

Partial-label adaptation (FedPSL): every image is "labelled" for the classes its client
annotates and "unlabelled" for the others; the supervised loss is the paper's weighted
partial BCE on the annotated entries, pseudo-labels are per class on the unannotated ones
with the multi-label (sigmoid) confidence ``max(p, 1 - p) >= confidence``.

Disjoint learning (FedMatch Sec. 3.2; code ``modules/layers.py``): every kernel (array of
two or more dimensions: convolutions and the head's weight) is ``theta = sigma + psi``.
The working model holds theta; ``psi`` is a method-owned array set (``ctx.scratch`` for
the round, the aggregate in ``server.state["psi"]``), so ``sigma = theta - psi``.  Per batch:

1. **sigma step** (psi fixed): ``lambda_s * L_s``, the weighted partial BCE on the
   engine's (augmented) batch; one step of the engine's optimiser on the working model
   (with psi fixed, d/dsigma = d/dtheta; biases and BatchNorm parameters, which FedMatch's
   bias-free ResNet-9 does not have, train here only **[choice]**);
2. **psi step** (sigma fixed): on the weak view ``a(u)`` the local probabilities p (with
   gradient) and the helpers' q_j (no gradient); on the unannotated, confident entries
   ``lambda_i * mean_j KL(q_j || p)`` (inter-client consistency, Bernoulli KL per entry,
   averaged over entries **[choice]**) + ``lambda_a * BCE(f(pi(u)), y_hat)`` on the strong
   view pi(u) with the agreement-based pseudo-label ``y_hat`` = majority vote of
   ``1(p > 0.5)`` and the helpers' ``1(q_j > 0.5)`` (:func:`agreement_labels`; a tie,
   possible with one helper, follows the local vote **[choice]**), + ``lambda_l1 ||psi||_1
   + lambda_l2 ||sigma - psi||_2^2`` (Eq. 5 and the code's ``loss_fn_u``); one Adam step on
   psi (lr = ``EngineConfig.lr``, a fresh optimiser each round **[choice]**), then
   ``theta <- sigma + psi``.  The views are :func:`fedpl_core.fl.views.weak_view` /
   :func:`~fedpl_core.fl.views.strong_view` of the un-augmented batch (the paper's alpha / pi;
   the code uses the plain image for alpha).

Server (code ``models/fedmatch/server.py``): sigma and psi are averaged by FedAvg (``n_k``
weights; theta's average is then sigma's + psi's).  psi starts at ``psi_factor / (1 +
psi_factor) * theta`` and sigma at ``theta / (1 + psi_factor)`` (the code: ``psi = 0.2
sigma``; we split the common initial model so that theta is unchanged **[choice]**).  The
server keeps each client's latest psi and embeds its model ``sigma_k + psi_k`` by the
sigmoid outputs on one fixed seeded Gaussian input (N(0, 1) in the preprocessed space
**[choice]**; the code uses a truncated Gaussian image); :func:`select_helpers` picks the
``num_helpers`` nearest other clients (Euclidean distance, as the code's KD-tree).  The
selection is refreshed every ``h_interval`` aggregations, starting with the first; every
round each client receives the selected helpers' latest psi and builds a helper as the
received sigma + that psi (the code's ``restore_helpers``) **[choice: the code sends
helpers only in rounds (r + 1) % 10 == 0 and none in between; we keep them available every
round, as the paper's "update helpers every 10 rounds" reads]**.  The clients declare their
input shape (``input_shape`` metadata) so that the server can build the probe input.

Defaults (the code's ``config.py``, labels-at-client): ``num_helpers`` 2, ``confidence``
0.75, ``psi_factor`` 0.2, ``h_interval`` 10, ``lambda_s`` 10, ``lambda_i`` 1e-2,
``lambda_a`` 1e-2, ``lambda_l1`` 1e-4, ``lambda_l2`` 10.  **Not implemented**: the
inference-time hard threshold of psi at ``l1_thres`` = 5e-6 (entries below it would change
theta by at most 5e-6) and the sparse / delta-thresholded communication (the code's
``delta_thres``), which only measure communication cost; multi-class tasks.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch.func import functional_call

from ..fl.federation import Batch, ClientContext, ClientUpdate, FederationInfo
from ..fl.server import Server
from ..fl.views import strong_view, weak_view
from ..nn.aggregation import weighted_average
from ..nn.losses import masked_bce
from .base import Method
from .registry import register
from .simsiam import SimSiamPretraining

PSI = "psi/"


def select_helpers(embeddings: dict[int, torch.Tensor], k: int) -> dict[int, list[int]]:
    """For each client, the ``k`` other clients whose embeddings are nearest (Euclidean;
    ties to the smaller client id)."""
    ids = sorted(embeddings)
    out = {}
    for i in ids:
        d = [
            (float(torch.linalg.vector_norm(embeddings[i].double() - embeddings[j].double())), j) for j in ids if j != i
        ]
        out[i] = [j for _, j in sorted(d)[:k]]
    return out


def agreement_labels(p: torch.Tensor, helper_probs: list[torch.Tensor]) -> torch.Tensor:
    """Per-entry majority vote of ``1(p > 0.5)`` and every ``1(q_j > 0.5)``; ties follow
    the local vote (FedMatch's agreement-based pseudo-label, per class)."""
    local = (p > 0.5).float()
    votes = local + sum(((q > 0.5).float() for q in helper_probs), torch.zeros_like(local))
    n = 1 + len(helper_probs)
    return torch.where(2 * votes == n, local, (2 * votes > n).float())


def bernoulli_kl(q: torch.Tensor, p: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """Entry-wise ``KL(Bern(q) || Bern(p))``."""
    q, p = q.clamp(eps, 1 - eps), p.clamp(eps, 1 - eps)
    return q * (q.log() - p.log()) + (1 - q) * ((1 - q).log() - (1 - p).log())


@register
class FedMatch(Method):
    """FedMatch adapted to partial labels (see the module docstring)."""

    name = "fedmatch"
    display_name = "FedMatch"
    color = "#e7ba52"
    paper = "FedPSL"
    train_cost = 2.0  # helper models, pseudo-labels
    option_ranges = {
        "num_helpers": "int>=0",
        "confidence": "[0,1]",
        "psi_factor": ">=0",
        "h_interval": "int>=1",
        "lambda_s": ">=0",
        "lambda_i": ">=0",
        "lambda_a": ">=0",
        "lambda_l1": ">=0",
        "lambda_l2": ">=0",
    }
    partial = True
    default_loss = "wbce"
    tasks = ("multilabel",)
    metadata_keys = Method.metadata_keys + ("input_shape",)

    def __init__(
        self,
        num_helpers: int = 2,
        confidence: float = 0.75,
        psi_factor: float = 0.2,
        h_interval: int = 10,
        lambda_s: float = 10.0,
        lambda_i: float = 1e-2,
        lambda_a: float = 1e-2,
        lambda_l1: float = 1e-4,
        lambda_l2: float = 10.0,
        **kw: Any,
    ):
        super().__init__(**kw)
        self.num_helpers, self.confidence, self.psi_factor = int(num_helpers), float(confidence), float(psi_factor)
        self.h_interval = int(h_interval)
        self.lambda_s, self.lambda_i, self.lambda_a = float(lambda_s), float(lambda_i), float(lambda_a)
        self.lambda_l1, self.lambda_l2 = float(lambda_l1), float(lambda_l2)

    def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The supervised term L_s: the weighted partial BCE."""
        return self.supervised_loss(ctx, logits, batch)

    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        super().setup(model, info)
        self._decomposed = [n for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
        self._probe_model = copy.deepcopy(model).eval()

    # ---------------------------------------------------------------- server
    def init_server(self, server: Server) -> None:
        super().init_server(server)
        server.state.update(psi=None, client_psi={}, embeddings={}, helpers={}, fm_round=0)

    def _global_psi(self, server) -> dict[str, torch.Tensor]:
        if server.state["psi"] is None:  # lazily: FedMatch+ starts from the pre-trained model
            f = self.psi_factor / (1 + self.psi_factor)
            server.state["psi"] = {k: f * server.global_state[k] for k in self._decomposed}
        return server.state["psi"]

    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        psi = self._global_psi(server)
        helpers = [server.state["client_psi"][j] for j in server.state["helpers"].get(client_id, [])]
        return {"state": server.global_state, "psi": psi, "helpers": helpers}

    def embed(self, state: dict[str, torch.Tensor], shape) -> torch.Tensor:
        """Sigmoid outputs of the model ``state`` on the fixed seeded Gaussian probe."""
        x = torch.randn((1, *shape), generator=torch.Generator().manual_seed(0))
        dev = next(iter(state.values())).device
        with torch.no_grad():
            return torch.sigmoid(functional_call(self._probe_model, state, (x.to(dev),))).flatten().cpu()

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        w = self.weights(updates)
        model = [
            ClientUpdate(
                u.client_id, {k: v for k, v in u.state.items() if not k.startswith(PSI)}, u.num_samples, u.metadata
            )
            for u in updates
        ]
        psis = [{k[len(PSI) :]: v for k, v in u.state.items() if k.startswith(PSI)} for u in updates]
        super().aggregate(server, model)
        server.state["psi"] = weighted_average(psis, w)
        for u, m, psi in zip(updates, model, psis):
            server.state["client_psi"][u.client_id] = psi
            server.state["embeddings"][u.client_id] = self.embed(m.state, u.metadata["input_shape"])
        if server.state["fm_round"] % self.h_interval == 0:
            server.state["helpers"] = select_helpers(server.state["embeddings"], self.num_helpers)
        server.state["fm_round"] += 1

    # ---------------------------------------------------------------- client
    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        super().receive(ctx, payload)
        theta = payload["state"]
        psi = {k: v.detach().clone().to(ctx.device) for k, v in payload["psi"].items()}
        sigma = {k: theta[k].to(ctx.device) - psi[k] for k in psi}
        ctx.scratch["psi"] = psi
        ctx.scratch["helpers"] = [
            {**theta, **{k: sigma[k] + h[k].to(ctx.device) for k in sigma}} for h in payload["helpers"]
        ]
        n, c = ctx.data.n, ctx.info.num_classes
        ctx.state["pseudo_labels"] = {"mask": torch.zeros(n, c, dtype=torch.bool), "target": torch.zeros(n, c)}

    def local_train(self, ctx: ClientContext) -> float:
        model, params = ctx.model, dict(ctx.model.named_parameters())
        psi = {k: v.requires_grad_(True) for k, v in ctx.scratch["psi"].items()}
        opt_psi = torch.optim.Adam(list(psi.values()), lr=ctx.cfg.lr)
        helpers = ctx.scratch["helpers"]
        pl = ctx.state["pseudo_labels"]
        total, steps, n_conf, n_unl = 0.0, 0, 0, 0
        for pos in ctx.batch_positions():
            # 1. sigma step: supervised loss, psi fixed
            batch = ctx.make_batch(pos, train=True)
            ctx.scratch["input_shape"] = list(batch.x.shape[1:])  # type: ignore[union-attr]  # a made batch has x
            ctx.optimizer.zero_grad(set_to_none=True)
            logits, feats = model.forward_features(batch.x)  # type: ignore[arg-type]  # a made batch has x
            loss_s = self.lambda_s * self.loss(ctx, logits.float(), feats, batch)
            loss_s.backward()
            ctx.optimizer.step()
            # 2. psi step: consistency + agreement pseudo-labels + L1 / L2, sigma fixed
            plain = ctx.make_batch(pos, train=False)
            xw, xs = weak_view(plain.x, ctx.generator), strong_view(plain.x, ctx.generator)  # type: ignore[arg-type]
            sigma = {k: params[k].detach() - psi[k].detach() for k in psi}
            theta = {k: sigma[k] + psi[k] for k in psi}
            p = torch.sigmoid(functional_call(model, theta, (xw,)).float())
            qs = [torch.sigmoid(ctx.forward_with(h, xw)[0]) for h in helpers]
            unl = ~plain.mask.bool()
            conf = unl & (torch.maximum(p, 1 - p).detach() >= self.confidence)
            m = conf.float()
            loss_u = torch.zeros((), device=p.device)
            if conf.any():
                if qs:
                    kl = sum(bernoulli_kl(q, p) for q in qs) / len(qs)
                    loss_u = loss_u + self.lambda_i * (kl * m).sum() / m.sum()
                y_hat = agreement_labels(p.detach(), qs)
                logits_s = functional_call(model, theta, (xs,)).float()
                loss_u = loss_u + self.lambda_a * masked_bce(logits_s, y_hat, conf)
                pl["mask"][pos] |= conf.cpu()
                pl["target"][pos] = torch.where(conf.cpu(), y_hat.cpu(), pl["target"][pos])
            reg = sum(
                self.lambda_l1 * psi[k].abs().sum() + self.lambda_l2 * (sigma[k] - psi[k]).pow(2).sum() for k in psi
            )
            opt_psi.zero_grad(set_to_none=True)
            (loss_u + reg).backward()
            opt_psi.step()
            ctx.optimizer.zero_grad(set_to_none=True)  # the psi-step gradients reached no parameter
            with torch.no_grad():
                for k in psi:
                    params[k].copy_(sigma[k] + psi[k])
            total += float(loss_s.detach()) + float(loss_u.detach())
            steps += 1
            n_conf, n_unl = n_conf + int(conf.sum()), n_unl + int(unl.sum())
        ctx.log(confident_share=n_conf / max(n_unl, 1), helpers=float(len(helpers)))
        return total / max(steps, 1)

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        u = super().make_update(ctx)
        u.metadata["input_shape"] = list(ctx.scratch.get("input_shape", []))
        u.state.update({f"{PSI}{k}": v.detach().clone() for k, v in ctx.scratch["psi"].items()})
        return u


@register
class FedMatchPlus(SimSiamPretraining, FedMatch):
    """FedMatch+ (FedPSL Sec. VII-C): FedMatch on the encoder pre-trained as in FedSSP
    (the same pre-training and cache key as ``fedssp``, so a cached FedSSP encoder is
    reused); psi is split from the pre-trained model when fine-tuning starts."""

    name = "fedmatch_plus"
    display_name = "FedMatch+"
    color = "#8ca252"
    paper = "FedPSL"
    train_cost = 2.5  # + SimSiam pre-training (two views)
    metadata_keys = FedMatch.metadata_keys + SimSiamPretraining.SSP_METADATA
