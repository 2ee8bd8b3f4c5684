"""The federated-learning core, one layer per module (each imports only those above it):

* :mod:`~fedpl_core.fl.federation` - the types a method sees: a client's data, batches,
  updates, the :class:`~fedpl_core.fl.federation.ClientContext`;
* :mod:`~fedpl_core.fl.preprocess` - uint8 batches to normalised, augmented floats;
* :mod:`~fedpl_core.fl.server` - the :class:`~fedpl_core.fl.server.Server` (global
  arrays, the method's server memory) and client sampling;
* :mod:`~fedpl_core.fl.site` - a client, :class:`~fedpl_core.fl.site.Site`: its data,
  its state, the shared working model; ``train(payload, round) -> (update, logs)``;
* :mod:`~fedpl_core.fl.evaluation` - scoring models on test sets and validation splits;
* :mod:`~fedpl_core.fl.selection` - the best round, early stopping;
* :mod:`~fedpl_core.fl.checkpoint` - writing and reading a run's state;
* :mod:`~fedpl_core.fl.simulation` - :class:`~fedpl_core.fl.simulation.Simulation`,
  the round loop over the sites and the server.

This package imports nothing at import time, so a method importing
:mod:`fedpl_core.fl.federation` never loads the simulation.
"""
