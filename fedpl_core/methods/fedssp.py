"""FedSSP: federated SimSiam pre-training of the encoder, then FedAVG fine-tuning on the
partial labels (FedPSL, Dong et al., IEEE TMI, Sec. VII-C: "We adapt SimSiam [39] to a
federated environment.  The prediction heads are fine-tuned based on partial labels, in a
fashion similar to FedAVG").  SimSiam: Chen & He, "Exploring Simple Siamese
Representation Learning", CVPR 2021 (official code facebookresearch/simsiam).

Schedule.  The first ``pretrain_rounds`` communication rounds pre-train, the rest
fine-tune **[choice: FedPSL gives no pre-training length; the pre-training rounds are part
of the run's schedule (``EngineConfig.rounds``), so that the history has the same rounds
with or without the cache; default 5]**.  During pre-training the global model's head
stays at its initialisation (its AUROC in those rounds means nothing).

Pre-training round on client k (SimSiam Alg. 1):

* two views ``x1, x2 = strong_view(x)``, ``strong_view(x)`` of each batch (un-augmented
  preprocessed images) **[choice: the package's RandAugment + Cutout view stands in for
  SimSiam's crop / colour-jitter / grey / blur / flip pipeline]**;
* ``z = h(f(x))`` with the projector h (SimSiam's ImageNet projector: Linear(d, d) - BN -
  ReLU - Linear(d, d) - BN - ReLU - Linear(d, ``proj_dim``) - BN without affine, d the
  encoder's feature size; no biases), ``p = g(z)`` with the predictor g (Linear(
  ``proj_dim``, ``pred_dim``) - BN - ReLU - Linear(``pred_dim``, ``proj_dim``));
* loss ``L = D(p1, sg(z2)) / 2 + D(p2, sg(z1)) / 2`` with ``D(p, z) = -cos(p, z)`` averaged
  over the batch (Eqs. 1-2 of SimSiam; :func:`simsiam_loss`);
* SimSiam's optimiser: SGD, momentum 0.9, weight decay 1e-4, lr ``0.05 * B / 256`` with a
  cosine decay over the pre-training rounds, the predictor at the fixed base lr
  (``fix_pred_lr``) **[choice: a fresh SGD each round, as the engine resets optimisers]**;
  BatchNorm inside the MLPs uses batch statistics only (they are dropped after pre-training).

Server: the encoder (every working-model array; the untouched head averages to itself) and
the projector are averaged by FedAvg (``n_k`` weights).  The projector and predictor are
method-owned arrays: the projector aggregate lives in ``server.state["ssp_projector"]``
and is sent in the payload, each client's predictor in ``ctx.state["ssp_predictor"]``
**[choice: the predictor stays local (the issue names encoder and projector as the
averaged parts); ``share_predictor=True`` averages it too]**; clients send their
projector (and predictor) as extra ``ssp/...`` arrays of the update, which the server
splits off before aggregating the model.

Cache (``cache_dir``; None = no cache).  After the last pre-training round the server
writes the global model to ``<cache_dir>/simsiam-<key>.pt`` (:func:`~fedpl_core.checkpoint.atomic_torch_save`,
so a reader never sees half a file).  The key hashes what the method can see: the
pre-training hyper-parameters, the engine settings that shape pre-training (seed, batch
size, local epochs / iterations, client fraction, normalisation), the names and shapes of
the model arrays, a digest of the *initial* global arrays, the clients' sizes and sample
indices, the training set's name / shape and a strided sample of its images, and the torch
version.  When the file exists, every pre-training round is a no-op: clients train nothing
and send the cached model, the server installs it unchanged, so the fine-tuning rounds
start from exactly the state an uncached run would reach (same rounds, same round seeds).
FedMatch+ (:mod:`fedpl_core.methods.fedmatch`) uses the same pre-training and key, so it
reuses FedSSP's encoder.  **Limits**: the key does not see the architecture beyond array
names and shapes, the images beyond the sampled rows, the device / thread count (CPU and
GPU runs give slightly different encoders but share the key), nor code changes to the
pre-training itself (clear the directory after changing it); a cache hit leaves the
pre-training rounds' ``train_loss`` at 0 and ``log/ssp_cache_hit`` at 1.
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

from ..checkpoint import atomic_torch_save
from ..federation import ClientUpdate
from ..views import strong_view
from . import register
from .fedpsl import FedAvgWBCE

SSP = "ssp/"  # prefix of the method-owned arrays in a client update


# ------------------------------------------------------------------- SimSiam parts
def simsiam_loss(p1: torch.Tensor, p2: torch.Tensor, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """SimSiam's symmetrised loss ``D(p1, sg(z2)) / 2 + D(p2, sg(z1)) / 2``, with
    ``D(p, z) = -mean_i cos(p_i, z_i)`` (Chen & He 2021, Eqs. 1-2, stop-gradient on z)."""
    d = lambda p, z: -F.cosine_similarity(p, z.detach(), dim=1).mean()
    return 0.5 * d(p1, z2) + 0.5 * d(p2, z1)


def _linear(o: int, i: int, g: torch.Generator) -> torch.Tensor:
    b = 1.0 / math.sqrt(i)  # torch.nn.Linear's default range (kaiming_uniform with a = sqrt 5)
    return (torch.rand(o, i, generator=g) * 2 - 1) * b


def init_projector(d: int, proj_dim: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"l0.w": _linear(d, d, g), "bn0.w": torch.ones(d), "bn0.b": torch.zeros(d),
            "l1.w": _linear(d, d, g), "bn1.w": torch.ones(d), "bn1.b": torch.zeros(d),
            "l2.w": _linear(proj_dim, d, g)}


def init_predictor(proj_dim: int, pred_dim: int, g: torch.Generator) -> dict[str, torch.Tensor]:
    return {"l0.w": _linear(pred_dim, proj_dim, g), "bn0.w": torch.ones(pred_dim), "bn0.b": torch.zeros(pred_dim),
            "l1.w": _linear(proj_dim, pred_dim, g), "l1.b": (torch.rand(proj_dim, generator=g) * 2 - 1) / math.sqrt(pred_dim)}


def _bn(x, w=None, b=None):
    return F.batch_norm(x, None, None, w, b, training=True)


def projector(q: dict[str, torch.Tensor], f: torch.Tensor) -> torch.Tensor:
    h = F.relu(_bn(f @ q["l0.w"].T, q["bn0.w"], q["bn0.b"]))
    h = F.relu(_bn(h @ q["l1.w"].T, q["bn1.w"], q["bn1.b"]))
    return _bn(h @ q["l2.w"].T)


def predictor(q: dict[str, torch.Tensor], z: torch.Tensor) -> torch.Tensor:
    return F.relu(_bn(z @ q["l0.w"].T, q["bn0.w"], q["bn0.b"])) @ q["l1.w"].T + q["l1.b"]


def state_digest(state: dict[str, torch.Tensor]) -> str:
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
    next class in the MRO (FedAVG for FedSSP, FedMatch for FedMatch+).  See the module
    docstring for the procedure and the cache."""

    SSP_METADATA = ("ssp_key", "ssp_cached")
    option_ranges = {"pretrain_rounds": "int>=0", "proj_dim": "int>=1", "pred_dim": "int>=1", "ssp_lr": ">0",
                     "ssp_momentum": "[0,1]", "ssp_weight_decay": ">=0"}

    def __init__(self, pretrain_rounds: int = 5, proj_dim: int = 2048, pred_dim: int = 512, ssp_lr: float = 0.05,
                 ssp_momentum: float = 0.9, ssp_weight_decay: float = 1e-4, fix_pred_lr: bool = True,
                 share_predictor: bool = False, cache_dir: str | None = None, **kw: Any):
        super().__init__(**kw)
        if int(pretrain_rounds) < 0:
            raise ValueError(f"pretrain_rounds must be >= 0, got {pretrain_rounds}")
        self.pretrain_rounds = int(pretrain_rounds)
        self.proj_dim, self.pred_dim = int(proj_dim), int(pred_dim)
        self.ssp_lr, self.ssp_momentum, self.ssp_weight_decay = float(ssp_lr), float(ssp_momentum), float(ssp_weight_decay)
        self.fix_pred_lr, self.share_predictor = bool(fix_pred_lr), bool(share_predictor)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._data_digest: dict[str, Any] = {}

    def ssp_settings(self) -> dict[str, Any]:
        return {"pretrain_rounds": self.pretrain_rounds, "proj_dim": self.proj_dim, "pred_dim": self.pred_dim,
                "lr": self.ssp_lr, "momentum": self.ssp_momentum, "wd": self.ssp_weight_decay,
                "fix_pred_lr": self.fix_pred_lr, "share_predictor": self.share_predictor, "version": 1}

    # ---------------------------------------------------------------- harness
    def prepare_clients(self, clients, dataset):
        clients = super().prepare_clients(clients, dataset)
        h = hashlib.sha256()
        for c in clients:
            h.update(c.indices.cpu().numpy().astype(np.int64).tobytes())
        imgs = np.asarray(dataset.images)
        step = max(1, len(imgs) // 64)
        self._data_digest = {"sizes": [c.n for c in clients], "indices": h.hexdigest(),
                             "dataset": [getattr(dataset, "name", ""), list(imgs.shape),
                                         hashlib.sha256(np.ascontiguousarray(imgs[::step]).tobytes()).hexdigest()]}
        return clients

    def setup(self, model, info) -> None:
        super().setup(model, info)
        self._feature_dim = int(model.feature_dim)

    # ---------------------------------------------------------------- server
    def init_server(self, server) -> None:
        super().init_server(server)
        digest = state_digest(server.global_state)
        g = torch.Generator().manual_seed(int(digest[:8], 16))
        server.state.update(ssp_round=0, ssp_init=digest,
                            ssp_projector=init_projector(self._feature_dim, self.proj_dim, g),
                            ssp_predictor=init_predictor(self.proj_dim, self.pred_dim, g))

    def payload(self, server, client_id):
        if server.state["ssp_round"] >= self.pretrain_rounds:
            return super().payload(server, client_id)
        return {"state": server.global_state, "ssp_projector": server.state["ssp_projector"],
                "ssp_predictor": server.state["ssp_predictor"], "ssp_init": server.state["ssp_init"]}

    def aggregate(self, server, updates) -> None:
        r = server.state["ssp_round"]
        if r >= self.pretrain_rounds:
            return super().aggregate(server, updates)
        server.state["ssp_round"] = r + 1
        if all(u.metadata.get("ssp_cached") for u in updates):
            server.global_state.update({k: v.clone() for k, v in updates[0].state.items() if not k.startswith(SSP)})
            return
        from ..aggregation import weighted_average

        w = self.client_weights(updates)
        model = [ClientUpdate(u.client_id, {k: v for k, v in u.state.items() if not k.startswith(SSP)},
                              u.num_samples, u.metadata) for u in updates]
        server.global_state.update(weighted_average([u.state for u in model], w))
        for part in ("projector", "predictor") if self.share_predictor else ("projector",):
            pre = f"{SSP}{part}/"
            avg = weighted_average([{k[len(pre):]: v for k, v in u.state.items() if k.startswith(pre)}
                                    for u in updates], w)
            server.state[f"ssp_{part}"] = avg
        key = updates[0].metadata.get("ssp_key")
        if self.cache_dir is not None and key and r + 1 == self.pretrain_rounds:
            atomic_torch_save({k: v.detach().cpu() for k, v in server.global_state.items()},
                        self.cache_dir / f"simsiam-{key}.pt")

    # ---------------------------------------------------------------- client
    def _pretraining(self, ctx) -> bool:
        return ctx.round < self.pretrain_rounds

    def ssp_key(self, ctx, init_digest: str) -> str:
        cfg = ctx.cfg
        eng = {k: getattr(cfg, k, None) for k in ("seed", "batch_size", "local_epochs", "local_iters",
                                                     "client_fraction", "normalize", "channels_last")}
        shapes = {k: list(v.shape) for k, v in ctx.extract_state().items()}
        return cache_key({"ssp": self.ssp_settings(), "engine": eng, "shapes": shapes, "init": init_digest,
                          "data": self._data_digest, "torch": torch.__version__})

    def receive(self, ctx, payload) -> None:
        if not self._pretraining(ctx):
            return super().receive(ctx, payload)
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
        pred = payload["ssp_predictor"] if self.share_predictor else ctx.state.get("ssp_predictor", payload["ssp_predictor"])
        ctx.scratch["ssp_predictor"] = {k: v.detach().clone().to(dev) for k, v in pred.items()}

    def before_training(self, ctx) -> None:
        if not self._pretraining(ctx):
            super().before_training(ctx)

    def after_training(self, ctx) -> None:
        if not self._pretraining(ctx):
            super().after_training(ctx)

    def local_train(self, ctx) -> float:
        if not self._pretraining(ctx):
            return super().local_train(ctx)
        if ctx.scratch.get("ssp_cached"):
            ctx.log(ssp_cache_hit=1.0)
            return 0.0
        proj = {k: v.requires_grad_(True) for k, v in ctx.scratch["ssp_projector"].items()}
        pred = {k: v.requires_grad_(True) for k, v in ctx.scratch["ssp_predictor"].items()}
        enc = [p for p in ctx.model.encoder.parameters() if p.requires_grad]
        bs = min(ctx.cfg.batch_size, ctx.data.n)
        lr = self.ssp_lr * bs / 256 * 0.5 * (1 + math.cos(math.pi * ctx.round / max(self.pretrain_rounds, 1)))
        pred_lr = self.ssp_lr * bs / 256 if self.fix_pred_lr else lr
        opt = torch.optim.SGD([{"params": enc + list(proj.values()), "lr": lr},
                               {"params": list(pred.values()), "lr": pred_lr}],
                              lr=lr, momentum=self.ssp_momentum, weight_decay=self.ssp_weight_decay)
        total, steps = 0.0, 0
        for pos in ctx.batch_positions():
            if len(pos) < 2:
                continue  # BatchNorm needs two samples
            x = ctx.make_batch(pos, train=False).x
            x1, x2 = strong_view(x, ctx.generator), strong_view(x, ctx.generator)
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

    def update_metadata(self, ctx):
        meta = super().update_metadata(ctx)
        if self._pretraining(ctx):
            meta.update(ssp_key=ctx.scratch["ssp_key"], ssp_cached=bool(ctx.scratch.get("ssp_cached", False)))
        return meta

    def make_update(self, ctx):
        if not self._pretraining(ctx):
            return super().make_update(ctx)
        meta = self.update_metadata(ctx)
        state = ctx.extract_state()
        if self.local_keys:
            ctx.state["local"] = {k: state.pop(k) for k in self.local_keys}
        if not ctx.scratch.get("ssp_cached"):
            parts = {"projector": ctx.scratch["ssp_projector"]}
            if self.share_predictor:
                parts["predictor"] = ctx.scratch["ssp_predictor"]
            for part, arrays in parts.items():
                state.update({f"{SSP}{part}/{k}": v.detach().clone() for k, v in arrays.items()})
        return ClientUpdate(ctx.client_id, state, ctx.data.n, meta)


@register
class FedSSP(SimSiamPretraining, FedAvgWBCE):
    """FedSSP (FedPSL Sec. VII-C): federated SimSiam pre-training for ``pretrain_rounds``
    rounds, then the paper's FedAVG (weighted partial BCE, FedAvg) on the partial labels.

    Args: ``pretrain_rounds`` (5, [choice]), ``proj_dim`` (2048) and ``pred_dim`` (512)
    (SimSiam's ImageNet defaults), ``ssp_lr`` (0.05, scaled by B / 256, cosine decay),
    ``ssp_momentum`` (0.9), ``ssp_weight_decay`` (1e-4), ``fix_pred_lr`` (True) - SimSiam's
    optimiser; ``share_predictor`` (False, [choice]); ``cache_dir`` (None: no cache);
    ``pos_weight``, ``bn_policy``, ``weighting`` as for ``fedavg_wbce``.
    """

    name = "fedssp"
    metadata_keys = FedAvgWBCE.metadata_keys + SimSiamPretraining.SSP_METADATA
