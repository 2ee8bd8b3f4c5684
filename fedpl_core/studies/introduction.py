"""The introduction's profiles (``notebooks/00_introduction.ipynb``): FedAvg, the partial
loss, Surgical Aggregation, centralised training and the Oracle on the built-in synthetic
chest X-rays with the 8 FedMLP CXR findings, in two label settings.

:data:`PROFILES` holds, per profile, the data (``size`` px, ``n_train`` / ``n_test``
images), the model and the schedule (``rounds`` of 2 local epochs, ``batch_size``, Adam
``lr``, evaluation every ``eval_every`` rounds) and the ``seeds``; the notebook applies
its parameters with :func:`fedpl_core.profiles.apply_parameters`.
"""
from __future__ import annotations

from typing import Any

PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(seeds=[0], rounds=2, lr=2e-3, size=32, n_train=800, n_test=400, model="cnn",
                  model_kwargs={"width": 8}, batch_size=32, eval_every=1),
    "cpu": dict(seeds=[0, 1, 2], rounds=16, lr=2e-3, size=32, n_train=2400, n_test=1200, model="cnn",
                model_kwargs={"width": 8}, batch_size=32, eval_every=2),
    "full": dict(seeds=[0, 1, 2], rounds=40, lr=1e-3, size=64, n_train=40000, n_test=10000, model="resnet18",
                 model_kwargs={}, batch_size=64, eval_every=2),
}

__all__ = ["PROFILES"]
