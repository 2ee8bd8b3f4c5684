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
        "fedlsm_ham_tdma", Path(__file__).resolve().parent.parent / "benchmarks" / "fedlsm_ham_tdma.py"
    )
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


def _block_call(block, partial, task, logits, y, mask):
    """``SupervisedLoss`` on one batch, with the method and context it reads."""
    from types import SimpleNamespace

    data = SimpleNamespace(labels=y, mask=mask)
    ctx = SimpleNamespace(info=SimpleNamespace(task=task), state={}, scratch={}, data=data)
    return block(SimpleNamespace(partial=partial), ctx, logits, SimpleNamespace(y=y, mask=mask))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_the_loss_block_is_the_pure_supervised_term(weighted, partial, task):
    """``SupervisedLoss`` (``Method.supervised_loss``) is ``supervised_term`` with the
    method's ``partial``, the task and the client's class weights, bit for bit; the term
    reads ``mask`` only when partial and ``pos_weight`` only on a multi-label task."""
    from fedpl_core.methods.blocks import SupervisedLoss
    from fedpl_core.nn.losses import class_pos_weight, supervised_term

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 3, generator=g)
    y = (torch.rand(6, 3, generator=g) > 0.5).float()
    if task == "multiclass":
        y = torch.nn.functional.one_hot(torch.arange(6) % 3, 3).float()
    mask = torch.rand(6, 3, generator=g) > 0.3
    got = _block_call(SupervisedLoss(weighted), partial, task, logits, y, mask)
    pw = class_pos_weight(y, mask if partial else None) if weighted and task == "multilabel" else None
    want = supervised_term(logits, y, mask, pw, partial=partial, multiclass=task == "multiclass")
    assert torch.equal(got, want)
    known = mask if partial else None
    if task == "multiclass":
        assert torch.equal(want, masked_ce(logits, y, known))
        assert torch.equal(
            want, supervised_term(logits, y, mask, torch.full((3,), 5.0), partial=partial, multiclass=True)
        )
    else:
        assert torch.equal(want, masked_bce(logits, y, known, pos_weight=pw))
    if not partial:
        assert torch.equal(want, supervised_term(logits, y, ~mask, pw, partial=False, multiclass=task == "multiclass"))


def test_the_supervised_term_runs_under_vmap_one_client_a_slice():
    """The batched client path's use: ``vmap`` over clients, each with its own batch, mask and
    class weights, gives each client's own loss and gradient."""
    from torch.func import grad, vmap

    from fedpl_core.nn.losses import supervised_term

    g = torch.Generator().manual_seed(1)
    z = torch.randn(4, 5, 3, generator=g)
    y = (torch.rand(4, 5, 3, generator=g) > 0.5).float()
    mask = torch.rand(4, 5, 3, generator=g) > 0.3
    pw = torch.rand(4, 3, generator=g) + 0.5

    def term(z, y, m, w):
        return supervised_term(z, y, m, w, partial=True)

    losses = vmap(term)(z, y, mask, pw)
    grads = vmap(grad(term))(z, y, mask, pw)
    for k in range(4):
        torch.testing.assert_close(losses[k], term(z[k], y[k], mask[k], pw[k]))
        torch.testing.assert_close(grads[k], grad(term)(z[k], y[k], mask[k], pw[k]))
        assert torch.all(grads[k][~mask[k]] == 0)


def test_patching_masked_ce_in_the_losses_module_reaches_the_loss_block(monkeypatch):
    """benchmarks/fedlsm_ham_tdma.py swaps the cross-entropy of single-label tasks by
    patching ``fedpl_core.nn.losses.masked_ce``: the loss block must go through it."""
    import fedpl_core.nn.losses as L
    from fedpl_core.methods.blocks import SupervisedLoss

    logits = torch.tensor([[2.0, 0.0, 0.0]])
    y = torch.tensor([[1.0, 0.0, 0.0]])
    monkeypatch.setattr(L, "masked_ce", lambda *a, **k: torch.tensor(123.0))
    assert _block_call(SupervisedLoss(), True, "multiclass", logits, y, torch.ones(1, 3, dtype=torch.bool)) == 123.0
