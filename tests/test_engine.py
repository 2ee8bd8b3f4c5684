import os

import numpy as np
import pytest
import torch

from fedpl_core.data.base import ImageDataset
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import ClientData, ClientUpdate
from fedpl_core.fl.server import Server
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import FedAvg, get_method
from fedpl_core.methods.base import Method
from fedpl_core.nn.models import build_model


def make_sim(toy, part, method="fedavg", seed=0, **cfg):
    train, test = toy
    torch.manual_seed(seed)
    model = build_model("cnn", train.num_classes, 1, 16, width=8)
    kw = dict(rounds=3, batch_size=32, progress=False, seed=seed)
    kw.update(cfg)
    m = method if isinstance(method, Method) else get_method(method)
    return Simulation(m, model, train, part, test, EngineConfig(**kw))


def states_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_same_seed_same_numbers(toy, toy_partition):
    h1 = make_sim(toy, toy_partition).run()
    h2 = make_sim(toy, toy_partition).run()
    assert [h["auroc_mean"] for h in h1] == [h["auroc_mean"] for h in h2]
    h3 = make_sim(toy, toy_partition, seed=1).run()
    assert [h["auroc_mean"] for h in h1] != [h["auroc_mean"] for h in h3]


def test_training_learns_the_toy_task(toy, toy_partition):
    h = make_sim(toy, toy_partition, "oracle", rounds=4).run()
    assert h[-1]["auroc_mean"] > 0.9


def test_server_never_holds_data_and_accepts_only_updates(toy, toy_partition):
    sim = make_sim(toy, toy_partition)
    sim.run(rounds=1)
    forbidden = (ImageDataset, ClientData, np.ndarray)

    def walk(o, depth=0):
        assert not isinstance(o, forbidden), f"server holds {type(o).__name__}"
        if depth < 3 and isinstance(o, dict):
            for v in o.values():
                walk(v, depth + 1)

    for name, value in vars(sim.server).items():
        if name != "method":
            walk(value)
    model_keys = set(sim.model.state_dict())
    assert set(sim.server.global_state) == model_keys
    with pytest.raises(TypeError):
        sim.server.aggregate([{"state": {}}])
    # the server can be built from arrays alone
    Server(get_method("fedavg"), sim.extract_state(), sim.info)


def test_server_sees_only_model_arrays_and_declared_metadata(toy, toy_partition):
    seen = []

    class Spy(FedAvg):
        name = "spy"

        def aggregate(self, server, updates):
            seen.extend(updates)
            super().aggregate(server, updates)

    sim = make_sim(toy, toy_partition, Spy(), rounds=1)
    sim.run()
    assert len(seen) == 4
    for u in seen:
        assert isinstance(u, ClientUpdate)
        assert set(u.state) <= set(sim.model.state_dict())
        assert set(u.metadata) <= set(Spy.metadata_keys)

    class Leaky(FedAvg):
        name = "leaky"

        def make_update(self, ctx):
            upd = super().make_update(ctx)
            upd.metadata["images"] = ctx.data.indices
            return upd

    with pytest.raises(ValueError, match="not declared"):
        make_sim(toy, toy_partition, Leaky(), rounds=1).run()


def test_clients_get_no_label_of_unannotated_classes(toy, toy_partition):
    sim = make_sim(toy, toy_partition)
    train = toy[0]
    for c in sim.clients:
        truth = torch.from_numpy(train.labels[c.indices.numpy()])
        off = ~c.class_mask
        assert truth[:, off].sum() > 0  # there are true positives the client must not see
        assert c.labels[:, off].abs().sum() == 0
        assert not c.mask[:, off].any()
        assert torch.equal(c.labels[:, c.class_mask], truth[:, c.class_mask])
    oracle = make_sim(toy, toy_partition, "oracle")
    (pooled,) = oracle.clients
    assert torch.equal(pooled.labels, torch.from_numpy(train.labels[pooled.indices.numpy()]))
    central = make_sim(toy, toy_partition, "centralized")
    assert central.clients[0].labels.sum() < pooled.labels.sum()


def test_fedprox_with_mu_zero_equals_fedavg(toy, toy_partition):
    a = make_sim(toy, toy_partition, "fedavg", rounds=2)
    a.run()
    b = make_sim(toy, toy_partition, get_method("fedprox", mu=0.0), rounds=2)
    b.run()
    assert states_equal(a.server.global_state, b.server.global_state)
    c = make_sim(toy, toy_partition, get_method("fedprox", mu=1.0), rounds=2)
    c.run()
    assert not states_equal(a.server.global_state, c.server.global_state)


