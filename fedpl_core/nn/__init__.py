"""The arithmetic on plain tensors, below the federated engine: the networks
(:mod:`~fedpl_core.nn.models`, an encoder and a linear head), the partial-label losses
(:mod:`~fedpl_core.nn.losses`), the aggregation rules on model arrays
(:mod:`~fedpl_core.nn.aggregation`) and the metrics (:mod:`~fedpl_core.nn.metrics`).  Every
function here can be checked on hand-made arrays."""
