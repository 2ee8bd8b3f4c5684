"""Moved to :mod:`fedpl_core.fl.federation` (the types methods see) and
:mod:`fedpl_core.fl.server` (:class:`Server`); this module only re-exports those names
for old imports."""
from .fl.federation import (Batch, ClientContext, ClientData, ClientUpdate, DivergenceError, FederationInfo,
                            copy_arrays, derive_seed, load_arrays)
from .fl.server import Server

__all__ = ["DivergenceError", "ClientData", "Batch", "FederationInfo", "ClientUpdate", "ClientContext", "Server",
           "derive_seed", "load_arrays", "copy_arrays"]
