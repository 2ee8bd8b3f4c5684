"""Throughput of ``run_many``'s grid backends: the same 8 small runs (synthetic CXR data,
a small CNN, a few seconds each) serially, in worker processes and as Ray tasks; and, for
several runs sharing one GPU, spawned worker processes against the threads
backend (threads of this process, each run on a CUDA stream of its own).

Each backend writes into its own fresh results folder, so every run is really executed;
the wall time includes starting the workers (forked processes on Linux, spawned elsewhere,
see ``fedpl_core.grid.start_method``; a local Ray with ``--workers`` CPUs, whose start-up
is also reported on its own; "ray (warm)" is a second grid on the Ray that is already up,
as a notebook's later grids see it).  Serial runs with ``cpu_count // workers`` torch
threads, the threads of one worker, so all three do the same arithmetic (the script
checks that the numbers are identical).  Forked workers inherit the driver's imports and
its in-memory data cache (built by the serial pass, about 0.3 s); Ray's workers import
and build everything themselves.

    python benchmarks/grid_throughput.py                  # 8 runs of about 7 s, 2 workers
    python benchmarks/grid_throughput.py --rounds 24      # 8 runs of about 15 s
    python benchmarks/grid_throughput.py --backends serial process --rounds 4
    python benchmarks/grid_throughput.py --device cuda --backends serial spawn streams --workers 4

``spawn`` is the process backend with spawned workers whatever the platform (on a GPU the
process backend spawns anyway once the serial pass has initialised CUDA): one CUDA context
a worker.  ``threads`` runs the grid in ``--workers`` threads of this process, each run in a
CUDA stream of its own (on a CPU, plain threads): one context, kernels that may overlap,
launches that share Python's lock.  Every backend's numbers are checked against the serial
ones.

The fixed costs (starting the workers: forking is immediate, spawning imports torch again,
3-7 s; starting a local Ray, about 6 s) are paid once per process (the process pool is kept
for the next grid) or once per Ray, so the ratio grows with the length of the runs towards
``--workers``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs import grid
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.study import run_many


def base(a) -> ExperimentConfig:
    return ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Cardiomegaly", "Effusion", "Pneumothorax", "Mass"],
        image_size=32,
        n_train=a.n_train,
        n_test=400,
        num_clients=4,
        model_kwargs={"width": 8},
        engine=EngineConfig(rounds=a.rounds, batch_size=32, progress=False, device=a.device),
    )


def parser() -> argparse.ArgumentParser:
    """The command line (``gpu-checks``' ``grids`` step builds one for it)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--backends",
        nargs="+",
        default=["serial", "process", "ray"],
        choices=["serial", "process", "spawn", "threads", "ray"],
    )
    p.add_argument("--device", default="cpu", help="the runs' engine device (cpu, cuda, auto)")
    p.add_argument("--workers", type=int, default=2, help="workers of every backend but serial (one run at a time)")
    p.add_argument("--runs", type=int, default=8, help="methods x seeds: fedavg and fedprox, runs // 2 seeds each")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--n-train", type=int, default=2400)
    return p


def grid_args(name: str, workers: int) -> dict:
    """``run_many``'s ``backend`` and ``workers`` for the backend ``name`` of ``--backends``:
    ``spawn`` is the process backend; the serial backend runs one run at a time, so it gets
    one worker whatever ``--workers`` says (``run_many`` refuses more there)."""
    backend = {"spawn": "process", "ray (warm)": "ray"}.get(name, name)
    return {"backend": backend, "workers": 1 if backend == "serial" else workers}


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    warnings.simplefilter("ignore")
    threads = max(1, (os.cpu_count() or 1) // a.workers)
    torch.set_num_threads(threads)  # serial: the threads of one worker
    cfg, methods, seeds = base(a), ["fedavg", "fedprox"], list(range(a.runs // 2))
    print(
        f"{a.runs} runs ({', '.join(methods)} x seeds {seeds}), {a.rounds} rounds, {a.n_train} training images; "
        f"{os.cpu_count()} cores, {a.workers} workers, {threads} torch thread(s) per run, device {a.device}; "
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    times, numbers = {}, {}
    for backend in a.backends:
        for name in [backend] if backend != "ray" else ["ray", "ray (warm)"]:
            note = ""
            t0 = time.perf_counter()
            if name == "ray":  # the first grid of a process starts the local Ray: it counts in the wall time
                import ray

                ray.init(address="local", num_cpus=a.workers, include_dashboard=False, log_to_driver=False)
                note = f", of which starting Ray {time.perf_counter() - t0:.1f} s"
            elif name == "ray (warm)":
                note = ", Ray already up: a later grid of the same process"
            started = grid.start_method
            if name == "spawn":  # a fresh pool of spawned workers (its start counts)
                grid.shutdown_pools()
                grid.start_method = lambda: "spawn"
            try:
                with tempfile.TemporaryDirectory() as rd:
                    df = run_many(
                        cfg,
                        methods,
                        seeds,
                        rd,
                        progress=False,
                        **grid_args(name, a.workers),
                    )
                    times[name] = time.perf_counter() - t0
            finally:
                grid.start_method = started
            if name == "spawn":
                grid.shutdown_pools()
            numbers[name] = df[df.which == "final"]["auroc_mean"].tolist()
            print(f"{name:10s} wall {times[name]:7.1f} s  ({a.runs / times[name]:.3f} runs/s{note})", flush=True)
    if "serial" in times:
        for b in times:
            if b != "serial":
                same = numbers[b] == numbers["serial"]
                over = times[b] - times["serial"] / a.workers
                print(
                    f"{b:10s} / serial throughput: {times['serial'] / times[b]:.2f}x  (target >= 1.6x; "
                    f"{over:+.1f} s over serial / {a.workers}: worker start-up and the last run alone; numbers "
                    f"{'identical' if same else 'DIFFER'})"
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
