"""FedMLP: logit adjustment, WPC in both normalisations, CR, the Z score, one MLD round with
floor counts and permanent tags, learning degrees and their aggregation, global prototypes,
and tiny runs across the stage boundary."""

import math
from types import SimpleNamespace

import pytest
import torch

from fedpl_core.data.synthetic import NIH14, make_cxr
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import Batch, ClientUpdate, FederationInfo
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.methods.fedmlp import (
    FedMLP,
    adjusted_probability,
    adjustment,
    dual_prototypes,
    global_learning_degree,
    global_prototypes,
    learning_degree,
    select_tags,
    wpc_loss,
    z_score,
)
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import missing_classes

LN2 = math.log(2.0)


# ----------------------------------------------------------------------------- Eq. 3
def test_logit_adjustment_is_a_shifted_sigmoid():
    # by hand: sigmoid(ln 3) = 0.75, pi1 = 0.25: 0.75*0.25 / (0.75*0.25 + 0.25*0.75) = 0.5
    p = adjusted_probability(torch.tensor([0.75]), torch.tensor([0.25]))
    assert torch.allclose(p, torch.tensor([0.5]))
    assert torch.allclose(adjustment(torch.tensor([0.25, 0.5, 0.8])), torch.tensor([-math.log(3), 0.0, math.log(4)]))
    logits = torch.linspace(-6, 6, 13).view(-1, 1)
    pi = torch.tensor([[0.01, 0.1, 0.3, 0.5, 0.9]])
    eq3 = adjusted_probability(torch.sigmoid(logits.double()), pi.double())
    assert torch.allclose(eq3, torch.sigmoid(logits.double() + torch.log(pi / (1 - pi)).double()), atol=1e-12)


# ----------------------------------------------------------------------------- WPC / CR
def fake_ctx(method_round, n_labels=None, teacher=None):
    """A 4-sample client annotating classes 0 and 1 of 3; positive rates 0.25 and 0.5."""
    labels = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 0]])
    mask = torch.tensor([[1, 1, 0]] * 4, dtype=torch.bool)
    data = SimpleNamespace(labels=labels, mask=mask, class_mask=torch.tensor([True, True, False]), n=4)
    logs = {}
    ctx = SimpleNamespace(
        round=method_round,
        data=data,
        state={},
        scratch={},
        cfg=SimpleNamespace(batch_size=4),
        device=torch.device("cpu"),
        logs=logs,
        log=lambda **kv: logs.update(kv),
    )
    ctx.forward_with = lambda state, x: (teacher.expand(len(x), 3), None)
    return ctx


def batch01():
    ctx = fake_ctx(0)
    pos = torch.tensor([0, 1])
    return Batch(torch.zeros(2, 1, 2, 2), ctx.data.labels[pos], ctx.data.mask[pos], pos, pos)


LOG3 = math.log(3)


def loss_of(method, rnd, tag=False, teacher_logit=LOG3):
    ctx = fake_ctx(rnd, teacher=torch.full((1, 3), teacher_logit))
    ctx.scratch["payload"] = {"pos_rate": torch.tensor([0.9, 0.9, 0.2])}
    ctx.scratch["teacher"] = {}
    method.prepare(ctx)  # the shift: the client's rates, pooled rate for the missing class
    if tag:
        pl = method.pseudo_labels(ctx)
        pl["mask"][1, 2], pl["target"][1, 2] = True, 1.0
    return method.loss(ctx, torch.zeros(2, 3), None, batch01()), ctx


def test_shift_uses_local_rates_and_the_pooled_rate_for_missing_classes():
    _, ctx = loss_of(FedMLP(warmup_rounds=1), 0)
    assert torch.allclose(ctx.scratch["shift"], torch.tensor([-math.log(3), 0.0, math.log(0.25)]))


