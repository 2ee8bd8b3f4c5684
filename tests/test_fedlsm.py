"""FedLSM (MICCAI 2023): uncertainty score and split, pseudo-label targets and losses in both
modes, UDE mixup, AWPA and the EMA by hand; tiny end-to-end runs for both task types."""

import math
import warnings
from types import SimpleNamespace

import pytest
import torch

from fedpl_core.data.synthetic import make_cxr, make_skin
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import FederationInfo
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.methods.base import ClientUpdate
from fedpl_core.methods.fedlsm import (
    FedLSM,
    ema_update,
    multilabel_loss,
    multilabel_targets,
    paper_strong_view,
    singlelabel_loss,
    singlelabel_targets,
    split_by_uncertainty,
    split_counts,
    ude_multilabel,
    uncertainty,
)
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import label_set_mismatch

sp = lambda t: math.log1p(math.exp(t))  # noqa: E731  softplus: BCE(y=1, z) = sp(-z), BCE(y=0, z) = sp(z)
entr = lambda p: -p * math.log(p) if p > 0 else 0.0  # noqa: E731


# --------------------------------------------------------------------------- UE
def test_multilabel_uncertainty_by_hand_paper_and_code():
    known = torch.tensor([True, False, False])
    z = torch.tensor([[5.0, 0.0, 0.0], [-7.0, math.log(3), -math.log(3)]])  # p = .5 .5 | .75 .25 on U_k
    h = uncertainty(z, known, "multilabel")
    hb = (entr(0.75) + entr(0.25)) / math.log(2)  # 0.8113
    assert h.tolist() == pytest.approx([1.0, hb])  # normalised binary entropy, mean over U_k only
    z2 = z.clone()
    z2[:, 0] = torch.tensor([-3.0, 0.0])  # the known class does not count
    assert uncertainty(z2, known, "multilabel").tolist() == pytest.approx([1.0, hb])
    # code: mean over all 3 classes of -p ln p, p = 0 on the known class
    code = uncertainty(z, known, "multilabel", code=True)
    assert code.tolist() == pytest.approx([2 * entr(0.5) / 3, (entr(0.75) + entr(0.25)) / 3])
    assert uncertainty(z, torch.ones(3, dtype=torch.bool), "multilabel").tolist() == [0.0, 0.0]


def test_singlelabel_uncertainty_by_hand():
    z = torch.tensor([[0.0, 0.0, 0.0, 0.0], [math.log(2), 0.0, 0.0, 0.0]])  # p = (.4, .2, .2, .2)
    h = entr(0.4) + 3 * entr(0.2)
    known = torch.tensor([True, True, False, False])
    assert uncertainty(z, known, "multiclass").tolist() == pytest.approx([1.0, h / math.log(4)])
    assert uncertainty(z, known, "multiclass", code=True).tolist() == pytest.approx([math.log(4), h])


def test_split_by_uncertainty_and_counts():
    s = torch.tensor([0.5, 0.1, 0.9, 0.3, 0.7, 0.2])
    low, mid, high = split_by_uncertainty(s, 2, 1)
    assert low.tolist() == [1, 5] and high.tolist() == [2] and mid.tolist() == [0, 3, 4]
    low, mid, high = split_by_uncertainty(s, 0, 0)
    assert low.numel() == 0 and high.numel() == 0 and mid.tolist() == list(range(6))
    assert split_counts(100, 0.2, 0.05) == (20, 5)  # shares
    assert split_counts(100, 30, 7) == (30, 7)  # counts
    assert split_counts(10, 8, 5) == (5, 5)  # capped: disjoint


# --------------------------------------------------------------------------- pseudo-labels and losses
def _ml_case():
    probs = torch.tensor([[0.9, 0.9, 0.5, 0.004]])
    labels = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    known = torch.tensor([[True, False, False, False]])
    return probs, labels, known


