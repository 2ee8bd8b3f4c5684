"""Augmented views and the engine's conventions for pseudo-labelling methods."""

import math

import numpy as np
import pytest
import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.simulation import Simulation
from fedpl_core.fl.views import cutout, mixup, sample_lambda, strong_view, weak_view
from fedpl_core.methods import FedAvg
from fedpl_core.nn.models import build_model


def test_views_are_seeded_shaped_and_change_the_images():
    x = torch.randn(8, 3, 16, 16)
    for view in (weak_view, strong_view):
        a = view(x, torch.Generator().manual_seed(3))
        b = view(x, torch.Generator().manual_seed(3))
        assert a.shape == x.shape and torch.equal(a, b) and torch.isfinite(a).all()
        assert not torch.equal(a, x)
    assert torch.equal(x, x.clone())  # inputs untouched
    s = strong_view(x, torch.Generator().manual_seed(3))
    assert (s == 0).float().mean() > 0.1  # cutout zeroes a square of half the side


def test_weak_view_only_flips_and_translates():
    """Every pixel of the weak view is a pixel of the same image: shifts pad by reflection
    (FixMatch's flip-and-shift), never with a constant."""
    x = torch.arange(2 * 256.0).view(2, 1, 16, 16) + 1  # no zero and no value shared across images
    y = weak_view(x, torch.Generator().manual_seed(0))
    for i in range(2):
        assert set(y[i].unique().tolist()) <= set(x[i].unique().tolist())
    assert not torch.equal(y, x)


def test_engine_shift_pads_by_reflection_and_keeps_every_value():
    from fedpl_core.fl.preprocess import augment_batch

    x = torch.rand(64, 1, 8, 8) + 0.5  # strictly positive
    y = augment_batch(x.clone(), "shift", torch.Generator().manual_seed(0))
    assert (y > 0).all()  # zero padding would leave zeros on the border
    # a shift by (dy, dx) with reflection equals torch's reflect pad + crop
    for i in range(64):
        pad = torch.nn.functional.pad(x[i : i + 1], (1, 1, 1, 1), mode="reflect")
        assert any(torch.equal(y[i : i + 1], pad[..., r : r + 8, c : c + 8]) for r in range(3) for c in range(3))


def test_flip_affine_moves_a_centred_dot_by_at_most_two_percent():
    """FedMLP's transform: rotation about the centre (leaves a centred dot in place) and a
    translation of at most 2 % of the side per axis."""
    from fedpl_core.fl.preprocess import augment_batch

    n, s = 200, 64
    x = torch.zeros(n, 1, s, s)
    x[..., s // 2 - 2 : s // 2 + 2, s // 2 - 2 : s // 2 + 2] = 1.0
    y = augment_batch(x.clone(), "flip_affine", torch.Generator().manual_seed(0))
    grid = torch.arange(s, dtype=torch.float32)
    mass = y.sum((1, 2, 3))
    cy = (y.sum((1, 3)) * grid).sum(1) / mass
    cx = (y.sum((1, 2)) * grid).sum(1) / mass
    dev = torch.stack([cy, cx]) - (s - 1) / 2
    assert dev.abs().max() <= 0.02 * s + 0.05
    assert dev.abs().max() > 0.5  # it does translate
    assert torch.allclose(mass, torch.full_like(mass, 16.0), atol=0.5)  # nothing cut off


def test_cutout_square_by_hand():
    g = torch.Generator().manual_seed(0)
    y = cutout(torch.ones(1, 1, 8, 8), g, size=0.5)  # side 4 -> a 5x5 square (|d| <= 2), clipped
    zeros = (y == 0).squeeze()
    rows, cols = zeros.any(1).nonzero().flatten(), zeros.any(0).nonzero().flatten()
    assert 1 <= len(rows) <= 5 and 1 <= len(cols) <= 5
    assert int(zeros.sum()) == len(rows) * len(cols)  # one axis-aligned rectangle


def test_mixup_and_lambda():
    x, y = mixup(
        torch.full((2, 1, 1, 1), 2.0),
        torch.tensor([[1.0, 0.0]] * 2),
        torch.zeros(2, 1, 1, 1),
        torch.tensor([[0.0, 1.0]] * 2),
        0.25,
    )
    assert torch.allclose(x, torch.full((2, 1, 1, 1), 0.5))
    assert torch.allclose(y, torch.tensor([[0.25, 0.75]] * 2))
    with pytest.raises(ValueError, match="equal shapes"):
        mixup(torch.zeros(1, 1, 2, 2), torch.zeros(1, 2), torch.zeros(2, 1, 2, 2), torch.zeros(1, 2), 0.5)
    lams = [sample_lambda(0.2, torch.Generator().manual_seed(s)) for s in range(200)]
    assert all(0 <= v <= 1 for v in lams)
    assert np.mean([v < 0.1 or v > 0.9 for v in lams]) > 0.5  # Beta(0.2, 0.2) is U-shaped
    assert sample_lambda(0.0) == 1.0


class _Probe(FedAvg):
    """Logs a number and pseudo-labels every unannotated entry as positive."""

    name = "probe"
    partial = True

    def receive(self, ctx, payload):
        super().receive(ctx, payload)
        x = ctx.make_batch(torch.arange(4), train=False).x
        ctx.model.train()
        before = {k: v.clone() for k, v in ctx.model.state_dict().items()}
        logits, _ = ctx.forward_with(ctx.extract_state(), x)
        assert ctx.model.training  # modes restored
        ctx.model.eval()
        assert torch.allclose(logits, ctx.model(x), atol=1e-6)
        zero = {k: torch.zeros_like(v) for k, v in ctx.extract_state().items() if k.startswith("head.")}
        assert torch.equal(ctx.forward_with(zero, x)[0], torch.zeros_like(logits))
        assert all(torch.equal(before[k], v) for k, v in ctx.model.state_dict().items())
        ctx.log(client=float(ctx.client_id))
        ctx.state["pseudo_labels"] = {"mask": ~ctx.data.mask, "target": torch.ones_like(ctx.data.labels)}


def test_logs_and_pseudo_label_quality_by_hand(toy, toy_partition):
    train, test = toy
    torch.manual_seed(0)
    sim = Simulation(
        _Probe(),
        build_model("cnn", train.num_classes, 1, 16, width=8),
        train,
        toy_partition,
        test,
        EngineConfig(rounds=1, batch_size=32, progress=False),
    )
    rec = sim.run()[-1]
    assert rec["log/client"] == pytest.approx(np.mean(range(len(sim.clients))))
    # every unannotated entry is called positive: precision = prevalence there, recall 1
    pos = sum(int((train.labels[c.indices.numpy()] > 0.5)[~c.mask.numpy()].sum()) for c in sim.clients)
    open_ = sum(int((~c.mask).sum()) for c in sim.clients)
    assert rec["pl/coverage"] == 1.0 and rec["pl/pos_recall"] == 1.0
    assert rec["pl/pos_precision"] == pytest.approx(pos / open_)
    assert rec["pl/accuracy"] == pytest.approx(pos / open_)


def test_no_pseudo_labels_no_keys(toy, toy_partition):
    train, test = toy
    sim = Simulation(
        FedAvg(),
        build_model("cnn", train.num_classes, 1, 16, width=8),
        train,
        toy_partition,
        test,
        EngineConfig(rounds=1, batch_size=32, progress=False),
    )
    rec = sim.run()[-1]
    assert not any(k.startswith(("pl/", "log/")) for k in rec)
    assert math.isfinite(rec["train_loss"])
