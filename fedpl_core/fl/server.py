"""The server side of a federation: the global arrays and the method's server memory
(:class:`Server`), and which clients train in a round (:func:`sample_clients`).

The server holds no data set and receives nothing but
:class:`~fedpl_core.fl.federation.ClientUpdate` objects.  It knows a method only through
its three server hooks (:class:`ServerHooks`: ``init_server`` when the server is
built, then each round ``payload`` and ``aggregate``), so this module imports no method.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import torch

from .federation import ClientUpdate, FederationInfo, derive_seed


class ServerHooks(Protocol):
    """The server side of a :class:`~fedpl_core.methods.base.Method`."""

    def init_server(self, server: Server) -> None: ...

    def payload(self, server: Server, client_id: int) -> dict[str, Any]: ...

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None: ...


class Server:
    """The server: global arrays and the method's server memory; no data."""

    def __init__(self, method: ServerHooks, global_state: dict[str, torch.Tensor], info: FederationInfo):
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


def sample_clients(num_clients: int, fraction: float, seed: int, round_idx: int) -> list[int]:
    """The clients that train in round ``round_idx`` (sorted): ``round(fraction * K)`` of
    the ``K = num_clients`` (at least one; all of them when that reaches K), drawn
    without replacement from a generator seeded per (seed, round)."""
    m = max(1, int(round(fraction * num_clients)))
    if m >= num_clients:
        return list(range(num_clients))
    rng = np.random.default_rng(derive_seed(seed, round_idx, 7919))
    return sorted(rng.choice(num_clients, size=m, replace=False).tolist())


__all__ = ["Server", "ServerHooks", "sample_clients"]
