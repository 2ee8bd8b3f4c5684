"""FedAvg rounds per second: the engine's per-client loop, its batched path, a plain PyTorch
loop, and Flower's simulation, for K clients, a small CNN and ResNet-18 (issue 27).

All sides train the same clients (equal sizes, ``--per-client`` images of ``--size`` px, a
GroupNorm model, since the batched path cannot vmap BatchNorm's running statistics) for the
same local steps with a fresh Adam per client and round, and average with FedAvg; the
timings cover training and aggregation, not evaluation (one untimed warm-up round first).
The sides take ``--repeats`` turns of ``--rounds`` rounds each, one after the other, and
each side's best turn counts: on a shared machine a slow spell then hits every side.

* ``loop``: :meth:`Simulation.step` with evaluation off (``Site.train`` per client);
* ``batched``: :func:`fedpl_core.fl.batched.train_round` (one vmapped step for all clients)
  and the same server aggregation;
* ``plain``: what a user writes by hand: per round and client a shuffle, batches gathered
  from the uint8 images and normalised, ``load_state_dict``, ``model(x)``, ``backward``,
  ``torch.optim.Adam``, the mean of the ``state_dict``s (no divergence check, no metadata);
* ``flower``: Flower 1.40's simulation (Ray) of the same rounds through ``fedpl_core.apps.flower``,
  when ``flwr[simulation]`` is installed (``pip install -e .[flower]``): one CPU per client and,
  on a GPU, a 1/K fraction of it (Flower's advice); the median round after the first.

Prints rounds per second, the ratios batched/loop and loop/plain, and peak memory (CUDA:
``torch.cuda.max_memory_allocated`` during the side's turns, reset before each, with the
three sides' models and images resident; CPU: the process's peak resident set so far,
which only grows: the sides take turns in the order loop, batched, plain), the batched
path's chunk (K, or the size that fitted after running out of memory), and writes
``figures/bench_gpu_throughput_<device>.{csv,md}``.  On a CPU the loop is the engine's
default (vmap does not speed up compute-bound convolutions there); the GPU targets are
batched >= 4x loop at K = 32 for the small CNN and the engine >= 10x Flower at K = 32
(the ``loop / flower`` column):

    python benchmarks/gpu_throughput.py                                   # CPU-sized defaults
    python benchmarks/gpu_throughput.py --clients 8 32 128 --models cnn resnet18 --device cuda
"""

from __future__ import annotations

import argparse
import resource
import time

import pandas as pd
import torch

from fedpl_core.fl import batched as B
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.server import sample_clients
from fedpl_core.report.tables import save_table
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig


def config(model: str, k: int, a) -> ExperimentConfig:
    kwargs = {"width": 16, "norm": "gn"} if model == "cnn" else {"norm": "gn"}
    return ExperimentConfig(
        dataset="synthetic-cxr",
        image_size=a.size,
        n_train=k * a.per_client,
        n_test=16,
        partition="iid",
        num_clients=k,
        model=model,
        model_kwargs=kwargs,
        method="fedavg_pl",
        engine=EngineConfig(
            rounds=10_000,
            batch_size=a.batch,
            local_iters=a.steps,
            lr=1e-3,
            device=a.device,
            progress=False,
            selection=None,
            eval_every=10_000,
        ),
    )


def peak_memory(device: str) -> float:
    """MiB: the CUDA allocator's peak, or the process's peak resident set."""
    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_rounds(fn, rounds: int, device: str, start: int = 1) -> float:
    """Rounds per second of ``fn(r)`` for rounds ``start .. start + rounds - 1``."""
    sync(device)
    t0 = time.perf_counter()
    for r in range(start, start + rounds):
        fn(r)
    sync(device)
    return rounds / (time.perf_counter() - t0)


def loop_side(cfg):
    sim = build_simulation(cfg)
    return lambda r: sim.step()


def batched_side(cfg, chunk=None):
    """All K clients at once (or ``chunk`` at a time); a chunk that runs out of GPU memory
    is halved (``one.sim.batched_fit``: the size that fitted)."""
    sim = build_simulation(cfg)

    def one(r):
        clients = sample_clients(len(sim.sites), 1.0, cfg.engine.seed, r)
        updates, _ = B.train_round(sim, clients, r, chunk=chunk)
        sim.server.aggregate(updates)

    one.sim = sim
    return one


