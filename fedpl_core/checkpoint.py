"""Moved to :mod:`fedpl_core.fl.checkpoint`; this module only re-exports its names for old imports."""
from .fl.checkpoint import (CheckpointError, atomic_torch_save, check_checkpoint, device_map, load_checkpoint,
                            read_checkpoint, save_checkpoint)

__all__ = ["CheckpointError", "atomic_torch_save", "save_checkpoint", "read_checkpoint", "device_map",
           "check_checkpoint", "load_checkpoint"]
