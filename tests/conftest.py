import numpy as np
import pytest
import torch

from toy import one_class_partition, toy_dataset  # noqa: F401 (tests/ is on sys.path)

torch.set_num_threads(1)  # tiny models: thread start-up and contention cost more than they gain


@pytest.fixture
def toy():
    ds = toy_dataset()
    return ds.subset(np.arange(300)), ds.subset(np.arange(300, 400))


@pytest.fixture
def toy_partition(toy):
    return one_class_partition(toy[0])