def test_multilabel_targets_by_hand():
    probs, labels, known = _ml_case()
    t, m, c = multilabel_targets(probs, labels, known, 0.85, 5e-3)
    assert t.tolist() == [[1.0, 1.0, 0.0, 0.0]]
    assert m.tolist() == [[True, True, False, True]] and c.tolist() == [[False, True, False, True]]
    t, m, c = multilabel_targets(probs, labels, known, 0.85, 5e-3, soft=True)
    assert t.tolist() == [[1.0, 1.0, 0.5, 0.0]] and m.tolist() == [[True, True, False, True]]
    # a known negative stays 0 even where the teacher says 0.9
    t, _, _ = multilabel_targets(probs, torch.zeros(1, 4), known, 0.85, 5e-3)
    assert t[0, 0] == 0.0
    # tau_n: 0.007 is confident under the code's 0.01, not under the paper's 0.005
    p = torch.tensor([[0.9, 0.007, 0.007, 0.007]])
    assert not multilabel_targets(p, labels, known, 0.85, FedLSM().tau_n)[2].any()
    assert multilabel_targets(p, labels, known, 0.85, FedLSM(mode="code").tau_n)[2][0, 1:].all()
    assert (FedLSM().tau_n, FedLSM().tau_ln) == (5e-3, 1e-2)
    assert (FedLSM(mode="code").tau_n, FedLSM(mode="code").tau_ln) == (1e-2, 5e-3)


def test_multilabel_loss_by_hand_both_modes():
    probs, labels, known = _ml_case()
    z = torch.tensor([[0.0, 1.0, 2.0, -1.0]])
    pw = torch.tensor([3.0, 1.0, 1.0, 1.0])
    t, m, _ = multilabel_targets(probs, labels, known, 0.85, 5e-3)
    # paper: known positive weighted 3, pseudo positive, pseudo negative; the unconfident entry ignored;
    # summed over classes, divided by N = 1
    want = 3 * sp(0.0) + sp(-1.0) + sp(-1.0)
    assert multilabel_loss(z, t, m, known, pw).item() == pytest.approx(want, rel=1e-6)
    z2 = z.clone()
    z2[0, 2] = -40.0
    assert multilabel_loss(z2, t, m, known, pw).item() == pytest.approx(want, rel=1e-6)
    # code: mean BCE over all 4 entries with the soft target 0.5 on the unconfident one, times mean(W),
    # W = (pos weight 3, confident 1, unconfident 0, confident 1)
    ts, ms, _ = multilabel_targets(probs, labels, known, 0.85, 5e-3, soft=True)
    bce = (sp(0.0) + sp(-1.0) + 0.5 * sp(-2.0) + 0.5 * sp(2.0) + sp(-1.0)) / 4
    assert multilabel_loss(z, ts, ms, known, pw, scalar=True).item() == pytest.approx(bce * 5 / 4, rel=1e-6)


def test_singlelabel_targets_and_loss_by_hand():
    class_mask = torch.tensor([True, False, False])  # the client identifies class 0
    probs = torch.tensor([[0.1, 0.96, 0.04], [0.2, 0.5, 0.3], [0.97, 0.02, 0.01], [0.9, 0.05, 0.05]])
    labels = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    labelled = torch.tensor([False, False, False, True])
    t, pseudo = singlelabel_targets(probs, labels, labelled, class_mask, 0.95)
    # row 0: confident, class 1 unknown -> pseudo-label; row 1: unconfident; row 2: argmax is the known
    # class 0 (Eq. 4 sums over U_k only) -> none; row 3 keeps its label
    assert pseudo.tolist() == [True, False, False, False]
    assert t.tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]]
    z = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, -1.0]])
    ce = lambda row, c: -torch.log_softmax(z[row], 0)[c].item()  # noqa: E731
    # L_I: mean over 1 labelled row; L_U: the pseudo-labelled row / N_U = 3 unlabelled rows
    want = ce(3, 0) + ce(0, 1) / 3
    assert singlelabel_loss(z, t, labelled, pseudo).item() == pytest.approx(want, rel=1e-6)
    assert singlelabel_loss(z, t, labelled, pseudo, scalar=True).item() == pytest.approx(
        (ce(3, 0) + ce(0, 1)) / 4, rel=1e-6
    )


