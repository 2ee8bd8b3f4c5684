"""Data sets: the in-memory representation, the built-in synthetic data and real loaders.

Real data loaders are imported on use (``fedpl_core.data.loaders.nih``, ``.csv_loader`` ...) or
through :mod:`fedpl_core.data.catalog`; they all take :class:`DecodeOptions`.
"""

from .base import MULTICLASS, MULTILABEL, DataError, ImageDataset, concat_datasets
from .cache import DecodeOptions

__all__ = ["MULTICLASS", "MULTILABEL", "DataError", "DecodeOptions", "ImageDataset", "concat_datasets"]