def test_wpc_paper_normalisation_with_logit_adjustment():
    m = FedMLP(warmup_rounds=1, cr=False)
    # stage 1, logits 0, shift ln(1/3) on class 0: entries ln4 (y=1, p=.25), ln2, ln(4/3), ln2;
    # class 2 (missing) excluded; divided by B*C = 6
    loss, _ = loss_of(m, 0)
    assert torch.isclose(loss, torch.tensor(math.log(64 / 3) / 6))
    assert torch.isclose(wpc_loss(torch.zeros(2, 3), batch01().y, batch01().mask, None, 6), torch.tensor(4 * LN2 / 6))
    # stage 2, tag (1, 2) = 1 with pooled pi = 0.2: + ln(1/0.2) ... as shift ln(0.25): p = 0.2, y = 1 -> ln 5
    loss2, _ = loss_of(m, 1, tag=True)
    assert torch.isclose(loss2, torch.tensor((math.log(64 / 3) + math.log(5)) / 6))


def test_wpc_code_normalisation():
    m = FedMLP(mode="code", warmup_rounds=1, cr=False)
    assert not m.logit_adjust
    loss, _ = loss_of(m, 0)  # stage 1: 4 ln2 / (nominal batch 4 x 2 active classes), not / (2 x 2)
    assert torch.isclose(loss, torch.tensor(LN2 / 2))
    loss2, _ = loss_of(m, 1, tag=True)  # stage 2: 5 ln2 / 5 supervised entries
    assert torch.isclose(loss2, torch.tensor(LN2))
    # paper normalisation without logit adjustment, same tag: 5 ln2 / 6
    loss3, _ = loss_of(FedMLP(warmup_rounds=1, cr=False, logit_adjust=False), 1, tag=True)
    assert torch.isclose(loss3, torch.tensor(5 * LN2 / 6))


def test_consistency_regularisation_entries_in_both_schedules():
    sq = (0.75 - 0.5) ** 2  # teacher sigmoid(ln 3) vs student sigmoid(0)
    kw = dict(warmup_rounds=1, logit_adjust=False)
    base1, base2 = 4 * LN2 / 6, 5 * LN2 / 6
    # paper: none in stage 1; stage 2 on the untagged missing entry (0, 2) only
    assert torch.isclose(loss_of(FedMLP(**kw), 0)[0], torch.tensor(base1))
    assert torch.isclose(loss_of(FedMLP(**kw), 1, tag=True)[0], torch.tensor(base2 + sq / 6))
    # code schedule: stage 1 on every missing entry, none in stage 2
    assert torch.isclose(loss_of(FedMLP(cr_schedule="code", **kw), 0)[0], torch.tensor(base1 + 2 * sq / 6))
    assert torch.isclose(loss_of(FedMLP(cr_schedule="code", **kw), 1, tag=True)[0], torch.tensor(base2))


def test_all_components_off_is_fedavg_bce():
    m = FedMLP(warmup_rounds=1, mld=False, wpc=False, cr=False, st=False)
    logits = torch.tensor([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]])
    ctx = fake_ctx(3)
    ctx.scratch["payload"] = {}
    m.prepare(ctx)
    want = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch01().y)  # missing = negative, Eq. 1
    assert torch.isclose(m.loss(ctx, logits, None, batch01()), want)
    # and FedAvg's loss to the bit, gradient included (a different reduction changes the last bit of the
    # gradient, and the runs part after one round)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 3, generator=g)
    b = batch01()
    b = type(b)(
        b.x,
        (torch.rand(32, 3, generator=g) < 0.3).float(),
        torch.ones(32, 3, dtype=torch.bool),
        torch.arange(32),
        torch.arange(32),
    )
    ctx.info = SimpleNamespace(task="multilabel")
    grads = []
    for method in (m, get_method("fedavg")):
        xi = x.clone().requires_grad_(True)
        method.loss(ctx, xi, None, b).backward()
        grads.append(xi.grad)
    assert torch.equal(grads[0], grads[1])


