"""The simulation engine: K clients and a server in one process.

Design:

* The training images live once, as a uint8 tensor, and are batched by index with a
  seeded generator per (seed, round, client); no DataLoader, no per-round re-reading.
* One *working model* is reused by every client: a client's round loads the payload
  into it in place, trains, and extracts its arrays.  No model is deep-copied per
  client per round.
* The :class:`Server` holds only the global arrays and the method's server memory; it is
  built without access to any data set and receives nothing but
  :class:`~fedpl_core.methods.base.ClientUpdate` objects.
* Everything that varies between papers is a :class:`~fedpl_core.methods.base.Method` hook.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch

from .data.base import ImageDataset
from .methods.base import ClientUpdate, Method
from .metrics import evaluate as compute_metrics
from .partitions import Partition


@dataclass
class EngineConfig:
    """Training schedule and numerics shared by every method.

    ``local_iters`` (a fixed number of local steps, FedLSM) overrides ``local_epochs``.
    ``optimizer_state``: ``reset`` each round (a fresh Adam per round, as most released
    codes do) or ``keep`` (each client keeps its optimizer state across rounds).
    ``normalize``: ``fixed`` ((x/255 - 0.5) / 0.25), ``imagenet`` or ``instance``
    (per-image (x - mean) / std, FedPSL).  ``augment``: ``none``, ``flip``, ``shift``
    or ``flip_shift`` (random horizontal flip, random translation by up to 1/8 of the size).
    ``selection``: the history key that picks the best round, with ``selection_mode``
    ``max`` or ``min``; ``patience`` (evaluations without improvement) stops early.
    ``client_val_fraction`` > 0 holds out that share of every client's samples (seeded)
    as a local validation split; each evaluation then records ``val_loss``, the mean
    over clients of the global model's loss on their validation data (Surgical
    Aggregation's model selection: ``selection="val_loss", selection_mode="min"``).
    """

    rounds: int = 20
    local_epochs: float = 1.0
    local_iters: int | None = None
    batch_size: int = 64
    client_fraction: float = 1.0
    optimizer: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    momentum: float = 0.9
    optimizer_state: str = "reset"
    normalize: str = "fixed"
    augment: str = "none"
    eval_every: int = 1
    eval_batch_size: int = 512
    selection: str = "auroc_mean"
    selection_mode: str = "max"
    patience: int | None = None
    device: str = "auto"
    amp: bool = False
    seed: int = 0
    client_val_fraction: float = 0.0
    checkpoint_every: int = 0
    progress: bool = True


@dataclass
class ClientData:
    """A client's view of its data: indices into the engine's images, labels with every
    unannotated entry zeroed, and the known-label mask."""

    indices: torch.Tensor  # [n] long
    labels: torch.Tensor  # [n, C] float
    mask: torch.Tensor  # [n, C] bool
    class_mask: torch.Tensor  # [C] bool
    name: str = ""
    val: "ClientData | None" = None  # local validation split (never trained on)

    @property
    def n(self) -> int:
        return int(self.indices.numel())


@dataclass
class Batch:
    x: torch.Tensor  # [B, C, H, W] float, preprocessed
    y: torch.Tensor  # [B, K]
    mask: torch.Tensor  # [B, K] bool
    pos: torch.Tensor  # [B] positions in the client's data
    index: torch.Tensor  # [B] indices into the training images


@dataclass
class FederationInfo:
    """What every party may know: sizes and names, never data."""

    num_clients: int
    class_names: list[str]
    task: str
    client_names: list[str]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def derive_seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


class Preprocess:
    """uint8 batch -> normalised float batch, optional seeded augmentation (vectorised)."""

    def __init__(self, normalize: str = "fixed", augment: str = "none"):
        if normalize not in ("fixed", "imagenet", "instance"):
            raise ValueError(f"unknown normalize {normalize!r}")
        if augment not in ("none", "flip", "shift", "flip_shift"):
            raise ValueError(f"unknown augment {augment!r}")
        self.normalize, self.augment = normalize, augment

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None, train: bool = False) -> torch.Tensor:
        x = x.float().div_(255.0)
        if train and self.augment != "none":
            x = augment_batch(x, self.augment, generator)
        if self.normalize == "fixed":
            return x.sub_(0.5).div_(0.25)
        if self.normalize == "imagenet":
            c = x.shape[1]
            mean = torch.tensor([0.485, 0.456, 0.406][:c] if c == 3 else [0.449], device=x.device)
            std = torch.tensor([0.229, 0.224, 0.225][:c] if c == 3 else [0.226], device=x.device)
            return (x - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)
        m = x.mean(dim=(1, 2, 3), keepdim=True)
        s = x.std(dim=(1, 2, 3), keepdim=True).clamp_min(1e-6)
        return (x - m) / s


def augment_batch(x: torch.Tensor, kind: str, generator: torch.Generator | None) -> torch.Tensor:
    """Random horizontal flips and/or integer translations (zero padding), per sample."""
    b, _, h, w = x.shape
    dev = x.device
    if "flip" in kind:
        flip = torch.rand(b, generator=generator).lt(0.5).to(dev)
        x = torch.where(flip.view(b, 1, 1, 1), x.flip(-1), x)
    if "shift" in kind:
        p = max(1, h // 8)
        off = torch.randint(0, 2 * p + 1, (2, b), generator=generator).to(dev)
        xp = torch.nn.functional.pad(x, (p, p, p, p))
        rows = (torch.arange(h, device=dev)[None, :] + off[0][:, None])  # [B, H]
        cols = (torch.arange(w, device=dev)[None, :] + off[1][:, None])  # [B, W]
        bi = torch.arange(b, device=dev)[:, None, None]
        x = xp.permute(0, 2, 3, 1)[bi, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous()
    return x


class Server:
    """The server: global arrays and the method's server memory; no data."""

    def __init__(self, method: Method, global_state: dict[str, torch.Tensor], info: FederationInfo):
        self.method = method
        self.info = info
        self.global_state = global_state
        self.state: dict[str, Any] = {}
        method.init_server(self)

    def payload(self, client_id: int) -> dict[str, Any]:
        return self.method.payload(self, client_id)

    def aggregate(self, updates: list[ClientUpdate]) -> None:
        for u in updates:
            if not isinstance(u, ClientUpdate):
                raise TypeError(f"the server accepts ClientUpdate objects only, got {type(u).__name__}")
        self.method.aggregate(self, updates)


