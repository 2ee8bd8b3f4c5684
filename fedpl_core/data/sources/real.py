"""The real data sets as data sources: every name of :data:`fedpl_core.data.catalog.DATASETS`
(and ``medmnist:<flag>``) read from ``data_root`` in its publisher's layout, with the data
set's own splits (``n_train`` / ``n_test`` do not apply: a log line says so)."""

from __future__ import annotations

import logging

from .base import DataBundle, check_image_size, register_fallback_source

log = logging.getLogger("fedpl")


@register_fallback_source
def real_source(name: str, data_root, classes, image_size, n_train, n_test, data_seed, **kw) -> DataBundle:
    """A data set of :mod:`fedpl_core.data.catalog` (or ``medmnist:<flag>``) read from
    ``data_root``: its training and test parts, its validation part as ``extra["val"]``."""
    from .. import catalog

    check_image_size(name, image_size)
    splits = catalog.load_split(name, data_root, classes=classes, image_size=image_size, seed=data_seed, **kw)
    train, test = splits[0], splits[-1]
    log.info(
        "%s: %d training / %d test images from %s; n_train / n_test do not apply (the data set's own splits are used)",
        name,
        len(train),
        len(test),
        data_root,
    )
    extra = {}
    if len(splits) == 3 and splits[1] is not None:
        extra["val"] = splits[1]
    return DataBundle(train, test, extra)
