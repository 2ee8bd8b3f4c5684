"""Surgical Aggregation: head aggregation by hand, per-client heads, FedAvg equivalence,
warm-up, FedBN+ and the validation protocol."""

import numpy as np
import pytest
import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import FederationInfo
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.methods.base import ClientUpdate
from fedpl_core.methods.blocks import warm_up_head
from fedpl_core.methods.surgical import (
    SurgicalAggregation,
    client_class_order,
    paper_method,
    rebuild_local_head,
    surgical_head_aggregate,
)
from fedpl_core.nn.losses import masked_bce
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import ClientSpec, Partition, iid

GLOBAL = ["a", "b", "c", "d", "e"]


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models gain nothing from a second thread, and on a busy 2-core machine waiting
    threads slow them down many times; restored after each test."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def three_heads():
    """Client 0 has (c, a), client 1 (a, b, c), client 2 (b, d): d is unique to client 2,
    e belongs to nobody this round."""
    return [
        (["c", "a"], torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([10.0, 20.0])),
        (["a", "b", "c"], torch.tensor([[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]), torch.tensor([30.0, 40.0, 50.0])),
        (["b", "d"], torch.tensor([[11.0, 12.0], [13.0, 14.0]]), torch.tensor([60.0, 70.0])),
    ]


PREVIOUS = (torch.arange(10.0).view(5, 2) - 100, torch.tensor([-1.0, -2.0, -3.0, -4.0, -5.0]))


def test_head_aggregate_three_clients_by_hand():
    W, b = surgical_head_aggregate(three_heads(), GLOBAL, previous=PREVIOUS)
    expected_W = torch.tensor(
        [
            [4.0, 5.0],  # a: mean of client 0 row 1 and client 1 row 0
            [9.0, 10.0],  # b: clients 1 and 2
            [5.0, 6.0],  # c: client 0 row 0 and client 1 row 2
            [13.0, 14.0],  # d: unique to client 2 (Eq. 3)
            [-92.0, -91.0],
        ]
    )  # e: nobody -> previous global row
    expected_b = torch.tensor([25.0, 50.0, 30.0, 70.0, -5.0])
    assert torch.equal(W, expected_W)
    assert torch.equal(b, expected_b)
    # without a previous head, a class nobody has is zero
    W0, b0 = surgical_head_aggregate(three_heads(), GLOBAL)
    assert torch.equal(W0[4], torch.zeros(2)) and b0[4] == 0
    assert torch.equal(W0[:4], expected_W[:4])


def test_head_aggregate_size_weights_and_errors():
    W, b = surgical_head_aggregate(three_heads(), GLOBAL, previous=PREVIOUS, weights=[1, 3, 1])
    assert torch.allclose(W[0], torch.tensor([4.5, 5.5]))  # (1*[3,4] + 3*[5,6]) / 4
    assert torch.allclose(b[1], torch.tensor((3 * 40.0 + 60.0) / 4))  # b: clients 1 (w 3) and 2 (w 1)
    assert torch.equal(W[3], torch.tensor([13.0, 14.0]))  # unique: weight irrelevant
    heads = three_heads()
    with pytest.raises(ValueError, match="unknown class"):
        surgical_head_aggregate(heads + [(["z"], torch.ones(1, 2), torch.ones(1))], GLOBAL)
    with pytest.raises(ValueError, match="do not fit"):
        surgical_head_aggregate([(["a", "b"], torch.ones(1, 2), torch.ones(1))], GLOBAL)
    with pytest.raises(ValueError, match="duplicate"):
        surgical_head_aggregate([(["a", "a"], torch.ones(2, 2), torch.ones(2))], GLOBAL)


def test_rebuild_local_head_gives_own_rows_in_own_order():
    W, b = surgical_head_aggregate(three_heads(), GLOBAL, previous=PREVIOUS)
    w0, b0 = rebuild_local_head(W, b, GLOBAL, ["c", "a"])
    assert torch.equal(w0, torch.tensor([[5.0, 6.0], [4.0, 5.0]])) and torch.equal(b0, torch.tensor([30.0, 25.0]))
    w2, b2 = rebuild_local_head(W, b, GLOBAL, ["b", "d"])
    assert torch.equal(w2, torch.tensor([[9.0, 10.0], [13.0, 14.0]])) and torch.equal(b2, torch.tensor([50.0, 70.0]))
    w2[0, 0] = 123.0  # a copy, not a view into the global head
    assert W[1, 0] == 9.0
    with pytest.raises(ValueError, match="unknown class"):
        rebuild_local_head(W, b, GLOBAL, ["a", "x"])


def test_server_aggregates_by_name_and_sends_each_client_its_own_head():
    """Through the method's own aggregate / payload, with hand-made updates."""
    info = FederationInfo(3, GLOBAL, "multilabel", ["A", "B", "C"])
    m = SurgicalAggregation(warmup_epochs=0)
    init = {"enc.w": torch.zeros(3), "head.weight": PREVIOUS[0].clone(), "head.bias": PREVIOUS[1].clone()}
    server = Server(m, dict(init), info)
    # before hearing from a client the server can only send the initial head
    first = server.payload(1)
    assert "head" not in first and torch.equal(first["init_head"][0], PREVIOUS[0])
    updates = [
        ClientUpdate(
            k,
            {"enc.w": torch.full((3,), float(k)), "head.weight": W, "head.bias": b},
            10 * (k + 1),
            {"class_names": names},
        )
        for k, (names, W, b) in enumerate(three_heads())
    ]
    server.aggregate(updates)
    # encoder: size-weighted FedAvg (10, 20, 30)
    assert torch.allclose(server.global_state["enc.w"], torch.full((3,), (0 * 10 + 1 * 20 + 2 * 30) / 60.0))
    # head: plain mean over the clients having each class (Eq. 2), not size-weighted
    assert torch.equal(server.global_state["head.weight"][0], torch.tensor([4.0, 5.0]))
    assert torch.equal(server.global_state["head.weight"][4], PREVIOUS[0][4])
    p0 = server.payload(0)
    assert p0["head_classes"] == ["c", "a"]
    assert torch.equal(p0["head"][0], torch.tensor([[5.0, 6.0], [4.0, 5.0]]))
    assert "head.weight" not in p0["state"] and "enc.w" in p0["state"]
    p2 = server.payload(2)
    assert p2["head_classes"] == ["b", "d"] and p2["head"][0].shape == (2, 2)


def make_sim(toy, part, method, seed=0, **cfg):
    train, test = toy
    torch.manual_seed(seed)
    model = build_model("cnn", train.num_classes, 1, 16, width=8)
    kw = dict(rounds=2, batch_size=32, progress=False, seed=seed)
    kw.update(cfg)
    return Simulation(method, model, train, part, test, EngineConfig(**kw))


def same_arrays(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_equals_fedavg_exactly_with_identical_label_sets(toy):
    part = iid(toy[0], 3, seed=0)  # 3 x 100 samples, every client has every class
    fedavg = make_sim(toy, part, get_method("fedavg"))
    fedavg.run()
    sa = make_sim(toy, part, get_method("surgical", warmup_epochs=0))  # permuted class orders
    sa.run()
    orders = [s["class_names"] for s in sa.client_states]
    assert len({tuple(o) for o in orders}) > 1, "the clients should use different class orders"
    assert same_arrays(fedavg.server.global_state, sa.server.global_state)
    assert [h["auroc_mean"] for h in fedavg.history] == [h["auroc_mean"] for h in sa.history]


def test_equals_fedavg_with_unequal_clients_only_with_size_weighted_head(toy):
    train = toy[0]
    part = Partition(
        [ClientSpec(np.arange(0, 60), np.ones(4, bool)), ClientSpec(np.arange(60, 300), np.ones(4, bool))],
        train.class_names,
    )
    fedavg = make_sim(toy, part, get_method("fedavg"))
    fedavg.run()
    size = make_sim(toy, part, get_method("surgical", warmup_epochs=0, head_weighting="size"))
    size.run()
    assert same_arrays(fedavg.server.global_state, size.server.global_state)
    # Eq. 2's plain mean differs from FedAvg's size weighting on the head only
    mean = make_sim(toy, part, get_method("surgical", warmup_epochs=0), rounds=1)
    mean.run()
    fa1 = make_sim(toy, part, get_method("fedavg"), rounds=1)
    fa1.run()
    a, b = fa1.server.global_state, mean.server.global_state
    differ = {k for k in a if not torch.equal(a[k], b[k])}
    assert differ == {"head.weight", "head.bias"}


def shared_partition(train):
    """Client 0: c0, c1; client 1: c1, c2; client 2: c3 (unique)."""
    masks = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]], bool)
    return Partition([ClientSpec(np.arange(k * 100, (k + 1) * 100), masks[k]) for k in range(3)], train.class_names)