def test_ude_mixup_of_inputs_and_targets_by_hand():
    x_l, x_h = torch.full((1, 1, 2, 2), 2.0), torch.full((1, 1, 2, 2), -1.0)
    known = torch.tensor([[True, False, False]])
    y_l, y_h = torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 0.0]])
    p_l = torch.tensor([[0.5, 0.9, 0.003]])  # D_l: tau_p .85 / tau_n .005 -> class 1 = 1, class 2 = 0
    p_h = torch.tensor([[0.5, 0.75, 0.5]])  # D_h: tau_lp .7 / tau_ln .01 -> class 1 = 1, class 2 unconfident
    x, y, m = ude_multilabel(x_l, x_h, p_l, p_h, y_l, y_h, known, 0.7, (0.85, 5e-3), (0.7, 1e-2))
    assert torch.allclose(x, torch.full((1, 1, 2, 2), 0.7 * 2 - 0.3))
    assert torch.allclose(y, torch.tensor([[0.7, 1.0, 0.0]]))
    assert m.tolist() == [[True, True, False]]  # class 2 has no target in x_h
    # with the D_l thresholds for D_h, class 1 of x_h (0.75 < 0.85) would not be confident
    _, _, m2 = ude_multilabel(x_l, x_h, p_l, p_h, y_l, y_h, known, 0.7, (0.85, 5e-3), (0.85, 5e-3))
    assert m2.tolist() == [[True, False, False]]
    # code: soft targets, mask = teacher-confident in both on every class (the known class 0 is not)
    _, yc, mc = ude_multilabel(x_l, x_h, p_l, p_h, y_l, y_h, known, 0.7, (0.85, 5e-3), (0.7, 1e-2), scalar=True)
    assert torch.allclose(yc, torch.tensor([[0.7, 1.0, 0.3 * 0.5]])) and mc.tolist() == [[False, True, False]]


def test_paper_strong_view_is_seeded_and_shape_preserving():
    x = torch.randn(6, 3, 16, 16)
    a = paper_strong_view(x, torch.Generator().manual_seed(1))
    b = paper_strong_view(x, torch.Generator().manual_seed(1))
    assert a.shape == x.shape and torch.equal(a, b) and not torch.allclose(a, x)
    assert torch.isfinite(a).all()


# --------------------------------------------------------------------------- EMA and AWPA
def test_ema_update_by_hand():
    teacher = {"w": torch.tensor([1.0, 2.0]), "bn.running_mean": torch.tensor([0.0])}
    ema_update(teacher, {"w": torch.tensor([3.0, 6.0])}, {"bn.running_mean": torch.tensor([5.0])}, 0.9)
    assert torch.allclose(teacher["w"], torch.tensor([1.2, 2.4]))  # 0.9 t + 0.1 s
    assert teacher["bn.running_mean"].tolist() == [5.0]  # buffers copied


def _two_clients():
    def st(enc, hw, hb):
        return {"encoder.w": torch.tensor(enc), "head.weight": torch.tensor(hw), "head.bias": torch.tensor(hb)}

    a = st([1.0], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0.1, 0.2, 0.3])
    b = st([5.0], [[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], [1.0, 2.0, 3.0])
    meta = [
        {"class_counts": torch.tensor([2.0, 0.0, 0.0]), "label_counts": torch.tensor([10.0, 10.0, 0.0])},
        {"class_counts": torch.tensor([6.0, 4.0, 0.0]), "label_counts": torch.tensor([0.0, 30.0, 0.0])},
    ]
    ups = [ClientUpdate(0, a, 10, meta[0]), ClientUpdate(1, b, 30, meta[1])]
    prev = {k: torch.full_like(v, -100.0) for k, v in a.items()}
    return ups, prev, FederationInfo(2, ["c0", "c1", "c2"], "multilabel", ["A", "B"])


def _aggregate(method, ups, prev, info):
    server = Server(method, {k: v.clone() for k, v in prev.items()}, info)
    server.aggregate(ups)
    return server.global_state


def test_awpa_two_client_head_by_hand():
    ups, prev, info = _two_clients()
    g = _aggregate(FedLSM(), ups, prev, info)
    assert torch.allclose(g["encoder.w"], torch.tensor([4.0]))  # (10 * 1 + 30 * 5) / 40
    # row 0: q = (2, 6); row 1: only B (q = 4); row 2: zero total weight -> previous row
    assert torch.allclose(g["head.weight"], torch.tensor([[5.5, 6.5], [9.0, 10.0], [-100.0, -100.0]]))
    assert torch.allclose(g["head.bias"], torch.tensor([(0.2 + 6.0) / 8, 2.0, -100.0]))
    # w/o AWPA: masked aggregation with the labelled counts n_k^c
    g = _aggregate(get_method("fedlsm_no_awpa"), ups, prev, info)
    assert torch.allclose(g["head.weight"], torch.tensor([[1.0, 2.0], [7.5, 8.5], [-100.0, -100.0]]))


def test_class_counts_metadata_by_hand():
    labels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, False, False]] * 3)
    data = SimpleNamespace(labels=labels, mask=mask, class_mask=torch.tensor([True, False, False]))
    pl = {
        "mask": torch.tensor([[False, True, True], [False, True, False], [False, False, False]]),
        "target": torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]),
    }
    ctx = SimpleNamespace(data=data, state={"pseudo_labels": pl})
    q = FedLSM().class_counts(ctx)
    # class 0 known: 2 positive labels; class 1: two positive pseudo-labels; class 2: the only positive
    # target (row 1) carries no pseudo-label (mask False), row 0's is negative
    assert q.tolist() == [2.0, 2.0, 0.0]


