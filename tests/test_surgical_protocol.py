"""Surgical Aggregation's protocol against the paper's "Federated Setup" and the released
code (see the audit in :mod:`fedpl_core.methods.surgical`): model selection on the mean
of the clients' validation BCE (each method's own loss, global model), vanilla FL's
missing labels as negatives, each test set scored on its own classes, the head warm-up
(once, Adam at ``warmup_lr``, head only) and the study's paper-mode settings."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.methods import surgical as surgical_module
from fedpl_core.nn.losses import masked_bce
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import ClientSpec, Partition
from fedpl_core.studies import surgical as study


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _partition(train):
    """Client 0: c0, c1; client 1: c1, c2; client 2: c3 (unique)."""
    masks = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]], bool)
    return Partition([ClientSpec(np.arange(k * 100, (k + 1) * 100), masks[k]) for k in range(3)], train.class_names)


def _sim(toy, method, **cfg):
    train, test = toy
    torch.manual_seed(0)
    model = build_model("cnn", train.num_classes, 1, 16, width=8)
    kw = dict(
        rounds=1,
        batch_size=32,
        progress=False,
        seed=0,
        client_val_fraction=0.2,
        selection="val_loss",
        selection_mode="min",
    )
    kw.update(cfg)
    return Simulation(method, model, train, _partition(train), test, EngineConfig(**kw))


def _hand_val_losses(sim, train):
    """Each client's validation split under the *global* model: (BCE over every class
    with the labels the client does not have set to 0, BCE over the client's classes)."""
    sim.load_state(sim.server.global_state)
    sim.model.eval()
    full, own = [], []
    for c in sim.clients:
        idx = c.val.indices.numpy()
        y_true = torch.from_numpy(train.labels[idx])
        known = c.class_mask.expand_as(y_true)
        with torch.no_grad():
            logits = sim.model(sim.preprocess(sim.images[c.val.indices]))
        full.append(float(masked_bce(logits, y_true * known, None)))
        own.append(float(masked_bce(logits, y_true, known)))
    return float(np.mean(full)), float(np.mean(own))


@pytest.mark.parametrize("name, missing_negative", [("fedavg", True), ("fedavg_pl", False), ("surgical", False)])
def test_selection_is_the_mean_client_validation_bce_of_the_global_model(toy, name, missing_negative):
    """Paper: "Global convergence was determined by the mean of local validation BCE loss
    for each client"; the released code scores each client with its training loss: BCE
    over its own classes (SA, FL + PL), over every class with missing = negative (FL)."""
    sim = _sim(toy, get_method(name, warmup_epochs=1))
    sim.run()
    full, own = _hand_val_losses(sim, toy[0])
    assert abs(full - own) > 1e-3  # the two readings are far apart
    want = full if missing_negative else own
    assert sim.history[-1]["val_loss"] == pytest.approx(want, rel=1e-5)


def test_vanilla_fl_trains_with_missing_labels_as_negatives(toy):
    """Paper: "Missing classes in each dataset are treated as negatives"; FL + PL and SA
    drop them (Eq. 4)."""
    train = toy[0]
    sim = _sim(toy, get_method("fedavg", warmup_epochs=0))
    c = sim.clients[2]  # labels c3 only
    pos = torch.arange(40)
    y_true = torch.from_numpy(train.labels[c.indices[pos].numpy()])
    assert (y_true[:, :3] > 0).any()  # true positives of classes the client does not label
    batch = sim.client_context(2, 0).make_batch(pos, train=False)
    assert torch.equal(batch.y, y_true * c.class_mask)  # stored as 0
    logits = torch.randn(len(pos), 4, generator=torch.Generator().manual_seed(0))
    ctx = sim.client_context(2, 0)
    for name, want in (
        ("fedavg", masked_bce(logits, batch.y, None)),
        ("fedavg_pl", masked_bce(logits, batch.y, batch.mask)),
        ("surgical", masked_bce(logits, batch.y, batch.mask)),
    ):
        got = get_method(name, warmup_epochs=0).loss(ctx, logits, None, batch)
        assert float(got) == pytest.approx(float(want), rel=1e-6), name
    assert abs(float(masked_bce(logits, batch.y, None)) - float(masked_bce(logits, batch.y, batch.mask))) > 1e-3