def test_client_holds_and_sends_only_its_own_head(toy):
    sim = make_sim(toy, shared_partition(toy[0]), get_method("surgical", warmup_epochs=0), rounds=1)
    sim.run()  # the server now knows every client's classes
    m = sim.method
    ctx = sim.client_context(1, 1)
    m.receive(ctx, sim.server.payload(1))
    names = ctx.state["class_names"]
    assert sorted(names) == ["c1", "c2"]
    rows = [sim.info.class_names.index(n) for n in names]
    others = [i for i in range(4) if i not in rows]
    head = sim.model.head
    assert torch.equal(head.weight[others], torch.zeros(2, head.weight.shape[1]))
    assert torch.equal(head.bias[others], torch.zeros(2))
    assert torch.equal(head.weight[rows], sim.server.global_state["head.weight"][rows])
    upd = m.make_update(ctx)
    assert set(upd.metadata) == {"class_names"} and upd.metadata["class_names"] == names
    assert upd.state["head.weight"].shape == (2, head.weight.shape[1])
    assert torch.equal(upd.state["head.bias"], head.bias[rows])


def test_warmup_trains_the_head_and_leaves_the_encoder_untouched(toy):
    for augment in ("none", "flip_shift"):  # cached features / encoder forward per batch
        part = shared_partition(toy[0])
        sim = make_sim(toy, part, get_method("surgical", warmup_epochs=2, warmup_lr=5e-2), augment=augment)
        ctx = sim.client_context(0, 0)
        sim.method.receive(ctx, sim.server.payload(0))
        before = {k: v.clone() for k, v in sim.model.state_dict().items()}
        warm_up_head(sim.method, ctx, 2, 5e-2)
        after = sim.model.state_dict()
        for k in before:
            if k.startswith("encoder."):
                assert torch.equal(before[k], after[k]), f"warm-up changed {k} ({augment})"
        assert not torch.equal(before["head.weight"][:2], after["head.weight"][:2])  # own classes trained
        assert torch.equal(after["head.weight"][2:], torch.zeros_like(after["head.weight"][2:]))  # others untouched
    # in a run, warm-up happens once per client, at its first participation (after the
    # method's whole receive, before local training)
    calls = []

    class Spy(SurgicalAggregation):
        name = "surgical_spy"

        def receive(self, ctx, payload):
            ctx.scratch["had"] = bool(ctx.state.get("warmed_up"))
            super().receive(ctx, payload)

        def local_train(self, ctx):
            calls.append((ctx.round, ctx.client_id, ctx.scratch["had"], bool(ctx.state.get("warmed_up"))))
            return super().local_train(ctx)

    make_sim(toy, part, Spy(warmup_epochs=1), rounds=2).run()
    assert [c[2] for c in calls if c[0] == 0] == [False] * 3 and all(c[2] for c in calls if c[0] == 1)
    assert all(c[3] for c in calls)


