import pytest
import torch

from fedpl_core.nn.aggregation import aggregate_with_head_weights, rowwise_average, weighted_average


def test_weighted_average_matches_hand_computation():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([4.0, 8.0]), "n": torch.tensor(5)}
    out = weighted_average([a, b], [1, 3])
    # (1*[1,2] + 3*[4,8]) / 4 = [13/4, 26/4]
    assert torch.allclose(out["w"], torch.tensor([3.25, 6.5]))
    assert out["n"].item() == 5  # integer buffers: the maximum
    assert torch.allclose(weighted_average([a, b])["w"], torch.tensor([2.5, 5.0]))


def test_weighted_average_rejects_bad_weights():
    with pytest.raises(ValueError):
        weighted_average([{"w": torch.ones(1)}], [0.0])
    with pytest.raises(ValueError):
        weighted_average([{"w": torch.ones(1)}, {"w": torch.ones(1)}], [1.0])


def test_rowwise_average_per_class_weights_and_fallback():
    r1 = torch.tensor([[1.0, 1.0], [10.0, 10.0], [7.0, 7.0]])
    r2 = torch.tensor([[3.0, 3.0], [20.0, 20.0], [9.0, 9.0]])
    w = torch.tensor([[1.0, 0.0, 0.0], [3.0, 2.0, 0.0]])  # class 2: no client
    prev = torch.tensor([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    out = rowwise_average([r1, r2], w, fallback=prev)
    assert torch.allclose(out[0], torch.tensor([2.5, 2.5]))  # (1*1 + 3*3) / 4
    assert torch.allclose(out[1], torch.tensor([20.0, 20.0]))  # only client 2
    assert torch.allclose(out[2], torch.tensor([5.0, 5.0]))  # previous global row kept
    bias = rowwise_average([torch.tensor([1.0, 10.0, 7.0]), torch.tensor([3.0, 20.0, 9.0])], w)
    assert torch.allclose(bias, torch.tensor([2.5, 20.0, 8.0]))  # no fallback: plain mean


def test_head_weights_leave_encoder_size_weighted():
    s1 = {
        "enc": torch.tensor([0.0]),
        "head.weight": torch.tensor([[1.0], [1.0]]),
        "head.bias": torch.tensor([1.0, 1.0]),
    }
    s2 = {
        "enc": torch.tensor([4.0]),
        "head.weight": torch.tensor([[5.0], [5.0]]),
        "head.bias": torch.tensor([5.0, 5.0]),
    }
    out = aggregate_with_head_weights([s1, s2], [1, 1], torch.tensor([[1.0, 0.0], [1.0, 1.0]]))
    assert out["enc"].item() == 2.0
    assert out["head.weight"].flatten().tolist() == [3.0, 5.0]
    assert out["head.bias"].tolist() == [3.0, 5.0]
