"""FedMLP's FSSL / FNLL baselines on partial labels: RSCFed's DMA weights, FedIRM's relation
matrix, CBAFed's thresholds and residual connection, FedLSR's JS term, FedNoRo's logit
adjustment, by hand; and a tiny end-to-end run of each."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import FederationInfo, derive_seed
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.methods.base import ClientUpdate
from fedpl_core.methods.blocks import sigmoid_rampup
from fedpl_core.methods.cbafed import cbafed_thresholds
from fedpl_core.methods.fedirm import relation_matrix, symmetric_bernoulli_kl
from fedpl_core.methods.fedlsr import bernoulli_js
from fedpl_core.methods.fednoro import logit_shift
from fedpl_core.methods.rscfed import dma_weights, sample_subsets
from fedpl_core.nn.aggregation import weighted_average
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import ClientSpec, Partition

INFO = FederationInfo(3, ["c0", "c1", "c2"], "multilabel", ["A", "B", "C"])


# --------------------------------------------------------------------------- RSCFed
def _three_states():
    """w: [0, 0], [3, 4], [6, 8]; v: 0, 0, 4; an integer buffer (ignored by the distance)."""
    ws = ([0.0, 0.0], [3.0, 4.0], [6.0, 8.0])
    vs = (0.0, 0.0, 4.0)
    return [
        {"w": torch.tensor(w), "v": torch.tensor([v]), "n": torch.tensor(i)} for i, (w, v) in enumerate(zip(ws, vs))
    ]


def test_rscfed_dma_weights_by_hand():
    states, n = _three_states(), [1, 1, 2]
    # size-weighted mean: w = .25 [0,0] + .25 [3,4] + .5 [6,8] = [3.75, 5]; v = 2
    # d_k = ||w_k - mean|| + |v_k - 2| = 6.25 + 2, 1.25 + 2, 3.75 + 2
    d = [8.25, 3.25, 5.75]
    for beta in (1.0, 0.4):
        raw = [0.25 * math.exp(-beta * d[0] / 1), 0.25 * math.exp(-beta * d[1] / 1), 0.5 * math.exp(-beta * d[2] / 2)]
        want = [r / sum(raw) for r in raw]
        assert dma_weights(states, n, beta) == pytest.approx(want, rel=1e-9)
    # beta = 0: plain size weights; a huge beta: no 0/0, the smallest d_k / n_k (client 3:
    # 5.75 / 2 < 3.25 / 1) takes all the weight
    assert dma_weights(states, n, 0.0) == pytest.approx([0.25, 0.25, 0.5])
    assert dma_weights(states, n, 1e6) == pytest.approx([0.0, 0.0, 1.0])


def test_rscfed_aggregate_is_mean_of_distance_weighted_subsets():
    states = _three_states()
    ups = [ClientUpdate(k, s, nk) for k, (s, nk) in enumerate(zip(states, [1, 1, 2]))]
    prev = {k: torch.zeros_like(v) for k, v in states[0].items()}
    # one subset of every client: the DMA model itself
    m = get_method("rscfed", num_subsets=1, subset_size=10, dist_scale=1.0)
    server = Server(m, dict(prev), INFO)
    server.aggregate(ups)
    w = dma_weights(states, [1, 1, 2], 1.0)
    assert torch.allclose(server.global_state["w"], sum(wi * s["w"] for wi, s in zip(w, states)), atol=1e-6)
    assert int(server.global_state["n"]) == 2
    # M = 4 subsets of 2: seeded by the server round, each a DMA model, averaged uniformly
    m = get_method("rscfed", num_subsets=4, subset_size=2, dist_scale=1.0, seed=3)
    server = Server(m, dict(prev), INFO)
    server.aggregate(ups)
    subsets = server.state["last_subsets"]
    assert subsets == sample_subsets(3, 4, 2, derive_seed(3, 0, 4099))
    assert len(subsets) == 4 and all(len(s) == 2 and len(set(s)) == 2 for s in subsets)
    subs = [
        weighted_average([states[i] for i in s], dma_weights([states[i] for i in s], [[1, 1, 2][i] for i in s], 1.0))
        for s in subsets
    ]
    assert torch.allclose(server.global_state["w"], sum(s["w"] for s in subs) / 4, atol=1e-6)
    server.aggregate(ups)  # the next round draws again
    assert server.state["round"] == 2


# --------------------------------------------------------------------------- FedIRM
def test_fedirm_relation_matrix_by_hand():
    logits = torch.tensor([[2.0, 0.0], [0.0, -2.0], [4.0, 2.0]])
    pos = torch.tensor([[1, 0], [0, 1], [1, 1]])
    r, cnt = relation_matrix(logits, pos, temperature=2.0)
    # row 0: mean of samples 0, 2 = [3, 1] -> sigmoid([1.5, .5]); row 1: samples 1, 2 = [2, 0]
    assert torch.allclose(r, torch.sigmoid(torch.tensor([[1.5, 0.5], [1.0, 0.0]])))
    assert cnt.tolist() == [2.0, 2.0]
    r, cnt = relation_matrix(logits, torch.tensor([[1, 0], [0, 0], [1, 0]]), temperature=2.0)
    assert cnt.tolist() == [2.0, 0.0] and torch.allclose(r[1], torch.tensor([0.5, 0.5]))
    # the symmetric KL of two Bernoullis, against its definition
    p, q = torch.tensor([0.8, 0.3]), torch.tensor([0.6, 0.3])

    def kl(a, b):
        return a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))

    assert symmetric_bernoulli_kl(p, q).tolist() == pytest.approx([(kl(0.8, 0.6) + kl(0.6, 0.8)) / 2, 0.0], abs=1e-6)


def test_fedirm_server_relation_is_count_weighted_and_keeps_unreported_rows():
    st = {"w": torch.zeros(1)}
    base = {
        "class_mask": torch.ones(3, dtype=torch.bool),
        "label_counts": torch.zeros(3),
        "positive_counts": torch.zeros(3),
    }
    r_a = torch.tensor([[0.9, 0.2, 0.1], [0.5] * 3, [0.5] * 3])
    r_b = torch.tensor([[0.6, 0.5, 0.4], [0.3, 0.8, 0.2], [0.5] * 3])
    ups = [
        ClientUpdate(0, st, 10, {**base, "relation": r_a, "relation_counts": torch.tensor([3.0, 0, 0])}),
        ClientUpdate(1, st, 10, {**base, "relation": r_b, "relation_counts": torch.tensor([1.0, 4, 0])}),
    ]
    server = Server(get_method("fedirm"), {"w": torch.zeros(1)}, INFO)
    server.aggregate(ups)
    rel = server.state["relation"]
    assert torch.allclose(rel[0], (3 * r_a[0] + r_b[0]).double() / 4)
    assert torch.allclose(rel[1], r_b[1].double())
    assert server.state["relation_known"].tolist() == [True, True, False]
    server.aggregate([ClientUpdate(0, st, 10, {**base, "relation": r_b, "relation_counts": torch.tensor([0.0, 2, 0])})])
    assert torch.allclose(server.state["relation"][0], (3 * r_a[0] + r_b[0]).double() / 4)  # kept


def test_fedirm_loss_matches_missing_class_rows_by_hand():
    """Client annotates class 0; class 1 is missing.  Sample 0 is confidently positive for
    class 1 (sigmoid(3) > 0.7), so the local row 1 is sigmoid(z_0 / 2), matched to the
    global row 1 by the symmetric KL; the labelled positive of class 0 feeds the metadata."""
    logits = torch.tensor([[2.0, 3.0], [0.0, -3.0]])
    glob = torch.tensor([[0.5, 0.5], [0.6, 0.7]])
    ctx = SimpleNamespace(
        data=SimpleNamespace(class_mask=torch.tensor([True, False])),
        scratch={
            "sum_logits": torch.zeros(2, 2),
            "sum_counts": torch.zeros(2),
            "weight": 0.5,
            "teacher": logits.clone(),
            "relation": glob,
            "relation_known": torch.tensor([True, True]),
        },
    )
    batch = SimpleNamespace(y=torch.tensor([[1.0, 0.0], [0.0, 0.0]]), mask=torch.tensor([[True, False]] * 2))
    got = float(get_method("fedirm").loss(ctx, logits, None, batch))

    def sp(t):
        return math.log1p(math.exp(t))

    local = torch.sigmoid(torch.tensor([1.0, 1.5]))
    irm = float(symmetric_bernoulli_kl(local, glob[1]).sum())
    assert irm > 0.01
    assert got == pytest.approx((sp(-2.0) + sp(0.0)) / 2 + 0.5 * irm, rel=1e-5)  # teacher = student: MSE 0
    assert ctx.scratch["sum_logits"].tolist() == [[2.0, 3.0], [0.0, 0.0]] and ctx.scratch["sum_counts"].tolist() == [
        1,
        0,
    ]


# --------------------------------------------------------------------------- CBAFed
def test_cbafed_thresholds_by_hand():
    counts = torch.tensor([30.0, 10.0, 0.0, 60.0])
    # p = [.3, .1, 0, .6], mean .25, sample std = sqrt(.21 / 3) = .264575
    s = math.sqrt(0.21 / 3)
    want = [0.3 + 0.84 - s, 0.1 + 0.84 - s, 0.84 - s, 0.95]  # last one clipped at T_upper
    assert cbafed_thresholds(counts).tolist() == pytest.approx(want, abs=1e-6)
    # the FedMLP code's base 0.45 hits the 0.55 floor
    assert cbafed_thresholds(counts, t_base=0.45).tolist() == pytest.approx(
        [0.55, 0.55, 0.55, 0.6 + 0.45 - s], abs=1e-6
    )
    # no count yet: uniform p, std 0
    assert cbafed_thresholds(torch.zeros(4)).tolist() == pytest.approx([0.95] * 4)
    assert cbafed_thresholds(torch.zeros(4), t_base=0.5).tolist() == pytest.approx([0.75] * 4)


def test_cbafed_residual_connection_every_five_rounds():
    m = get_method("cbafed")
    server = Server(m, {"w": torch.zeros(1)}, INFO)
    meta = {
        "class_mask": torch.ones(3, dtype=torch.bool),
        "label_counts": torch.zeros(3),
        "positive_counts": torch.zeros(3),
        "pl_positive_counts": torch.tensor([4.0, 1.0, 0.0]),
    }
    seen = []
    for r in range(6):
        ups = [
            ClientUpdate(0, {"w": torch.tensor([float(r)])}, 5, {**meta, "labelled_entries": 1}),
            ClientUpdate(1, {"w": torch.tensor([float(r) + 3])}, 5, {**meta, "labelled_entries": 2}),
        ]
        server.aggregate(ups)
        seen.append(float(server.global_state["w"]))
    # weights 1 : 2 -> average r + 2; round 0 starts the residual model (2.0); round 5:
    # 0.5 (5 + 2) + 0.5 * 2 = 4.5
    assert seen == pytest.approx([2.0, 3.0, 4.0, 5.0, 6.0, 4.5])
    assert float(server.state["residual"]["w"]) == pytest.approx(4.5)
    # thresholds from the summed positive counts [8, 2, 0]
    assert torch.allclose(server.state["tau"], cbafed_thresholds(torch.tensor([8.0, 2.0, 0.0])))


# --------------------------------------------------------------------------- FedLSR
def test_fedlsr_js_by_hand_and_the_code_bug_switch():
    p, q = torch.tensor([[0.9], [0.2]]), torch.tensor([[0.5], [0.2]])

    def kl(a, b):
        return a * math.log(a / b) + (1 - a) * math.log((1 - a) / (1 - b))

    js1 = (kl(0.9, 0.7) + kl(0.5, 0.7)) / 2
    assert bernoulli_js(p, q).flatten().tolist() == pytest.approx([js1, 0.0], abs=1e-6)
    assert float(bernoulli_js(p, q).mean()) == pytest.approx(js1 / 2, abs=1e-6)
    # the full objective on two samples, one class: z1 = [0, 2], z2 = [0, -2], lam = .25
    m = get_method("fedlsr")
    z1, z2 = torch.tensor([[0.0], [2.0]]), torch.tensor([[0.0], [-2.0]])
    y = torch.tensor([[1.0], [0.0]])

    def sg(t):
        return 1 / (1 + math.exp(-t))

    pm = [0.5, 0.25 * sg(2) + 0.75 * sg(-2)]
    ps = [a * a / (a * a + (1 - a) ** 2) for a in pm]  # sharpened at T = 1/2
    bce = (-math.log(ps[0]) - math.log(1 - ps[1])) / 2
    js = (0.0 + (kl(sg(6), (sg(6) + sg(-6)) / 2) + kl(sg(-6), (sg(6) + sg(-6)) / 2)) / 2) / 2  # T_d = 1/3
    assert float(m.lsr_loss(z1, z2, y, None, 0.25, 0.4)) == pytest.approx(bce + 0.4 * js, rel=1e-5)
    # the FedMLP code's bug: BCE-with-logits on the probabilities p_s
    buggy = get_method("fedlsr", bce_on_probabilities=True)
    want = (math.log1p(math.exp(-ps[0])) + math.log1p(math.exp(ps[1]))) / 2
    assert float(buggy.lsr_loss(z1, z2, y, None, 0.25, 0.0)) == pytest.approx(want, rel=1e-5)
    # beta ramps linearly to gamma over t_w = 0.2 x rounds
    ctx = SimpleNamespace(round=5, cfg=SimpleNamespace(rounds=50))
    assert m.beta(ctx) == pytest.approx(0.2) and m.beta(SimpleNamespace(round=30, cfg=ctx.cfg)) == 0.4


# --------------------------------------------------------------------------- FedNoRo
def test_fednoro_logit_adjustment_ramp_and_loss_by_hand():
    labels = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    shift = logit_shift(labels, None)
    assert shift.tolist() == pytest.approx([math.log(1 / 3)] * 2)
    # it is FedMLP's Eq. 3: sigmoid(z + ln(pi1/pi0)) = s pi1 / (s pi1 + (1 - s) pi0)
    z = torch.tensor([0.7, -1.3])
    s = torch.sigmoid(z)
    assert torch.allclose(torch.sigmoid(z + shift), s * 0.25 / (s * 0.25 + (1 - s) * 0.75))
    # class 1 unannotated: no positive among the known entries -> no adjustment
    mask = torch.tensor([[True, False]] * 4)
    assert logit_shift(labels, mask).tolist() == pytest.approx([math.log(1 / 3), 0.0])
    assert sigmoid_rampup(10, 10, 49) == pytest.approx(math.exp(-5))
    assert sigmoid_rampup(29.5, 10, 49) == pytest.approx(math.exp(-1.25))
    assert sigmoid_rampup(60, 10, 49) == 1.0 and sigmoid_rampup(1, 10, 1) == pytest.approx(math.exp(-5))
    # loss: annotated class 0 (y = 1) by LA-BCE, missing class 1 by KL to sigmoid(z_g / 0.8)
    m = get_method("fednoro")
    ctx = SimpleNamespace(
        scratch={"shift": torch.tensor([math.log(1 / 3), 0.0]), "w": 0.3, "teacher": torch.tensor([[0.8, 0.4]])}
    )
    batch = SimpleNamespace(y=torch.tensor([[1.0, 0.0]]), mask=torch.tensor([[True, False]]))
    got = float(m.loss(ctx, torch.tensor([[0.5, -1.0]]), None, batch))

    def sg(t):
        return 1 / (1 + math.exp(-t))

    q, pz = sg(0.5), sg(-1.0)
    kd = q * math.log(q / pz) + (1 - q) * math.log((1 - q) / (1 - pz))
    assert got == pytest.approx(0.7 * -math.log(sg(0.5 + math.log(1 / 3))) + 0.3 * kd, rel=1e-5)


# ------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def federation():
    from toy import toy_dataset

    ds = toy_dataset(240, 3, 16, 0)
    train, test = ds.subset(np.arange(180)), ds.subset(np.arange(180, 240))
    masks = [[1, 1, 0], [0, 1, 0], [0, 1, 1]]
    part = Partition(
        [
            ClientSpec(np.arange(0, 60), masks[0]),
            ClientSpec(np.arange(60, 120), masks[1]),
            ClientSpec(np.arange(120, 180), masks[2]),
        ],
        train.class_names,
    )
    return train, test, part


def _run(federation, name, rounds=2, **kw):
    train, test, part = federation
    torch.manual_seed(0)
    sim = Simulation(
        get_method(name, **kw),
        build_model("cnn", 3, 1, 16, width=4),
        train,
        part,
        test,
        EngineConfig(rounds=rounds, batch_size=20, progress=False),
    )
    sim.run()
    return sim


def _finite(sim):
    assert all(torch.isfinite(v.float()).all() for v in sim.server.global_state.values())
    assert all(math.isfinite(r["train_loss"]) for r in sim.history)
    assert sim.history[-1]["auroc_mean"] is not None


@pytest.mark.parametrize("name", ["rscfed", "fedirm", "cbafed"])
def test_pseudo_labelling_baselines_run_and_keep_pseudo_labels(federation, name):
    sim = _run(federation, name)
    _finite(sim)
    for c, st in zip(sim.clients, sim.client_states):
        pl = st["pseudo_labels"]
        assert pl["mask"].shape == (c.n, 3)
        assert not (pl["mask"] & c.mask).any()  # only unannotated entries are pseudo-labelled
        assert ((pl["target"] >= 0) & (pl["target"] <= 1)).all()
        assert not pl["target"][~pl["mask"]].any()
    rec = sim.history[-1]
    assert "pl/coverage" in rec
    if name == "rscfed":  # soft targets on every unannotated entry seen; the teacher moved
        assert rec["pl/coverage"] == 1.0
        st = sim.client_states[0]
        assert st["ema_step"] == 2 * 3  # 60 samples / batch 20, 2 rounds
        assert any(not torch.equal(st["teacher"][k], sim.server.global_state[k]) for k in st["teacher"])
    if name == "fedirm":
        assert sim.server.state["relation_known"].tolist() == [True, True, True]
    if name == "cbafed":
        assert sim.server.state["tau"].min() >= 0.55 and sim.server.state["residual"]


def test_cbafed_pseudo_labels_follow_the_threshold(federation):
    train, test, part = federation
    torch.manual_seed(0)
    sim = Simulation(
        get_method("cbafed", t_base=0.0, lower=0.55, upper=0.55),
        build_model("cnn", 3, 1, 16, width=4),
        train,
        part,
        test,
        EngineConfig(rounds=4, batch_size=20, progress=False, optimizer="adam", lr=1e-2),
    )
    sim.run(rounds=3)
    received = {k: v.clone() for k, v in sim.server.global_state.items()}
    rec = sim.step()  # tau = 0.55 everywhere
    assert rec["pl/coverage"] > 0.2 and rec["log/pl_share"] > 0.2
    # the pseudo-labels are exactly the received model's confident calls on the clean images
    c = sim.clients[0]
    p = torch.as_tensor(sim.predict(train.subset(c.indices.numpy()), received))
    pl = sim.client_states[0]["pseudo_labels"]
    assert torch.equal(pl["mask"], ~c.mask & ((p > 0.55) | (p < 0.45)))
    assert torch.equal(pl["target"], (pl["mask"] & (p > 0.55)).float())


@pytest.mark.parametrize("name", ["fedlsr", "fednoro"])
def test_noisy_label_baselines_run(federation, name):
    sim = _run(federation, name)
    _finite(sim)
    key = "log/beta" if name == "fedlsr" else "log/kd_weight"
    assert key in sim.history[-1]
    if name == "fedlsr":  # round 2 of 2: beta = 0.4 * 1 / (0.2 * 2)
        assert sim.history[-1][key] == pytest.approx(0.4)


def test_fedlsr_bug_switch_changes_training(federation):
    a = _run(federation, "fedlsr", rounds=1)
    b = _run(federation, "fedlsr", rounds=1, bce_on_probabilities=True)
    assert not torch.equal(a.server.global_state["head.weight"], b.server.global_state["head.weight"])


def test_multiclass_tasks_are_refused():
    info = FederationInfo(2, ["a", "b"], "multiclass", ["A", "B"])
    for name in ("rscfed", "fedirm", "cbafed", "fedlsr", "fednoro"):
        with pytest.raises(ValueError):
            get_method(name).setup(torch.nn.Linear(2, 2), info)
