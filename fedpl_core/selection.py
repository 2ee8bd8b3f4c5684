"""Moved to :mod:`fedpl_core.fl.selection`; this module only re-exports its names for old imports."""
from .fl.selection import TASK_METRICS, BestRound, check_selection_key, recorded_keys

__all__ = ["TASK_METRICS", "BestRound", "check_selection_key", "recorded_keys"]