def test_modes_switches_and_registry():
    paper, code = FedLSM(), FedLSM(mode="code")
    assert not any([paper.scalar_reduction, paper.code_entropy, paper.entropy_train_mode, paper.pseudo_from_round0])
    assert all([code.scalar_reduction, code.code_entropy, code.entropy_train_mode, code.pseudo_from_round0])
    assert paper.warmup_rounds == 1 and code.warmup_rounds == 0
    assert FedLSM(mode="code", scalar_reduction=False).scalar_reduction is False  # each switch on its own
    assert (paper.tau, paper.tau_l, paper.tau_p, paper.tau_lp, paper.lambda_u, paper.ema_decay, paper.mixup_alpha) == (
        0.95,
        0.85,
        0.85,
        0.7,
        0.1,
        0.999,
        0.2,
    )
    flags = {
        n: (m.awpa, m.ude, m.ue)
        for n in ("fedlsm", "fedlsm_no_awpa", "fedlsm_no_ude", "fedlsm_no_ue")
        for m in [get_method(n)]
    }
    assert flags == {
        "fedlsm": (True, True, True),
        "fedlsm_no_awpa": (False, True, True),
        "fedlsm_no_ude": (True, False, True),
        "fedlsm_no_ue": (True, True, False),
    }
    with pytest.raises(ValueError):
        FedLSM(mode="released")
    with pytest.raises(TypeError):
        get_method("fedlsm", tau_x=1)


# --------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def cxr():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, test = make_cxr(240, image_size=28, seed=0), make_cxr(60, image_size=28, seed=1)
        return train, test, label_set_mismatch(train, 8, 3)


@pytest.fixture(scope="module")
def skin():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, test = make_skin(200, image_size=28, seed=0), make_skin(60, image_size=28, seed=1)
        return train, test, label_set_mismatch(train, 5, 3)


def _sim(fed, method, channels, **cfg):
    train, test, part = fed
    torch.manual_seed(0)
    model = build_model("cnn", train.num_classes, channels, 28, width=4)
    return Simulation(
        method,
        model,
        train,
        part,
        test,
        EngineConfig(**{**dict(rounds=2, batch_size=12, local_iters=2, progress=False, selection=None, seed=0), **cfg}),
    )


def test_end_to_end_multilabel(cxr):
    # tau_p = tau_n = 0.5: every unknown entry is confident, so every seen unknown entry is pseudo-labelled
    sim = _sim(cxr, get_method("fedlsm", tau_p=0.5, tau_n=0.5), 1)
    rec1 = sim.step()  # warm-up round (paper): own labels only
    assert rec1["log/pl_share"] == 0.0 and "log/share_dl" not in rec1 and rec1["pl/coverage"] == 0.0
    rec2 = sim.step()
    n = sim.clients[0].n  # 30 per client: D_l 6, D_h round(1.5) = 2, D_m 22
    assert rec2["log/share_dl"] == pytest.approx(6 / n) and rec2["log/share_dh"] == pytest.approx(2 / n)
    assert rec2["log/pl_share"] == 1.0 and 0 < rec2["pl/coverage"] <= 1 and math.isfinite(rec2["pl/accuracy"])
    for c, st in zip(sim.clients, sim.client_states):
        pl = st["pseudo_labels"]
        assert not pl["mask"][:, c.class_mask].any()  # only unknown classes are pseudo-labelled
        seen = pl["mask"].any(1)
        assert seen.any() and pl["mask"][seen][:, ~c.class_mask].all()
        assert set(pl["target"][pl["mask"]].unique().tolist()) <= {0.0, 1.0}
        q = sim.method.class_counts(SimpleNamespace(data=c, state=st))
        assert torch.equal(q[c.class_mask], (c.labels * c.mask).sum(0)[c.class_mask])
        assert torch.equal(q[~c.class_mask], (pl["mask"] & (pl["target"] > 0.5)).sum(0)[~c.class_mask].float())
    assert all(math.isfinite(v) for k, v in rec2.items() if k in ("train_loss", "auroc_mean"))


