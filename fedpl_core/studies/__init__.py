"""Experiment definitions behind the notebooks (one module per paper), so notebooks stay thin."""
