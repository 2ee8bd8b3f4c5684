"""Moved to :mod:`fedpl_core.fl.simulation` (the round loop) and :mod:`fedpl_core.fl.site`
(a client's round); this module only re-exports those names for old imports."""
from .config import EngineConfig
from .fl.federation import DivergenceError
from .fl.simulation import Simulation
from .fl.site import EXPLOSION, make_client_data, make_optimizer, resolve_device, split_validation

__all__ = ["EngineConfig", "Simulation", "DivergenceError", "EXPLOSION", "resolve_device", "make_client_data",
           "split_validation", "make_optimizer"]