# ----------------------------------------------------------------------------- Eq. 7-9
def test_z_score_by_hand():
    p0, p1 = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    f = torch.tensor([[1.0, 1.0], [3.0, 4.0], [2.0, 0.0], [0.0, -1.0]])
    assert torch.allclose(z_score(p0, p1, f), torch.tensor([0.0, 0.6 - 0.8, 1.0, 1.0]), atol=1e-6)
    # cos([1, 1], [1, 0]) = 1/sqrt 2; cos([2, 2], [1, 0]) the same (scale free)
    assert torch.allclose(z_score(torch.tensor([2.0, 2.0]), p1, torch.tensor([[1.0, 0.0]])), torch.tensor([2**-0.5]))


def test_select_tags_floor_counts_and_residual_only():
    z = torch.tensor([0.9, 0.5, 0.1, 0.0, -0.2, -0.8, -0.4, 0.3])
    neg, pos = select_tags(z, torch.zeros(8, dtype=torch.bool), 0.4, 0.5)
    assert sorted(neg.tolist()) == [0, 1]  # 5 with Z >= 0 (0.0 included): floor(2.0) = 2 (4 would give 1)
    assert pos.tolist() == [5]  # 3 with Z < 0: floor(1.5) = 1, the most negative
    tagged = torch.zeros(8, dtype=torch.bool)
    tagged[[0, 1, 5]] = True
    neg, pos = select_tags(z, tagged, 0.5, 0.5)
    assert neg.tolist() == [7] and pos.tolist() == [6]  # residual: 3 -> 1, 2 -> 1
    neg, pos = select_tags(z, torch.zeros(8, dtype=torch.bool), 0.19, 0.3)
    assert neg.numel() == 0 and pos.numel() == 0  # floor(0.95) = floor(0.9) = 0


def mld_payload():
    P = torch.zeros(2, 2, 2)
    P[1, 0], P[1, 1] = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    return {"prototypes": P, "prototype_valid": torch.ones(2, 2, dtype=torch.bool), "degree": torch.tensor([1.0, 0.5])}


def mld_ctx():
    data = SimpleNamespace(
        labels=torch.zeros(7, 2), mask=torch.zeros(7, 2, dtype=torch.bool), class_mask=torch.tensor([True, False]), n=7
    )
    logs = {}
    return SimpleNamespace(round=5, data=data, state={}, scratch={}, logs=logs, log=lambda **kv: logs.update(kv))


def test_one_mld_round_with_adaptive_ratio_then_permanent_tags():
    m = FedMLP(t0=1.0, t1=1.0)  # tau = d_c T = 0.5 for class 1 (ST on)
    ctx = mld_ctx()
    # Z = 1, 0.632, 0.447, 0, -0.447, -0.632, -1
    feats = torch.tensor([[1.0, 0], [3, 1], [2, 1], [1, 1], [1, 2], [1, 3], [0, 1]])
    m.detect(ctx, feats, mld_payload())
    pl = ctx.state["pseudo_labels"]
    assert pl["mask"][:, 0].sum() == 0  # active class never tagged
    assert pl["mask"][:, 1].tolist() == [True, True, False, False, False, False, True]  # floor(2), floor(1.5)
    assert pl["target"][:, 1].tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert ctx.logs == {"tags_added": 3, "tags_positive": 1, "tag_share": 3 / 7, "learning_degree": 0.5}
    # next round sample 0 now looks positive: its tag stays 0 and it is no candidate
    feats2 = feats.clone()
    feats2[0] = torch.tensor([0.0, 5.0])
    m.detect(ctx, feats2, mld_payload())
    assert pl["mask"][:, 1].tolist() == [True, True, True, False, False, True, True]  # residual: floor(1), floor(1)
    assert pl["target"][:, 1].tolist() == [0, 0, 0, 0, 0, 1, 1]
    # ST off: tau = T = 1: every residual sample tagged
    ctx3 = mld_ctx()
    FedMLP(t0=1.0, t1=1.0, st=False).detect(ctx3, feats, mld_payload())
    assert ctx3.state["pseudo_labels"]["mask"][:, 1].all()