def test_end_to_end_multilabel_code_mode_and_ablations(cxr):
    sim = _sim(cxr, get_method("fedlsm", mode="code"), 1, rounds=1)
    rec = sim.step()  # code: pseudo-labelling from round 0
    assert "log/share_dl" in rec and math.isfinite(rec["train_loss"])
    for name in ("fedlsm_no_ue", "fedlsm_no_ude"):
        sim = _sim(cxr, get_method(name, warmup_rounds=0), 1, rounds=1)
        rec = sim.step()
        assert math.isfinite(rec["train_loss"])
        if name == "fedlsm_no_ue":
            assert rec["log/share_dm"] == 1.0 and "log/uncertainty" not in rec


def test_uncertainty_pass_train_mode_moves_batchnorm_eval_mode_does_not(cxr):
    for train_mode in (False, True):
        sim = _sim(cxr, get_method("fedlsm", warmup_rounds=0, entropy_train_mode=train_mode), 1)
        ctx = sim.client_context(0, 0)
        sim.method.receive(ctx, sim.server.payload(0))
        before = ctx.extract_state()
        sim.method.prepare(ctx)
        after = ctx.extract_state()
        moved = any(not torch.equal(before[k], after[k]) for k in before if "running_mean" in k)
        assert moved == train_mode
        # the teacher starts from the model as it is after the pass
        assert all(torch.equal(ctx.scratch["teacher"][k], after[k]) for k in after)


def test_teacher_kept_across_rounds_when_asked(cxr):
    sim = _sim(cxr, get_method("fedlsm", warmup_rounds=0, teacher_reset=False), 1)
    sim.step()
    t1 = {k: v.clone() for k, v in sim.client_states[0]["teacher"].items()}
    g1 = {k: v.clone() for k, v in sim.server.global_state.items()}
    sim.step()
    t2 = sim.client_states[0]["teacher"]
    # round 2 continues the teacher of round 1 (not the new global model): t2 = 0.999^2 t1 + ...
    w = "head.weight"
    assert not torch.equal(t2[w], t1[w])
    assert (t2[w] - t1[w]).abs().max() < (g1[w] - t1[w]).abs().max()
    sim_reset = _sim(cxr, get_method("fedlsm", warmup_rounds=0), 1)
    sim_reset.step()
    assert "teacher" not in sim_reset.client_states[0]


def test_end_to_end_singlelabel(skin):
    # tau = 0: every unlabelled sample whose teacher argmax is an unknown class gets a pseudo-label
    sim = _sim(skin, get_method("fedlsm", tau=0.0, tau_l=0.0, warmup_rounds=0), 3)
    rec = sim.step()
    assert rec["log/pl_share"] > 0 and rec["pl/coverage"] > 0
    n = sim.clients[0].n  # 40 per client: D_l round(5.6) = 6, D_h round(1.44) = 1
    assert rec["log/share_dl"] == pytest.approx(6 / n) and rec["log/share_dh"] == pytest.approx(1 / n)
    for c, st in zip(sim.clients, sim.client_states):
        pl = st["pseudo_labels"]
        rows = pl["mask"].any(1)
        labelled = (c.labels * c.mask).sum(1) > 0
        assert not (rows & labelled).any()  # labelled samples are never pseudo-labelled
        assert pl["mask"][rows].all()  # whole one-hot rows
        assert torch.equal(pl["target"][rows].sum(1), torch.ones(int(rows.sum())))
        assert not pl["target"][rows][:, c.class_mask].any()  # y_hat in U_k only
    assert math.isfinite(rec["train_loss"]) and 0 <= rec["accuracy"] <= 1


def test_describe_tdma_drift_names_only_the_significant_positive_settings():
    import pandas as pd

    from fedpl_core.studies.fedlsm import describe_tdma_drift

    cols = ["local iterations", "reading of FedAvg", "TDMA gain (points)", "p", "pairs"]
    t = pd.DataFrame(
        [
            (12, "partial loss", 1.79, 0.29, 3),
            (48, "partial loss", -2.0, 0.01, 3),
            (12, "unknown = negative", 0.62, 0.55, 3),
            (48, "unknown = negative", 5.82, 0.010, 3),
        ],
        columns=cols,
    )
    lines = describe_tdma_drift(t)
    assert lines[1].startswith("unknown = negative: TDMA (FedAvg* - FedAvg) +0.6 at 12 (p = 0.55), +5.8 at 48")
    assert lines[-1].endswith(
        "with unknown = negative at 48 local iterations (+5.8, p = 0.01), and in no other setting."
    )
    assert "in no setting" in describe_tdma_drift(t.assign(p=0.5))[-1]  # nothing significant