def test_fedbn_plus_freezes_batchnorm_everywhere(toy):
    sim = make_sim(toy, shared_partition(toy[0]), get_method("surgical", warmup_epochs=1, bn_policy="frozen"))
    init = {k: v.clone() for k, v in sim.server.global_state.items()}
    bn_keys = [k for k in init if k in sim.method.local_keys]
    assert bn_keys and all(
        ".running_mean" in k or ".weight" in k or ".bias" in k or "num_batches" in k or "running_var" in k
        for k in bn_keys
    )
    opt_params = {id(p) for g in sim.optimizer.param_groups for p in g["params"]}
    bn_params = [p for n, p in sim.model.named_parameters() if n in bn_keys]
    assert bn_params and not any(id(p) in opt_params for p in bn_params)
    sim.run()
    for k in bn_keys:
        assert torch.equal(sim.server.global_state[k], init[k])
        for cs in sim.client_states:
            assert torch.equal(cs["local"][k], init[k]), f"client changed {k}"
    assert not torch.equal(sim.server.global_state["encoder.0.weight"], init["encoder.0.weight"])


def test_validation_for_pooled_and_personalised_baselines(toy):
    train = toy[0]
    part = shared_partition(train)
    cfg = dict(client_val_fraction=0.2, selection="val_loss", selection_mode="min")
    central = make_sim(toy, part, paper_method("centralized"), rounds=1, **cfg)
    assert central.clients[0].val is not None and central.clients[0].val.n == 60
    central.run()
    assert np.isfinite(central.history[-1]["val_loss"])
    oracle = make_sim(toy, part, get_method("oracle"), rounds=1, **cfg)
    # the pooled validation split of the oracle carries the true labels of every class
    val = oracle.clients[0].val
    assert val.mask.all() and torch.equal(val.labels, torch.from_numpy(train.labels[val.indices.numpy()]))

    pfl = make_sim(toy, part, paper_method("pfl"), rounds=2, **cfg)
    pfl.run()
    # independent computation: each client's own model on its own validation split
    losses = []
    for k, c in enumerate(pfl.clients):
        state = pfl.models().client(k)
        pfl.load_state(state)
        pfl.model.eval()
        with torch.no_grad():
            x = pfl.preprocess(pfl.images[c.val.indices])
            losses.append(float(masked_bce(pfl.model(x), c.val.labels, c.val.mask)))
    assert pfl.history[-1]["val_loss"] == pytest.approx(float(np.mean(losses)), rel=1e-5)
    # the global arrays (with the untrained initial head) would give another number
    pfl.method.evaluation = "global"
    assert pfl.history[-1]["val_loss"] != pytest.approx(pfl.validation_loss(), rel=1e-3)


