"""Engine overhead: the same sample-steps through the engine (FedAvg, K clients) and
through a plain PyTorch loop, in one process.  Prints plain/engine time (target >= 0.95).

    python benchmarks/engine_overhead.py --model cnn
    python benchmarks/engine_overhead.py --model resnet18 --rounds 2 --per-client 256
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from fedpl_core.data.base import ImageDataset
from fedpl_core.engine import EngineConfig, Preprocess, Simulation, resolve_device
from fedpl_core.losses import masked_bce
from fedpl_core.methods import get_method
from fedpl_core.models import build_model
from fedpl_core.partitions import iid


def data(n: int, c: int, size: int, seed: int = 0) -> ImageDataset:
    rng = np.random.default_rng(seed)
    return ImageDataset(rng.integers(0, 255, (n, 1, size, size), dtype=np.uint8),
                        (rng.random((n, c)) < 0.2).astype(np.float32), [f"c{i}" for i in range(c)])


def plain_loop(model, ds, steps, bs, device, seed=0):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    pre = Preprocess()
    images = torch.from_numpy(ds.images)
    labels = torch.from_numpy(ds.labels)
    if device.type == "cuda":
        images, labels = images.to(device), labels.to(device)
    g = torch.Generator().manual_seed(seed)
    model.train()
    done = 0
    while done < steps:
        perm = torch.randperm(len(ds), generator=g)
        for s in range(0, len(ds) - bs + 1, bs):
            idx = perm[s:s + bs]
            x = pre(images[idx.to(images.device)].to(device))
            y = labels[idx.to(labels.device)].to(device)
            opt.zero_grad(set_to_none=True)
            loss = masked_bce(model(x), y)
            loss.backward()
            opt.step()
            done += 1
            if done == steps:
                break
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-client", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    device = resolve_device(a.device)
    ds = data(a.clients * a.per_client, 8, a.image_size)
    part = iid(ds, a.clients, seed=0)
    steps = a.rounds * a.clients * (a.per_client // a.batch_size)
    t_plain, t_engine = [], []
    for rep in range(a.repeats + 1):  # the first pass warms up (allocator, cudnn), not timed
        torch.manual_seed(0)
        m = build_model(a.model, 8, 1, a.image_size).to(device)
        t0 = time.perf_counter()
        plain_loop(m, ds, steps, a.batch_size, device)
        tp = time.perf_counter() - t0
        torch.manual_seed(0)
        m = build_model(a.model, 8, 1, a.image_size)
        cfg = EngineConfig(rounds=a.rounds, batch_size=a.batch_size, device=a.device, progress=False,
                           eval_every=10**9)
        sim = Simulation(get_method("fedavg"), m, ds, part, None, cfg)
        t0 = time.perf_counter()
        sim.run()
        if device.type == "cuda":
            torch.cuda.synchronize()
        te = time.perf_counter() - t0
        if rep:
            t_plain.append(tp)
            t_engine.append(te)
    tp, te = float(np.median(t_plain)), float(np.median(t_engine))
    print(f"model={a.model} device={device} steps={steps} batch={a.batch_size} size={a.image_size} "
          f"K={a.clients} threads={torch.get_num_threads()}")
    print(f"plain loop : {tp:7.2f} s  ({steps * a.batch_size / tp:8.0f} samples/s)")
    print(f"engine     : {te:7.2f} s  ({steps * a.batch_size / te:8.0f} samples/s)")
    print(f"ratio plain/engine = {tp / te:.3f}")


if __name__ == "__main__":
    main()
