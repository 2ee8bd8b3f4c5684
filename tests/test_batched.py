"""The batched client path (fedpl_core/fl/batched.py, issue 27) gives the per-client loop's
numbers to float tolerance, and says why when a round cannot be batched."""

import pytest
import torch

from fedpl_core.fl import batched as B
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.server import sample_clients
from fedpl_core.methods import FedAvg, batchable_methods
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig


def config(method="fedavg_pl", norm="gn", n_train=240, method_kwargs=None, **engine):
    eng = {"rounds": 2, "batch_size": 20, "progress": False, "selection": None, **engine}
    return ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Effusion", "Pneumothorax", "Nodule"],
        image_size=28,
        n_train=n_train,
        n_test=60,
        partition="missing_classes",
        num_clients=4,
        partition_kwargs={"missing": 1},
        model="cnn",
        model_kwargs={"width": 8, "norm": norm},
        method=method,
        method_kwargs=method_kwargs or {},
        engine=EngineConfig(**eng),
    )


def loop_and_batched(cfg, rounds=2):
    """Two simulations of ``cfg``: one trained by the loop, one by the batched path (same
    sampling, same server); their global arrays and training losses after ``rounds``."""
    a, b = build_simulation(cfg), build_simulation(cfg)
    losses_b = []
    for r in range(rounds):
        a.step()
        clients = sample_clients(len(b.sites), cfg.engine.client_fraction, cfg.engine.seed, r)
        updates, losses = B.train_round(b, clients, r)
        b.server.aggregate(updates)
        losses_b.append(sum(losses) / len(losses))
    return a, b, [h["train_loss"] for h in a.history], losses_b