def test_class_orders():
    mask = torch.tensor([True, False, True, True])
    names = ["w", "x", "y", "z"]
    assert client_class_order(names, mask, "global") == ["w", "y", "z"]
    p = client_class_order(names, mask, "permuted", seed=3)
    assert sorted(p) == ["w", "y", "z"] and p == client_class_order(names, mask, "permuted", seed=3)
    assert {tuple(client_class_order(names, mask, "permuted", seed=s)) for s in range(20)} != {tuple(p)}
    assert client_class_order(names, mask, {"A": ["z", "w", "y"]}, client_name="A") == ["z", "w", "y"]
    with pytest.raises(ValueError, match="annotates"):
        client_class_order(names, mask, {"A": ["x", "w"]}, client_name="A")


def test_interrupted_run_resumes_to_identical_numbers(tmp_path, toy):
    """Server memory (clients' class names, initial head) and client state (class order,
    warm-up flag) survive a checkpoint."""
    part = shared_partition(toy[0])
    method = lambda: get_method("surgical", warmup_epochs=1, bn_policy="frozen")  # noqa: E731
    full = make_sim(toy, part, method(), rounds=3)
    full.run()
    first = make_sim(toy, part, method(), rounds=3, checkpoint_every=1)
    first.checkpoint_path = tmp_path / "run.ckpt"
    first.run(rounds=1)
    resumed = make_sim(toy, part, method(), rounds=3)
    resumed.load_checkpoint(tmp_path / "run.ckpt")
    resumed.run()
    assert [h["auroc_mean"] for h in resumed.history] == [h["auroc_mean"] for h in full.history]
    assert same_arrays(resumed.server.global_state, full.server.global_state)


