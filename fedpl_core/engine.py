"""The simulation engine: K clients and a server in one process, round after round.

The engine does one job, the round loop; what it calls lives beside it:
:mod:`~fedpl_core.federation` (the types methods see), :mod:`~fedpl_core.preprocess`,
:mod:`~fedpl_core.evaluation`, :mod:`~fedpl_core.selection` and
:mod:`~fedpl_core.checkpoint`.

Design:

* The training images live once, as a uint8 tensor, and are batched by index with a
  seeded generator per (seed, round, client); no DataLoader, no per-round re-reading.
* One *working model* is reused by every client: a client's round loads the payload
  into it in place, trains, and extracts its arrays.  No model is deep-copied per
  client per round.
* The :class:`~fedpl_core.federation.Server` holds only the global arrays and the
  method's server memory and receives nothing but ``ClientUpdate`` objects; a method's
  client hooks see a :class:`~fedpl_core.federation.ClientContext` (the client's own
  data, the model, the optimizer, its state), never the engine.
* A non-finite training loss, or one over ``EXPLOSION`` times its start (the supervised
  loss of the initial model, :meth:`Simulation.loss_reference`, at least 1), stops the
  run at once with :class:`DivergenceError`, naming the round, the client, the learning
  rate and the optimizer; so does the aggregated model's loss on the same batch after
  each round (a last step can blow the model up after its loss was recorded).
"""
from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from . import evaluation
from .checkpoint import load_checkpoint, save_checkpoint
from .config import EngineConfig
from .data.base import ImageDataset
from .federation import (ClientContext, ClientData, ClientUpdate, DivergenceError, FederationInfo, Server,
                         copy_arrays, derive_seed, load_arrays)
from .methods.base import Method
from .preprocess import Preprocess
from .selection import BestRound

if TYPE_CHECKING:  # pragma: no cover
    from .partitions import Partition


#: A client's training loss over this many times the run's start (at least 1) has diverged.
EXPLOSION = 1e4


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None


def make_client_data(dataset: ImageDataset, partition: "Partition") -> list[ClientData]:
    """Each client's labels with unannotated entries zeroed (see Partition.client_labels)."""
    out = []
    for k, spec in enumerate(partition.clients):
        labels, mask = partition.client_labels(dataset, k)
        out.append(ClientData(torch.as_tensor(spec.indices), torch.from_numpy(labels),
                              torch.from_numpy(mask), torch.from_numpy(spec.class_mask.copy()), spec.name))
    return out


def split_validation(c: ClientData, fraction: float, seed: int) -> ClientData:
    """Hold out ``fraction`` of a client's samples (at least one) as its validation split."""
    n_val = max(1, int(round(fraction * c.n))) if c.n > 1 else 0
    perm = torch.randperm(c.n, generator=torch.Generator().manual_seed(seed))
    va, tr = perm[:n_val].sort().values, perm[n_val:].sort().values
    val = ClientData(c.indices[va], c.labels[va], c.mask[va], c.class_mask, c.name)
    return ClientData(c.indices[tr], c.labels[tr], c.mask[tr], c.class_mask, c.name, val=val)