# ----------------------------------------------------------------------------- Eq. 10
def test_learning_degree_strict_bounds():
    probs = torch.tensor([[0.3], [0.7], [0.29], [0.71], [0.5], [0.0]])
    assert learning_degree(probs).tolist() == [0.5]  # 0.3 and 0.7 themselves are inside
    assert learning_degree(torch.sigmoid(torch.tensor([[0.0], [5.0]]))).tolist() == [0.5]


def test_global_learning_degree_both_client_sets_and_weightings():
    deg = torch.tensor([[0.2, 0.6], [0.4, 0.8], [1.0, 0.1]])
    sizes = [100.0, 300.0, 200.0]
    active = torch.tensor([[1, 0], [1, 0], [0, 1]], dtype=torch.bool)  # S_0 = {0, 1}, S_1 = {2}
    assert torch.allclose(global_learning_degree(deg, sizes, active), torch.tensor([(20 + 120) / 400, 0.1]))
    assert torch.allclose(global_learning_degree(deg, sizes, active, "mean"), torch.tensor([0.3, 0.1]))
    # code: over the clients where the class is missing, size-weighted
    assert torch.allclose(global_learning_degree(deg, sizes, ~active), torch.tensor([1.0, (60 + 240) / 400]))
    # a class every client annotates has no "negative" client: mean over all (never used by MLD)
    full = torch.ones(3, 2, dtype=torch.bool)
    assert torch.allclose(global_learning_degree(deg, sizes, ~full, "mean"), deg.mean(0))


# ----------------------------------------------------------------------------- Eq. 5-6
def test_dual_prototypes_by_hand():
    f = torch.tensor([[1.0, 0.0], [3.0, 2.0], [0.0, 4.0]])
    y = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    mask = torch.tensor([[1, 0], [1, 0], [1, 0]], dtype=torch.bool)
    P, n = dual_prototypes(f, y, mask)
    assert torch.equal(P[0, 0], torch.tensor([3.0, 2.0])) and torch.equal(P[0, 1], torch.tensor([0.5, 2.0]))
    assert n.tolist() == [[1, 2], [0, 0]] and torch.equal(P[1], torch.zeros(2, 2))


def _protos(v0, v1, counts):
    P = torch.zeros(2, 2, 2)
    P[0, 0], P[0, 1] = torch.tensor(v0), torch.tensor(v1)
    return P, torch.tensor(counts, dtype=torch.float32)


def test_global_prototypes_mean_and_size_weighting_over_s_c():
    a = _protos([1.0, 0.0], [0.0, 4.0], [[5, 5], [0, 0]])
    b = _protos([0.0, 1.0], [8.0, 0.0], [[5, 0], [0, 0]])  # no positive of class 0: left out of P_1
    c = _protos([9.0, 9.0], [9.0, 9.0], [[5, 5], [0, 0]])  # class 0 missing here: not in S_0
    cm = torch.tensor([[1, 0], [1, 0], [0, 1]], dtype=torch.bool)
    P, valid = global_prototypes([a[0], b[0], c[0]], [a[1], b[1], c[1]], cm, [10.0, 30.0, 60.0], "mean")
    assert torch.allclose(P[0, 0], torch.tensor([0.5, 0.5])) and torch.allclose(P[0, 1], torch.tensor([0.0, 4.0]))
    assert valid.tolist() == [[True, True], [False, False]]
    P, _ = global_prototypes([a[0], b[0], c[0]], [a[1], b[1], c[1]], cm, [10.0, 30.0, 60.0], "size")
    assert torch.allclose(P[0, 0], torch.tensor([0.25, 0.75])) and torch.allclose(P[0, 1], torch.tensor([0.0, 4.0]))


