"""FedPSL's remaining baselines: FedSSP (SimSiam loss by hand, the pre-training cache),
FedMatch / FedMatch+ (helper selection and agreement labels by hand, the psi / sigma
bookkeeping through the engine), MixUp-PME (mixed targets by hand), tiny runs of each."""

import math

import numpy as np
import pytest
import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import METHODS, get_method
from fedpl_core.methods.fedmatch import FedMatch, agreement_labels, select_helpers
from fedpl_core.methods.mixup_pme import pme_targets
from fedpl_core.methods.simsiam import simsiam_loss
from fedpl_core.nn.aggregation import weighted_average
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import ClientSpec, Partition

NAMES = ("fedssp", "fedmatch", "fedmatch_plus", "mixup_pme")
SMALL_SSP = {"pretrain_rounds": 1, "proj_dim": 32, "pred_dim": 8}


# ------------------------------------------------------------------------ by hand
def test_simsiam_loss_two_samples_by_hand_and_stop_gradient():
    p1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    z2 = torch.tensor([[1.0, 0.0], [1.0, 0.0]], requires_grad=True)
    p2 = torch.tensor([[1.0, 1.0], [0.0, 2.0]], requires_grad=True)
    z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    # D(p1, z2) = -(1 + 0) / 2; D(p2, z1) = -(1/sqrt 2 + 1) / 2
    want = 0.5 * -0.5 + 0.5 * -(1 / math.sqrt(2) + 1) / 2
    loss = simsiam_loss(p1, p2, z1, z2)
    assert loss.item() == pytest.approx(want, rel=1e-6)
    loss.backward()
    assert z1.grad is None and z2.grad is None  # stop-gradient on z
    assert p1.grad.abs().sum() > 0


def test_helper_selection_three_clients_by_hand():
    emb = {0: torch.tensor([0.0, 0.0]), 1: torch.tensor([1.0, 0.0]), 2: torch.tensor([3.0, 0.0])}
    # distances 0-1: 1, 0-2: 3, 1-2: 2
    assert select_helpers(emb, 1) == {0: [1], 1: [0], 2: [1]}
    assert select_helpers(emb, 2) == {0: [1, 2], 1: [0, 2], 2: [1, 0]}
    tie = {0: torch.tensor([0.0, 0.0]), 1: torch.tensor([1.0, 0.0]), 2: torch.tensor([-1.0, 0.0])}
    assert select_helpers(tie, 1)[0] == [1]  # equal distance: the smaller id


def test_agreement_labels_majority_vote():
    p = torch.tensor([[0.9, 0.2, 0.6, 0.1]])
    q1 = torch.tensor([[0.1, 0.8, 0.4, 0.7]])
    q2 = torch.tensor([[0.2, 0.9, 0.45, 0.3]])
    # votes for 1: [1, 2, 1, 1] of 3
    assert agreement_labels(p, [q1, q2]).tolist() == [[0.0, 1.0, 0.0, 0.0]]
    assert agreement_labels(p, []).tolist() == [[1.0, 0.0, 1.0, 0.0]]  # no helper: the local vote
    assert agreement_labels(p, [q1]).tolist() == [[1.0, 0.0, 1.0, 0.0]]  # 1-1 ties follow the local vote


def test_mixup_pme_targets_two_samples_by_hand():
    y = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, False, True], [False, True, True]])
    probs = torch.tensor([[0.9, 0.3, 0.5], [0.6, 0.2, 0.4]])
    perm = torch.tensor([1, 0])
    t, keep = pme_targets(y, mask, probs, perm, 0.7)
    # completed labels: [1, .3, 1] and [.6, 0, 0]
    assert torch.allclose(t, torch.tensor([[0.88, 0.21, 0.7], [0.72, 0.09, 0.3]]))
    assert keep.all()
    t, keep = pme_targets(y, mask, None, perm, 0.7)  # warm-up: labels only, both annotated
    assert torch.allclose(t, torch.tensor([[0.7, 0.0, 0.7], [0.3, 0.0, 0.3]]))
    assert keep.tolist() == [[False, False, True], [False, False, True]]


# ------------------------------------------------------------------ through the engine
@pytest.fixture(scope="module")
def federation():
    from toy import toy_dataset

    ds = toy_dataset(240, 3, 16, 0)
    train, test = ds.subset(np.arange(180)), ds.subset(np.arange(180, 240))
    masks = [[1, 1, 0], [0, 1, 0], [0, 1, 1]]
    part = Partition(
        [
            ClientSpec(np.arange(0, 30), masks[0]),
            ClientSpec(np.arange(30, 90), masks[1]),
            ClientSpec(np.arange(90, 180), masks[2]),
        ],
        train.class_names,
    )
    return train, test, part


def _run(federation, method, rounds=2):
    train, test, part = federation
    torch.manual_seed(0)
    sim = Simulation(
        method,
        build_model("cnn", 3, 1, 16, width=4),
        train,
        part,
        test,
        EngineConfig(rounds=rounds, batch_size=16, progress=False, normalize="instance"),
    )
    sim.run()
    return sim


