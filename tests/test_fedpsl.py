"""FedPSL (IEEE TMI): TDMA by hand, TADL against finite differences, the weighted loss by
hand, and the ablation switches through the engine."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import FederationInfo
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import METHODS, get_method
from fedpl_core.methods.base import ClientUpdate
from fedpl_core.methods.fedpsl import FedPSL, tadl_step
from fedpl_core.nn.aggregation import aggregate_with_head_weights, weighted_average
from fedpl_core.nn.losses import class_pos_weight, masked_bce
from fedpl_core.nn.models import FedModel, build_model
from fedpl_core.partitions import ClientSpec, Partition


# --------------------------------------------------------------------------- TDMA
def _three_clients():
    """Three clients, C = 3: A labels {0, 1} (n=10), B labels {1} (n=30), C labels {1, 2}
    (n=60).  Class 0 is labelled by A only, class 2 by C only."""

    def st(w, rm, nbt, hw, hb):
        return {
            "encoder.w": torch.tensor(w),
            "encoder.bn.running_mean": torch.tensor(rm),
            "encoder.bn.num_batches_tracked": torch.tensor(nbt),
            "head.weight": torch.tensor(hw),
            "head.bias": torch.tensor(hb),
        }

    a = st([1.0, 0.0], [1.0], 5, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0.1, 0.2, 0.3])
    b = st([2.0, 3.0], [2.0], 7, [[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]], [1.0, 2.0, 3.0])
    c = st([4.0, -1.0], [3.0], 6, [[13.0, 14.0], [15.0, 16.0], [17.0, 18.0]], [10.0, 20.0, 30.0])
    meta = [
        {"label_counts": torch.tensor([10.0, 10.0, 0.0]), "positive_counts": torch.tensor([2.0, 1.0, 0.0])},
        {"label_counts": torch.tensor([0.0, 30.0, 0.0]), "positive_counts": torch.tensor([0.0, 3.0, 0.0])},
        {"label_counts": torch.tensor([0.0, 60.0, 60.0]), "positive_counts": torch.tensor([0.0, 0.0, 6.0])},
    ]
    ups = [ClientUpdate(k, s, n, m) for k, (s, n, m) in enumerate(zip((a, b, c), (10, 30, 60), meta))]
    prev = {k: torch.full_like(v, -100) for k, v in a.items()}
    info = FederationInfo(3, ["c0", "c1", "c2"], "multilabel", ["A", "B", "C"])
    return ups, prev, info


def _aggregate(method, updates, prev, info):
    server = Server(method, {k: v.clone() for k, v in prev.items()}, info)
    server.aggregate(updates)
    return server.global_state


def test_tdma_by_hand_three_clients():
    ups, prev, info = _three_clients()
    g = _aggregate(FedPSL(), ups, prev, info)
    # encoder and BatchNorm buffers: weights n_k / sum n = 0.1, 0.3, 0.6
    assert torch.allclose(g["encoder.w"], torch.tensor([3.1, 0.3]))
    assert torch.allclose(g["encoder.bn.running_mean"], torch.tensor([2.5]))
    assert int(g["encoder.bn.num_batches_tracked"]) == 7
    # head rows: class 0 = A's row (only labeller), class 1 = (10 A + 30 B + 60 C) / 100,
    # class 2 = C's row (only labeller)
    assert torch.allclose(g["head.weight"], torch.tensor([[1.0, 2.0], [12.0, 13.0], [17.0, 18.0]]))
    assert torch.allclose(g["head.bias"], torch.tensor([0.1, 12.62, 30.0]))


def test_tdma_positive_count_variant_by_hand():
    ups, prev, info = _three_clients()
    g = _aggregate(FedPSL(head_weights="positive"), ups, prev, info)
    # positives: class 0 A only; class 1 A 1, B 3 (C 0); class 2 C only
    assert torch.allclose(g["head.weight"], torch.tensor([[1.0, 2.0], [7.5, 8.5], [17.0, 18.0]]))
    assert torch.allclose(g["head.bias"], torch.tensor([0.1, 1.55, 30.0]))
    assert torch.allclose(g["encoder.w"], torch.tensor([3.1, 0.3]))


def test_tdma_off_is_fedavg_and_differs_from_tdma():
    ups, prev, info = _three_clients()
    g = _aggregate(FedPSL(tdma=False), ups, prev, info)
    # FedAvg: every array with 0.1, 0.3, 0.6; class 0's row is pulled towards B and C
    assert torch.allclose(g["head.weight"][0], torch.tensor([10.0, 11.0]))
    assert torch.allclose(g["encoder.w"], torch.tensor([3.1, 0.3]))
    ref = weighted_average([u.state for u in ups], [10, 30, 60])
    assert all(torch.equal(g[k], ref[k]) for k in ref)


def test_tdma_class_without_labeller_keeps_previous_row():
    ups, prev, info = _three_clients()
    g = _aggregate(FedPSL(), [ups[1]], prev, info)  # only B takes part: labels class 1 only
    assert torch.equal(g["head.weight"][0], prev["head.weight"][0])
    assert torch.equal(g["head.weight"][2], prev["head.weight"][2])
    assert torch.allclose(g["head.weight"][1], torch.tensor([9.0, 10.0]))
    assert torch.allclose(g["head.bias"], torch.tensor([-100.0, 2.0, -100.0]))


def test_unknown_options_raise():
    with pytest.raises(ValueError):
        FedPSL(head_weights="size")
    with pytest.raises(TypeError):
        get_method("fedpsl", beta=1e-3)


# --------------------------------------------------------------------------- loss
def test_class_pos_weight_by_hand():
    y = torch.tensor([[1, 0, 1], [0, 0, 1], [0, 1, 1], [0, 0, 0]], dtype=torch.float32)
    m = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=torch.bool)
    # class 0: 1 positive, 3 negatives -> 3; class 1: its only positive is unknown -> no
    # known positive -> 1; class 2: 3 positives, 1 negative -> 1/3
    assert torch.allclose(class_pos_weight(y, m), torch.tensor([3.0, 1.0, 1 / 3]))
    # all entries (missing as negative): class 1 has 1 positive and 3 negatives
    assert torch.allclose(class_pos_weight(y), torch.tensor([3.0, 3.0, 1 / 3]))


def _fake_ctx(labels, mask):
    data = SimpleNamespace(labels=labels, mask=mask)
    return SimpleNamespace(state={}, data=data, info=SimpleNamespace(task="multilabel"))


def test_weighted_partial_bce_by_hand():
    # the client's labelled data: class 0 annotated (1 positive, 3 negatives -> w0 = 3),
    # class 1 not annotated
    labels = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    mask = torch.tensor([[True, False]] * 4)
    ctx = _fake_ctx(labels, mask)
    z = torch.tensor([[0.5, 30.0], [-1.0, -30.0], [2.0, 7.0]])
    batch = SimpleNamespace(
        y=torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), mask=torch.tensor([[True, False]] * 3)
    )

    def sp(t):
        return math.log1p(math.exp(t))  # softplus: BCE(y=1) = sp(-z), BCE(y=0) = sp(z)

    want = (3 * sp(-0.5) + sp(-1.0) + sp(2.0)) / 3  # mean over the 3 known entries
    got = FedPSL().loss(ctx, z, None, batch)
    assert got.item() == pytest.approx(want, rel=1e-6)
    assert ctx.state["pos_weight"].tolist() == [3.0, 1.0]
    # unannotated entries carry no loss, whatever the logit
    z2 = z.clone()
    z2[:, 1] = torch.tensor([-50.0, 50.0, 0.0])
    assert FedPSL().loss(_fake_ctx(labels, mask), z2, None, batch).item() == pytest.approx(want, rel=1e-6)
    # pos_weight=False: the plain partial BCE
    plain = (sp(-0.5) + sp(-1.0) + sp(2.0)) / 3
    assert FedPSL(pos_weight=False).loss(_fake_ctx(labels, mask), z, None, batch).item() == pytest.approx(
        plain, rel=1e-6
    )
    for name in ("fedavg_wbce", "fedprox_wbce", "iml_wbce", "oracle_wbce", "fedpsl_tdma", "fedpsl_tadl"):
        m = get_method(name)
        assert m.partial and m.pos_weight
        if name != "fedprox_wbce":  # FedProx's term needs a model; its base loss is the same
            assert m.loss(_fake_ctx(labels, mask), z, None, batch).item() == pytest.approx(want, rel=1e-6)


def test_fedprox_wbce_is_weighted_partial_bce_plus_the_paper_proximal_term(toy, toy_partition):
    """FedPSL's FedProx: loss = weighted partial BCE + mu/2 ||w - w_global||^2 with the
    paper's mu = 0.001, checked by moving one weight by delta."""
    train, test = toy
    torch.manual_seed(0)
    sim = Simulation(
        get_method("fedprox_wbce"),
        build_model("cnn", 4, 1, 16, width=4),
        train,
        toy_partition,
        test,
        EngineConfig(rounds=1, batch_size=16, progress=False),
    )
    ctx = sim.client_context(0, 0)
    sim.method.receive(ctx, sim.server.payload(0))  # and the anchor w_global
    batch = next(ctx.batches(train=False))
    delta = 0.5
    with torch.no_grad():
        sim.model.head.weight[0, 0] += delta
    logits, feats = sim.model.forward_features(batch.x)
    base = get_method("fedavg_wbce").loss(ctx, logits, feats, batch)  # same pos_weight from ctx.state
    got = sim.method.loss(ctx, logits, feats, batch)
    assert float(got - base) == pytest.approx(0.5 * 0.001 * delta**2, rel=1e-4)