def test_server_aggregates_metadata_and_sends_it_back():
    info = FederationInfo(2, ["x", "y"], "multilabel", ["a", "b"])
    for mode, want in (("paper", [0.5, 0.5]), ("code", [0.25, 0.75])):
        m = FedMLP(mode=mode)
        server = Server(m, {"w": torch.zeros(1)}, info)
        ups = []
        for k, (v, n) in enumerate((([1.0, 0.0], 10), ([0.0, 1.0], 30))):
            P = torch.zeros(2, 2, 2)
            P[0, 0] = P[0, 1] = torch.tensor(v)
            meta = {
                "class_mask": torch.tensor([True, False]),
                "label_counts": torch.tensor([n, 0.0]),
                "positive_counts": torch.tensor([n / 10, 0.0]),
                "prototypes": P,
                "prototype_counts": torch.tensor([[1.0, 1.0], [0.0, 0.0]]),
                "learning_degree": torch.tensor([0.1 * (k + 1), 0.5 * k]),
            }
            ups.append(ClientUpdate(k, {"w": torch.full((1,), float(k))}, n, meta))
        server.aggregate(ups)
        pay = server.payload(0)
        assert torch.allclose(pay["prototypes"][0, 0], torch.tensor(want))
        assert pay["prototype_valid"].tolist() == [[True, True], [False, False]]
        assert torch.allclose(pay["pos_rate"], torch.tensor([4 / 40, 0.5]))
        # paper: degree of class 0 over S_0 = both clients, size-weighted (Eq. 10): (1 + 6) / 40;
        # code: over the clients that miss class 0, none: 1.0 (released FedAvg_tao)
        assert torch.isclose(pay["degree"][0], torch.tensor(0.175 if mode == "paper" else 1.0))
        assert torch.isclose(pay["state"]["w"], torch.tensor(0.75))  # FedAvg, size-weighted


def test_modes_and_unknown_options():
    p, c = FedMLP(), FedMLP(mode="code", prototype_weighting="mean")
    assert (p.logit_adjust, p.wpc_norm, p.cr_schedule, p.st, p.degree_clients, p.prototype_weighting) == (
        True,
        "classes",
        "paper",
        True,
        "active",
        "mean",
    )
    assert (c.logit_adjust, c.wpc_norm, c.cr_schedule, c.st, c.degree_clients, c.prototype_weighting) == (
        False,
        "code",
        "code",
        False,
        "negative",
        "mean",
    )
    assert isinstance(get_method("fedmlp", warmup_rounds=3), FedMLP)
    with pytest.raises(ValueError, match="multi-label tasks only"):
        p.setup(torch.nn.Linear(2, 2), FederationInfo(2, ["x", "y"], "multiclass", ["a", "b"]))
    for kw in ({"mode": "x"}, {"wpc_norm": "x"}, {"degree_weighting": "x"}, {"lower": 0.8, "upper": 0.2}):
        with pytest.raises(ValueError):
            FedMLP(**kw)


# ----------------------------------------------------------------------------- end to end
CLASSES = list(NIH14[:4])


@pytest.fixture(scope="module")
def federation():
    prev = {c: 0.3 for c in CLASSES}
    train = make_cxr(240, CLASSES, image_size=28, seed=0, prevalence=prev)
    test = make_cxr(80, CLASSES, image_size=28, seed=1, prevalence=prev)
    return train, test, missing_classes(train, 4, 3, seed=0, assignment="cyclic")  # one class per client


def _sim(federation, **kw):
    train, test, part = federation
    torch.manual_seed(0)
    model = build_model("cnn", 4, 1, 28, width=4)
    cfg = EngineConfig(rounds=3, batch_size=16, progress=False, selection=None, seed=0, lr=1e-2, local_epochs=4)
    return Simulation(FedMLP(**kw), model, train, part, test, cfg)


