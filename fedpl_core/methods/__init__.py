"""Registry of methods: ``get_method("fedavg", **hparams)``.

Methods are composed from the blocks of :mod:`fedpl_core.methods.blocks` (loss, head
aggregation, clients, head warm-up); a paper's name is a registered class with its
block defaults, so ``get_method("fedprox", loss="wbce", head="tdma")`` is a variant.
"""
from __future__ import annotations

from typing import Any

from .base import ClientUpdate, Method
from .baselines import PFL, Centralized, FedAvgOracle, FedAvgPL, FedBN, FedProx, Local, Oracle
from .fedavg import FedAvg

METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator (or call) adding a method to the registry under ``cls.name``."""
    METHODS[cls.name] = cls
    return cls


for _cls in (FedAvg, FedAvgPL, FedProx, FedBN, Centralized, Oracle, FedAvgOracle, Local, PFL):
    register(_cls)


# modules whose classes register themselves on import (paper methods and their baselines)
_OPTIONAL = ("surgical", "fedpsl", "fedmlp", "fedlsm", "fixmatch", "moon", "fedrs", "fedpu", "rscfed", "fedirm",
             "cbafed", "fedlsr", "fednoro", "fedssp", "fedmatch", "mixup_pme")


def _load_optional() -> None:
    """Paper methods register themselves on import; missing modules are skipped.  Then the
    user's plugin modules named in ``$FEDPL_PLUGINS`` (:mod:`fedpl_core.base.plugins`), so that a
    worker process finds a plugin's method by name."""
    import importlib

    from ..base.plugins import load_env_plugins

    for mod in _OPTIONAL:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise
    load_env_plugins()


def get_method(name: str, **hparams: Any) -> Method:
    """A registered method with its hyper-parameters.

    Every method takes the block options of :class:`~fedpl_core.methods.base.Method`
    (:mod:`fedpl_core.methods.blocks`): ``partial``, ``loss``, ``pos_weight``, ``head``,
    ``clients`` and Surgical Aggregation's head warm-up ``warmup_epochs`` / ``warmup_lr``
    (so that baselines can run under the same protocol); a paper's name is a registered
    class with its defaults, e.g. ``get_method("fedprox_star")`` is
    ``get_method("fedprox", mu=0.001, partial=True, loss="wbce", head="tdma")``.
    """
    _load_optional()
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")
    return METHODS[name](**hparams)


def available_methods() -> list[str]:
    _load_optional()
    return sorted(METHODS)


def batchable_methods() -> list[str]:
    """The registry names whose client round (with default options) the engine can train
    as one vmapped step (``EngineConfig(batched_clients=n)``, :mod:`fedpl_core.fl.batched`):
    FedAvg's round, no arrays kept on the clients, no head warm-up."""
    out = []
    for name in available_methods():
        m = get_method(name)
        if m.batchable and m.bn_policy == "aggregate" and m.local_arrays == "batchnorm" and not m.warmup_epochs:
            out.append(name)
    return out


__all__ = ["ClientUpdate", "Method", "FedAvg", "METHODS", "register", "get_method", "available_methods",
           "batchable_methods"]
