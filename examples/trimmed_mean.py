"""A plugin with one aggregation method: the coordinate-wise trimmed mean
(Yin et al., ICML 2018).

For each entry of each shared array, the server drops the ``trim`` largest and
the ``trim`` smallest of the clients' values and averages the rest, so that one
client far from the others cannot pull the global model its way.  The clients
train as in FedAvg.  Run it from the checkout's root with
``python -m fedpl_core --plugin examples.trimmed_mean run --method trimmed_mean``.
"""

from __future__ import annotations

import torch

from fedpl_core.methods import register
from fedpl_core.methods.fedavg import FedAvg


def trimmed_mean(arrays: list[torch.Tensor], trim: int) -> torch.Tensor:
    """Entry by entry, the mean of the values left once the ``trim`` largest
    and the ``trim`` smallest are dropped (``trim=0``: the plain mean)."""
    values = torch.stack(arrays).sort(dim=0).values  # sorted over the clients
    return values[trim : len(arrays) - trim].mean(dim=0)


@register
class TrimmedMean(FedAvg):
    """FedAvg's clients; a trimmed mean of each entry on the server."""

    name = "trimmed_mean"  # the registry name: --method trimmed_mean
    option_ranges = {"trim": "int>=0"}  # checked before __init__ runs

    def __init__(self, trim: int = 1, **kw):
        super().__init__(**kw)  # partial, loss, bn_policy, ... as any method
        self.trim = int(trim)

    def aggregate(self, server, updates) -> None:
        trim = min(self.trim, (len(updates) - 1) // 2)  # keep one value or more
        for key in updates[0].state:  # what the clients send (not local arrays)
            arrays = [u.state[key] for u in updates]
            if arrays[0].is_floating_point():
                server.global_state[key] = trimmed_mean(arrays, trim)
            else:  # an integer buffer (BatchNorm's count): the largest, as FedAvg
                server.global_state[key] = torch.stack(arrays).max(dim=0).values