def plain_side(cfg):
    """A hand-written FedAvg: each round, each client shuffles its samples, gathers its
    batches from the uint8 images and normalises them, ``load_state_dict``, ``model(x)``,
    ``backward``, ``torch.optim.Adam``; the mean of the ``state_dict``s."""
    sim = build_simulation(cfg)
    model, images, dev = sim.work.model, sim.images, sim.device
    clients = [(s.data.indices.to(dev), s.data.labels.to(dev), s.data.mask.to(dev)) for s in sim.sites]
    bs, steps = cfg.engine.batch_size, cfg.engine.local_iters
    gen = torch.Generator().manual_seed(cfg.seed)
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def one(r):
        nonlocal state
        outs = []
        for idx, labels, mask in clients:
            model.load_state_dict(state)
            opt = torch.optim.Adam(model.parameters(), lr=cfg.engine.lr)
            n = len(idx)
            perm = torch.cat(
                [
                    torch.randperm(n, generator=gen)[: n - n % bs or n]
                    for _ in range(-(-steps * bs // max(n - n % bs, 1)))
                ]
            ).to(dev)  # full batches
            for s in range(steps):
                pos = perm[s * bs : (s + 1) * bs]
                x = images[idx[pos]].float().div_(255).sub_(0.5).div_(0.25)
                y, m = labels[pos], mask[pos]
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y, reduction="none")
                (loss * m).sum().div(m.sum().clamp(min=1)).backward()
                opt.step()
            outs.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        state = {k: torch.stack([o[k].float() for o in outs]).mean(0).to(outs[0][k].dtype) for k in outs[0]}

    return one


def flower_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("flwr") is not None


def flower_rounds_per_second(cfg, a) -> float:
    """Flower 1.40's simulation (Ray) of the same rounds through ``fedpl_core.apps.flower``
    (``benchmarks/flower_overhead.py``'s run): each client one CPU and, on a GPU, a
    1/K fraction of it (Flower's advice for many small clients); rounds per second from
    the median round after the first (which also builds the sites in the workers)."""
    import dataclasses
    import statistics
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from flower_overhead import run_flower

    cfg = cfg.replace(engine=dataclasses.replace(cfg.engine, rounds=a.rounds + 1))
    gpus = 1.0 / cfg.num_clients if a.device.startswith("cuda") else 0.0
    times, _, _ = run_flower(cfg, client_cpus=1.0, client_gpus=gpus)
    return 1.0 / statistics.median(times[1:])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[8, 32], help="K values (default 8 32; GPU: 8 32 128)")
    ap.add_argument("--models", nargs="+", default=["cnn"], choices=["cnn", "resnet18"])
    ap.add_argument("--per-client", type=int, default=32, help="images per client (default 32)")
    ap.add_argument("--size", type=int, default=28, help="image side in px (default 28)")
    ap.add_argument("--batch", type=int, default=16, help="batch size (default 16)")
    ap.add_argument("--steps", type=int, default=2, help="local steps a round (default 2)")
    ap.add_argument("--rounds", type=int, default=8, help="timed rounds a turn (default 8)")
    ap.add_argument("--repeats", type=int, default=3, help="turns of each side; the best counts (default 3)")
    ap.add_argument("--chunk", type=int, default=None, help="batched: clients at a time (default: all K)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--no-flower", action="store_true", help="skip Flower's simulation (it starts Ray)")
    a = ap.parse_args(argv)
    rows = []
    for model in a.models:
        for k in a.clients:
            cfg = config(model, k, a)
            row = {"model": model, "K": k, "device": a.device}
            sides = {"loop": loop_side(cfg), "batched": batched_side(cfg, a.chunk), "plain": plain_side(cfg)}
            for fn in sides.values():
                fn(0)  # warm-up, untimed
            rates = {name: [] for name in sides}
            peaks = {name: 0.0 for name in sides}
            for rep in range(a.repeats):  # the sides take turns, so a slow spell of the machine hits all
                for name, fn in sides.items():
                    if a.device.startswith("cuda"):
                        torch.cuda.reset_peak_memory_stats()
                    rates[name].append(time_rounds(fn, a.rounds, a.device, start=1 + rep * a.rounds))
                    peaks[name] = max(peaks[name], peak_memory(a.device))
            for name in sides:
                row[f"{name} rounds/s"] = round(max(rates[name]), 3)
                row[f"{name} peak MiB"] = round(peaks[name], 1)
            row["batched chunk"] = sides["batched"].sim.batched_fit or a.chunk or k
            if flower_installed() and not a.no_flower:
                row["flower rounds/s"] = round(flower_rounds_per_second(cfg, a), 3)
                row["loop / flower"] = round(row["loop rounds/s"] / row["flower rounds/s"], 2)
            else:
                row["flower rounds/s"] = "not measured: " + ("--no-flower" if a.no_flower else "flwr not installed")
            row["batched / loop"] = round(row["batched rounds/s"] / row["loop rounds/s"], 2)
            row["loop / plain"] = round(row["loop rounds/s"] / row["plain rounds/s"], 2)
            print(row, flush=True)
            rows.append(row)
    df = pd.DataFrame(rows)
    paths = save_table(df, f"bench_gpu_throughput_{a.device.split(':')[0]}")
    print(df.to_string(index=False))
    print(f"-> {paths['md']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
