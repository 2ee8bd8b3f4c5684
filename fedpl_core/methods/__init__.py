"""Registry of methods: ``get_method("fedavg", **hparams)``.

Methods are composed from the blocks of :mod:`fedpl_core.methods.blocks` (loss, head
aggregation, clients, head warm-up); a paper's name is a registered class with its
block defaults, so ``get_method("fedprox", loss="wbce", head="tdma")`` is a variant.

Every registered class carries ``@register`` (:mod:`fedpl_core.methods.registry`) in its own
module, and every module of this package is imported the first time a registry function
answers: a new method is one module, nothing else lists it.  What a reader, a budget or a
study needs to know about a method is a class attribute of it
(:class:`~fedpl_core.methods.base.Method`); the catalogue of ``docs/methods.md``, the
README's count and the index ``python -m fedpl_core methods`` reads are generated from the
registry (:mod:`fedpl_core.methods.catalog`).
"""

from __future__ import annotations

from typing import Any

from . import plugin_guard as _plugin_guard  # noqa: F401  (watches every plugin's import)
from .base import ClientUpdate, Method
from .baselines import PFL, Centralized, FedAvgOracle, FedAvgPL, FedBN, FedProx, Local, Oracle
from .fedavg import FedAvg
from .registry import METHODS, DuplicateMethodError, load_all, register


def get_method(name: str, **hparams: Any) -> Method:
    """A registered method with its hyper-parameters.

    Every method takes the block options of :class:`~fedpl_core.methods.base.Method`
    (:mod:`fedpl_core.methods.blocks`): ``partial``, ``loss``, ``pos_weight``, ``head``,
    ``clients`` and Surgical Aggregation's head warm-up ``warmup_epochs`` / ``warmup_lr``
    (so that baselines can run under the same protocol); a paper's name is a registered
    class with its defaults, e.g. ``get_method("fedprox_star")`` is
    ``get_method("fedprox", mu=0.001, partial=True, loss="wbce", head="tdma")``.
    """
    load_all()
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(sorted(METHODS))}")
    return METHODS[name](**hparams)


def available_methods() -> list[str]:
    """Every registered name, sorted (the package's modules and the plugins loaded)."""
    load_all()
    return sorted(METHODS)


def batchable_methods() -> list[str]:
    """The registry names whose client round (with default options) the engine can train
    as one vmapped step (``EngineConfig(batched_clients=n)``, :mod:`fedpl_core.fl.batched`):
    :attr:`Method.batchable <fedpl_core.methods.base.Method.batchable>` of the method built
    with its defaults."""
    return [name for name in available_methods() if get_method(name).batchable]


def ablation_methods() -> list[str]:
    """The registry names of the papers' ablations (a class's own ``ablation``): the
    variants a paper's table switches one part off in, which a benchmark of methods leaves out."""
    return [name for name in available_methods() if METHODS[name].ablation]


__all__ = [
    "ClientUpdate",
    "Method",
    "FedAvg",
    "METHODS",
    "DuplicateMethodError",
    "register",
    "get_method",
    "available_methods",
    "batchable_methods",
    "ablation_methods",
    # the baselines, importable from here as they always were
    "FedAvgPL",
    "FedProx",
    "FedBN",
    "Centralized",
    "Oracle",
    "FedAvgOracle",
    "Local",
    "PFL",
]