# --------------------------------------------------------------------------- TADL
def _tiny(seed=0, bn=False):
    torch.manual_seed(seed)
    layers = [nn.Linear(3, 4)] + ([nn.BatchNorm1d(4)] if bn else []) + [nn.Tanh(), nn.Linear(4, 3), nn.Tanh()]
    return FedModel(nn.Sequential(*layers), 3, 2).double()


def _batches(seed=0):
    g = torch.Generator().manual_seed(seed)

    def mk(n):
        return SimpleNamespace(
            x=torch.randn(n, 3, generator=g, dtype=torch.float64),
            y=(torch.rand(n, 2, generator=g) < 0.5).double(),
            mask=torch.rand(n, 2, generator=g) < 0.8,
        )

    return mk(6), mk(5)


PW = torch.tensor([2.0, 0.5], dtype=torch.float64)


def _loss(logits, feats, b):
    return masked_bce(logits, b.y, b.mask, pos_weight=PW)


def _theta(model):
    return [p for p in model.encoder.parameters()]


def test_tadl_second_order_gradient_matches_finite_differences():
    model = _tiny()
    b_tr, b_val = _batches()
    alpha = 0.5  # large, so that the second-order term is far above the tolerance
    theta0 = [p.detach().clone() for p in _theta(model)]
    phi0 = [model.head.weight.detach().clone(), model.head.bias.detach().clone()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)  # lr 1: the step is minus the gradient
    tadl_step(model, opt, _loss, b_tr, b_val, alpha=alpha, first_order=False)
    meta = [t0 - p.detach() for t0, p in zip(theta0, _theta(model))]
    phi1 = [model.head.weight.detach().clone(), model.head.bias.detach().clone()]

    names = [n for n, _ in model.encoder.named_parameters()]

    def l_train(theta, phi):
        f = torch.func.functional_call(model.encoder, dict(zip(names, theta)), (b_tr.x,))
        return _loss(nn.functional.linear(f, *phi), f, b_tr)

    # the head stepped on grad_phi L_train(phi0, theta0)
    th = [t.clone().requires_grad_(True) for t in theta0]
    ph = [p.clone().requires_grad_(True) for p in phi0]
    g_phi = torch.autograd.grad(l_train(th, ph), ph)
    for p1, p0, g in zip(phi1, phi0, g_phi):
        assert torch.allclose(p1, p0 - g, atol=1e-12)

    def meta_objective(theta):
        th = [t.clone().requires_grad_(True) for t in theta]
        g = torch.autograd.grad(l_train(th, phi0), th)
        prime = [t - alpha * gi for t, gi in zip(theta, g)]
        f = torch.func.functional_call(model.encoder, dict(zip(names, prime)), (b_val.x,))
        return _loss(nn.functional.linear(f, *phi1), f, b_val).item()

    eps = 1e-6
    fd = []
    for i, t in enumerate(theta0):
        gi = torch.zeros_like(t)
        for j in range(t.numel()):
            plus = [x.clone() for x in theta0]
            minus = [x.clone() for x in theta0]
            plus[i].view(-1)[j] += eps
            minus[i].view(-1)[j] -= eps
            gi.view(-1)[j] = (meta_objective(plus) - meta_objective(minus)) / (2 * eps)
        fd.append(gi)
    err = max((a - b).abs().max().item() for a, b in zip(meta, fd))
    scale = max(b.abs().max().item() for b in fd)
    assert err < 1e-6 * max(1.0, scale), err

    # the first-order switch drops exactly the Hessian term: it equals grad L_val at theta'
    model_fo = _tiny()
    opt = torch.optim.SGD(model_fo.parameters(), lr=1.0)
    tadl_step(model_fo, opt, _loss, b_tr, b_val, alpha=alpha, first_order=True)
    fo = [t0 - p.detach() for t0, p in zip(theta0, _theta(model_fo))]
    th = [t.clone().requires_grad_(True) for t in theta0]
    prime = [
        (t - alpha * g).detach().requires_grad_(True)
        for t, g in zip(theta0, torch.autograd.grad(l_train(th, phi0), th))
    ]
    f = torch.func.functional_call(model.encoder, dict(zip(names, prime)), (b_val.x,))
    want_fo = torch.autograd.grad(_loss(nn.functional.linear(f, *phi1), f, b_val), prime)
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(fo, want_fo))
    # ... and is measurably different from the true (second-order) meta-gradient
    assert max((a - b).abs().max().item() for a, b in zip(fo, fd)) > 100 * err + 1e-4


