"""The shared FixMatch and FedLSM's baselines (MOON, FedAvg* / FedProx* / MOON*, FedRS,
FedPU): hand-computed values on tiny tensors, invariants, tiny end-to-end runs."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedpl_core.data.synthetic import make_skin
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import METHODS, get_method
from fedpl_core.methods.blocks import moon_contrastive
from fedpl_core.methods.fedpu import fedpu_risk
from fedpl_core.methods.fedrs import restricted_logits
from fedpl_core.methods.fixmatch import fixmatch_pseudo_labels, unlabelled_loss
from fedpl_core.nn.aggregation import weighted_average
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import ClientSpec, Partition


# ------------------------------------------------------------------ FixMatch by hand
def test_fixmatch_single_label_mask_and_hard_labels():
    """Client identifies class 0.  Row 0 is labelled (no pseudo-label); row 1: softmax max
    e^4/(e^4+2) = 0.965 >= 0.95 -> class 1; row 2: 0.787 < 0.95 -> none; row 3: confident
    but names the client's own class -> rejected (accepted without the restriction)."""
    logits = torch.tensor([[5.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 2.0, 0.0], [5.0, 0.0, 0.0]])
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    cls = torch.tensor([True, False, False])
    mask = cls.expand(4, 3).clone()  # the engine's mask: the client's classes on every row
    m, t = fixmatch_pseudo_labels(logits, y, mask, "multiclass", 0.95)
    assert m.tolist() == [[False] * 3, [False, True, True], [False] * 3, [False] * 3]
    assert t.tolist() == [[0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]]
    m, t = fixmatch_pseudo_labels(logits, y, mask, "multiclass", 0.95, restrict_known=False)
    assert m[3].tolist() == [False, True, True] and t[3].tolist() == [0, 0, 0]  # = negatives of 1, 2
    m, t = fixmatch_pseudo_labels(logits, y, mask, "multiclass", 0.75)
    assert m[2].tolist() == [False, True, True] and t[2].tolist() == [0, 1, 0]
    # an unlabelled row with an all-zero mask row: the pseudo-label covers the whole row
    m, t = fixmatch_pseudo_labels(logits[1:2], y[1:2], torch.zeros(1, 3, dtype=torch.bool), "multiclass", 0.95)
    assert m.tolist() == [[True, True, True]] and t.tolist() == [[0, 1, 0]]


def test_fixmatch_multi_label_mask_and_hard_labels():
    """sigmoid(3) = 0.9526 >= 0.95 -> positive; sigmoid(2.9) = 0.948 -> ignored;
    sigmoid(-3) <= 0.05 -> negative; -2.9 and 0 ignored; annotated entries never."""
    logits = torch.tensor([[3.0, 2.9, -3.0], [-2.9, 0.0, 3.0]])
    y = torch.zeros(2, 3)
    mask = torch.tensor([[False, False, False], [False, False, True]])
    m, t = fixmatch_pseudo_labels(logits, y, mask, "multilabel", 0.95)
    assert m.tolist() == [[True, False, True], [False, False, False]]
    assert t.tolist() == [[1, 0, 0], [0, 0, 0]]
    # unlabelled loss: BCE on the confident entries / number of unannotated entries (5)
    ls = torch.tensor([[0.5, 1.0, -1.0], [2.0, 2.0, 2.0]])
    want = (math.log1p(math.exp(-0.5)) + math.log1p(math.exp(-1.0))) / 5
    assert unlabelled_loss(ls, m, t, y, mask, "multilabel").item() == pytest.approx(want, rel=1e-6)


