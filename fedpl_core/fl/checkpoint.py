"""Checkpoints: everything a run needs to resume, written atomically, read safely.

A checkpoint holds tensors and plain containers only (dicts, lists, tuples, str, int,
float, bool, None) and is read with ``torch.load(weights_only=True)``: a planted file in a
results folder cannot run code when a run resumes; it is refused with
:class:`CheckpointError`, as is a truncated or corrupt file.
"""

from __future__ import annotations

import os
import pickle
import stat
import zipfile
from pathlib import Path
from typing import Any

import torch


class CheckpointError(RuntimeError):
    """A checkpoint file is unreadable, unsafe or does not fit the run."""


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """``torch.save`` to a fresh temporary file in the same folder (``mkstemp``: never a
    planted file or link), then :func:`os.replace` (see :mod:`fedpl_core.base.fileio`)."""
    from ..base.fileio import atomic_write

    with atomic_write(path, "wb") as f:
        torch.save(obj, f)


def save_checkpoint(
    path: str | Path,
    *,
    round: int,
    global_state: dict[str, torch.Tensor],
    server_state: dict[str, Any],
    client_states: list[dict[str, Any]],
    history: list[dict[str, Any]],
    selection: dict[str, Any],
    method: str,
    loss_scale: float | None,
) -> None:
    """A run's state after ``round`` rounds (the global arrays, the server's and each
    client's state, the history, the model selection's state, the method's name, the
    divergence check's starting loss) and the torch / CUDA random-number states."""
    blob = {
        "round": round,
        "global_state": global_state,
        "server_state": server_state,
        "client_states": client_states,
        "history": history,
        "selection": selection,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "method": method,
        "loss_scale": loss_scale,
    }
    atomic_torch_save(blob, path)


