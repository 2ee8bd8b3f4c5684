"""Experiment definitions behind the notebooks (one module per paper, plus the introduction's and
the benchmark's), so notebooks stay thin.  Each module declares its profiles one way: a table
``PROFILES = {"smoke": {...}, "cpu": {...}, "full": {...}}`` of named settings, to which a
notebook applies its parameters with :func:`fedpl_core.studies.profiles.apply_parameters`."""
