"""The simulation: K sites and a server in one process, round after round.

:class:`Simulation` does one job, the round loop: sample the round's clients
(:func:`~fedpl_core.fl.server.sample_clients`), ``site.train(server.payload(k), round)``
for each, ``server.aggregate(updates)``, then score (:mod:`~fedpl_core.fl.evaluation`),
track the best round (:mod:`~fedpl_core.fl.selection`) and checkpoint
(:mod:`~fedpl_core.fl.checkpoint`).

Design:

* The training images live once, as a uint8 tensor, and are batched by index with a
  seeded generator per (seed, round, client); no DataLoader, no per-round re-reading.
* One :class:`~fedpl_core.fl.site.WorkingModel` is shared by every
  :class:`~fedpl_core.fl.site.Site`: a site's round loads the payload into it in place,
  trains, and extracts its arrays.  No model is deep-copied per client per round.
* The :class:`~fedpl_core.fl.server.Server` holds only the global arrays and the
  method's server memory and receives nothing but ``ClientUpdate`` objects; a method's
  client hooks see a :class:`~fedpl_core.fl.federation.ClientContext` (the client's own
  data, the model, the optimizer, its state), never the simulation.
* A non-finite training loss, or one over ``EXPLOSION`` times its start (the supervised
  loss of the initial model, :meth:`Simulation.loss_reference`, at least 1), stops the
  run at once with :class:`DivergenceError`, naming the round, the client, the learning
  rate and the optimizer; so does the aggregated model's loss on the same batch after
  each round (a last step can blow the model up after its loss was recorded).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..data.base import ImageDataset
from . import batched, checkpoint, evaluation
from .engine_config import EngineConfig
from .federation import ClientContext, ClientData, ClientUpdate, DivergenceError, FederationInfo, derive_seed
from .preprocess import Preprocess
from .selection import BestRound
from .server import Server, sample_clients
from .site import (
    EXPLOSION,
    DivergenceCheck,
    Site,
    WorkingModel,
    configure_cuda,
    make_client_data,
    make_optimizer,
    place_model,
    resolve_device,
    split_validation,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..nn.models import FedModel
    from ..partitions import Partition

log = logging.getLogger("fedpl")


def load_images(dataset: ImageDataset, device: torch.device) -> torch.Tensor:
    """The data set's uint8 images as one tensor: on a GPU when they fit its indexing
    (under 2**31 elements), else in pinned host memory."""
    images = torch.from_numpy(np.ascontiguousarray(dataset.images))
    if device.type == "cuda":
        return images.pin_memory() if images.numel() > 2**31 else images.to(device)
    return images


class Simulation:
    """Run a method over a partition of a training data set; evaluate on a test set.

    ``method``: a :class:`~fedpl_core.methods.base.Method` (not imported here: the federated
    core sits below the methods, which import its types)."""

    def __init__(
        self,
        method: Any,
        model: FedModel,
        train: ImageDataset,
        partition: Partition,
        test: ImageDataset | None = None,
        cfg: EngineConfig | None = None,
        extra_eval: dict[str, ImageDataset] | None = None,
        checkpoint_path: str | Path | None = None,
    ):
        self.cfg = cfg = cfg or EngineConfig()
        self.method = method
        self.device = resolve_device(cfg.device)
        configure_cuda(cfg, self.device)
        self.model = place_model(model, cfg, self.device)
        self.train_set, self.test_set = train, test
        self.extra_eval = extra_eval or {}
        self.partition = partition
        self.images = load_images(train, self.device)
        clients = make_client_data(train, partition)
        if cfg.client_val_fraction > 0:
            clients = [
                split_validation(c, cfg.client_val_fraction, derive_seed(cfg.seed, k, 104729))
                for k, c in enumerate(clients)
            ]
        clients = method.clients_block(clients, train)  # configuration: pooled baselines reshape the clients
        self.info = FederationInfo(len(clients), list(train.class_names), train.task, [c.name for c in clients])
        method.setup(self.model, self.info)
        self.work = WorkingModel(self.model, cfg, self.device)
        self.server = Server(method, self.work.extract_state(), self.info)
        self.guard = DivergenceCheck(cfg)  # its scale: the start a diverging loss is measured against
        self.sites = [
            Site(k, c, method, self.work, self.images, self.info, cfg, self.guard) for k, c in enumerate(clients)
        ]
        self.history: list[dict[str, Any]] = []
        self._batched_reason: str | None = None  # why a round could not be batched (logged once)
        self.batched_fit: int | None = None  # the batched path's chunk after it ran out of GPU memory
        self.round = 0
        self.init_clients()
        self.selection = BestRound(cfg.selection, cfg.maximise, cfg.patience)
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None

    # ------------------------------------------------------------- the parts
    @property
    def clients(self) -> list[ClientData]:
        """Each site's data (after the method's ``clients_block``)."""
        return [s.data for s in self.sites]

    @property
    def client_states(self) -> list[dict[str, Any]]:
        """Each site's state dict (the objects the sites hold)."""
        return [s.state for s in self.sites]

    @property
    def loss_scale(self) -> float | None:
        return self.guard.scale

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.work.optimizer

    @property
    def preprocess(self) -> Preprocess:
        return self.work.preprocess

    @property
    def best(self) -> dict[str, Any] | None:
        return self.selection.best

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.work.load_state(state)

    def extract_state(self) -> dict[str, torch.Tensor]:
        return self.work.extract_state()

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.work.autocast()

    def client_context(self, k: int, round_idx: int, data: ClientData | None = None) -> ClientContext:
        """Client k's view for a round: its own data (or ``data``), state, model, optimizer."""
        return self.sites[k].context(round_idx, data)

    def init_clients(self) -> None:
        """:meth:`Method.init_client` for every client (after a resume too: it fills what
        is missing)."""
        for s in self.sites:
            s.init(self.round)

    def loss_reference(self) -> float | None:
        """The supervised loss of the global model on the first client's first batch
        (:meth:`Site.reference_loss`); None when no client has data."""
        site = next((s for s in self.sites if s.data.n), None)
        return None if site is None else site.reference_loss(self.server.global_state, self.round)

    # ------------------------------------------------------------ one round
    def _train_batched(self, clients: list[int], r: int) -> tuple[list[ClientUpdate], list[dict[str, float]]] | None:
        """``(updates, logs)`` of the round's clients trained as vmapped steps
        (``cfg.batched_clients`` at a time, :mod:`fedpl_core.fl.batched`), or None when the
        round cannot be batched: the reason is logged once, and the loop trains it."""
        try:
            updates, losses = batched.train_round(self, clients, r, chunk=self.cfg.batched_clients)
        except batched.NotBatchable as e:
            if self._batched_reason is None:
                self._batched_reason = str(e)
                log.info("batched_clients: %s; the clients train one after the other", e)
            return None
        for k, loss in zip(clients, losses):
            self.guard(loss, f"round {r + 1}, client {self.info.client_names[k]}: the training loss")
        return updates, [{"train_loss": loss} for loss in losses]

    def step(self) -> dict[str, Any]:
        """One communication round; returns its history record."""
        r, cfg = self.round, self.cfg
        if r == 0 and self.guard.scale is None:
            start = self.loss_reference()
            if start is not None and not math.isfinite(start):  # before any step: no learning rate to blame
                raise DivergenceError(
                    f"before any training the initial model's loss is {start}: its weights (e.g. "
                    "model_kwargs weights_path) or its inputs hold non-finite values; check them"
                )
            self.guard.scale = start
        t0 = time.perf_counter()
        clients = sample_clients(len(self.sites), cfg.client_fraction, cfg.seed, r)
        batched_round = self._train_batched(clients, r) if cfg.batched_clients else None
        if batched_round is not None:
            updates, logs = batched_round
        else:
            updates, logs = [], []
            for k in clients:
                upd, log = self.sites[k].train(self.server.payload(k), r)
                updates.append(upd)
                logs.append(log)
        self.server.aggregate(updates)
        if self.guard.scale is not None:
            # a scale was measured, so a client has data: the reference is a number
            self.guard(self.loss_reference(), f"after round {r + 1}, the global model's loss")  # type: ignore[arg-type]
        self.round += 1
        record: dict[str, Any] = {
            "round": self.round,
            "train_loss": float(np.mean([g["train_loss"] for g in logs])),
            "train_time": time.perf_counter() - t0,
        }
        record.update(evaluation.client_logs(logs))
        record.update(evaluation.pseudo_label_quality(self.train_set, self.clients, self.client_states))
        if self.round % cfg.eval_every == 0 or self.round == cfg.rounds:
            t1 = time.perf_counter()
            record.update(
                evaluation.evaluate_round(
                    self.work,
                    self.method,
                    self.info,
                    self.models(),
                    self.test_set,
                    self.extra_eval,
                    self.sites,
                    self.round,
                )
            )
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
                    self.save_checkpoint(self.checkpoint_path)
                if callback is not None:
                    callback(rec)
        finally:
            if bar is not None:
                bar.close()
        return self.history

    # ------------------------------------------------ evaluation, checkpoints
    def models(self) -> evaluation.Models:
        """The models to score now: the global arrays and each client's local ones."""
        return evaluation.Models.of(self.server.global_state, self.client_states, self.clients)

    def predict(self, dataset: ImageDataset, state: dict[str, torch.Tensor] | None = None) -> np.ndarray:
        """Probabilities of the global model (or ``state``): :func:`evaluation.predict`."""
        return evaluation.predict(
            self.work, self.method, self.info, dataset, self.server.global_state if state is None else state, self.round
        )

    def evaluate(self, dataset: ImageDataset) -> dict[str, Any]:
        """Metrics on ``dataset``: :func:`evaluation.evaluate`."""
        return evaluation.evaluate(self.work, self.method, self.info, dataset, self.models(), self.round)

    def validation_loss(self) -> float | None:
        """The clients' mean validation loss now: :func:`evaluation.validation_loss`."""
        return evaluation.validation_loss(self.method, self.sites, self.models(), self.round)

    def run_state(self) -> dict[str, Any]:
        """What a checkpoint holds (:func:`checkpoint.save_checkpoint`'s parts)."""
        return {
            "round": self.round,
            "global_state": self.server.global_state,
            "server_state": self.server.state,
            "client_states": self.client_states,
            "history": self.history,
            "selection": self.selection.state_dict(),
            "method": self.method.name,
            "loss_scale": self.loss_scale,
        }

    def save_checkpoint(self, path: str | Path) -> None:
        checkpoint.save_checkpoint(path, **self.run_state())

    def load_checkpoint(self, path: str | Path) -> None:
        """Resume from ``path``; a file that does not fit this run raises
        :class:`~fedpl_core.fl.checkpoint.CheckpointError` and changes nothing."""
        blob = checkpoint.load_checkpoint(path, self.run_state(), self.cfg.rounds, self.device)
        self.round = blob["round"]
        self.server.global_state = blob["global_state"]
        self.server.state = blob["server_state"]
        for site, state in zip(self.sites, blob["client_states"]):
            site.state = state
        self.history = blob["history"]
        self.selection.load_state_dict(blob["selection"])
        self.guard.scale = blob.get("loss_scale")  # None in a checkpoint written before it was kept: not checked
        self.init_clients()


__all__ = [
    "EngineConfig",
    "Simulation",
    "DivergenceError",
    "EXPLOSION",
    "resolve_device",
    "make_client_data",
    "split_validation",
    "make_optimizer",
    "load_images",
]