def test_real_data_path_on_the_published_layouts(tmp_path):
    """The notebook's ``data_root`` branch on tiny copies of NIH / CheXpert / MIMIC-CXR-JPG:
    NIH names mapped onto CheXpert's, 7 shared and 20 classes in all, read through the
    study's data sources."""
    import sys
    from pathlib import Path

    import pandas as pd

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    fx = pytest.importorskip("fixtures_data")
    from fedpl_core.runs.build import load_data
    from fedpl_core.studies import surgical as study

    fx.write_nih(tmp_path / "nih")
    fx.write_chexpert(tmp_path / "chexpert")
    fx.write_mimic(tmp_path)
    st = study.make_settings(
        "smoke", data_root=str(tmp_path), image_size=28, n_public=1, data_kwargs={"cache_dir": str(tmp_path / "cache")}
    )
    data = study.load_real_data(str(tmp_path), st)
    nih, chx = data["NIH"][0], data["CheXpert"][0]
    assert "Pleural Effusion" in nih.class_names and "Effusion" not in nih.class_names
    assert len(nih.class_names) == 14 and len(chx.class_names) == 13 and "No Finding" not in chx.class_names
    assert data["public"].shape[0] == 1 and data["external"].num_classes == 13
    cfg = study.noniid_config(st, heterogeneous=True)
    bundle = load_data(cfg)
    union, part = bundle.train, study.partition(cfg)
    assert union.num_classes == 20 and part.masks.sum(1).tolist() == [14, 13]
    assert bundle.test is None and sorted(bundle.extra) == ["CheXpert", "NIH", "external"]
    assert bundle.public.shape[0] == 1
    # the table columns the runner's tidy frame gives: <set>/auroc:<class> for every class of every set
    tidy = pd.DataFrame(columns=[f"{n}/auroc:{c}" for n, ds in bundle.extra.items() for c in ds.class_names])
    cols = {k: classes for k, (_, classes) in study.table_columns(tidy).items()}
    assert len(cols["NIH: shared"]) == 7 and len(cols["CheXpert: unique"]) == 6 and len(cols["External"]) == 13
    assert study.class_orders(cfg)["CheXpert"] == chx.class_names
    # the ablation's external set: MIMIC's classes that the NIH pool has (the 7 shared)
    abl = load_data(study.ablation_config(st))
    assert abl.train.num_classes == 14 and abl.extra["external"].num_classes == 7
    shared = load_data(study.noniid_config(st, heterogeneous=False))
    assert shared.train.num_classes == 7 and all(ds.num_classes <= 7 for ds in shared.extra.values())


def test_study_grid_goes_through_run_many_and_its_cache(tmp_path, monkeypatch):
    """A tiny ablation (K = 2, 3) is one ``run_many`` call: rows per iteration and method,
    the Oracle run once for both iterations, and a re-run loads every result from the
    cache without training."""
    import json

    import pandas as pd

    from fedpl_core.runs.study import run_many
    from fedpl_core.studies import surgical as study

    st = study.make_settings(
        "smoke",
        n_train=96,
        n_test=60,
        n_external=60,
        n_public=32,
        k_values=[2, 3],
        rounds=1,
        batch_size=16,
        warmup_epochs=0.5,
    )
    base, sets, methods = study.ablation_config(st), study.ablation_settings(st, "clients"), study.ablation_methods(st)
    labels = ["Oracle", "Central", "FL", "FL + PL", "FL + SA"]
    assert [m[0] for m in methods] == labels
    # each iteration's partition: K clients, label sets of RandomCover with seed ``seed * 1000 + i``
    for i, k in enumerate(st.k_values):
        part = study.partition(base.replace(**sets[k]))
        assert part.num_clients == k and part.masks.any(0).all()
        np.testing.assert_array_equal(part.masks, study.random_label_sets(14, k, seed=st.seed * 1000 + i))
    df = run_many(base, methods, [st.seed], tmp_path, settings=sets, progress=False)
    assert len(df) == 2 * len(labels) * 2  # settings x methods x (final, best)
    assert df.groupby(["setting", "which"])["label"].apply(list).map(lambda x: x == labels).all()
    assert set(df["setting"]) == {2, 3} and set(df["which"]) == {"final", "best"}
    results = sorted(tmp_path.glob("*.json"))
    assert len(results) == 2 * len(labels) - 1  # the Oracle's config is the same in both iterations
    cfgs = [json.loads(p.read_text())["config"] for p in results]
    assert all(c["method_kwargs"]["warmup_epochs"] == 0.5 and c["calibrate_bn"] for c in cfgs)
    long = study.long_form(df)
    assert set(long["column"]) == {"held-out test", "external test"}
    assert long.groupby(["setting", "label", "which", "column"]).size().eq(14).all()

    def boom(*a, **k):
        raise AssertionError("a cached run was trained again")

    monkeypatch.setattr("fedpl_core.runs.runner.build_simulation", boom)
    again = run_many(base, methods, [st.seed], tmp_path, settings=sets, progress=False)
    pd.testing.assert_frame_equal(again, df)
    table = study.ablation_table(again)
    assert list(table.index) == labels and list(table.columns) == ["held-out test", "external test"]


