"""fedpl methods through the Flower adapter (fedpl_core.apps.flower) against the in-process engine.

The Flower side runs the real strategy loop (``Strategy.start``) and the real ClientApp,
in this process: :class:`~fedpl_core.apps.flower.LocalGrid` sends every message and every
node's context through protobuf and back, as between Flower processes.
"""

import numpy as np
import pytest
import torch

pytest.importorskip("flwr")
pytestmark = pytest.mark.flower

from toy import toy_dataset  # noqa: E402

from fedpl_core.apps.flower import FedplStrategy, FlowerSite, LocalGrid, decode, encode, make_client_app
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.fl.simulation import Simulation  # noqa: E402
from fedpl_core.methods.fedavg import FedAvg  # noqa: E402
from fedpl_core.methods.surgical import SurgicalAggregation  # noqa: E402
from fedpl_core.nn.models import build_model  # noqa: E402
from fedpl_core.partitions import ClientSpec, Partition  # noqa: E402

K = 4


@pytest.fixture(scope="module")
def setup():
    ds = toy_dataset(n=360)
    train = ds.subset(np.arange(320))
    c = train.num_classes
    # clients annotate two classes each (overlapping), of unequal sizes
    sizes = [100, 60, 90, 70]
    starts = np.cumsum([0] + sizes[:-1])
    masks = [np.isin(np.arange(c), [k % c, (k + 1) % c]) for k in range(K)]
    part = Partition([ClientSpec(np.arange(s, s + n), m) for s, n, m in zip(starts, sizes, masks)], train.class_names)
    return train, part


def model_of(train, seed=0):
    torch.manual_seed(seed)
    return build_model("cnn", train.num_classes, train.channels, train.image_size)


def engine_cfg(**kw):
    return EngineConfig(
        **{
            "rounds": 2,
            "batch_size": 16,
            "lr": 3e-3,
            "progress": False,
            "selection": None,
            "device": "cpu",
            "seed": 3,
            **kw,
        }
    )


def run_engine(method_fn, train, part, cfg):
    sim = Simulation(method_fn(), model_of(train), train, part, cfg=cfg)
    init = {k: v.clone() for k, v in sim.server.global_state.items()}
    sim.run(2)
    return sim, init


def flower_parts(method_fn, train, part, cfg, own_data=False):
    """The server's strategy and a ClientApp whose sites hold their own images only."""
    server_sim = Simulation(method_fn(), model_of(train), train, part, cfg=cfg)
    strategy = FedplStrategy(server_sim.server, cfg, wait_s=1, poll_s=0.01)

    def site_fn(context):
        k = int(context.node_config["partition-id"])
        if own_data:  # a hospital: its own ImageDataset and the classes it annotates
            spec = part.clients[k]
            annotated = [n for n, m in zip(part.class_names, spec.class_mask) if m]
            return FlowerSite.from_dataset(
                method_fn(),
                model_of(train, seed=100 + k),
                train.subset(spec.indices),
                annotated,
                server_sim.info,
                cfg,
                k,
            )
        return FlowerSite.from_simulation(
            Simulation(method_fn(), model_of(train, seed=100 + k), train, part, cfg=cfg), k
        )

    return strategy, site_fn


def assert_same(a, b, atol=1e-6):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        torch.testing.assert_close(a[k], b[k], atol=atol, rtol=1e-5, msg=k)


def assert_trained(init, final):
    moved = max((final[k].double() - init[k].double()).abs().max().item() for k in init if init[k].is_floating_point())
    assert moved > 1e-3  # the comparison is not between two untouched models


# ---------------------------------------------------------------------------- the codec
def test_records_round_trip_every_container():
    obj = {
        "state": {"w": torch.randn(3, 2), "n": torch.tensor(7), "m": torch.tensor([True, False])},
        "head": (torch.zeros(2, 3, dtype=torch.float64), torch.arange(4)),
        "head_classes": ["b", "a"],
        "optimizer": {0: {"step": torch.tensor(3.0)}, 12: {}},
        "warmed_up": True,
        "tau": 0.25,
        "k": 3,
        "none": None,
        "empty": [],
        "pair": ("x", "y"),
        "helpers": [{"a": torch.ones(1)}, {}],
        "np": np.arange(3, dtype=np.int32),
        "mixed": [1, "a", 2.5],
        "npscalar": np.float32(1.5),
    }
    rd = encode(obj, "t")
    assert set(rd.keys()) == {"t.arrays", "t.config"}
    assert list(rd["t.config"]["head_classes"]) == ["b", "a"]  # plain values are config entries
    assert "state/w" in rd["t.arrays"]  # tensors are arrays
    back = decode(rd, "t")
    assert back.keys() == obj.keys()
    assert_same(back["state"], obj["state"], atol=0)
    assert isinstance(back["head"], tuple) and torch.equal(back["head"][1], obj["head"][1])
    assert back["head"][0].dtype == torch.float64
    assert back["head_classes"] == ["b", "a"] and back["pair"] == ("x", "y")
    assert set(back["optimizer"]) == {0, 12} and back["optimizer"][12] == {}  # int keys stay ints
    assert torch.equal(back["optimizer"][0]["step"], torch.tensor(3.0))
    assert back["warmed_up"] is True and back["tau"] == 0.25 and back["k"] == 3 and back["none"] is None
    assert back["empty"] == [] and back["mixed"] == [1, "a", 2.5] and back["npscalar"] == 1.5
    assert torch.equal(back["helpers"][0]["a"], torch.ones(1)) and back["helpers"][1] == {}
    assert back["np"].dtype == np.int32 and back["np"].tolist() == [0, 1, 2]