@pytest.mark.parametrize("name", NAMES)
def test_tiny_run_of_each_registered_name(federation, name, tmp_path):
    kw = dict(SMALL_SSP, cache_dir=str(tmp_path)) if name in ("fedssp", "fedmatch_plus") else {}
    sim = _run(federation, get_method(name, **kw))
    assert name in METHODS and len(sim.history) == 2
    assert all(torch.isfinite(v.float()).all() for v in sim.server.global_state.values())
    assert sim.history[-1]["auroc_mean"] is not None and math.isfinite(sim.history[-1]["train_loss"])


def test_fedssp_cache_is_written_reused_and_exact_and_shared_with_fedmatch_plus(federation, tmp_path):
    first = _run(federation, get_method("fedssp", **SMALL_SSP, cache_dir=str(tmp_path)))
    files = list(tmp_path.glob("simsiam-*.pt"))
    assert len(files) == 1 and not list(tmp_path.glob("*.tmp"))
    assert first.history[0]["log/ssp_cache_hit"] == 0.0
    # the pre-training moved the encoder and left the head at its initialisation
    torch.manual_seed(0)
    init = build_model("cnn", 3, 1, 16, width=4).state_dict()
    cached = torch.load(files[0], weights_only=True)
    assert torch.equal(cached["head.weight"], init["head.weight"])
    assert not torch.equal(cached["encoder.0.weight"], init["encoder.0.weight"])
    second = _run(federation, get_method("fedssp", **SMALL_SSP, cache_dir=str(tmp_path)))
    assert second.history[0]["log/ssp_cache_hit"] == 1.0 and second.history[0]["train_loss"] == 0.0
    g1, g2 = first.server.global_state, second.server.global_state
    assert all(torch.equal(g1[k], g2[k]) for k in g1)  # identical fine-tuning from the cache
    plus = _run(federation, get_method("fedmatch_plus", **SMALL_SSP, cache_dir=str(tmp_path)), rounds=1)
    assert plus.history[0]["log/ssp_cache_hit"] == 1.0
    # another seed of the model initialisation is another key
    other = get_method("fedssp", **SMALL_SSP, cache_dir=str(tmp_path))
    train, test, part = federation
    torch.manual_seed(1)
    Simulation(
        other,
        build_model("cnn", 3, 1, 16, width=4),
        train,
        part,
        test,
        EngineConfig(rounds=1, batch_size=16, progress=False, normalize="instance"),
    ).run()
    assert len(list(tmp_path.glob("simsiam-*.pt"))) == 2


def test_fedmatch_server_psi_sigma_and_personalised_helpers(federation, monkeypatch):
    known = {0: torch.tensor([0.0, 0.0]), 1: torch.tensor([1.0, 0.0]), 2: torch.tensor([3.0, 0.0])}

    class Spy(FedMatch):
        def aggregate(self, server, updates):
            self.updates = updates
            super().aggregate(server, updates)

    m = Spy(num_helpers=1)
    calls = iter([0, 1, 2])
    monkeypatch.setattr(m, "embed", lambda state, shape: known[next(calls)])
    sim = _run(federation, m, rounds=1)
    s = sim.server
    psis = [{k[4:]: v for k, v in u.state.items() if k.startswith("psi/")} for u in m.updates]
    thetas = [{k: v for k, v in u.state.items() if not k.startswith("psi/")} for u in m.updates]
    assert set(psis[0]) == {k for k, v in sim.model.named_parameters() if v.dim() >= 2}
    ref = weighted_average(psis, [30, 60, 90])
    assert all(torch.equal(s.state["psi"][k], ref[k]) for k in ref)
    avg = weighted_average(thetas, [30, 60, 90])
    assert all(torch.equal(s.global_state[k], avg[k]) for k in avg)
    assert s.state["helpers"] == {0: [1], 1: [0], 2: [1]}
    pay = m.payload(s, 2)
    assert len(pay["helpers"]) == 1 and all(torch.equal(pay["helpers"][0][k], psis[1][k]) for k in psis[1])
    # psi started at psi_factor / (1 + psi_factor) of the initial model and moved
    torch.manual_seed(0)
    init = build_model("cnn", 3, 1, 16, width=4).state_dict()
    assert not torch.allclose(psis[0]["head.weight"], init["head.weight"] * 0.2 / 1.2)
    pl = sim.client_states[0]["pseudo_labels"]
    assert pl["mask"].shape == (30, 3) and not pl["mask"][:, :2].any()  # annotated classes never pseudo-labelled


def test_fedmatch_refuses_single_label_tasks():
    from types import SimpleNamespace

    info = SimpleNamespace(task="multiclass", num_classes=3)
    for name in ("fedmatch", "fedmatch_plus"):
        with pytest.raises(ValueError, match="multi-label tasks only"):
            get_method(name).setup(build_model("cnn", 3, 1, 16, width=4), info)