def test_tadl_batchnorm_running_stats_come_from_the_train_half_only():
    model = _tiny(bn=True)
    ref = _tiny(bn=True)
    b_tr, b_val = _batches(1)
    model.train()
    ref.train()
    with torch.no_grad():
        ref.encoder(b_tr.x)  # one ordinary forward on B_train
    tadl_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), _loss, b_tr, b_val)
    bn, bn_ref = model.encoder[1], ref.encoder[1]
    assert torch.allclose(bn.running_mean, bn_ref.running_mean)
    assert torch.allclose(bn.running_var, bn_ref.running_var)
    assert int(bn.num_batches_tracked) == 1


def test_tadl_updates_every_parameter_once_with_adam():
    model = _tiny()
    b_tr, b_val = _batches(2)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tadl_step(model, opt, _loss, b_tr, b_val)
    for k, v in model.state_dict().items():
        assert not torch.equal(v, before[k]), k
    # one Adam step per parameter: |change| = lr (sign of the first moment) on the first step
    assert all(int(s["step"]) == 1 for s in opt.state.values())
    assert torch.allclose((model.head.bias - before["head.bias"]).abs(), torch.full((2,), 1e-3, dtype=torch.float64))


# ------------------------------------------------------------------ through the engine
def _toy(n=240, c=3, size=16, seed=0):
    from toy import toy_dataset  # tests/ is on sys.path

    return toy_dataset(n, c, size, seed)