def test_fedavg_global_is_size_weighted_mean_of_client_models(toy, toy_partition):
    captured = {}

    class Capture(FedAvg):
        name = "capture"

        def aggregate(self, server, updates):
            captured["states"] = [u.state for u in updates]
            captured["n"] = [u.num_samples for u in updates]
            super().aggregate(server, updates)

    sim = make_sim(toy, toy_partition, Capture(), rounds=1)
    sim.run()
    n = torch.tensor(captured["n"], dtype=torch.float64)
    w = sim.server.global_state["head.weight"].double()
    manual = sum(ni * s["head.weight"].double() for ni, s in zip(n, captured["states"])) / n.sum()
    assert torch.allclose(w, manual, atol=1e-6)


def test_fedbn_keeps_batchnorm_local(toy, toy_partition):
    sim = make_sim(toy, toy_partition, "fedbn", rounds=2)
    init = sim.extract_state()
    sim.run()
    bn = sorted(sim.method.local_keys)
    bn_modules = [n for n, m in sim.model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)]
    expected = {
        f"{n}.{a}" for n in bn_modules for a in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
    }
    assert bn_modules and set(bn) == expected
    for k in bn:  # the global copy of a local array never changes
        assert torch.equal(sim.server.global_state[k], init[k])
    rm = [k for k in bn if k.endswith("running_mean")][0]
    assert not torch.equal(sim.client_states[0]["local"][rm], sim.client_states[1]["local"][rm])
    assert sim.method.evaluation == "personalised"
    assert sim.history[-1]["auroc_mean"] is not None


def test_local_and_pfl_keep_their_arrays(toy, toy_partition):
    sim = make_sim(toy, toy_partition, "local", rounds=1)
    init = sim.extract_state()
    sim.run()
    assert states_equal(sim.server.global_state, init)
    pfl = make_sim(toy, toy_partition, "pfl", rounds=1)
    pfl.run()
    heads = [s["local"]["head.weight"] for s in pfl.client_states]
    assert not torch.equal(heads[0], heads[1])
    assert "head.weight" in pfl.method.local_keys and len(pfl.method.local_keys) == 2


def test_client_fraction_and_local_iterations(toy, toy_partition):
    calls = []

    class Count(FedAvg):
        name = "count"

        def loss(self, ctx, logits, features, batch):  # once per local step
            calls.append((ctx.round, ctx.client_id, len(batch.pos)))
            return super().loss(ctx, logits, features, batch)

    make_sim(toy, toy_partition, Count(), rounds=2, client_fraction=0.5, local_iters=3).run()
    per_round = {}
    for r, k, _ in calls:
        per_round.setdefault(r, set()).add(k)
    assert all(len(v) == 2 for v in per_round.values())
    assert len(calls) == 2 * 2 * 3
    calls.clear()
    make_sim(toy, toy_partition, Count(), rounds=1, local_epochs=2, batch_size=25).run()
    # 75 samples per client, batch 25 -> 3 steps per epoch, 2 epochs
    assert len(calls) == 4 * 6 and {b for *_, b in calls} == {25}


@pytest.mark.parametrize("method,opt_state", [("fedavg", "reset"), ("fedbn", "keep")])
def test_interrupted_run_resumes_to_identical_numbers(tmp_path, toy, toy_partition, method, opt_state):
    full = make_sim(toy, toy_partition, method, rounds=4, optimizer_state=opt_state, augment="flip_shift")
    full.run()
    ck = tmp_path / "run.ckpt"
    first = make_sim(
        toy, toy_partition, method, rounds=4, optimizer_state=opt_state, augment="flip_shift", checkpoint_every=1
    )
    first.checkpoint_path = ck
    first.run(rounds=2)  # "interrupted" after round 2
    assert ck.exists() and not list(tmp_path.glob(".*.tmp"))
    resumed = make_sim(toy, toy_partition, method, rounds=4, optimizer_state=opt_state, augment="flip_shift")
    resumed.load_checkpoint(ck)
    assert resumed.round == 2
    resumed.run()
    assert [h["auroc_mean"] for h in resumed.history] == [h["auroc_mean"] for h in full.history]
    assert states_equal(resumed.server.global_state, full.server.global_state)


def test_patience_stops_early(toy, toy_partition):
    sim = make_sim(toy, toy_partition, rounds=10, selection="train_loss", selection_mode="max", patience=2)
    sim.run()
    # train loss falls, so "max" never improves after round 1: stop after 1 + 2 rounds
    assert len(sim.history) == 3
    assert sim.best["round"] == 1


def test_engine_config_rejects_unknown_values(toy, toy_partition):
    with pytest.raises(ValueError, match="optimizer"):
        make_sim(toy, toy_partition, optimizer="lbfgs")
    with pytest.raises(ValueError, match="augment"):
        make_sim(toy, toy_partition, augment="mixup")
    # a fixed set of values is checked at construction, not silently mapped to another one
    with pytest.raises(ValueError, match="selection_mode"):
        EngineConfig(selection_mode="maximum")