@pytest.mark.parametrize(
    "method,engine,rounds",
    [
        ("fedavg_pl", {}, 1),  # Adam, partial loss
        ("fedavg", {"optimizer": "sgd", "lr": 0.05}, 2),  # SGD with momentum, missing = negative
        ("fedavg_pl", {"augment": "flip_shift", "weight_decay": 1e-4}, 1),  # the round's own augmentations
        ("fedavg_pl", {"client_fraction": 0.5, "local_iters": 4}, 1),  # sampled clients, fixed iterations
        ("fedavg", {"optimizer": "sgd", "lr": 0.05, "augment": "flip_shift", "client_fraction": 0.5}, 2),
    ],
)
def test_batched_rounds_give_the_loops_numbers(method, engine, rounds):
    """Float tolerance, not bits: vmap sums in another order.  Adam's normalised steps
    amplify those last-bit differences in later rounds (about 2e-5 after the second round of
    the augmented case), so its cases compare one round; SGD's compare two."""
    cfg = config(method, **engine)
    a, b, loss_a, loss_b = loop_and_batched(cfg, rounds)
    assert set(a.server.global_state) == set(b.server.global_state)
    for k, v in a.server.global_state.items():
        torch.testing.assert_close(b.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
    assert loss_b == pytest.approx(loss_a, rel=1e-5)
    init = build_simulation(cfg).server.global_state  # the training moved the model
    assert max(float((init[k] - a.server.global_state[k]).abs().max()) for k in init) > 1e-3


@pytest.mark.parametrize(
    "cfg,reason",
    [
        (config(norm="bn"), "BatchNorm"),
        (config(method="fedlsm"), "client steps of its own"),  # the method's side: Method.why_not_batchable
        (config(method="fedbn"), "arrays that stay on the clients"),
        (config(method="pfl"), "arrays that stay on the clients"),
        (config(method_kwargs={"warmup_epochs": 1}), "the head warm-up"),
        (config(optimizer_state="keep"), "optimizer state reset each round"),
        (config(amp=True), "without autocast"),
    ],
)
def test_a_round_that_cannot_be_batched_says_why(cfg, reason):
    sim = build_simulation(cfg)
    assert reason in B.why_not_batched(sim, [0, 1])
    with pytest.raises(ValueError, match=reason):
        B.train_round(sim, [0, 1], 0)


@pytest.mark.parametrize("method", ["fedavg_pl", "fedbn", "fedlsm"])
def test_the_method_side_is_method_batchable_alone(monkeypatch, method):
    """The engine asks the method one question, ``Method.batchable``, and checks only its own
    side (model, optimizer, task): with ``batchable`` false any method loops, with it true
    the engine adds no method-side condition of its own."""
    sim = build_simulation(config(method))
    cls = type(sim.method)
    monkeypatch.setattr(cls, "batchable", property(lambda self: False))
    assert "Method.batchable" in B.why_not_batched(sim, [0, 1])
    monkeypatch.setattr(cls, "batchable", property(lambda self: True))
    assert B.why_not_batched(sim, [0, 1]) is None


@pytest.mark.parametrize(
    "engine,cls,rounds",
    [
        ({"optimizer": "sgd", "lr": 0.05, "momentum": 0.5, "weight_decay": 1e-2}, torch.optim.SGD, 2),
        ({"optimizer": "adamw", "weight_decay": 0.1}, torch.optim.AdamW, 1),
        ({"optimizer": "adam", "weight_decay": 1e-3}, torch.optim.Adam, 1),
    ],
)
def test_the_batched_path_steps_the_loops_torch_optim_optimizer(monkeypatch, engine, cls, rounds):
    """The batched path builds the loop's optimizer (``fl/site.py``'s ``make_optimizer``: same
    class, same hyper-parameters) over the stacked ``[K, ...]`` parameters, fresh each round,
    and steps it once per local step: SGD with a momentum other than 0.9 and weight decay,
    and AdamW's decoupled decay, give the loop's numbers."""
    made = []

    def spy(params, cfg):
        made.append(real(params, cfg))
        return made[-1]

    real = B.make_optimizer
    monkeypatch.setattr(B, "make_optimizer", spy)
    cfg = config(**engine)
    a, b, loss_a, loss_b = loop_and_batched(cfg, rounds)
    for k, v in a.server.global_state.items():
        torch.testing.assert_close(b.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
    assert loss_b == pytest.approx(loss_a, rel=1e-5)
    assert len(made) == rounds  # one fresh optimizer a round (one chunk)
    opt, loop_opt = made[-1], a.work.optimizer
    assert type(opt) is cls and type(loop_opt) is cls
    hyper = [{k: v for k, v in o.param_groups[0].items() if k != "params"} for o in (opt, loop_opt)]
    assert hyper[0] == hyper[1]
    K, steps = len(b.sites), b.sites[0].context(0).num_steps()
    shapes = [(K, *p.shape) for p in a.work.model.parameters() if p.requires_grad]
    assert [tuple(p.shape) for p in opt.param_groups[0]["params"]] == shapes
    for p in opt.param_groups[0]["params"]:  # each client's slice has its own moments
        st = opt.state[p]
        if cls is torch.optim.SGD:
            assert st["momentum_buffer"].shape == p.shape
        else:
            assert float(st["step"]) == steps and st["exp_avg"].shape == st["exp_avg_sq"].shape == p.shape


def test_the_batched_loss_is_the_loss_blocks_rule(monkeypatch):
    """The batched path runs the loss block's own rule (``SupervisedLoss.rule``, the
    ``supervised_term`` of ``nn/losses.py``), not a copy: a change of the rule reaches the
    loop and the batched path alike (here an extra penalty on the logits)."""
    import fedpl_core.methods.blocks as blocks

    cfg = config("fedavg_wbce", optimizer="sgd", lr=0.05)
    _, plain, _, _ = loop_and_batched(cfg, rounds=1)
    real = blocks.supervised_term
    monkeypatch.setattr(blocks, "supervised_term", lambda logits, *a, **k: real(logits, *a, **k) + logits.pow(2).mean())
    a, b, loss_a, loss_b = loop_and_batched(cfg, rounds=1)
    for k, v in a.server.global_state.items():
        torch.testing.assert_close(b.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
    assert loss_b == pytest.approx(loss_a, rel=1e-5)
    assert max(float((plain.server.global_state[k] - v).abs().max()) for k, v in b.server.global_state.items()) > 1e-3


def test_clients_with_different_numbers_of_steps_are_not_batched():
    sim = build_simulation(config(n_train=250, batch_size=21))
    assert sorted(s.data.n for s in sim.sites) == [62, 62, 63, 63]  # 2 and 3 full batches of 21
    with pytest.raises(ValueError, match="differ in steps or batch sizes"):
        B.train_round(sim, list(range(4)), 0)


def test_the_engine_trains_a_round_batched_when_asked_in_chunks():
    """``EngineConfig(batched_clients=n)``: the simulation trains the round's clients n at a
    time as vmapped steps, with the loop's numbers; a round it cannot batch (BatchNorm)
    falls back to the loop, bit for bit, saying why once."""
    loop = build_simulation(config(rounds=1))
    loop.run()
    for chunk in (4, 3):  # every client at once; a chunk of 3 and one of 1
        sim = build_simulation(config(rounds=1, batched_clients=chunk))
        sim.run()
        for k, v in loop.server.global_state.items():
            torch.testing.assert_close(sim.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
        assert sim.history[0]["train_loss"] == pytest.approx(loop.history[0]["train_loss"], rel=1e-5)
        assert not getattr(sim, "_batched_reason", None)
    bn_loop, bn = (
        build_simulation(config(norm="bn", rounds=1)),
        build_simulation(config(norm="bn", rounds=1, batched_clients=4)),
    )
    bn_loop.run()
    bn.run()
    assert "BatchNorm" in bn._batched_reason
    assert all(torch.equal(bn.server.global_state[k], v) for k, v in bn_loop.server.global_state.items())


def test_batched_clients_off_keeps_every_run_id():
    assert config().run_id() == config(batched_clients=0).run_id() != config(batched_clients=4).run_id()


@pytest.mark.parametrize("method", batchable_methods())
def test_every_batchable_method_gives_the_loops_numbers(method):
    """Each method that says its client round is FedAvg's (the weighted-BCE baselines with
    each client's class weights, the oracles on their true labels, the pooled baseline on
    its one client) trains to the loop's numbers through the batched path.  With SGD: the
    vmapped gradients sum in another order than the loop's (about 1e-7 apart), and Adam's
    first step, g / (|g| + eps), turns that into a whole step for a weight whose gradient is
    near 0 (1.9e-4 apart seen for ``oracle`` on an AVX-512 CPU); Adam itself is checked on
    FedAvg-PL above."""
    a, b, loss_a, loss_b = loop_and_batched(config(method, optimizer="sgd", lr=0.05, momentum=0.9), rounds=1)
    for k, v in a.server.global_state.items():
        torch.testing.assert_close(b.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
    assert loss_b == pytest.approx(loss_a, rel=1e-5)


def test_a_method_with_its_own_client_step_is_not_batchable():
    class Shifted(FedAvg):
        name = "shifted"

        def loss(self, ctx, logits, features, batch):
            return super().loss(ctx, logits + 1.0, features, batch)

    assert FedAvg().batchable and not Shifted().batchable
    assert set(batchable_methods()) >= {"fedavg", "fedavg_pl", "fedavg_wbce"}
    assert not {"fedprox", "fedlsm", "fedmlp", "surgical", "pfl", "local", "fedbn"} & set(batchable_methods())


def test_a_chunk_that_runs_out_of_gpu_memory_is_halved(monkeypatch):
    """A chunk over 2 clients raises the OOM error a GPU would: the round is retried 2 at a
    time, later rounds start at 2, and the numbers are the loop's; a single client that
    does not fit is an error."""
    sizes = []
    real = B._train_chunk

    def small_device(sim, clients, contexts, stacked):
        sizes.append(len(clients))
        if len(clients) > sim.fits:
            raise torch.OutOfMemoryError("CUDA out of memory (planted)")
        return real(sim, clients, contexts, stacked)

    monkeypatch.setattr(B, "_train_chunk", small_device)
    loop = build_simulation(config(optimizer="sgd", lr=0.05))
    loop.run()
    sim = build_simulation(config(optimizer="sgd", lr=0.05, batched_clients=4))
    sim.fits = 2
    sim.run()
    assert sizes == [4, 2, 2, 2, 2] and sim.batched_fit == 2
    for k, v in loop.server.global_state.items():
        torch.testing.assert_close(sim.server.global_state[k], v, rtol=1e-4, atol=1e-5, msg=k)
    sim = build_simulation(config(batched_clients=4, rounds=1))
    sim.fits = 0
    with pytest.raises(torch.OutOfMemoryError):
        sim.run()