def read_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict[str, Any]:
    """The checkpoint at ``path`` (tensors and plain containers only).  Only a regular file
    is read: a link or a device planted at the name (``/dev/zero``) is refused, not followed."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as e:
        raise CheckpointError(f"checkpoint {path} is unreadable: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"checkpoint {path} is not a regular file (a link or a device); refused to read it")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(
            f"checkpoint {path} holds objects other than tensors and plain containers; "
            f"refused to load it ({str(e).splitlines()[0]})"
        ) from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as e:
        raise CheckpointError(
            f"checkpoint {path} is unreadable (truncated or corrupt): "
            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


def device_map(device: Any) -> dict[str, str]:
    """``map_location`` that puts what was saved on a GPU on ``device`` and leaves what was
    saved on the CPU there (pseudo-label tables, class weights, Adam's step counts), as
    the interrupted run had them."""
    dev = str(torch.device(device))
    return {"cuda": dev, **{f"cuda:{i}": dev for i in range(64)}}


_KEYS = {
    "round": int,
    "global_state": dict,
    "server_state": dict,
    "client_states": list,
    "history": list,
    "selection": dict,
    "torch_rng": torch.Tensor,
    "method": str,
}


def _like(fresh: Any, loaded: Any, where: str) -> None:
    """``loaded`` has ``fresh``'s structure where both have it: a tensor where the fresh
    run has one, of the same shape; a mapping (sequence) where it has one.  What the fresh
    run does not have yet (state made in later rounds) is not checked."""
    if isinstance(fresh, torch.Tensor):
        if not isinstance(loaded, torch.Tensor) or loaded.shape != fresh.shape:
            got = f"shape {list(loaded.shape)}" if isinstance(loaded, torch.Tensor) else type(loaded).__name__
            raise CheckpointError(f"{where} is {got}, this run has shape {list(fresh.shape)}")
    elif isinstance(fresh, dict):
        if not isinstance(loaded, dict):
            raise CheckpointError(f"{where} is {type(loaded).__name__}, not a mapping")
        for k in fresh.keys() & loaded.keys():
            _like(fresh[k], loaded[k], f"{where}[{k!r}]")
    elif isinstance(fresh, (list, tuple)):
        if not isinstance(loaded, (list, tuple)):
            raise CheckpointError(f"{where} is {type(loaded).__name__}, not a sequence")
        for i, (f, v) in enumerate(zip(fresh, loaded)):
            _like(f, v, f"{where}[{i}]")


def check_checkpoint(blob: Any, fresh: dict[str, Any], rounds: int) -> None:
    """:class:`CheckpointError` unless ``blob`` is a checkpoint of the run whose state now
    is ``fresh`` (the keyword arguments :func:`save_checkpoint` would get) and which runs
    ``rounds`` rounds: every key of :func:`save_checkpoint` with its type, this method, a
    round in ``0..rounds`` with one history record per round, one state per client, and
    the shapes of the fresh run's arrays (the global model's exactly: same names, shapes
    and dtypes)."""
    if not isinstance(blob, dict):
        raise CheckpointError(f"it holds a {type(blob).__name__}, not a checkpoint")
    missing = sorted(k for k in _KEYS if k not in blob)
    if missing:
        raise CheckpointError(f"it lacks {', '.join(missing)}")
    wrong = [
        f"{k} is {type(blob[k]).__name__}"
        for k, t in _KEYS.items()
        if not isinstance(blob[k], t) or (t is int and isinstance(blob[k], bool))
    ]
    if wrong:
        raise CheckpointError(", ".join(wrong))
    if blob["method"] != fresh["method"]:
        raise CheckpointError(f"it is for method {blob['method']!r}, not {fresh['method']!r}")
    r, hist = blob["round"], blob["history"]
    if not 0 <= r <= rounds:
        raise CheckpointError(f"its round {r} is not in 0..{rounds}")
    if len(hist) != r or not all(isinstance(h, dict) and h.get("round") == i + 1 for i, h in enumerate(hist)):
        raise CheckpointError(f"its history is not one record per round for {r} round(s)")
    n_clients = len(fresh["client_states"])
    if len(blob["client_states"]) != n_clients:
        raise CheckpointError(f"it has {len(blob['client_states'])} client state(s), this run {n_clients} client(s)")
    g, now = blob["global_state"], fresh["global_state"]
    if g.keys() != now.keys():
        raise CheckpointError(f"its model arrays differ from this run's: {sorted(g.keys() ^ now.keys())[:5]}")
    bad = [
        k for k in now if not isinstance(g[k], torch.Tensor) or g[k].shape != now[k].shape or g[k].dtype != now[k].dtype
    ]
    if bad:
        k = bad[0]
        got = f"{list(g[k].shape)} {g[k].dtype}" if isinstance(g[k], torch.Tensor) else type(g[k]).__name__
        raise CheckpointError(
            f"model array {k!r} is {got}, this run has {list(now[k].shape)} {now[k].dtype} "
            f"(another model or class list)"
        )
    _like(fresh["server_state"], blob["server_state"], "server_state")
    for k, (f, c) in enumerate(zip(fresh["client_states"], blob["client_states"])):
        _like(f, c, f"client_states[{k}]")
    sel = blob["selection"]
    if not (isinstance(sel.get("best"), (dict, type(None))) and type(sel.get("since_best")) is int):
        raise CheckpointError("its selection state is malformed")
    rng, want = blob["torch_rng"], torch.get_rng_state()
    if rng.dtype != want.dtype or rng.shape != want.shape:
        raise CheckpointError("its random-number state is malformed")
    if not isinstance(blob.get("loss_scale"), (float, int, type(None))):
        raise CheckpointError("its loss scale is not a number")
    cuda = blob.get("cuda_rng")
    if cuda is not None and not (
        isinstance(cuda, (list, tuple)) and all(isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda)
    ):
        raise CheckpointError("its CUDA random-number state is malformed")


def load_checkpoint(path: str | Path, fresh: dict[str, Any], rounds: int, device: Any) -> dict[str, Any]:
    """The checkpoint at ``path`` (see :func:`save_checkpoint`) of the run whose state now
    is ``fresh`` (:func:`check_checkpoint`), its tensors on ``device``; restores the torch
    and CUDA random-number states.  A file that does not fit the run raises
    :class:`CheckpointError` and changes nothing.  The caller puts the returned parts
    back into its run."""
    blob = read_checkpoint(path, device_map(device))
    try:
        check_checkpoint(blob, fresh, rounds)
    except CheckpointError as e:
        raise CheckpointError(f"checkpoint {path} does not fit this run: {e}") from None
    torch.set_rng_state(blob["torch_rng"].cpu())
    if blob.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in blob["cuda_rng"]][: torch.cuda.device_count()])
    return blob
