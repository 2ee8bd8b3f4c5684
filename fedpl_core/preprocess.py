"""Moved to :mod:`fedpl_core.fl.preprocess`; this module only re-exports its names for old imports."""
from .fl.preprocess import AFFINE_DEGREES, AFFINE_TRANSLATE, AUGMENT, NORMALIZE, Preprocess, augment_batch

__all__ = ["Preprocess", "augment_batch", "NORMALIZE", "AUGMENT", "AFFINE_DEGREES", "AFFINE_TRANSLATE"]