def test_each_test_set_is_scored_on_its_own_classes(toy):
    """Released ``analysis.py``: a test set is scored on the classes it shares with the
    model (NIH on its 14, CheXpert on its 13): a set with a subset of the classes, in its
    own order, gets exactly the AUROCs of those columns of the global model."""
    train, test = toy
    sim = _sim(toy, get_method("surgical", warmup_epochs=1))
    sim.run()
    sub = test.select_classes(["c3", "c1"])
    rec = sim.evaluate(sub)
    probs = sim.predict(test)
    assert list(rec["class_names"]) == ["c3", "c1"]
    for i, name in enumerate(("c3", "c1")):
        j = train.class_names.index(name)
        assert rec["auroc_per_class"][i] == pytest.approx(roc_auc_score(test.labels[:, j], probs[:, j]), abs=1e-9)
    assert rec["auroc_per_class"][0] != pytest.approx(rec["auroc_per_class"][1], abs=1e-6)


def test_head_warmup_once_with_its_own_adam_on_the_head(toy, monkeypatch):
    """Paper: heads "warmed up" before training, 15 epochs at 5e-3, feature extractor
    frozen; released code: once, before the first round, with a fresh Adam.  Here: one
    Adam per client at its first participation only, on the head's two tensors, at
    ``warmup_lr``, for ``ceil(epochs * n // batch)`` steps; nothing in round 2."""
    made = []
    real_adam = torch.optim.Adam

    class SpyAdam(real_adam):
        def __init__(self, params, lr, **kw):
            params = list(params)
            super().__init__(params, lr=lr, **kw)
            self.record = {"params": params, "lr": lr, "steps": 0}
            made.append(self.record)

        def step(self, *a, **kw):
            self.record["steps"] += 1
            return super().step(*a, **kw)

    sim = _sim(toy, get_method("surgical", warmup_epochs=2, warmup_lr=7e-3), rounds=2, optimizer="sgd")
    monkeypatch.setattr(surgical_module.torch.optim, "Adam", SpyAdam)
    sim.run()
    assert len(made) == 3  # one per client, none in round 2
    head = sim.model.head
    for rec, c in zip(made, sim.clients):
        assert rec["lr"] == 7e-3
        assert [id(p) for p in rec["params"]] == [id(head.weight), id(head.bias)]
        assert rec["steps"] == math.ceil(2 * max(1, c.n // min(32, c.n)))


def test_study_paper_mode_settings():
    """The full profile runs the paper's protocol; every profile keeps each client's Adam
    across rounds as the released code does; every row gets the warm-up and the BatchNorm
    strategy; vanilla FL is plain FedAvg (missing = negative)."""
    full = study.make_settings("full")
    assert (full.warmup_epochs, full.warmup_lr, full.bn, full.patience, full.rounds) == (15, 5e-3, "frozen", 25, 150)
    for st in (full, study.make_settings("cpu"), study.make_settings("smoke")):
        eng = st.engine()
        assert eng.selection == "val_loss" and eng.selection_mode == "min" and eng.optimizer_state == "keep"
    st = study.make_settings("cpu")
    rows = dict(study.ablation_methods(st))
    assert rows["FL"]["method"] == "fedavg" and rows["FL + PL"]["method"] == "fedavg_pl"
    assert rows["FL + SA"]["method"] == "surgical"
    for label, row in rows.items():
        kw = row["method_kwargs"]
        assert kw["warmup_epochs"] == st.warmup_epochs and kw["warmup_lr"] == st.warmup_lr, label
        assert kw["bn_policy"] == st.bn, label
    assert study.make_settings("cpu", optimizer_state="reset").engine().optimizer_state == "reset"
