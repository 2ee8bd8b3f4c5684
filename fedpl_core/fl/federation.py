"""The types shared by the simulation and the methods: what a client holds, sees and sends.

Nothing here knows the simulation or any method (it imports neither, not even for type
hints), so both import this module and never each other:

* :class:`ClientData` - one client's sample positions, labels (unannotated entries
  zeroed) and known-label mask;
* :class:`Batch` - a preprocessed minibatch of a client's data;
* :class:`FederationInfo` - what every party may know (names and sizes, never data);
* :class:`ClientUpdate` - what a client sends: model arrays and *declared* metadata;
* :class:`ClientContext` - everything a method's client-side hooks may use: the client's
  own data and batches over it, the working model, the optimizer, the per-client state.

The :class:`~fedpl_core.fl.server.Server` (global arrays, the method's server memory)
is in :mod:`fedpl_core.fl.server`, a client (:class:`~fedpl_core.fl.site.Site`) in
:mod:`fedpl_core.fl.site`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.func import functional_call

if TYPE_CHECKING:  # pragma: no cover
    from ..nn.models import FedModel


class DivergenceError(RuntimeError):
    """Training produced a non-finite loss, or the model non-finite outputs."""


def derive_seed(*parts: int) -> int:
    """A 32-bit seed derived from integers (one stream per (seed, round, client, ...))."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


@dataclass
class ClientData:
    """A client's view of its data: indices into the training images, labels with every
    unannotated entry zeroed, and the known-label mask."""

    indices: torch.Tensor  # [n] long
    labels: torch.Tensor  # [n, C] float
    mask: torch.Tensor  # [n, C] bool
    class_mask: torch.Tensor  # [C] bool
    name: str = ""
    val: ClientData | None = None  # local validation split (never trained on)

    @property
    def n(self) -> int:
        return int(self.indices.numel())


@dataclass
class Batch:
    x: torch.Tensor | None  # [B, C, H, W] float, preprocessed
    y: torch.Tensor  # [B, K]
    mask: torch.Tensor  # [B, K] bool
    pos: torch.Tensor  # [B] positions in the client's data
    index: torch.Tensor  # [B] indices into the training images

    def split(self, h: int) -> tuple[Batch, Batch]:
        """The first ``h`` samples and the rest."""
        first = Batch(None if self.x is None else self.x[:h], self.y[:h], self.mask[:h], self.pos[:h], self.index[:h])
        rest = Batch(None if self.x is None else self.x[h:], self.y[h:], self.mask[h:], self.pos[h:], self.index[h:])
        return first, rest


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


_METADATA_TYPES = (torch.Tensor, np.ndarray, int, float, str, bool, list, tuple, type(None))


@dataclass
class ClientUpdate:
    """What a client sends to the server: model arrays and declared metadata only."""

    client_id: int
    state: dict[str, torch.Tensor]
    num_samples: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """A TypeError for a state entry that is not a tensor or metadata of a type that
        cannot travel (on construction, and again on what a client finally sends)."""
        for k, v in self.state.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"update state {k!r} is {type(v).__name__}, expected a tensor")
        for k, v in self.metadata.items():
            if not isinstance(v, _METADATA_TYPES):
                raise TypeError(f"metadata {k!r} of type {type(v).__name__} cannot be sent to the server")


def load_arrays(arrays: dict[str, torch.Tensor], state: dict[str, torch.Tensor]) -> None:
    """Copy ``state`` into the model ``arrays`` (parameters and buffers by name), in place."""
    with torch.no_grad():
        for k, v in state.items():
            arrays[k].copy_(v, non_blocking=True)