def test_gap_by_round_pairs_classes_and_splits_shared_from_unique():
    """Hand-built histories: NIH has classes a (unique) and s (shared), CheXpert s and c (unique).
    The gap is the mean over the column's classes of (A - B), each class averaged over seeds."""
    import pandas as pd

    from fedpl_core.studies.surgical import gap_by_round

    def rec(r, nih, chx):
        return {
            "round": r,
            "NIH/class_names": ["a", "s"],
            "NIH/auroc_per_class": nih,
            "CheXpert/class_names": ["s", "c"],
            "CheXpert/auroc_per_class": chx,
        }

    df = pd.DataFrame()
    df.attrs["histories"] = {
        ("", "A", 0): [rec(1, [0.70, 0.80], [0.60, 0.90])],
        ("", "A", 1): [rec(1, [0.74, 0.80], [0.62, 0.90])],
        ("", "B", 0): [rec(1, [0.60, 0.81], [0.60, 0.80])],
        ("", "B", 1): [rec(1, [0.62, 0.81], [0.60, 0.84])],
        ("", "other", 0): [rec(1, [0.0, 0.0], [0.0, 0.0])],
    }
    g = gap_by_round(df, "A", "B").set_index("column")
    assert g.loc["NIH: unique", "gap"] == pytest.approx((0.72 - 0.61) * 100)
    assert g.loc["CheXpert: unique", "gap"] == pytest.approx((0.90 - 0.82) * 100)
    assert g.loc["NIH: shared", "gap"] == pytest.approx(-1.0)
    assert g.loc["CheXpert: shared", "gap"] == pytest.approx(1.0)
    assert (g["classes"] == 1).all() and g["p"].isna().all()  # one class per column: no test


def test_gap_by_round_holds_a_run_stopped_early_at_its_last_model():
    """Early stopping: B's seed 1 stops after round 1 while the others train on. At round 2 the
    class means pair both seeds of each method, B's seed 1 with its round-1 model, instead of
    comparing A's two seeds with B's one."""
    import pandas as pd

    from fedpl_core.studies.surgical import gap_by_round

    def rec(r, v):
        return {"round": r, "NIH/class_names": ["a"], "NIH/auroc_per_class": [v]}

    df = pd.DataFrame()
    df.attrs["histories"] = {
        ("", "A", 0): [rec(1, 0.70), rec(2, 0.70)],
        ("", "A", 1): [rec(1, 0.70), rec(2, 0.70)],
        ("", "B", 0): [rec(1, 0.60), rec(2, 0.68)],
        ("", "B", 1): [rec(1, 0.50)],
    }
    g = gap_by_round(df, "A", "B", columns=("NIH: unique",)).set_index("round")
    assert g.loc[2, "gap"] == pytest.approx((0.70 - (0.68 + 0.50) / 2) * 100)