@pytest.fixture(scope="module")
def federation():
    ds = _toy()
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


def _spy(name, **kw):
    class Spy(METHODS[name]):
        def aggregate(self, server, updates):
            self.updates = updates
            super().aggregate(server, updates)

    get_method(name)  # make sure the module is loaded
    return Spy(**kw)


_RUNS = {}


def _one_round(federation, name, **kw):
    key = (name, tuple(sorted(kw.items())))
    if key not in _RUNS:
        _RUNS[key] = _run_one_round(federation, name, **kw)
    return _RUNS[key]


def _run_one_round(federation, name, **kw):
    train, test, part = federation
    torch.manual_seed(0)
    model = build_model("cnn", 3, 1, 16, width=4)
    m = _spy(name, **kw)
    sim = Simulation(
        m, model, train, part, test, EngineConfig(rounds=1, batch_size=16, progress=False, normalize="instance")
    )
    sim.run()
    return m, sim


def _same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_metadata_is_n_k_on_labelled_classes(federation):
    m, sim = _one_round(federation, "fedpsl_tdma")
    got = torch.stack([u.metadata["label_counts"] for u in m.updates])
    assert got.tolist() == [[30, 30, 0], [0, 60, 0], [0, 90, 90]]


def test_ablation_tdma_only_is_fedavg_training_with_tdma_aggregation(federation):
    m_avg, s_avg = _one_round(federation, "fedavg_wbce")
    m_tdma, s_tdma = _one_round(federation, "fedpsl_tdma")
    assert not m_tdma.tadl and m_tdma.tdma
    # same local training as FedAVG ...
    for a, b in zip(m_avg.updates, m_tdma.updates):
        assert _same(a.state, b.state)
    ups = [u.state for u in m_tdma.updates]
    # ... FedAvg aggregation replaced: encoder by n_k, head rows by n_k^c
    assert _same(s_avg.server.global_state, weighted_average(ups, [30, 60, 90]))
    g = s_tdma.server.global_state
    enc = [k for k in g if not k.startswith("head.")]
    assert all(torch.equal(g[k], s_avg.server.global_state[k]) for k in enc)
    assert torch.allclose(g["head.weight"][0], ups[0]["head.weight"][0])  # A only labels class 0
    assert torch.allclose(g["head.weight"][2], ups[2]["head.weight"][2])  # C only labels class 2
    assert torch.allclose(
        g["head.bias"][1],
        (30 * ups[0]["head.bias"][1] + 60 * ups[1]["head.bias"][1] + 90 * ups[2]["head.bias"][1]) / 180,
    )
    assert not torch.allclose(g["head.weight"][0], s_avg.server.global_state["head.weight"][0])


