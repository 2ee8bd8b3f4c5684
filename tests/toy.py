"""Tiny learnable data for the engine and method tests (imported by ``conftest.py`` and by
tests: ``from toy import toy_dataset``; a module of its own, since ``notebooks/conftest.py``
shares the name ``conftest``)."""

import numpy as np

from fedpl_core.data.base import ImageDataset
from fedpl_core.partitions import ClientSpec, Partition


def toy_dataset(n=400, c=4, size=16, seed=0):
    """Tiny learnable multi-label data: class j brightens its own image block."""
    rng = np.random.default_rng(seed)
    y = (rng.random((n, c)) < 0.35).astype(np.float32)
    img = (rng.random((n, 1, size, size)) * 60).astype(np.uint8)
    w = size // c
    for j in range(c):
        img[y[:, j] > 0, 0, j * w : (j + 1) * w, : size // 2] += 120
    return ImageDataset(img, y, [f"c{j}" for j in range(c)], groups=np.arange(n), name="toy")


def one_class_partition(train, k=4):
    c = train.num_classes
    per = len(train) // k
    return Partition(
        [ClientSpec(np.arange(i * per, (i + 1) * per), np.eye(c, dtype=bool)[i % c]) for i in range(k)],
        train.class_names,
    )