def test_fixmatch_single_label_unlabelled_loss():
    """CE of the accepted rows on the strong view / number of rows without a label."""
    y = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    mask = torch.tensor([[True, False]] * 3)
    pl_mask = torch.tensor([[False, False], [False, True], [False, False]])
    pl_t = torch.tensor([[0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    ls = torch.tensor([[9.0, 9.0], [1.0, 2.0], [5.0, -5.0]])
    want = math.log(1 + math.exp(-1.0)) / 2  # -log softmax_1([1, 2]) over 2 unlabelled rows
    assert unlabelled_loss(ls, pl_mask, pl_t, y, mask, "multiclass").item() == pytest.approx(want, rel=1e-6)


# ------------------------------------------------------------------ MOON / FedRS / FedPU by hand
def test_moon_contrastive_two_samples():
    """T = 0.5.  Sample 1: cos(z, z_glob) = 1, cos(z, z_prev) = 0 -> log(1 + e^-2);
    sample 2: 1/sqrt(2) and 1 -> log(1 + e^(2 - sqrt 2))."""
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    zg = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    zp = torch.tensor([[0.0, 1.0], [0.0, 3.0]])
    want = 0.5 * (math.log1p(math.exp(-2.0)) + math.log1p(math.exp(2.0 - math.sqrt(2.0))))
    assert moon_contrastive(z, zg, zp, 0.5).item() == pytest.approx(want, rel=1e-6)
    # same positive and negative: log 2 whatever z
    assert moon_contrastive(z, zg, zg, 0.5).item() == pytest.approx(math.log(2.0), rel=1e-6)


def test_fedrs_scales_missing_class_logits():
    z = torch.tensor([[1.0, 2.0, 3.0], [-4.0, 6.0, 0.5]])
    got = restricted_logits(z, torch.tensor([True, False, True]), 0.5)
    assert got.tolist() == [[1.0, 1.0, 3.0], [-4.0, 3.0, 0.5]]
    assert torch.equal(restricted_logits(z, torch.tensor([True, False, True]), 1.0), z)


def test_fedpu_risk_by_hand():
    """C = 3, client classes {0}.  Row 0 labelled 0 (logits [2, 0, 0]); rows 1, 2 unlabelled
    ([0, 1, 0] and [1, 0, 0]).  l_-(p) = -log(1 - p_0)."""
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    y = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    lab = torch.tensor([True, False, False])
    cls = torch.tensor([True, False, False])
    e = math.e
    p1, p2, p0 = 1 / (2 + e), e / (2 + e), e**2 / (e**2 + 2)
    e_u = 0.5 * (-math.log(1 - p1) - math.log(1 - p2))
    assert fedpu_risk(logits, y, lab, cls, 0.0, eps=0.0).item() == pytest.approx(e_u, rel=1e-6)
    want = e_u - 0.3 * (-math.log(1 - p0))
    assert fedpu_risk(logits, y, lab, cls, 0.3, eps=0.0).item() == pytest.approx(want, rel=1e-6)
    # two client classes: the mean over them (class 2: p_2 of the unlabelled rows)
    cls2 = torch.tensor([True, False, True])
    q1, q2 = 1 / (2 + e), 1 / (2 + e)
    want2 = 0.5 * (e_u + 0.5 * (-math.log(1 - q1) - math.log(1 - q2)))
    assert fedpu_risk(logits, y, lab, cls2, 0.0, eps=0.0).item() == pytest.approx(want2, rel=1e-6)


# ------------------------------------------------------------------ through the engine
@pytest.fixture(scope="module")
def federation():
    from toy import toy_dataset

    ds = toy_dataset(240, 3, 16, 0)
    train, test = ds.subset(np.arange(180)), ds.subset(np.arange(180, 240))
    masks = [[1, 1, 0], [0, 1, 0], [0, 1, 1]]  # class 0 only by A, class 2 only by C
    part = Partition(
        [
            ClientSpec(np.arange(0, 30), masks[0]),
            ClientSpec(np.arange(30, 90), masks[1]),
            ClientSpec(np.arange(90, 180), masks[2]),
        ],
        train.class_names,
    )
    return train, test, part


@pytest.fixture(scope="module")
def skin():
    ds = make_skin(150, image_size=28, seed=0)
    train, test = ds.subset(np.arange(100)), ds.subset(np.arange(100, 150))
    c = ds.num_classes
    m = np.zeros((2, c), bool)
    m[0, :4] = True
    m[1, 3:] = True
    part = Partition([ClientSpec(np.arange(0, 50), m[0]), ClientSpec(np.arange(50, 100), m[1])], train.class_names)
    return train, test, part


def _spy(name, **kw):
    get_method(name)

    class Spy(METHODS[name]):
        def aggregate(self, server, updates):
            self.updates = updates
            super().aggregate(server, updates)

    return Spy(**kw)


def _run(fed, name, rounds=1, channels=1, size=16, **kw):
    train, test, part = fed
    torch.manual_seed(0)
    m = _spy(name, **kw)
    sim = Simulation(
        m,
        build_model("cnn", train.num_classes, channels, size, width=4),
        train,
        part,
        test,
        EngineConfig(rounds=rounds, batch_size=16, progress=False),
    )
    hist = sim.run()
    return m, sim, hist


def _same(a, b, atol=0.0):
    return a.keys() == b.keys() and all(torch.allclose(a[k].float(), b[k].float(), atol=atol, rtol=0) for k in a)


def _tdma_head_checks(m, sim):
    ups = [u.state for u in m.updates]
    g = sim.server.global_state
    assert torch.allclose(g["head.weight"][0], ups[0]["head.weight"][0])  # only A labels class 0
    assert torch.allclose(g["head.weight"][2], ups[2]["head.weight"][2])  # only C labels class 2
    enc = [k for k in g if not k.startswith("head.") and g[k].is_floating_point()]
    avg = weighted_average(ups, [30, 60, 90], keys=enc)
    assert all(torch.allclose(g[k], avg[k]) for k in enc)


@pytest.mark.parametrize("name", ["fedfixmatch", "fedavg_fixmatch_star", "fssl_star", "fixmatch"])
def test_fixmatch_variants_run_and_keep_pseudo_labels_on_unannotated_entries(federation, name):
    kw = {"tau": 0.5} if name != "fssl_star" else {}
    m, sim, hist = _run(federation, name, **kw)
    for k, st in enumerate(sim.client_states):
        pl, data = st["pseudo_labels"], sim.clients[k]
        assert pl["mask"].shape == data.labels.shape
        assert not (pl["mask"] & data.mask).any()  # annotated entries keep their labels
        assert not (pl["target"].bool() & ~pl["mask"]).any()
        assert pl["mask"].any()  # tau = 0.5: every seen unannotated entry is confident
        seen = pl["mask"].any(1)
        assert torch.equal(pl["mask"][seen], ~data.mask[seen])
    assert hist[-1]["pl/coverage"] > 0 and "log/pl_rate" in hist[-1]
    if name in ("fedavg_fixmatch_star", "fssl_star"):
        _tdma_head_checks(m, sim)
    if name == "fedfixmatch":
        assert _same(sim.server.global_state, weighted_average([u.state for u in m.updates], [30, 60, 90]))
    if name == "fixmatch":
        assert not m.federated and len(sim.clients) == 1
        d = get_method("fixmatch")
        assert d.tau == 0.75 and d.pos_weight and d.partial


@pytest.mark.parametrize("name", ["fedfixmatch", "fixmatch"])
def test_fixmatch_single_label_pseudo_labels_only_unlabelled_rows_and_unknown_classes(skin, name):
    """Also pooled (``fixmatch``): each row keeps its own client's identified classes."""
    m, sim, hist = _run(skin, name, channels=3, size=28, tau=0.2)
    n_pl = 0
    for k, st in enumerate(sim.client_states):
        pl, data = st["pseudo_labels"], sim.clients[k]
        rows = pl["mask"].any(1)
        n_pl += int(rows.sum())
        assert not (data.labels[rows] > 0).any()  # only rows without a label
        cls = pl["target"][rows].argmax(1)
        assert not data.mask[rows].gather(1, cls[:, None]).any()  # never a class the client identifies
        assert torch.equal(pl["target"][rows].sum(1), torch.ones(int(rows.sum())))
    assert n_pl > 0


def test_moon_first_round_is_fedavg_wbce_then_differs(federation):
    """Round 0: the previous model is the received one, so L_con = log 2 with zero
    gradient and MOON's local models equal FedAVG's (weighted partial BCE)."""
    m_moon, s_moon, _ = _run(federation, "moon")
    m_avg, _, _ = _run(federation, "fedavg_wbce")
    for a, b in zip(m_moon.updates, m_avg.updates):
        assert _same(a.state, b.state, atol=1e-6)
    prev = s_moon.client_states[0]["moon_prev"]
    assert _same(prev, m_moon.updates[0].state)
    m2, _, _ = _run(federation, "moon", rounds=2)
    m2a, _, _ = _run(federation, "fedavg_wbce", rounds=2)
    assert not _same(m2.updates[0].state, m2a.updates[0].state, atol=1e-6)
    assert (m_moon.mu, m_moon.temperature) == (1.0, 0.5)


def test_star_baselines_use_tdma(federation):
    m, sim, _ = _run(federation, "moon_star")
    _tdma_head_checks(m, sim)
    m, sim, _ = _run(federation, "fedprox_star")
    _tdma_head_checks(m, sim)
    assert m.mu == 0.001 and m.partial and m.pos_weight
    m_star, s_star, _ = _run(federation, "fedavg_star")
    _, s_tdma, _ = _run(federation, "fedpsl_tdma")
    assert _same(s_star.server.global_state, s_tdma.server.global_state)


def test_fedrs_and_fedpu_single_label(skin):
    _, s_pl, _ = _run(skin, "fedavg_pl", channels=3, size=28)
    _, s_rs1, _ = _run(skin, "fedrs", channels=3, size=28, alpha=1.0)  # alpha = 1 is FedAvg-PL
    assert _same(s_pl.server.global_state, s_rs1.server.global_state)
    _, s_rs, _ = _run(skin, "fedrs", channels=3, size=28)
    assert not _same(s_pl.server.global_state, s_rs.server.global_state)
    _, s_pu0, _ = _run(skin, "fedpu", channels=3, size=28, pu_weight=0.0)
    assert _same(s_pl.server.global_state, s_pu0.server.global_state)
    _, s_pu, hist = _run(skin, "fedpu", channels=3, size=28)
    assert not _same(s_pl.server.global_state, s_pu.server.global_state)
    assert all(np.isfinite(v) for k, v in hist[-1].items() if isinstance(v, float) and not k.startswith("pl/"))


@pytest.mark.parametrize("name", ["fedrs", "fedpu"])
def test_fedrs_fedpu_refuse_multi_label(federation, name):
    with pytest.raises(ValueError, match="single-label"):
        _run(federation, name)


def test_fedavg_star_unknown_as_negative_weights_every_entry_by_hand():
    """FedAvg* under the "unknown = negative" reading (issue 23): weighted BCE over every
    entry, N_neg / N_pos counted over all of the client's entries."""
    from types import SimpleNamespace

    from fedpl_core.fl.federation import Batch

    labels = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    mask = torch.tensor([[True, False]] * 4)  # class 1 unknown to this client
    logits = torch.tensor([[0.5, -0.2], [-1.0, 0.3], [2.0, 0.1], [0.0, -0.4]])
    ctx = SimpleNamespace(
        state={}, scratch={}, data=SimpleNamespace(labels=labels, mask=mask), info=SimpleNamespace(task="multilabel")
    )
    batch = Batch(None, labels, mask, torch.arange(4), torch.arange(4))
    pw = torch.tensor([2 / 2, 3 / 1])  # class 0: 2 neg / 2 pos; class 1 over all entries: 3 neg / 1 pos
    want_neg = F.binary_cross_entropy_with_logits(logits, labels, pos_weight=pw)
    assert torch.isclose(get_method("fedavg_star", partial=False).loss(ctx, logits, None, batch), want_neg)
    ctx.state.clear(), ctx.scratch.clear()
    part = F.binary_cross_entropy_with_logits(logits[:, :1], labels[:, :1], pos_weight=pw[:1])
    assert torch.isclose(get_method("fedavg_star").loss(ctx, logits, None, batch), part)


def test_tdma_effect_pairs_each_reading_on_the_seed():
    import pandas as pd

    from fedpl_core.studies import fedlsm as study

    vals = {
        "FedAvg, partial": [0.70, 0.72, 0.74],
        "FedAvg*, partial": [0.71, 0.72, 0.76],
        "FedAvg, unknown = 0": [0.60, 0.62, 0.61],
        "FedAvg*, unknown = 0": [0.70, 0.70, 0.72],
    }
    df = pd.DataFrame(
        [{"label": k, "seed": s, "which": "final", "auroc_mean": v} for k, vs in vals.items() for s, v in enumerate(vs)]
    )
    t = study.tdma_effect(df)
    assert t.loc["partial loss", "FedAvg"] == 72.0 and t.loc["partial loss", "FedAvg*"] == 73.0
    assert t.loc["partial loss", "TDMA gain (points)"] == 1.0  # (1 + 0 + 2) / 3
    assert t.loc["unknown = negative", "TDMA gain (points)"] == pytest.approx(9.67, abs=0.01)  # (10 + 8 + 11) / 3
    assert [lab for lab, _ in study.tdma_methods()] == list(vals)