def test_ablation_tadl_only_is_tadl_training_with_fedavg_aggregation(federation):
    m_tadl, s_tadl = _one_round(federation, "fedpsl_tadl")
    m_full, s_full = _one_round(federation, "fedpsl")
    m_avg, _ = _one_round(federation, "fedavg_wbce")
    assert m_tadl.tadl and not m_tadl.tdma
    for a, b in zip(m_tadl.updates, m_full.updates):  # same (TADL) local training as FedPSL
        assert _same(a.state, b.state)
    # TADL really changes local training
    assert not _same(m_tadl.updates[0].state, m_avg.updates[0].state)
    ups = [u.state for u in m_tadl.updates]
    assert _same(s_tadl.server.global_state, weighted_average(ups, [30, 60, 90]))
    tdma = aggregate_with_head_weights(ups, [30, 60, 90], torch.tensor([[30, 30, 0], [0, 60, 0], [0, 90, 90]]))
    assert _same(s_full.server.global_state, tdma)


def test_fedpsl_with_both_modules_off_is_fedavg_wbce(federation):
    _, s_off = _one_round(federation, "fedpsl", tdma=False, tadl=False)
    _, s_avg = _one_round(federation, "fedavg_wbce")
    assert _same(s_off.server.global_state, s_avg.server.global_state)


def test_second_order_tadl_runs_with_batchnorm_through_the_engine(federation):
    m, sim = _one_round(federation, "fedpsl")
    assert not m.first_order
    st = m.updates[0].state
    bn = [k for k in st if k.endswith("running_mean")]
    assert bn and not torch.all(st[bn[0]] == 0)  # running stats moved
    assert all(torch.isfinite(v.float()).all() for v in sim.server.global_state.values())
    assert sim.history[-1]["auroc_mean"] is not None


# ------------------------------------------------------------------ the study's data
def test_study_data_blocks_pools_and_one_class_clients():
    from fedpl_core.runs.build import load_data
    from fedpl_core.studies import fedpsl as study

    cfg = study.config("IV", pool=40, image_size=28, test_pos=10, test_neg=12, n=15)
    data = load_data(cfg)
    test, pools = data.test, data.train.extra["pools"]
    assert test.class_names == study.CLASSES_IV
    known = test.known
    assert known.sum(0).tolist() == [22] * 8  # each class on its own balanced block only
    assert ((test.labels * known).sum(0) == 10).all()
    assert (known.sum(1) == 1).all()  # a test image belongs to one block
    part = study.partition(cfg)
    assert part.sizes().tolist() == [15] * 6
    for k, c in enumerate(part.clients):
        assert c.indices.tolist() == pools[k][:15]  # the first n of the pool
    masks = part.masks
    assert masks[4].tolist() == [False] * 6 + [True, False] and masks[5].tolist() == [False] * 7 + [True]
    # the ChestX-ray14-like images never carry a Tuberculosis / COVID-19 label
    assert not data.train.known[np.concatenate(pools[:4]), 6:].any()
    w = study.head_weight_frames(cfg)["TDMA"]
    assert w.loc["E", "Tuberculosis"] == 1.0 and w.loc["A", "Infiltration"] == 1.0  # clients 1-6 shown as A-F
    assert w.loc[["B", "C"], "Atelectasis"].tolist() == [1 / 3, 1 / 3]