def test_end_to_end_across_the_stage_boundary(federation):
    sim = _sim(federation, warmup_rounds=1, t0=0.2, t1=0.2)
    rec1 = sim.step()  # stage 1: no tags, but prototypes sent at its end (round t1 - 1)
    assert all("pseudo_labels" not in s for s in sim.client_states)
    assert "pl/coverage" not in rec1 and not any(k.startswith("log/tags") for k in rec1)
    assert sim.server.state["prototype_valid"].all() and sim.server.state["degree"].shape == (4,)
    snaps = []
    for _ in range(2):
        rec = sim.step()
        assert rec["log/tags_added"] > 0 and 0 < rec["pl/coverage"] <= 1
        snaps.append([{k: v.clone() for k, v in s["pseudo_labels"].items()} for s in sim.client_states])
    for k, c in enumerate(sim.clients):
        first, second = snaps[0][k], snaps[1][k]
        assert not first["mask"][:, c.class_mask].any()  # only missing classes are tagged
        assert (second["mask"] >= first["mask"]).all()  # permanent
        assert torch.equal(second["target"][first["mask"]], first["target"][first["mask"]])
        assert second["mask"].sum() > first["mask"].sum()
    assert math.isfinite(rec["auroc_mean"])


def test_end_to_end_code_mode_and_all_off(federation):
    sim = _sim(federation, mode="code", warmup_rounds=1, t0=0.2, t1=0.2)
    sim.run(2)
    assert sum(int(s["pseudo_labels"]["mask"].sum()) for s in sim.client_states) > 0
    off = _sim(federation, warmup_rounds=1, mld=False, wpc=False, cr=False, st=False)
    off.run(2)
    assert all("pseudo_labels" not in s for s in off.client_states)
    assert "prototypes" not in off.server.state


def test_all_components_off_is_fedavg_to_the_bit_under_the_engine_augmentation(federation):
    """Table 3's first row is Table 2's FedAvg: same batches, same augmentation draws, same
    loss, so the same global model bit for bit (issue 23)."""
    train, test, part = federation
    finals = []
    for method in (FedMLP(warmup_rounds=1, mld=False, wpc=False, cr=False, st=False), get_method("fedavg")):
        torch.manual_seed(0)
        model = build_model("cnn", 4, 1, 28, width=4)
        cfg = EngineConfig(
            rounds=2, batch_size=16, progress=False, selection=None, seed=0, lr=1e-2, augment="flip_affine"
        )
        sim = Simulation(method, model, train, part, test, cfg)
        sim.run(2)
        finals.append(sim.server.global_state)
    assert all(torch.equal(finals[0][k], finals[1][k]) for k in finals[0])


def test_warmup_views_are_extra_engine_batches_and_stage2_has_one(federation, monkeypatch):
    """With WPC, each warm-up step trains on the batch and one more engine-augmented view
    of the same samples; stage 2 and WPC-off train on the batch alone."""
    from fedpl_core.fl.federation import ClientContext

    calls = []
    orig = ClientContext.make_batch

    def spy(self, pos, train=True, generator=None):
        calls.append((self.round, bool(train), tuple(pos.tolist())))
        return orig(self, pos, train, generator)

    monkeypatch.setattr(ClientContext, "make_batch", spy)
    for kw, per_step in ((dict(), (2, 1)), (dict(wpc=False), (1, 1))):
        calls.clear()
        sim = _sim(federation, warmup_rounds=1, mld=False, cr=False, st=False, **kw)
        sim.run(2)
        for rnd, want in enumerate(per_step):
            train_calls = [c for c in calls if c[0] == rnd and c[1]]
            steps = len(set(train_calls)) if want == 1 else len(train_calls) // 2
            assert len(train_calls) == want * steps and steps > 0
            if want == 2:  # the extra view is of the same samples as the batch before it
                assert all(a[2] == b[2] for a, b in zip(train_calls[::2], train_calls[1::2]))