def test_records_refuse_what_cannot_travel():
    with pytest.raises(TypeError, match="set"):
        encode({"x": {1, 2}}, "t")
    with pytest.raises(TypeError, match="dict key"):
        encode({"x": {(1, 2): torch.ones(1)}}, "t")
    with pytest.raises(ValueError, match="two values"):
        encode({"a/b": 1, "a": {"b": 2}}, "t")


# ---------------------------------------------------------------------------- equivalence
def test_fedavg_two_rounds_equal_the_engine(setup):
    train, part = setup
    cfg = engine_cfg(client_fraction=0.75)  # 3 of 4 clients a round: the engine's sampling
    sim, init = run_engine(FedAvg, train, part, cfg)
    strategy, site_fn = flower_parts(FedAvg, train, part, cfg)
    grid = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in range(K)], seed=1)
    result = strategy.start(grid, strategy.global_arrays(), num_rounds=2)
    assert strategy.round == 2 and len(strategy.history) == 2
    assert_trained(init, sim.server.global_state)
    assert_same(strategy.global_state, sim.server.global_state)
    # the final arrays Flower reports are the fedpl global model
    reported = {k: torch.from_numpy(np.array(result.arrays[k].numpy())) for k in result.arrays}
    assert_same(reported, sim.server.global_state, atol=0)
    for rec, ref in zip(strategy.history, sim.history):
        assert rec["train_loss"] == pytest.approx(ref["train_loss"], rel=1e-5)


@pytest.mark.parametrize("variant", ["paper", "fedbn_keep"])
def test_surgical_two_rounds_equal_the_engine(setup, variant):
    """Personalised payloads (each client's own head rows in its own permuted class
    order), class names as metadata, and state kept between rounds (class order, the
    warm-up done once, FedBN's local BatchNorm, Adam's state) on sites holding their own
    data only."""
    train, part = setup
    kw = {"bn_policy": "local"} if variant == "fedbn_keep" else {}
    cfg = engine_cfg(optimizer_state="keep") if variant == "fedbn_keep" else engine_cfg()

    def method():
        return SurgicalAggregation(warmup_epochs=1, class_order="permuted", **kw)

    sim, init = run_engine(method, train, part, cfg)
    strategy, site_fn = flower_parts(method, train, part, cfg, own_data=True)
    grid = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in reversed(range(K))], seed=2)
    strategy.start(grid, strategy.global_arrays(), num_rounds=1)
    # round 2 in fresh ClientApp processes: the per-client state must come from Flower's context
    grid.app = make_client_app(site_fn)
    strategy.start(grid, strategy.global_arrays(), num_rounds=1)
    assert_trained(init, sim.server.global_state)
    assert_same(strategy.global_state, sim.server.global_state)
    assert strategy.server.state["client_classes"] == sim.server.state["client_classes"]
    for k in range(K):
        ctx = grid._from_ctx(grid.contexts[strategy.node_of[k]])
        kept = decode(ctx.state, "fedpl.state")
        assert kept["class_names"] == sim.client_states[k]["class_names"]
        assert kept["warmed_up"] is True
        if variant == "fedbn_keep":
            assert_same(kept["local"], sim.client_states[k]["local"])
            assert set(kept["optimizer"]) == set(sim.client_states[k]["optimizer"])


# ---------------------------------------------------------------------------- identity and failures
def test_node_ids_map_to_client_ids_by_partition_id(setup):
    train, part = setup
    cfg = engine_cfg()
    strategy, site_fn = flower_parts(FedAvg, train, part, cfg)
    grid = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in (2, 0, 3, 1)], seed=5)
    mapping = strategy.register(grid)
    by_node = {n: grid._from_ctx(grid.contexts[n]).node_config["partition-id"] for n in grid.contexts}
    assert {k: by_node[n] for k, n in mapping.items()} == {k: k for k in range(K)}
    assert set(mapping.values()) == set(grid.contexts) and 1 not in mapping.values()

    dup = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in (0, 1, 1, 3)])
    with pytest.raises(RuntimeError, match="both claim client id 1"):
        FedplStrategy(strategy.server, cfg, wait_s=0.01, poll_s=0.01).register(dup)
    few = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in (0, 1, 2)])
    with pytest.raises(RuntimeError, match=r"client\(s\) \[3\]"):
        FedplStrategy(strategy.server, cfg, wait_s=0.01, poll_s=0.01).register(few)


def test_a_failing_site_stops_the_round_with_its_name(setup):
    train, part = setup
    cfg = engine_cfg(lr=1e30)  # diverges at once
    strategy, site_fn = flower_parts(FedAvg, train, part, cfg)
    grid = LocalGrid(make_client_app(site_fn), [{"partition-id": k} for k in range(K)])
    with pytest.raises(RuntimeError, match=r"client 0 \(A, node \d+\) failed: DivergenceError"):
        strategy.start(grid, strategy.global_arrays(), num_rounds=1)
