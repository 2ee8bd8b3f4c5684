"""Data sets: the in-memory representation, the built-in synthetic data and real loaders.

Real data loaders are imported on use (``fedpl_core.data.nih``, ``.chexpert`` ...) or
through :mod:`fedpl_core.data.registry`.
"""
from .base import MULTICLASS, MULTILABEL, DataError, ImageDataset, concat_datasets

__all__ = ["MULTICLASS", "MULTILABEL", "DataError", "ImageDataset", "concat_datasets"]
