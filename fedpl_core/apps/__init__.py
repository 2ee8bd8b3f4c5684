"""The applications on top of the package: the command line (:mod:`~fedpl_core.apps.cli`,
``python -m fedpl_core``), any method as a Flower app (:mod:`~fedpl_core.apps.flower`) and the
stepwise checks of a GPU machine (:mod:`~fedpl_core.apps.gpu_checks`)."""
