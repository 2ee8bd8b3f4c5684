"""Single-label semantics: fedavg and fedavg_pl coincide (and the grid says so); the
federated 100%-label upper bound."""

import warnings

import pytest
import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs import study as study_module
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run
from fedpl_core.runs.study import SingleLabelWarning, Study, warn_single_label_twins

ENG = EngineConfig(rounds=1, batch_size=16, progress=False, selection=None)


def skin(**kw):
    return ExperimentConfig(
        dataset="synthetic-skin",
        image_size=28,
        n_train=100,
        n_test=60,
        num_clients=5,
        partition="label_set_mismatch",
        partition_kwargs={"classes_per_client": 3, "seed": 523},
        model_kwargs={"width": 4},
        engine=ENG,
        **kw,
    )


def test_fedavg_and_fedavg_pl_are_one_method_on_single_label_data():
    a, b = run(skin(method="fedavg")), run(skin(method="fedavg_pl"))
    assert a.final["accuracy"] == b.final["accuracy"] and a.history[0]["train_loss"] == b.history[0]["train_loss"]
    study_module._TWINS_WARNED.clear()
    with pytest.warns(SingleLabelWarning, match="fedavg and fedavg_pl are the same method"):
        pairs = warn_single_label_twins(Study(skin(), ["fedavg", "fedavg_pl", "fedprox"], [0]).jobs())
    assert pairs == [("fedavg", "fedavg_pl")]  # fedprox (mu > 0) is another method


def test_no_twin_warning_on_multi_label_data():
    cxr = skin().replace(
        dataset="synthetic-cxr", partition_kwargs={"classes_per_client": 3, "seed": 523}, num_clients=8
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingleLabelWarning)
        assert warn_single_label_twins(Study(cxr, ["fedavg", "fedavg_pl"], [0]).jobs()) == []
    a, b = run(cxr.replace(method="fedavg")), run(cxr.replace(method="fedavg_pl"))
    assert a.history[0]["train_loss"] != b.history[0]["train_loss"]


def test_fedavg_oracle_gives_every_client_every_true_label():
    cfg = skin(method="fedavg_oracle").replace(dataset="synthetic-cxr", num_clients=8)
    sim = build_simulation(cfg)
    base = build_simulation(cfg.replace(method="fedavg"))
    assert len(sim.clients) == len(base.clients) == 8
    for c, b in zip(sim.clients, base.clients):
        assert torch.equal(c.indices, b.indices)  # same samples as the partial-label clients
        assert bool(c.mask.all()) and bool(c.class_mask.all())
        truth = torch.from_numpy(sim.train_set.labels[c.indices.numpy()]).float()
        assert torch.equal(c.labels, truth)
        assert not torch.equal(b.labels, truth)  # the partial clients lack some of them