def test_paper_methods_skip_missing_and_set_first_order(monkeypatch, capsys):
    from fedpl_core.studies import fedpsl as study

    # paper_methods reads the table where its module imported it (the study's runs)
    monkeypatch.setattr(study.runs, "TABLE_II_METHODS", study.TABLE_II_METHODS + [("Ghost", "no_such_method", {})])
    ms = study.paper_methods(["FedAvg (wBCE)", "FedPSL", "Ghost", "FedPSL w/ TADL"], first_order=True)
    assert [m[0] for m in ms] == ["FedAvg (wBCE)", "FedPSL w/ TADL", "FedPSL"]  # the paper's order, Ghost skipped
    assert "Ghost (no_such_method)" in capsys.readouterr().out
    tadl = [o for _, o in ms if o["method"] in ("fedpsl", "fedpsl_tadl")]
    assert len(tadl) == 2 and all(o["method_kwargs"]["first_order"] is True for o in tadl)
    assert "first_order" not in ms[0][1]["method_kwargs"]


def test_study_sweeps_are_settings_of_the_one_runner(tmp_path, monkeypatch):
    """Fig. 4 as settings of run_many: clients 2 and 3 of size n, the others fig4_base;
    a second call reads every run from the cache."""
    from fedpl_core.runs.study import run_many
    from fedpl_core.studies import fedpsl as study

    s = study.settings("smoke", seeds=[0])
    s.fig4_base, s.fig4_n = 20, [10, 30]
    s.rounds, s.local_epochs = 1, 1
    base = study.config(
        "II", pool=40, image_size=28, test_pos=10, test_neg=10, n=20, model_kwargs={"width": 8}, engine=s.engine
    )
    settings = study.fig4_settings(s)
    for label, over in settings.items():
        n = int(label.split("=")[1])
        assert study.partition(base.replace(**over)).sizes().tolist() == [20, n, n, 20]
    methods = study.paper_methods(["FedAvg (wBCE)"], verbose=False)
    df = run_many(base, methods, [0], tmp_path, settings=settings, progress=False)
    assert sorted(study.setting_value(df[df.which == "final"]).tolist()) == [10, 30]
    monkeypatch.setattr(
        "fedpl_core.runs.runner.build_simulation", lambda *a, **k: (_ for _ in ()).throw(AssertionError("re-run"))
    )
    again = run_many(base, methods, [0], tmp_path, settings=settings, progress=False)
    assert again["auroc_mean"].tolist() == df["auroc_mean"].tolist()


def test_profiles_keep_the_paper_schedule_in_full_and_a_consistent_cpu_subset():
    """The full profile keeps the paper's Adam lr 1e-3 and every method of Tables II / IV;
    the cpu profile's method lists are subsets in the paper's order, its Table V periods
    divide its epochs, and one of them is the Table II schedule (that run is shared)."""
    from fedpl_core.studies import fedpsl as study

    full, cpu = study.settings("full"), study.settings("cpu")
    assert full.engine.lr == 1e-3 and full.table2_labels is None and full.table4_labels == study.TABLE_IV_LABELS
    order = [label for label, _, _ in study.TABLE_II_METHODS]
    for labels in (cpu.table2_labels, cpu.table4_labels):
        assert labels == [m for m in order if m in labels]
        assert {"FedAvg (wBCE)", "FedPSL", "Oracle (wBCE)"} <= set(labels)
    assert not {"FedSSP", "FedMatch", "FedMatch+"} & set(cpu.table2_labels + cpu.table4_labels)
    assert all(cpu.total_epochs % e == 0 for e in cpu.table5_e)
    assert cpu.engine.local_epochs in cpu.table5_e and cpu.total_epochs == cpu.engine.rounds * cpu.engine.local_epochs
    assert [m for m, _ in study.paper_methods(cpu.table2_labels, verbose=False)] == cpu.table2_labels
