"""The engine on a CUDA GPU (issue 27).  Skipped where torch sees no GPU (CI, this project's
CPU machines); a session with a GPU runs them with ``pytest tests/test_gpu.py``.

* the training images live on the device as uint8, and a round's batches are gathered,
  augmented and normalised there;
* the local steps do not synchronise with the host (``torch.cuda.set_sync_debug_mode``
  raises on any synchronising call), with augmentation, bf16 autocast and channels-last;
* the batched path gives the loop's numbers on the GPU too (a looser tolerance: cuDNN
  picks other algorithms for the stacked batches), and ``device="auto"`` picks the GPU;
* a run records its peak GPU memory.
"""

import pytest
import torch

from fedpl_core.fl import batched as B
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.server import sample_clients
from fedpl_core.methods.blocks import sgd_step
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def config(device="cuda", **engine):
    eng = {"rounds": 2, "batch_size": 20, "progress": False, "selection": None, "device": device, **engine}
    return ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Effusion", "Pneumothorax", "Nodule"],
        image_size=28,
        n_train=240,
        n_test=60,
        partition="missing_classes",
        num_clients=4,
        partition_kwargs={"missing": 1},
        model="cnn",
        model_kwargs={"width": 8, "norm": "gn"},
        method="fedavg_pl",
        engine=EngineConfig(**eng),
    )


def test_auto_picks_the_gpu_and_the_images_live_there_as_uint8():
    sim = build_simulation(config(device="auto"))
    assert sim.device.type == "cuda"
    assert sim.images.device.type == "cuda" and sim.images.dtype == torch.uint8
    batch = next(sim.sites[0].context(0).batches())
    assert batch.x.device.type == batch.y.device.type == batch.mask.device.type == "cuda"


@pytest.mark.parametrize(
    "engine",
    [
        {"augment": "flip_shift"},
        {"augment": "flip_affine", "amp": True, "channels_last": True},
    ],
)
def test_the_local_steps_do_not_synchronise_with_the_host(engine):
    sim = build_simulation(config(**engine))
    site = sim.sites[0]
    ctx = site.context(0)
    sim.method.receive(ctx, sim.server.payload(0))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        total = torch.zeros((), device=sim.device)
        for batch in ctx.batches():
            total += sgd_step(sim.method, ctx, batch)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(total).item()


def test_the_batched_path_gives_the_loops_numbers_on_the_gpu():
    cfg = config(optimizer="sgd", lr=0.05)
    a, b = build_simulation(cfg), build_simulation(cfg)
    a.step()
    clients = sample_clients(len(b.sites), 1.0, cfg.engine.seed, 0)
    updates, _ = B.train_round(b, clients, 0)
    b.server.aggregate(updates)
    for k, v in a.server.global_state.items():
        torch.testing.assert_close(b.server.global_state[k], v, rtol=1e-3, atol=1e-4, msg=k)


def test_a_run_records_its_peak_gpu_memory():
    res = run(config(rounds=1))
    assert 0 < res.timings["peak_gpu_mib"] < torch.cuda.get_device_properties(0).total_memory / 2**20


def test_a_deterministic_run_gives_the_same_numbers_twice_and_sets_cudnn_up():
    cfg = config(rounds=1, deterministic=True, augment="flip_shift")
    a, b = build_simulation(cfg), build_simulation(cfg)
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    a.run()
    b.run()
    assert all(torch.equal(a.server.global_state[k], v) for k, v in b.server.global_state.items())
    build_simulation(config(rounds=1))
    assert torch.backends.cudnn.benchmark and not torch.backends.cudnn.deterministic
    torch.use_deterministic_algorithms(False)