def test_method_is_an_abstract_interface():
    with pytest.raises(TypeError, match="abstract"):
        Method()
    assert issubclass(FedAvg, Method) and FedAvg().name == "fedavg"


def test_client_validation_split_is_held_out_and_scored(toy, toy_partition):
    sim = make_sim(
        toy, toy_partition, "fedavg_pl", rounds=2, client_val_fraction=0.2, selection="val_loss", selection_mode="min"
    )
    for c in sim.clients:
        assert c.val is not None and c.val.n == 15 and c.n == 60
        assert not set(c.val.indices.tolist()) & set(c.indices.tolist())
    sim.run()
    losses = [h["val_loss"] for h in sim.history]
    assert all(np.isfinite(losses))
    assert sim.best["val_loss"] == min(losses)


def test_validation_loss_of_fedprox_is_its_data_term(toy, toy_partition):
    """FedProx's proximal anchor exists only during local training: its validation split is
    scored by the data term, i.e. exactly FedAvg's loss on the same global model."""
    sims = [make_sim(toy, toy_partition, m, rounds=1, client_val_fraction=0.2) for m in ("fedprox", "fedavg")]
    rec = sims[0].run()[-1]
    assert np.isfinite(rec["val_loss"])
    sims[1].server.global_state = {k: v.clone() for k, v in sims[0].server.global_state.items()}
    assert sims[1].validation_loss() == pytest.approx(rec["val_loss"], rel=1e-6)


def test_a_round_is_sites_training_on_payloads_and_the_server_aggregating(toy, toy_partition):
    """The round loop by hand, through the public parts (sample_clients, Site.train,
    Server.payload / aggregate), gives the simulation's global arrays and losses exactly."""
    from fedpl_core.fl.server import sample_clients
    from fedpl_core.fl.site import Site

    sim = make_sim(toy, toy_partition, "fedprox", client_fraction=0.5, client_val_fraction=0.2)
    hand = make_sim(toy, toy_partition, "fedprox", client_fraction=0.5, client_val_fraction=0.2)
    assert all(isinstance(s, Site) for s in hand.sites) and hand.clients == [s.data for s in hand.sites]
    assert len({id(s.work) for s in hand.sites}) == 1  # one working model serves every site
    for r in range(2):
        rec = sim.step()
        hand.guard.scale = sim.guard.scale  # the start a diverging loss is measured against
        clients = sample_clients(len(hand.sites), 0.5, 0, r)
        assert len(clients) == 2 and clients == sorted(clients)
        trained = [hand.sites[k].train(hand.server.payload(k), r) for k in clients]
        assert all(isinstance(u, ClientUpdate) and u.client_id == k for (u, _), k in zip(trained, clients))
        hand.server.aggregate([u for u, _ in trained])
        assert states_equal(hand.server.global_state, sim.server.global_state)
        assert rec["train_loss"] == float(np.mean([logs["train_loss"] for _, logs in trained]))
        hand.round += 1


def test_deterministic_changes_the_run_id_only_when_on_and_leaves_a_cpu_run_alone(monkeypatch):
    """``EngineConfig.deterministic`` off (the default) keeps every run id made before it;
    on a CPU it does not touch torch's process-wide cuDNN and determinism settings."""
    from fedpl_core.fl.site import configure_cuda
    from fedpl_core.runs.experiment_config import ExperimentConfig

    def cfg(**eng):
        return ExperimentConfig(engine=EngineConfig(**eng))

    assert cfg().run_id() == cfg(deterministic=False).run_id() != cfg(deterministic=True).run_id()
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)  # restored after the test
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    configure_cuda(EngineConfig(deterministic=True), torch.device("cpu"))
    assert torch.backends.cudnn.benchmark and not torch.backends.cudnn.deterministic
    assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_images_on_the_current_cuda_device_count_as_on_cuda(monkeypatch):
    """``device="cuda"`` names the current CUDA device: images resident on ``cuda:0`` are
    gathered in place there (an H200 run took the host path for every batch, a synchronising
    index, while ``cuda:0 != cuda``)."""
    from fedpl_core.fl.federation import _same_device

    cpu, cuda, cuda0, cuda1 = (torch.device(d) for d in ("cpu", "cuda", "cuda:0", "cuda:1"))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert _same_device(cuda0, cuda) and _same_device(cuda, cuda0) and _same_device(cpu, cpu)
    assert not _same_device(cuda1, cuda) and not _same_device(cpu, cuda) and not _same_device(cuda0, cuda1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert _same_device(cuda1, cuda) and not _same_device(cuda0, cuda)
