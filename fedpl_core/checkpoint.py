"""Checkpoints: everything a run needs to resume, written atomically, read safely.

A checkpoint holds tensors and plain containers only (dicts, lists, tuples, str, int,
float, bool, None) and is read with ``torch.load(weights_only=True)``: a planted file in a
results folder cannot run code when a run resumes; it is refused with
:class:`CheckpointError`, as is a truncated or corrupt file.
"""
from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch


class CheckpointError(RuntimeError):
    """A checkpoint file is unreadable, unsafe or does not fit the run."""


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """``torch.save`` to a fresh temporary file in the same folder (``mkstemp``: never a
    planted file or link), then :func:`os.replace` (see :mod:`fedpl_core.fileio`)."""
    from .fileio import atomic_write

    with atomic_write(path, "wb") as f:
        torch.save(obj, f)


def save_checkpoint(sim, path: str | Path) -> None:
    """Arrays, server and client state, RNG, history and selection of ``sim``."""
    blob = {
        "round": sim.round, "global_state": sim.server.global_state, "server_state": sim.server.state,
        "client_states": sim.client_states, "history": sim.history, "selection": sim.selection.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "method": sim.method.name,
    }
    atomic_torch_save(blob, path)


def read_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict[str, Any]:
    """The checkpoint at ``path`` (tensors and plain containers only)."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"checkpoint {path} holds objects other than tensors and plain containers; "
                              f"refused to load it ({str(e).splitlines()[0]})") from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as e:
        raise CheckpointError(f"checkpoint {path} is unreadable (truncated or corrupt): "
                              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def load_checkpoint(sim, path: str | Path) -> None:
    """Restore ``sim`` from ``path`` (see :func:`save_checkpoint`)."""
    blob = read_checkpoint(path, sim.device)
    if blob.get("method") != sim.method.name:
        raise CheckpointError(f"checkpoint {path} is for method {blob.get('method')!r}, not {sim.method.name!r}")
    sim.round = blob["round"]
    sim.server.global_state = blob["global_state"]
    sim.server.state = blob["server_state"]
    sim.client_states = blob["client_states"]
    sim.history = blob["history"]
    sim.selection.load_state_dict(blob["selection"])
    torch.set_rng_state(blob["torch_rng"].cpu())
    if blob.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in blob["cuda_rng"]])
