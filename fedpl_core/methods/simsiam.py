"""Federated SimSiam pre-training (Chen & He, CVPR 2021), the component FedSSP and FedMatch+
share: for the first ``pretrain_rounds`` rounds the clients train the encoder with SimSiam's
symmetric loss on two augmented views and the server averages encoder, projector and
predictor; then the method it is mixed into takes over (FedAvg for FedSSP, FedMatch for
FedMatch+).  It is a mixin, not a block, because during pre-training it takes over the
round's hooks (``payload``, ``aggregate``, ``receive``, ``local_train``, ``make_update``);
:mod:`fedpl_core.methods.fedssp` describes the procedure and its cache.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..fl.checkpoint import atomic_torch_save
from ..fl.federation import ClientContext, ClientUpdate, FederationInfo
from ..fl.server import Server
from ..fl.views import strong_view
from ..nn.aggregation import weighted_average
from .blocks import model_update

SSP = "ssp/"  # prefix of the method-owned arrays in a client update


# ------------------------------------------------------------------- SimSiam parts
def simsiam_loss(p1: torch.Tensor, p2: torch.Tensor, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """SimSiam's symmetrised loss ``D(p1, sg(z2)) / 2 + D(p2, sg(z1)) / 2``, with
    ``D(p, z) = -mean_i cos(p_i, z_i)`` (Chen & He 2021, Eqs. 1-2, stop-gradient on z)."""

    def d(p: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return -F.cosine_similarity(p, z.detach(), dim=1).mean()

    return 0.5 * d(p1, z2) + 0.5 * d(p2, z1)


def _linear(o: int, i: int, g: torch.Generator) -> torch.Tensor:
    b = 1.0 / math.sqrt(i)  # torch.nn.Linear's default range (kaiming_uniform with a = sqrt 5)
    return (torch.rand(o, i, generator=g) * 2 - 1) * b


def init_projector(d: int, proj_dim: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    """SimSiam's projection MLP (Chen & He 2021, "Baseline settings": three fully connected layers, BN on
    each, ReLU on the first two) as arrays, drawn from ``g``.  Its hidden width is the encoder's
    feature width ``d``, not the paper's 2048 (our choice: the package's encoders are small)."""
    return {
        "l0.w": _linear(d, d, g),
        "bn0.w": torch.ones(d),
        "bn0.b": torch.zeros(d),
        "l1.w": _linear(d, d, g),
        "bn1.w": torch.ones(d),
        "bn1.b": torch.zeros(d),
        "l2.w": _linear(proj_dim, d, g),
    }


def init_predictor(proj_dim: int, pred_dim: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    """SimSiam's prediction MLP h (the same settings: two layers, BN and ReLU on the hidden bottleneck of
    width ``pred_dim``, no BN on the output) as arrays, drawn from ``g``."""
    return {
        "l0.w": _linear(pred_dim, proj_dim, g),
        "bn0.w": torch.ones(pred_dim),
        "bn0.b": torch.zeros(pred_dim),
        "l1.w": _linear(proj_dim, pred_dim, g),
        "l1.b": (torch.rand(proj_dim, generator=g) * 2 - 1) / math.sqrt(pred_dim),
    }


def _bn(x, w=None, b=None):
    return F.batch_norm(x, None, None, w, b, training=True)


def projector(q: dict[str, torch.Tensor], f: torch.Tensor) -> torch.Tensor:
    """z = projector(f): the projection MLP of :func:`init_projector` on features ``f``."""
    h = F.relu(_bn(f @ q["l0.w"].T, q["bn0.w"], q["bn0.b"]))
    h = F.relu(_bn(h @ q["l1.w"].T, q["bn1.w"], q["bn1.b"]))
    return _bn(h @ q["l2.w"].T)


def predictor(q: dict[str, torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    """p = h(z): the prediction MLP of :func:`init_predictor`."""
    return F.relu(_bn(z @ q["l0.w"].T, q["bn0.w"], q["bn0.b"])) @ q["l1.w"].T + q["l1.b"]


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's names and bytes (checks a cached pre-trained encoder)."""
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def cache_key(settings: dict[str, Any]) -> str:
    """A short hash of JSON-serialisable ``settings`` (key order does not matter)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:32]


# ------------------------------------------------------------------- the mixin
class SimSiamPretraining:
    """Federated SimSiam pre-training for the first ``pretrain_rounds`` rounds, then the
    method it is mixed into (FedAVG for FedSSP, FedMatch for FedMatch+): the one block that
    is a mixin, since it takes over the round's hooks (``payload``, ``aggregate``, ``receive``,
    ``local_train``, ``make_update``) during pre-training.  See
    :mod:`fedpl_core.methods.fedssp` for the procedure and the cache."""

    SSP_METADATA = ("ssp_key", "ssp_cached")
    option_ranges = {
        "pretrain_rounds": "int>=0",
        "proj_dim": "int>=1",
        "pred_dim": "int>=1",
        "ssp_lr": ">0",
        "ssp_momentum": "[0,1]",
        "ssp_weight_decay": ">=0",
    }

    def __init__(
        self,
        pretrain_rounds: int = 5,
        proj_dim: int = 2048,
        pred_dim: int = 512,
        ssp_lr: float = 0.05,
        ssp_momentum: float = 0.9,
        ssp_weight_decay: float = 1e-4,
        fix_pred_lr: bool = True,
        share_predictor: bool = False,
        cache_dir: str | None = None,
        **kw: Any,
    ):
        super().__init__(**kw)
        if int(pretrain_rounds) < 0:
            raise ValueError(f"pretrain_rounds must be >= 0, got {pretrain_rounds}")
        self.pretrain_rounds = int(pretrain_rounds)
        self.proj_dim, self.pred_dim = int(proj_dim), int(pred_dim)
        self.ssp_lr, self.ssp_momentum, self.ssp_weight_decay = (
            float(ssp_lr),
            float(ssp_momentum),
            float(ssp_weight_decay),
        )
        self.fix_pred_lr, self.share_predictor = bool(fix_pred_lr), bool(share_predictor)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._client_digest: dict[int, tuple[int, str]] = {}

    def ssp_settings(self) -> dict[str, Any]:
        return {
            "pretrain_rounds": self.pretrain_rounds,
            "proj_dim": self.proj_dim,
            "pred_dim": self.pred_dim,
            "lr": self.ssp_lr,
            "momentum": self.ssp_momentum,
            "wd": self.ssp_weight_decay,
            "fix_pred_lr": self.fix_pred_lr,
            "share_predictor": self.share_predictor,
            "version": 1,
        }

    # ---------------------------------------------------------------- once per run
    def setup(self, model: torch.nn.Module, info: FederationInfo) -> None:
        super().setup(model, info)  # type: ignore[misc]  # mixin: Method follows in the MRO
        self._feature_dim = int(model.feature_dim)  # type: ignore[arg-type]  # FedModel.feature_dim

    def init_client(self, ctx: ClientContext) -> None:
        """Also the client's part of the data digest in the cache key (every client is
        initialised before the first round): its size, indices, labels and known-label
        mask, and its first images as the engine preprocesses them."""
        super().init_client(ctx)  # type: ignore[misc]  # mixin
        d = ctx.data
        h = hashlib.sha256()
        for t in (d.indices.to(torch.int64), d.labels.float(), d.mask.bool()):
            h.update(np.ascontiguousarray(t.cpu().numpy()).tobytes())
        if d.n:
            x = ctx.make_batch(torch.arange(min(4, d.n)), train=False).x.float().cpu()  # type: ignore[union-attr]
            h.update(str(list(x.shape)).encode())
            h.update(np.ascontiguousarray(x.numpy()).tobytes())
        self._client_digest[ctx.client_id] = (d.n, h.hexdigest())

    def data_digest(self) -> dict[str, Any]:
        """What the initialised clients train on (:meth:`init_client`), in client order."""
        ks = sorted(self._client_digest)
        return {"sizes": [self._client_digest[k][0] for k in ks], "clients": [self._client_digest[k][1] for k in ks]}

    # ---------------------------------------------------------------- server
    def init_server(self, server: Server) -> None:
        super().init_server(server)  # type: ignore[misc]  # mixin
        digest = state_digest(server.global_state)
        g = torch.Generator().manual_seed(int(digest[:8], 16))
        server.state.update(
            ssp_round=0,
            ssp_init=digest,
            ssp_projector=init_projector(self._feature_dim, self.proj_dim, g),
            ssp_predictor=init_predictor(self.proj_dim, self.pred_dim, g),
        )

    def payload(self, server: Server, client_id: int) -> dict[str, Any]:
        if server.state["ssp_round"] >= self.pretrain_rounds:
            return super().payload(server, client_id)  # type: ignore[misc]  # mixin
        return {
            "state": server.global_state,
            "ssp_projector": server.state["ssp_projector"],
            "ssp_predictor": server.state["ssp_predictor"],
            "ssp_init": server.state["ssp_init"],
        }

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        r = server.state["ssp_round"]
        if r >= self.pretrain_rounds:
            return super().aggregate(server, updates)  # type: ignore[misc]  # mixin
        server.state["ssp_round"] = r + 1
        if all(u.metadata.get("ssp_cached") for u in updates):
            server.global_state.update({k: v.clone() for k, v in updates[0].state.items() if not k.startswith(SSP)})
            return
        w = self.weights(updates)  # type: ignore[attr-defined]  # mixin: Method.weights
        model = [
            ClientUpdate(
                u.client_id, {k: v for k, v in u.state.items() if not k.startswith(SSP)}, u.num_samples, u.metadata
            )
            for u in updates
        ]
        server.global_state.update(weighted_average([u.state for u in model], w))
        for part in ("projector", "predictor") if self.share_predictor else ("projector",):
            pre = f"{SSP}{part}/"
            avg = weighted_average(
                [{k[len(pre) :]: v for k, v in u.state.items() if k.startswith(pre)} for u in updates], w
            )
            server.state[f"ssp_{part}"] = avg
        key = updates[0].metadata.get("ssp_key")
        if self.cache_dir is not None and key and r + 1 == self.pretrain_rounds:
            atomic_torch_save(
                {k: v.detach().cpu() for k, v in server.global_state.items()}, self.cache_dir / f"simsiam-{key}.pt"
            )

    # ---------------------------------------------------------------- client
    def _pretraining(self, ctx) -> bool:
        return ctx.round < self.pretrain_rounds

    def ssp_key(self, ctx, init_digest: str) -> str:
        cfg = ctx.cfg
        eng = {
            k: getattr(cfg, k, None)
            for k in (
                "seed",
                "batch_size",
                "local_epochs",
                "local_iters",
                "client_fraction",
                "normalize",
                "channels_last",
            )
        }
        shapes = {k: list(v.shape) for k, v in ctx.extract_state().items()}
        return cache_key(
            {
                "ssp": self.ssp_settings(),
                "engine": eng,
                "shapes": shapes,
                "init": init_digest,
                "data": self.data_digest(),
                "torch": torch.__version__,
            }
        )

    def receive(self, ctx: ClientContext, payload: dict[str, Any]) -> None:
        if not self._pretraining(ctx):
            return super().receive(ctx, payload)  # type: ignore[misc]  # mixin
        ctx.load_state(payload["state"])
        key = self.ssp_key(ctx, payload["ssp_init"])
        ctx.scratch["ssp_key"] = key
        path = None if self.cache_dir is None else self.cache_dir / f"simsiam-{key}.pt"
        if path is not None and path.exists():
            ctx.load_state(torch.load(path, map_location="cpu", weights_only=True))
            ctx.scratch["ssp_cached"] = True
            return
        dev = ctx.device
        ctx.scratch["ssp_projector"] = {k: v.detach().clone().to(dev) for k, v in payload["ssp_projector"].items()}
        pred = (
            payload["ssp_predictor"]
            if self.share_predictor
            else ctx.state.get("ssp_predictor", payload["ssp_predictor"])
        )
        ctx.scratch["ssp_predictor"] = {k: v.detach().clone().to(dev) for k, v in pred.items()}

    def local_train(self, ctx: ClientContext) -> float:
        if not self._pretraining(ctx):
            return super().local_train(ctx)  # type: ignore[misc]  # mixin
        if ctx.scratch.get("ssp_cached"):
            ctx.log(ssp_cache_hit=1.0)
            return 0.0
        proj = {k: v.requires_grad_(True) for k, v in ctx.scratch["ssp_projector"].items()}
        pred = {k: v.requires_grad_(True) for k, v in ctx.scratch["ssp_predictor"].items()}
        enc = [p for p in ctx.model.encoder.parameters() if p.requires_grad]
        bs = min(ctx.cfg.batch_size, ctx.data.n)
        lr = self.ssp_lr * bs / 256 * 0.5 * (1 + math.cos(math.pi * ctx.round / max(self.pretrain_rounds, 1)))
        pred_lr = self.ssp_lr * bs / 256 if self.fix_pred_lr else lr
        opt = torch.optim.SGD(
            [{"params": enc + list(proj.values()), "lr": lr}, {"params": list(pred.values()), "lr": pred_lr}],
            lr=lr,
            momentum=self.ssp_momentum,
            weight_decay=self.ssp_weight_decay,
        )
        total, steps = 0.0, 0
        for pos in ctx.batch_positions():
            if len(pos) < 2:
                continue  # BatchNorm needs two samples
            x = ctx.make_batch(pos, train=False).x
            x1, x2 = strong_view(x, ctx.generator), strong_view(x, ctx.generator)  # type: ignore[arg-type]  # has x
            opt.zero_grad(set_to_none=True)
            with ctx.autocast():
                f = ctx.model.encoder(torch.cat([x1, x2])).float()
            z = projector(proj, f)
            p = predictor(pred, z)
            n = len(pos)
            loss = simsiam_loss(p[:n], p[n:], z[:n], z[n:])
            loss.backward()
            opt.step()
            total, steps = total + float(loss.detach()), steps + 1
        ctx.state["ssp_predictor"] = {k: v.detach().cpu() for k, v in pred.items()}
        ctx.log(ssp_loss=total / max(steps, 1), ssp_cache_hit=0.0)
        return total / max(steps, 1)

    def make_update(self, ctx: ClientContext) -> ClientUpdate:
        """Fine-tuning: the method's update.  Pre-training: the model's arrays
        (:func:`model_update`), the projector's (and the shared predictor's) under ``ssp/``,
        and the cache key and hit in the metadata."""
        if not self._pretraining(ctx):
            return super().make_update(ctx)  # type: ignore[misc]  # mixin
        upd = model_update(self, ctx)
        upd.metadata.update(ssp_key=ctx.scratch["ssp_key"], ssp_cached=bool(ctx.scratch.get("ssp_cached", False)))
        if not ctx.scratch.get("ssp_cached"):
            parts = {"projector": ctx.scratch["ssp_projector"]}
            if self.share_predictor:
                parts["predictor"] = ctx.scratch["ssp_predictor"]
            for part, arrays in parts.items():
                upd.state.update({f"{SSP}{part}/{k}": v.detach().clone() for k, v in arrays.items()})
        return upd


__all__ = ["SimSiamPretraining", "simsiam_loss", "SSP", "init_projector", "init_predictor", "projector", "predictor"]
