"""A client of the federation: a :class:`Site` (a hospital) with one job,
``train(payload, round) -> (update, logs)``.

A site holds its own :class:`~fedpl_core.fl.federation.ClientData`, its state dict
(kept across rounds and checkpointed), the method, and a reference to a
:class:`WorkingModel`: the model, its optimizer and the preprocessing.  In the simulation
one working model serves every site in turn (a site's round loads the payload into it in
place, trains, and extracts its arrays; nothing is deep-copied per client per round); a
Flower site (:class:`fedpl_core.apps.flower.FlowerSite`) has its own.

A site's round calls the method's client hooks in this order, and no others (see
:mod:`fedpl_core.methods.base`): (optimizer state reset, or restored from
``state["optimizer"]`` with ``optimizer_state="keep"``), ``receive``, (the model's
training modes: the method's ``batchnorm`` block), ``local_train``, the divergence check
(:class:`DivergenceCheck`), (optimizer state kept), ``make_update`` (its metadata checked
against the method's ``metadata_keys``).  :meth:`Site.init` calls ``init_client``;
:meth:`Site.reference_loss` calls ``supervised_loss``.
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from .engine_config import EngineConfig
from .federation import (
    ClientContext,
    ClientData,
    ClientUpdate,
    DivergenceError,
    FederationInfo,
    copy_arrays,
    load_arrays,
)
from .preprocess import Preprocess

if TYPE_CHECKING:  # pragma: no cover
    from ..data.base import ImageDataset
    from ..nn.models import FedModel
    from ..partitions import Partition

_Model = TypeVar("_Model", bound=torch.nn.Module)

#: A client's training loss over this many times the run's start (at least 1) has diverged.
EXPLOSION = 1e4


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None


def configure_cuda(cfg: EngineConfig, device: torch.device) -> None:
    """On CUDA, before the run's first kernel: cuDNN's autotuner (``cudnn.benchmark``) unless
    ``cfg.deterministic``, else deterministic algorithms (cuBLAS's workspace setting
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` unless the environment sets it; it takes effect
    when this process has not used cuBLAS yet, otherwise torch warns about the operations
    it cannot make deterministic).  These are process-wide settings: each run sets them."""
    if device.type != "cuda":
        return
    det = bool(cfg.deterministic)
    if det:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cudnn.benchmark = not det
    torch.backends.cudnn.deterministic = det
    torch.use_deterministic_algorithms(det, warn_only=True)


def make_optimizer(params: list[torch.Tensor], cfg: EngineConfig) -> torch.optim.Optimizer:
    """The ``torch.optim`` optimizer of a client's round (``cfg.optimizer`` with its learning
    rate, weight decay and, for SGD, momentum) over ``params``: the working model's
    parameters in the loop (:class:`WorkingModel`), the clients' stacked ``[K, ...]``
    parameters in the batched path (:mod:`fedpl_core.fl.batched`)."""
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


def make_client_data(dataset: ImageDataset, partition: Partition) -> list[ClientData]:
    """Each client's labels with unannotated entries zeroed (see Partition.client_labels)."""
    out = []
    for k, spec in enumerate(partition.clients):
        labels, mask = partition.client_labels(dataset, k)
        out.append(
            ClientData(
                torch.as_tensor(spec.indices),
                torch.from_numpy(labels),
                torch.from_numpy(mask),
                torch.from_numpy(spec.class_mask.copy()),
                spec.name,
            )
        )
    return out


def split_validation(c: ClientData, fraction: float, seed: int) -> ClientData:
    """Hold out ``fraction`` of a client's samples (at least one) as its validation split."""
    n_val = max(1, int(round(fraction * c.n))) if c.n > 1 else 0
    perm = torch.randperm(c.n, generator=torch.Generator().manual_seed(seed))
    va, tr = perm[:n_val].sort().values, perm[n_val:].sort().values
    val = ClientData(c.indices[va], c.labels[va], c.mask[va], c.class_mask, c.name)
    return ClientData(c.indices[tr], c.labels[tr], c.mask[tr], c.class_mask, c.name, val=val)


def place_model(model: _Model, cfg: EngineConfig, device: torch.device) -> _Model:
    """``model`` on ``device`` (channels-last when ``cfg.channels_last``)."""
    model = model.to(device)
    return model.to(memory_format=torch.channels_last) if cfg.channels_last else model


class WorkingModel:
    """The model a site trains, with what runs it: its arrays by name (parameters and
    buffers), its optimizer, the preprocessing and the autocast policy.

    Build it after ``method.setup(model, info)`` (which may change the model's structure),
    with the model already on ``device`` (:func:`place_model`)."""

    def __init__(self, model: FedModel, cfg: EngineConfig, device: torch.device):
        self.model, self.cfg, self.device = model, cfg, device
        self.preprocess = Preprocess(cfg.normalize, cfg.augment, cfg.channels_last)
        self.arrays = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        self.optimizer = make_optimizer([p for p in model.parameters() if p.requires_grad], cfg)

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Copy ``state`` into the model's arrays, in place."""
        load_arrays(self.arrays, state)

    def extract_state(self) -> dict[str, torch.Tensor]:
        """A detached copy of every array of the model."""
        return copy_arrays(self.arrays)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.cfg.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()


class DivergenceCheck:
    """:class:`DivergenceError` for a non-finite loss, or one over ``EXPLOSION`` times the
    start ``scale`` (at least 1; not checked while ``scale`` is None), naming where it
    happened, the learning rate and the optimizer."""

    def __init__(self, cfg: EngineConfig, scale: float | None = None):
        self.lr, self.optimizer, self.scale = cfg.lr, cfg.optimizer, scale

    def __call__(self, loss: float, where: str) -> None:
        lr = f"lower the learning rate (lr={self.lr:g}) of the {self.optimizer} optimizer"
        if not math.isfinite(loss):
            raise DivergenceError(f"{where} is {loss}; {lr} or check the data")
        ref = max(self.scale or 0.0, 1.0)
        if self.scale is not None and loss > EXPLOSION * ref:
            raise DivergenceError(
                f"{where} is {loss:.3g}, over {EXPLOSION:g} times its start "
                f"({self.scale:.3g}): the training diverged; {lr} or check the data"
            )


class Site:
    """One client: its data, its state, the method's client side and a working model.

    ``client_id``: its position among the federation's clients; ``data``: its
    :class:`ClientData` (indices into ``images``, uint8 ``[N, C, H, W]``); ``work``: the
    :class:`WorkingModel` it trains (shared by every site of a simulation); ``guard``:
    the :class:`DivergenceCheck` of its training loss (the simulation's, which knows the
    run's starting loss; by default one that catches non-finite losses only); ``state``:
    its dict kept across rounds (``ctx.state`` of its hooks)."""

    def __init__(
        self,
        client_id: int,
        data: ClientData,
        method: Any,
        work: WorkingModel,
        images: torch.Tensor,
        info: FederationInfo,
        cfg: EngineConfig,
        guard: DivergenceCheck | None = None,
        state: dict[str, Any] | None = None,
    ):
        self.client_id, self.data, self.method, self.work = int(client_id), data, method, work
        self.images, self.info, self.cfg = images, info, cfg
        self.guard = guard if guard is not None else DivergenceCheck(cfg)
        self.state: dict[str, Any] = {} if state is None else state

    @property
    def name(self) -> str:
        return self.info.client_names[self.client_id]

    def context(self, round_idx: int, data: ClientData | None = None) -> ClientContext:
        """The view the method's hooks get in round ``round_idx``: this site's data (or
        ``data``, a validation split), its state, the working model and optimizer."""
        w = self.work
        return ClientContext(
            self.client_id,
            round_idx,
            self.data if data is None else data,
            self.state,
            w.model,
            w.optimizer,
            self.info,
            self.cfg,
            w.device,
            self.images,
            w.preprocess,
            w.arrays,
            w.autocast,
        )

    def init(self, round_idx: int) -> None:
        """:meth:`Method.init_client` (at the start, and after a resume: it fills what is missing)."""
        self.method.init_client(self.context(round_idx))

    def train(self, payload: dict[str, Any], round_idx: int) -> tuple[ClientUpdate, dict[str, float]]:
        """The site's round on ``payload``: the update it sends, and its logs:
        ``train_loss`` (what ``local_train`` returned) and ``log/<name>`` for each number
        its hooks logged (:meth:`ClientContext.log`)."""
        ctx = self.context(round_idx)
        m, opt = self.method, self.work.optimizer
        keep = self.cfg.optimizer_state == "keep"
        opt.state.clear()
        if keep and ctx.state.get("optimizer"):
            sd = opt.state_dict()
            sd["state"] = _clone(ctx.state["optimizer"])
            opt.load_state_dict(sd)
        m.receive(ctx, payload)
        m.warmup(m, ctx)  # the head warm-up block (a client's first round, when warmup_epochs > 0)
        m.batchnorm.set_mode(self.work.model, train=True)
        loss = m.local_train(ctx)
        self.guard(loss, f"round {round_idx + 1}, client {self.name}: the training loss")
        if keep:
            ctx.state["optimizer"] = _clone(opt.state_dict()["state"])
        update = m.make_update(ctx)
        check_metadata(m, update)
        return update, {"train_loss": loss, **{f"log/{k}": v for k, v in ctx.logs.items()}}

    @torch.no_grad()
    def reference_loss(self, state: dict[str, torch.Tensor], round_idx: int) -> float:
        """The supervised loss (:meth:`Method.supervised_loss`) of the arrays ``state`` on
        this site's first batch, in order, without augmentation, in eval mode: no random
        number is drawn and the site's state does not change (the working model gets
        ``state``, as every round begins)."""
        ctx = self.context(round_idx)
        ctx.state = dict(ctx.state)
        w = self.work
        w.load_state(state)
        w.model.eval()
        b = ctx.make_batch(torch.arange(min(self.cfg.batch_size, ctx.data.n)), train=False)
        with w.autocast():
            logits, _ = w.model.forward_features(b.x)  # type: ignore[arg-type]  # a made batch has x
        return float(self.method.supervised_loss(ctx, logits.float(), b))


def check_metadata(method: Any, update: ClientUpdate) -> None:
    """A ValueError when an update's metadata holds a key the method did not declare in
    its ``metadata_keys`` (a TypeError for what cannot travel, :meth:`ClientUpdate.check`)."""
    update.check()
    undeclared = set(update.metadata) - set(method.metadata_keys)
    if undeclared:
        raise ValueError(f"{method.name}: metadata {sorted(undeclared)} not declared in metadata_keys")


def _clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(v) for v in obj)
    return obj


__all__ = [
    "Site",
    "WorkingModel",
    "DivergenceCheck",
    "EXPLOSION",
    "resolve_device",
    "make_optimizer",
    "make_client_data",
    "split_validation",
    "place_model",
    "check_metadata",
]