def copy_arrays(arrays: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A detached copy of every array."""
    return {k: t.detach().clone() for k, t in arrays.items()}


class ClientContext:
    """Everything a method's client-side hooks may use for one client and one round.

    ``data``: the client's :class:`ClientData`; ``state``: its dict kept across rounds
    (checkpointed); ``model`` / ``optimizer``: the working model and its optimizer;
    ``info``: the :class:`FederationInfo`; ``cfg``: the engine's schedule (read only);
    ``generator``: seeded per (seed, round, client); ``scratch``: a dict for this round
    only; :meth:`log` records numbers for the round's history; :meth:`forward_with` runs
    the model with other arrays (a teacher, the received global model).  Batches are built
    from the client's own samples only: :meth:`make_batch` takes positions in ``data``,
    never global indices.
    """

    def __init__(
        self,
        client_id: int,
        round_idx: int,
        data: ClientData,
        state: dict[str, Any],
        model: FedModel,
        optimizer: torch.optim.Optimizer,
        info: FederationInfo,
        cfg: Any,
        device: torch.device,
        images: torch.Tensor,
        preprocess: Callable[..., torch.Tensor],
        arrays: dict[str, torch.Tensor],
        autocast: Callable[[], Any] = contextlib.nullcontext,
    ):
        self.client_id, self.round = client_id, round_idx
        self.data, self.state = data, state
        self.model, self.optimizer = model, optimizer
        self.info, self.cfg, self.device = info, cfg, device
        self.generator = torch.Generator().manual_seed(derive_seed(cfg.seed, round_idx, client_id))
        self.scratch: dict[str, Any] = {}
        self.logs: dict[str, float] = {}
        self._images, self._preprocess, self._arrays, self._autocast = images, preprocess, arrays, autocast

    # model arrays -----------------------------------------------------------
    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Copy ``state`` into the working model's parameters and buffers, in place."""
        load_arrays(self._arrays, state)

    def extract_state(self) -> dict[str, torch.Tensor]:
        """A detached copy of every parameter and buffer of the working model."""
        return copy_arrays(self._arrays)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self._autocast()

    def forward_with(self, state: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, features)`` of the model with the arrays ``state`` (a teacher's, the
        received global model's; same keys as the working model, missing keys taken from
        the working model), in eval mode, without gradients and without changing the
        working model (its arrays, its train / eval modes)."""
        model = self.model
        modes = [m.training for m in model.modules()]
        model.eval()
        try:
            with torch.no_grad(), self.autocast():
                logits, feats = _forward_features(model, state, x)
        finally:
            for m, t in zip(model.modules(), modes):
                m.training = t
        return logits.float(), feats

    def log(self, **values: float) -> None:
        """Numbers for this round's history (``log/<name>``, averaged over the clients)."""
        for k, v in values.items():
            self.logs[k] = float(v)

    # data ---------------------------------------------------------------------
    def num_steps(self) -> int:
        """Local steps of this round: ``local_iters`` or ``local_epochs`` of full batches."""
        cfg = self.cfg
        if cfg.local_iters is not None:
            return int(cfg.local_iters)
        per_epoch = max(1, self.data.n // cfg.batch_size) if self.data.n >= cfg.batch_size else 1
        return max(1, int(math.ceil(per_epoch * cfg.local_epochs)))

    def batch_positions(
        self, steps: int | None = None, generator: torch.Generator | None = None, batch_size: int | None = None
    ) -> Iterator[torch.Tensor]:
        """Seeded shuffled positions: full batches only (one batch of all when n < B)."""
        n = self.data.n
        bs = min(batch_size or self.cfg.batch_size, n)
        steps = self.num_steps() if steps is None else steps
        gen = generator or self.generator
        done = 0
        while done < steps:
            perm = torch.randperm(n, generator=gen)
            for s in range(0, n - bs + 1, bs):
                yield perm[s : s + bs]
                done += 1
                if done == steps:
                    return

    def make_batch(self, pos: torch.Tensor, train: bool = True, generator: torch.Generator | None = None) -> Batch:
        """The samples at positions ``pos`` of the client's data, preprocessed (augmented
        with ``generator``, default the round's, when ``train``)."""
        d = self.data
        idx = d.indices[pos]
        x = _gather(self._images, idx, self.device)
        x = self._preprocess(x, generator or self.generator, train=train)
        # non_blocking: from pageable memory the copy is staged at once, without waiting for
        # the GPU's queued kernels (a blocking copy would synchronise every step)
        return Batch(
            x,
            d.labels[pos].to(self.device, non_blocking=True),
            d.mask[pos].to(self.device, non_blocking=True),
            pos,
            idx,
        )

    def batches(self, train: bool = True) -> Iterator[Batch]:
        """The round's training batches (:meth:`num_steps` of them)."""
        for pos in self.batch_positions():
            yield self.make_batch(pos, train)

    def iterate_all(self, batch_size: int | None = None) -> Iterator[Batch]:
        """Every local sample once, in order, without augmentation (for estimates)."""
        bs = batch_size or self.cfg.eval_batch_size
        for s in range(0, self.data.n, bs):
            yield self.make_batch(torch.arange(s, min(s + bs, self.data.n)), train=False)


def _forward_features(
    model: FedModel, state: dict[str, torch.Tensor], x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.forward_features(x)`` with ``state``'s arrays substituted (torch.func)."""
    enc = {k.split(".", 1)[1]: v for k, v in state.items() if k.startswith("encoder.")}
    head = {k.split(".", 1)[1]: v for k, v in state.items() if k.startswith("head.")}
    f = functional_call(model.encoder, enc, (x,), strict=False)
    return functional_call(model.head, head, (f,), strict=False), f


def _gather(images: torch.Tensor, idx: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``images[idx]`` on ``device`` with one copy: gathered where the images live (on the
    device when they are resident there); host images bound for a GPU are gathered into
    pinned memory (PyTorch's caching host allocator: reused, not re-pinned per batch) so
    that the upload is asynchronous."""
    if _same_device(images.device, device):
        return torch.index_select(images, 0, idx.to(images.device, non_blocking=True))
    if device.type == "cuda" and images.device.type == "cpu":
        buf = torch.empty((idx.numel(), *images.shape[1:]), dtype=images.dtype, pin_memory=True)
        return torch.index_select(images, 0, idx, out=buf).to(device, non_blocking=True)
    return images[idx.to(images.device)].to(device, non_blocking=True)


def _same_device(a: torch.device, b: torch.device) -> bool:
    """Whether ``a`` and ``b`` are one device: ``cuda`` (no index) is the current CUDA device,
    so images on ``cuda:0`` are on ``cuda`` when device 0 is current."""
    if a.type != b.type:
        return False
    if a.type != "cuda" or a.index == b.index:
        return True
    current = torch.cuda.current_device()
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


__all__ = [
    "DivergenceError",
    "ClientData",
    "Batch",
    "FederationInfo",
    "ClientUpdate",
    "ClientContext",
    "derive_seed",
    "load_arrays",
    "copy_arrays",
]
