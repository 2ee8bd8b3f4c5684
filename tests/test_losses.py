import math

import pytest
import torch

from fedpl_core.nn.losses import masked_bce, masked_ce


def _bce(z, y):
    p = 1 / (1 + math.exp(-z))
    return -(y * math.log(p) + (1 - y) * math.log(1 - p))


def test_partial_loss_ignores_unannotated_entries():
    logits = torch.tensor([[2.0, -1.0], [0.5, 3.0]])
    y = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    mask = torch.tensor([[True, False], [True, False]])
    expected = (_bce(2.0, 1) + _bce(0.5, 0)) / 2
    assert abs(masked_bce(logits, y, mask).item() - expected) < 1e-6
    # changing the logits of unannotated entries changes nothing, and they get no gradient
    logits2 = logits.clone().requires_grad_(True)
    with torch.no_grad():
        logits2[:, 1] = torch.tensor([50.0, -50.0])
    loss = masked_bce(logits2, y, mask)
    assert abs(loss.item() - expected) < 1e-6
    loss.backward()
    assert torch.all(logits2.grad[:, 1] == 0)


def test_missing_as_negative_uses_every_entry_and_pos_weight():
    logits = torch.tensor([[2.0, -1.0]])
    y = torch.tensor([[1.0, 0.0]])
    assert abs(masked_bce(logits, y).item() - (_bce(2.0, 1) + _bce(-1.0, 0)) / 2) < 1e-6
    w = masked_bce(logits, y, pos_weight=torch.tensor([3.0, 1.0])).item()
    assert abs(w - (3 * _bce(2.0, 1) + _bce(-1.0, 0)) / 2) < 1e-6


def test_masked_ce_skips_rows_without_a_known_label():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # second row: class unknown to the client
    expected = -math.log(math.exp(2) / (math.exp(2) + 2))
    assert abs(masked_ce(logits, y).item() - expected) < 1e-6


def test_known_class_softmax_of_the_ham_tdma_benchmark():
    """benchmarks/fedlsm_ham_tdma.py's known-class cross-entropy: the softmax runs over the
    classes the client identifies only, so an unknown class's logit gets no gradient.
    Row 0 knows classes 0 and 1, target 0: -log(e^1 / (e^1 + e^0)) = log(1 + e^-1); row 1
    has no known class and keeps weight 0."""
    import importlib.util
    import math
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "fedlsm_ham_tdma", Path(__file__).resolve().parent.parent / "benchmarks" / "fedlsm_ham_tdma.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    logits = torch.tensor([[1.0, 0.0, 5.0], [2.0, 0.0, 0.0]], requires_grad=True)
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    loss = mod.known_class_ce(logits, y, mask)
    assert loss.item() == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    loss.backward()
    assert logits.grad[0, 2] == 0 and torch.all(logits.grad[1] == 0)
    assert mod.known_class_ce(logits, y, None).item() > loss.item()  # all 3 classes in row 0's softmax
