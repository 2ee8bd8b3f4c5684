"""How the engine's time per round grows with the number of clients K (at a fixed total
of training samples) and with the number of classes C.

Every run: FedAvg (global evaluation) and optionally personalised methods (FedBN: one
test-set pass per client, PFL: one encoder pass and K heads), a small CNN, random
uint8 images, an IID partition, one local epoch, evaluation on the test set every round.
The time per round is the median over rounds 2..R of the engine's own ``train_time``
and ``eval_time`` (round 1 warms up).  With the total fixed, training does the same
sample-steps at every K, so the growth of ``train s`` with K is the per-client
overhead (payload load, optimizer reset, state copy, aggregation): it should be linear
in K with a small slope; ``eval s`` is flat for global methods and linear in K for
FedBN.  Writes ``figures/engine_scaling.csv``.

    python benchmarks/scaling.py                      # K = 8, 32, 128; C = 4, 14, 40
    python benchmarks/scaling.py --methods fedavg fedbn pfl --threads 1
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from fedpl_core.base.fileio import atomic_write
from fedpl_core.data.base import ImageDataset
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.simulation import Simulation
from fedpl_core.methods import get_method
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import iid


def data(n: int, c: int, size: int, seed: int = 0) -> ImageDataset:
    rng = np.random.default_rng(seed)
    return ImageDataset(
        rng.integers(0, 255, (n, 1, size, size), dtype=np.uint8),
        (rng.random((n, c)) < 0.2).astype(np.float32),
        [f"c{i}" for i in range(c)],
    )


def time_per_round(method: str, k: int, c: int, a) -> dict:
    ds = data(a.total + a.test, c, a.image_size)
    train, test = ds.subset(np.arange(a.total)), ds.subset(np.arange(a.total, len(ds)))
    part = iid(train, k, seed=0)
    torch.manual_seed(0)
    model = build_model("cnn", c, 1, a.image_size, width=a.width)
    cfg = EngineConfig(
        rounds=a.rounds, batch_size=a.batch_size, progress=False, selection=None, channels_last=a.channels_last
    )
    t0 = time.perf_counter()
    sim = Simulation(get_method(method), model, train, part, test, cfg)
    setup = time.perf_counter() - t0
    h = sim.run()
    tr = float(np.median([r["train_time"] for r in h[1:]]))
    ev = float(np.median([r.get("eval_time", 0.0) for r in h[1:]]))
    return {
        "method": method,
        "K": k,
        "C": c,
        "n_total": a.total,
        "n_test": a.test,
        "batch": a.batch_size,
        "image_size": a.image_size,
        "width": a.width,
        "threads": torch.get_num_threads(),
        "channels_last": a.channels_last,
        "setup_s": round(setup, 4),
        "train_s": round(tr, 4),
        "eval_s": round(ev, 4),
        "round_s": round(tr + ev, 4),
        "train_ms_per_client": round(1000 * tr / k, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[8, 32, 128])
    ap.add_argument("--classes", type=int, nargs="+", default=[4, 14, 40])
    ap.add_argument("--fixed-classes", type=int, default=14, help="C while K varies")
    ap.add_argument("--fixed-clients", type=int, default=8, help="K while C varies")
    ap.add_argument("--methods", nargs="+", default=["fedavg", "fedbn"])
    ap.add_argument("--total", type=int, default=4096, help="training samples in all (fixed)")
    ap.add_argument("--test", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=16)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default="figures/engine_scaling.csv")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    warnings.filterwarnings("ignore", message=".*has 0 positives")  # tiny random clients at K = 128
    runs = [(m, k, a.fixed_classes) for m in a.methods for k in a.clients]
    runs += [(m, a.fixed_clients, c) for m in a.methods for c in a.classes if (m, a.fixed_clients, c) not in runs]
    print(
        f"total={a.total} test={a.test} batch={a.batch_size} size={a.image_size} width={a.width} "
        f"threads={torch.get_num_threads()} (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}) "
        f"rounds={a.rounds} (median of rounds 2..)"
    )
    print(f"{'method':<8}{'K':>5}{'C':>4}{'setup s':>9}{'train s':>9}{'eval s':>8}{'round s':>9}{'ms/client':>11}")
    rows = []
    for m, k, c in runs:
        r = time_per_round(m, k, c, a)
        rows.append(r)
        print(
            f"{m:<8}{k:>5}{c:>4}{r['setup_s']:>9.3f}{r['train_s']:>9.3f}{r['eval_s']:>8.3f}{r['round_s']:>9.3f}"
            f"{r['train_ms_per_client']:>11.2f}",
            flush=True,
        )
    out = Path(a.out)
    with atomic_write(out, "w") as f:  # a link planted at --out is replaced, not written through
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
