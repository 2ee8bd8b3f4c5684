"""Flower overhead: the same FedAvg rounds through the in-process engine and through
Flower 1.40's simulation runtime (Ray), via ``fedpl_core.apps.flower``.

Same work on both sides: one ``ExperimentConfig`` (synthetic-cxr, a missing-classes
partition over 8 clients, the small CNN, FedAvg, 1 local epoch), the same seeds.  Timed
per round: from sending the payloads to the new global model (the engine's
``train_time``; the strategy's ``train_time``: ``configure_train`` to the end of
``aggregate_train``), without evaluation.  Round 1 of the Flower run also builds the
sites inside the Ray workers, so the steady state is the median of rounds 2..R; the
Flower run's wall time including Ray's start is printed too.  A third column runs the
Flower strategy and ClientApp in this process (``LocalGrid``: every message through
protobuf, no Ray), separating serialisation from the runtime's scheduling.  After the
runs the global arrays of the three are compared (``max|dw|``).

    FLWR_TELEMETRY_ENABLED=0 python benchmarks/flower_overhead.py
    FLWR_TELEMETRY_ENABLED=0 python benchmarks/flower_overhead.py --rounds 4 --n-train 4000 --threads 2

``--threads`` (default 1) is torch's thread count in the engine, the LocalGrid run and
each ClientApp; Flower runs ``cores / client-cpus`` ClientApps at a time, each in a Ray
worker.  With equal thread counts the three give the same global weights (max|dw| 0);
with different counts float rounding differs and Adam amplifies it over the rounds
(1 vs 2 threads: 3e-4 after round 1, 0.09 after round 4, on the engine alone).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")

import torch  # noqa: E402

from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.build import build_simulation  # noqa: E402
from fedpl_core.runs.experiment_config import ExperimentConfig


def experiment(a) -> ExperimentConfig:
    return ExperimentConfig(
        name="flower-overhead",
        dataset="synthetic-cxr",
        n_train=a.n_train,
        n_test=200,
        image_size=32,
        num_clients=a.clients,
        partition="missing_classes",
        model="cnn",
        method="fedavg",
        seed=0,
        engine=EngineConfig(
            rounds=a.rounds,
            local_epochs=1.0,
            batch_size=32,
            lr=1e-3,
            device="cpu",
            selection=None,
            progress=False,
            eval_every=10**6,
        ),
    )


def run_engine(cfg: ExperimentConfig):
    sim = build_simulation(cfg)
    t0 = time.perf_counter()
    times = []
    for _ in range(cfg.engine.rounds):
        rec = sim.step()
        times.append(rec["train_time"])
    return times, time.perf_counter() - t0, sim.server.global_state


def _parts(cfg: ExperimentConfig):
    from fedpl_core.apps.flower import FedplStrategy, FlowerSite, make_client_app

    server_sim = build_simulation(cfg)
    strategy = FedplStrategy(server_sim.server, server_sim.cfg)

    threads = torch.get_num_threads()

    def site(context):
        torch.set_num_threads(threads)
        return FlowerSite.from_simulation(build_simulation(cfg), int(context.node_config["partition-id"]))

    return strategy, make_client_app(site)


def run_local(cfg: ExperimentConfig):
    from fedpl_core.apps.flower import LocalGrid

    strategy, app = _parts(cfg)
    grid = LocalGrid(app, [{"partition-id": k} for k in range(cfg.num_clients)])
    t0 = time.perf_counter()
    strategy.start(grid, strategy.global_arrays(), num_rounds=cfg.engine.rounds)
    return [h["train_time"] for h in strategy.history], time.perf_counter() - t0, strategy.global_state


def run_flower(cfg: ExperimentConfig, client_cpus: float, client_gpus: float = 0.0):
    from flwr.app import Context
    from flwr.serverapp import Grid, ServerApp
    from flwr.simulation import run_simulation

    strategy, client_app = _parts(cfg)
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy.start(grid, strategy.global_arrays(), num_rounds=cfg.engine.rounds)

    t0 = time.perf_counter()
    run_simulation(
        server_app,
        client_app,
        num_supernodes=cfg.num_clients,
        backend_config={
            "client_resources": {"num_cpus": client_cpus, "num_gpus": client_gpus},
            "init_args": {"logging_level": "ERROR", "log_to_driver": False},
        },
    )
    wall = time.perf_counter() - t0
    if len(strategy.history) != cfg.engine.rounds:
        raise SystemExit(f"the Flower run did {len(strategy.history)} of {cfg.engine.rounds} rounds")
    return [h["train_time"] for h in strategy.history], wall, strategy.global_state


def max_dw(a, b) -> float:
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--client-cpus", type=float, default=1.0, help="Ray CPUs per ClientApp")
    p.add_argument("--threads", type=int, default=1, help="torch threads: engine, LocalGrid, each ClientApp")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    cfg = experiment(a)
    print(
        f"FedAvg, small CNN, synthetic-cxr {a.n_train} images, {a.clients} clients, {a.rounds} rounds; "
        f"{os.cpu_count()} cores, torch threads {torch.get_num_threads()}, flwr client cpus {a.client_cpus:g}"
    )
    e_times, e_wall, e_state = run_engine(cfg)
    l_times, l_wall, l_state = run_local(cfg)
    f_times, f_wall, f_state = run_flower(cfg, a.client_cpus)

    def steady(ts):
        return statistics.median(ts[1:]) if len(ts) > 1 else ts[0]

    rows = [
        ("engine (in-process)", e_times, e_wall),
        ("Flower strategy + ClientApp, LocalGrid", l_times, l_wall),
        ("Flower simulation runtime (Ray)", f_times, f_wall),
    ]
    print(f"{'':42s} {'round 1 s':>10s} {'rounds 2+ s':>12s} {'wall s':>8s} {'x engine':>9s}")
    for name, ts, wall in rows:
        print(f"{name:42s} {ts[0]:10.2f} {steady(ts):12.2f} {wall:8.1f} {steady(ts) / steady(e_times):9.2f}")
    print(
        f"Flower / engine per round (rounds 2+): {steady(f_times) / steady(e_times):.2f}x; "
        f"LocalGrid / engine: {steady(l_times) / steady(e_times):.2f}x"
    )
    print(f"max|dw| vs engine: LocalGrid {max_dw(l_state, e_state):.2e}, Flower {max_dw(f_state, e_state):.2e}")


if __name__ == "__main__":
    main()