class ClientContext:
    """Everything a method's client-side hooks may use for one client and round."""

    def __init__(self, engine: "Simulation", client_id: int, round_idx: int):
        self.engine = engine
        self.client_id = client_id
        self.round = round_idx
        self.data: ClientData = engine.clients[client_id]
        self.state: dict[str, Any] = engine.client_states[client_id]
        self.model = engine.model
        self.optimizer = engine.optimizer
        self.info = engine.info
        self.cfg = engine.cfg
        self.device = engine.device
        self.generator = torch.Generator().manual_seed(derive_seed(engine.cfg.seed, round_idx, client_id))
        self.scratch: dict[str, Any] = {}

    # model arrays -----------------------------------------------------------
    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        self.engine.load_state(state)

    def extract_state(self) -> dict[str, torch.Tensor]:
        return self.engine.extract_state()

    def autocast(self):
        return self.engine.autocast()

    # data ---------------------------------------------------------------------
    def num_steps(self) -> int:
        cfg = self.cfg
        if cfg.local_iters is not None:
            return int(cfg.local_iters)
        per_epoch = max(1, self.data.n // cfg.batch_size) if self.data.n >= cfg.batch_size else 1
        return max(1, int(math.ceil(per_epoch * cfg.local_epochs)))

    def batch_positions(self) -> Iterator[torch.Tensor]:
        """Seeded shuffled positions: full batches only (one batch of all when n < B)."""
        n, bs = self.data.n, min(self.cfg.batch_size, self.data.n)
        steps, done = self.num_steps(), 0
        while done < steps:
            perm = torch.randperm(n, generator=self.generator)
            for s in range(0, n - bs + 1, bs):
                yield perm[s:s + bs]
                done += 1
                if done == steps:
                    return

    def make_batch(self, pos: torch.Tensor, train: bool = True) -> Batch:
        d = self.data
        idx = d.indices[pos]
        x = self.engine.images[idx].to(self.device, non_blocking=True)
        x = self.engine.preprocess(x, self.generator, train=train)
        return Batch(x, d.labels[pos].to(self.device), d.mask[pos].to(self.device), pos, idx)

    def batches(self, train: bool = True) -> Iterator[Batch]:
        for pos in self.batch_positions():
            yield self.make_batch(pos, train)

    def iterate_all(self, batch_size: int | None = None) -> Iterator[Batch]:
        """Every local sample once, in order, without augmentation (for estimates)."""
        bs = batch_size or self.cfg.eval_batch_size
        for s in range(0, self.data.n, bs):
            yield self.make_batch(torch.arange(s, min(s + bs, self.data.n)), train=False)


def make_client_data(dataset: ImageDataset, partition: Partition) -> list[ClientData]:
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


class Simulation:
    """Run a method over a partition of a training data set; evaluate on a test set."""

    def __init__(self, method: Method, model: torch.nn.Module, train: ImageDataset, partition: Partition,
                 test: ImageDataset | None = None, cfg: EngineConfig | None = None,
                 extra_eval: dict[str, ImageDataset] | None = None,
                 checkpoint_path: str | Path | None = None):
        self.cfg = cfg or EngineConfig()
        self.method = method
        self.device = resolve_device(self.cfg.device)
        self.model = model.to(self.device)
        self.train_set, self.test_set = train, test
        self.extra_eval = extra_eval or {}
        self.partition = partition
        self.images = torch.from_numpy(np.ascontiguousarray(train.images))
        if self.device.type == "cuda":
            self.images = self.images.pin_memory() if self.images.numel() > 2**31 else self.images.to(self.device)
        self.preprocess = Preprocess(self.cfg.normalize, self.cfg.augment)
        clients = make_client_data(train, partition)
        if self.cfg.client_val_fraction > 0:
            clients = [split_validation(c, self.cfg.client_val_fraction, derive_seed(self.cfg.seed, k, 104729))
                       for k, c in enumerate(clients)]
        self.clients = method.prepare_clients(clients, train)
        self.info = FederationInfo(len(self.clients), list(train.class_names), train.task,
                                   [c.name for c in self.clients])
        method.setup(self.model, self.info)
        self._arrays = {**dict(self.model.named_parameters()), **dict(self.model.named_buffers())}
        self.optimizer = self._make_optimizer()
        self.server = Server(method, self.extract_state(), self.info)
        self.client_states: list[dict[str, Any]] = [{} for _ in self.clients]
        self.history: list[dict[str, Any]] = []
        self.round = 0
        self.best: dict[str, Any] | None = None
        self._since_best = 0
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else None

    # ------------------------------------------------------------- arrays
    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for k, v in state.items():
                self._arrays[k].copy_(v, non_blocking=True)

    def extract_state(self) -> dict[str, torch.Tensor]:
        return {k: t.detach().clone() for k, t in self._arrays.items()}

    def _make_optimizer(self) -> torch.optim.Optimizer:
        cfg = self.cfg
        params = [p for p in self.model.parameters() if p.requires_grad]
        if cfg.optimizer == "adam":
            return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        if cfg.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        if cfg.optimizer == "sgd":
            return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}; use adam, adamw or sgd")

    def autocast(self):
        if self.cfg.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    # ------------------------------------------------------------ one round
    def sample_clients(self, round_idx: int) -> list[int]:
        k = len(self.clients)
        m = max(1, int(round(self.cfg.client_fraction * k)))
        if m >= k:
            return list(range(k))
        rng = np.random.default_rng(derive_seed(self.cfg.seed, round_idx, 7919))
        return sorted(rng.choice(k, size=m, replace=False).tolist())

    def run_client(self, k: int, round_idx: int, payload: dict[str, Any]) -> tuple[ClientUpdate, float]:
        ctx = ClientContext(self, k, round_idx)
        m = self.method
        m.receive(ctx, payload)
        self._begin_optimizer(ctx)
        m.before_training(ctx)
        m.configure_model(self.model, train=True)
        loss = m.local_train(ctx)
        m.after_training(ctx)
        if self.cfg.optimizer_state == "keep":
            ctx.state["optimizer"] = _clone(self.optimizer.state_dict()["state"])
        return m.make_update(ctx), loss

    def _begin_optimizer(self, ctx: ClientContext) -> None:
        saved = ctx.state.get("optimizer") if self.cfg.optimizer_state == "keep" else None
        self.optimizer.state.clear()
        if saved:
            sd = self.optimizer.state_dict()
            sd["state"] = _clone(saved)
            self.optimizer.load_state_dict(sd)

    def step(self) -> dict[str, Any]:
        """One communication round; returns its history record."""
        r = self.round
        t0 = time.perf_counter()
        updates, losses = [], []
        for k in self.sample_clients(r):
            upd, loss = self.run_client(k, r, self.server.payload(k))
            updates.append(upd)
            losses.append(loss)
        self.server.aggregate(updates)
        self.round += 1
        record: dict[str, Any] = {"round": self.round, "train_loss": float(np.mean(losses)),
                                  "train_time": time.perf_counter() - t0}
        if self.round % self.cfg.eval_every == 0 or self.round == self.cfg.rounds:
            t1 = time.perf_counter()
            if self.test_set is not None:
                record.update(self.evaluate(self.test_set))
            for name, ds in self.extra_eval.items():
                record.update({f"{name}/{k}": v for k, v in self.evaluate(ds).items()})
            if any(c.val is not None for c in self.clients):
                record["val_loss"] = self.validation_loss()
            record["eval_time"] = time.perf_counter() - t1
        self.method.on_round_end(self, r, record)
        self.history.append(record)
        self._track_best(record)
        return record

    def _track_best(self, record: dict[str, Any]) -> None:
        key, mode = self.cfg.selection, self.cfg.selection_mode
        v = record.get(key)
        if v is None:
            return
        better = self.best is None or (v > self.best[key] if mode == "max" else v < self.best[key])
        if better:
            self.best = dict(record)
            self._since_best = 0
        else:
            self._since_best += 1

    def should_stop(self) -> bool:
        p = self.cfg.patience
        return p is not None and self._since_best >= p

    def run(self, rounds: int | None = None, callback: Callable[[dict], None] | None = None) -> list[dict[str, Any]]:
        """Run until ``cfg.rounds`` (or ``rounds`` more); checkpoints every ``checkpoint_every``."""
        end = self.cfg.rounds if rounds is None else min(self.cfg.rounds, self.round + rounds)
        bar = None
        if self.cfg.progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.cfg.rounds, initial=self.round, desc=self.method.name, leave=False)
        try:
            while self.round < end and not self.should_stop():
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

    # ----------------------------------------------------------- evaluation
    @torch.no_grad()
    def predict(self, dataset: ImageDataset, state: dict[str, torch.Tensor] | None = None) -> np.ndarray:
        """Probabilities of the global model (or ``state``) on ``dataset``."""
        self.load_state(self.server.global_state if state is None else state)
        self.method.configure_model(self.model, train=False)
        imgs = torch.from_numpy(dataset.images)
        out = []
        bs = self.cfg.eval_batch_size
        for s in range(0, len(imgs), bs):
            x = self.preprocess(imgs[s:s + bs].to(self.device))
            with self.autocast():
                logits = self.model(x).float()
            out.append(torch.softmax(logits, 1) if self.info.task == "multiclass" else torch.sigmoid(logits))
        return torch.cat(out).cpu().numpy() if out else np.zeros((0, self.info.num_classes), np.float32)

    @torch.no_grad()
    def validation_loss(self) -> float:
        """Mean over clients of the method loss on their validation split, scored with the
        global model (or each client's own model for personalised methods)."""
        personal = self.method.evaluation == "personalised"
        losses = []
        for k, c in enumerate(self.clients):
            if c.val is None or c.val.n == 0:
                continue
            self.load_state(self.client_model_state(k) if personal else self.server.global_state)
            self.method.configure_model(self.model, train=False)
            ctx = ClientContext(self, k, self.round)
            ctx.data = c.val
            tot, n = 0.0, 0
            for b in ctx.iterate_all():
                with self.autocast():
                    logits, feats = self.model.forward_features(b.x)
                tot += float(self.method.loss(ctx, logits.float(), feats, b)) * len(b.pos)
                n += len(b.pos)
            losses.append(tot / max(n, 1))
        return float(np.mean(losses)) if losses else float("nan")

    def client_model_state(self, k: int) -> dict[str, torch.Tensor]:
        """Client k's current model: the global arrays overlaid with its local ones."""
        state = dict(self.server.global_state)
        state.update(self.client_states[k].get("local", {}))
        return state

    def predict_personalised(self, dataset: ImageDataset) -> np.ndarray:
        """Class c's score = mean over clients annotating c of their own model's score."""
        masks = torch.stack([c.class_mask for c in self.clients]).numpy()  # [K, C]
        probs = np.stack([self.predict(dataset, self.client_model_state(k)) for k in range(len(self.clients))])
        w = masks.astype(np.float64)
        w[:, ~masks.any(0)] = 1.0
        out = (probs * w[:, None, :]).sum(0) / w.sum(0)[None, :]
        if self.info.task == "multiclass":
            out = out / out.sum(1, keepdims=True)
        return out.astype(np.float32)

    def evaluate(self, dataset: ImageDataset) -> dict[str, Any]:
        probs = self.predict_personalised(dataset) if self.method.evaluation == "personalised" else self.predict(dataset)
        return compute_metrics(dataset.labels, probs, task=dataset.task, class_names=dataset.class_names,
                               mask=dataset.label_mask)

    # ----------------------------------------------------------- checkpoints
    def save_checkpoint(self, path: str | Path) -> None:
        """Everything needed to resume: arrays, server and client state, RNG, history."""
        blob = {
            "round": self.round, "global_state": self.server.global_state, "server_state": self.server.state,
            "client_states": self.client_states, "history": self.history, "best": self.best,
            "since_best": self._since_best, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "config": asdict(self.cfg), "method": self.method.name,
        }
        atomic_torch_save(blob, path)

    def load_checkpoint(self, path: str | Path) -> None:
        blob = torch.load(path, map_location=self.device, weights_only=False)
        if blob.get("method") != self.method.name:
            raise ValueError(f"checkpoint {path} is for method {blob.get('method')!r}, not {self.method.name!r}")
        self.round = blob["round"]
        self.server.global_state = blob["global_state"]
        self.server.state = blob["server_state"]
        self.client_states = blob["client_states"]
        self.history = blob["history"]
        self.best = blob["best"]
        self._since_best = blob["since_best"]
        torch.set_rng_state(blob["torch_rng"].cpu())
        if blob.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in blob["cuda_rng"]])


def _clone(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(v) for v in obj)
    return obj


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)
