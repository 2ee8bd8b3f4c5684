"""Experiment definitions behind the notebooks, so notebooks stay thin: one package per paper with a
module a job (``settings``, ``runs``, ``tables``, ``figures``, ``sentences``, ``claims``, and
``paper`` for what the paper fixes: its methods, metrics and numbers), plus the introduction's and
the benchmark's modules.  Each study declares its profiles one way: a table ``PROFILES =
{"smoke": {...}, "cpu": {...}, "full": {...}}`` of named settings, to which a notebook applies its
parameters with :func:`fedpl_core.studies.parameters.apply_parameters`; and it states its paper's
claims one way: as :class:`fedpl_core.report.findings.Claim` objects, which
:mod:`fedpl_core.report.findings` tests."""