def make_optimizer(params: list[torch.nn.Parameter], cfg: EngineConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


class Simulation:
    """Run a method over a partition of a training data set; evaluate on a test set."""

    def __init__(self, method: Method, model: torch.nn.Module, train: ImageDataset, partition: "Partition",
                 test: ImageDataset | None = None, cfg: EngineConfig | None = None,
                 extra_eval: dict[str, ImageDataset] | None = None,
                 checkpoint_path: str | Path | None = None):
        self.cfg = cfg or EngineConfig()
        self.method = method
        self.device = resolve_device(self.cfg.device)
        self.model = model.to(self.device)
        if self.cfg.channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
        self.train_set, self.test_set = train, test
        self.extra_eval = extra_eval or {}
        self.partition = partition
        self.images = torch.from_numpy(np.ascontiguousarray(train.images))
        if self.device.type == "cuda":
            self.images = self.images.pin_memory() if self.images.numel() > 2**31 else self.images.to(self.device)
        self.preprocess = Preprocess(self.cfg.normalize, self.cfg.augment, self.cfg.channels_last)
        clients = make_client_data(train, partition)
        if self.cfg.client_val_fraction > 0:
            clients = [split_validation(c, self.cfg.client_val_fraction, derive_seed(self.cfg.seed, k, 104729))
                       for k, c in enumerate(clients)]
        self.clients = method.prepare_clients(clients, train)
        self.info = FederationInfo(len(self.clients), list(train.class_names), train.task,
                                   [c.name for c in self.clients])
        method.setup(self.model, self.info)
        self._arrays = {**dict(self.model.named_parameters()), **dict(self.model.named_buffers())}
        self.optimizer = make_optimizer([p for p in self.model.parameters() if p.requires_grad], self.cfg)
        self.server = Server(method, self.extract_state(), self.info)
        self.client_states: list[dict[str, Any]] = [{} for _ in self.clients]
        self.history: list[dict[str, Any]] = []
        self.round = 0
        self.loss_scale: float | None = None  # the start a diverging loss is measured against
        self.init_clients()
        self.selection = BestRound(self.cfg.selection, self.cfg.maximise, self.cfg.patience)
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None

    # ------------------------------------------------------------- arrays
    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        load_arrays(self._arrays, state)

    def extract_state(self) -> dict[str, torch.Tensor]:
        return copy_arrays(self._arrays)

    def autocast(self):
        if self.cfg.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @property
    def best(self) -> dict[str, Any] | None:
        return self.selection.best

    # ------------------------------------------------------------ one round
    def client_context(self, k: int, round_idx: int, data: ClientData | None = None) -> ClientContext:
        """Client k's view for a round: its own data (or ``data``), state, model, optimizer."""
        return ClientContext(k, round_idx, self.clients[k] if data is None else data, self.client_states[k],
                             self.model, self.optimizer, self.info, self.cfg, self.device, self.images,
                             self.preprocess, self._arrays, self.autocast)

    def init_clients(self) -> None:
        """:meth:`Method.init_client` for every client (after a resume too: it fills what
        is missing)."""
        for k in range(len(self.clients)):
            self.method.init_client(self.client_context(k, self.round))

    def sample_clients(self, round_idx: int) -> list[int]:
        k = len(self.clients)
        m = max(1, int(round(self.cfg.client_fraction * k)))
        if m >= k:
            return list(range(k))
        rng = np.random.default_rng(derive_seed(self.cfg.seed, round_idx, 7919))
        return sorted(rng.choice(k, size=m, replace=False).tolist())

    def run_client(self, k: int, round_idx: int, payload: dict[str, Any]) -> tuple[ClientUpdate, float]:
        ctx = self.client_context(k, round_idx)
        m = self.method
        m.receive(ctx, payload)
        keep = self.cfg.optimizer_state == "keep"
        self.optimizer.state.clear()
        if keep and ctx.state.get("optimizer"):
            sd = self.optimizer.state_dict()
            sd["state"] = _clone(ctx.state["optimizer"])
            self.optimizer.load_state_dict(sd)
        m.before_training(ctx)
        m.configure_model(self.model, train=True)
        loss = m.local_train(ctx)
        self.check_loss(loss, k, round_idx)
        m.after_training(ctx)
        self._round_logs.append(ctx.logs)
        if keep:
            ctx.state["optimizer"] = _clone(self.optimizer.state_dict()["state"])
        return m.make_update(ctx), loss

    @torch.no_grad()
    def loss_reference(self) -> float | None:
        """The supervised loss (:meth:`Method.supervised_loss`) of the global model on the
        first client's first batch, in order, without augmentation, in eval mode: no random
        number is drawn and no array of the global model or of a client changes (the
        working model gets the global arrays, as every client's round begins)."""
        k = next((k for k, c in enumerate(self.clients) if c.n), None)
        if k is None:
            return None
        ctx = self.client_context(k, self.round)
        ctx.state = dict(ctx.state)
        self.load_state(self.server.global_state)
        self.method.configure_model(self.model, train=False)
        b = ctx.make_batch(torch.arange(min(self.cfg.batch_size, ctx.data.n)), train=False)
        with self.autocast():
            logits, _ = self.model.forward_features(b.x)
        return float(self.method.supervised_loss(ctx, logits.float(), b))

    def check_loss(self, loss: float, k: int | None, round_idx: int) -> None:
        """:class:`DivergenceError` for a non-finite loss or one that exploded: over
        ``EXPLOSION`` times the start (``loss_scale``, at least 1).  ``k``: the client whose
        training loss it is; None: the global model's (:meth:`loss_reference`)."""
        if k is None:
            where = f"after round {round_idx + 1}, the global model's loss"
        else:
            where = f"round {round_idx + 1}, client {self.info.client_names[k]}: the training loss"
        lr = f"lower the learning rate (lr={self.cfg.lr:g}) of the {self.cfg.optimizer} optimizer"
        if not math.isfinite(loss):
            raise DivergenceError(f"{where} is {loss}; {lr} or check the data")
        ref = max(self.loss_scale or 0.0, 1.0)
        if self.loss_scale is not None and loss > EXPLOSION * ref:
            raise DivergenceError(f"{where} is {loss:.3g}, over {EXPLOSION:g} times its start "
                                  f"({self.loss_scale:.3g}): the training diverged; {lr} or check the data")

    def step(self) -> dict[str, Any]:
        """One communication round; returns its history record."""
        r = self.round
        if r == 0 and self.loss_scale is None:
            start = self.loss_reference()
            self.loss_scale = start if start is not None and math.isfinite(start) else None
        t0 = time.perf_counter()
        updates, losses = [], []
        self._round_logs: list[dict[str, float]] = []
        for k in self.sample_clients(r):
            upd, loss = self.run_client(k, r, self.server.payload(k))
            updates.append(upd)
            losses.append(loss)
        self.server.aggregate(updates)
        if self.loss_scale is not None:
            self.check_loss(self.loss_reference(), None, r)
        self.round += 1
        record: dict[str, Any] = {"round": self.round, "train_loss": float(np.mean(losses)),
                                  "train_time": time.perf_counter() - t0}
        record.update(evaluation.client_logs(self._round_logs))
        record.update(evaluation.pseudo_label_quality(self))
        if self.round % self.cfg.eval_every == 0 or self.round == self.cfg.rounds:
            t1 = time.perf_counter()
            record.update(evaluation.evaluate_round(self))
            record["eval_time"] = time.perf_counter() - t1
        self.history.append(record)
        self.selection.update(record)
        return record

    def run(self, rounds: int | None = None, callback: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
        """Run until ``cfg.rounds`` (or ``rounds`` more); checkpoints every ``checkpoint_every``."""
        end = self.cfg.rounds if rounds is None else min(self.cfg.rounds, self.round + rounds)
        bar = None
        if self.cfg.progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.cfg.rounds, initial=self.round, desc=self.method.name, leave=False)
        try:
            while self.round < end and not self.selection.should_stop:
                rec = self.step()
                if bar is not None:
                    bar.update(1)
                    shown = {k: rec[k] for k in ("train_loss", "auroc_mean", "accuracy") if rec.get(k) is not None}
                    bar.set_postfix({k: f"{v:.3f}" for k, v in shown.items()})
                ce = self.cfg.checkpoint_every
                if self.checkpoint_path and ce and (self.round % ce == 0 or self.round == end):
                    save_checkpoint(self, self.checkpoint_path)
                if callback is not None:
                    callback(rec)
        finally:
            if bar is not None:
                bar.close()
        return self.history

    # ------------------------------------------------ evaluation, checkpoints
    def predict(self, dataset: ImageDataset, state: dict[str, torch.Tensor] | None = None) -> np.ndarray:
        """Probabilities of the global model (or ``state``): :func:`evaluation.predict`."""
        return evaluation.predict(self, dataset, state)

    def evaluate(self, dataset: ImageDataset) -> dict[str, Any]:
        """Metrics on ``dataset``: :func:`evaluation.evaluate`."""
        return evaluation.evaluate(self, dataset)

    def save_checkpoint(self, path: str | Path) -> None:
        save_checkpoint(self, path)

    def load_checkpoint(self, path: str | Path) -> None:
        load_checkpoint(self, path)


def _clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(v) for v in obj)
    return obj


__all__ = ["EngineConfig", "Simulation", "DivergenceError", "resolve_device", "make_client_data",
           "split_validation", "make_optimizer"]
