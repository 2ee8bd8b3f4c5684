"""Moved to :mod:`fedpl_core.fl.evaluation` (whose functions take the working model, the
method, the models and the data sets, not a simulation); this module only re-exports
its names for old imports."""
from .fl.evaluation import (Models, client_logs, evaluate, evaluate_round, predict, predict_personalised,
                            pseudo_label_quality, validation_loss)

__all__ = ["Models", "predict", "predict_personalised", "evaluate", "validation_loss", "evaluate_round",
           "client_logs", "pseudo_label_quality"]
