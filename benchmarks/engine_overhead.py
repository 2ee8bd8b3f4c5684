"""Engine overhead: FedAvg through the engine and through a plain PyTorch loop.

Both sides do the same computation: the same model and initial weights, the same data
(uint8 images turned into ``(x/255 - 0.5)/0.25`` floats per batch), the same clients,
the same batch order (client k's positions in round r drawn from the seed the engine
uses), a fresh Adam per client and round, the size-weighted mean of the clients'
arrays (float64 sums), and the same test-set evaluation (every ``--eval-every`` rounds
and after the last).  The plain loop is what a user writes by hand: ``load_state_dict``,
``model(x)``, ``loss.backward()``, ``state_dict()``; it may use every lever the engine
uses (``--channels-last`` and ``--amp`` switch them on for both sides), so the ratio
measures the engine, not a trick.  After each pair of runs the final global arrays of
the two sides are compared (``max|dw|``: float rounding at most).

Prints plain time, engine time and plain/engine (> 1: the engine is faster):

    python benchmarks/engine_overhead.py --model cnn
    python benchmarks/engine_overhead.py --model cnn --channels-last     # both layouts, both sides
    python benchmarks/engine_overhead.py --model resnet18 --rounds 1 --per-client 256
    OMP_NUM_THREADS=1 python benchmarks/engine_overhead.py --model cnn --threads 1

GPU plan (written without a GPU run; see benchmarks/README.md for the figures)
--------------------------------------------------------------------------------
* **Images resident on the device.**  The engine already moves the uint8 training images
  to the GPU when they fit (< 2**31 elements) and gathers each batch there
  (``index_select`` on the device: no host round trip); larger sets stay in host memory
  and each batch is gathered into pinned memory (caching host allocator) and uploaded
  asynchronously.  Next step: keep each client's ``labels``/``mask`` on the device too
  (today two small host-to-device copies per batch).
* **AMP (bf16).**  ``EngineConfig(amp=True)`` runs forward and loss under
  ``torch.autocast("cuda", dtype=torch.bfloat16)``; bf16 needs no GradScaler.
  The loss is computed on ``logits.float()``.
* **channels_last.**  Model and batches in NHWC (``EngineConfig(channels_last=True)``):
  tensor-core convolutions without layout transposes; expected to matter most with bf16.
* **No host syncs in the step.**  ``local_train`` sums the losses on the device and reads
  them once per client-round; the divergence check happens then.  ``set_to_none`` grads,
  ``foreach`` Adam (``fused=True`` is a candidate on CUDA).
* **CUDA graphs** (maybe): a client's local steps have fixed shapes (full batches only),
  so one captured train step (``torch.cuda.graphs.make_graphed_callables`` or
  ``torch.compile(mode="reduce-overhead")``) could be replayed for every client; the
  augmentation and batch gather would have to move inside the graph (device generator).
  Worth it for small models where kernel-launch latency dominates.
* **vmap over clients** for many small clients (K in the hundreds, a few batches each):
  ``params = torch.func.stack_module_state([model] * K)`` gives ``[K, ...]`` arrays;
  ``torch.func.vmap(grad_fn, in_dims=(0, 0, 0, 0))`` over
  ``functional_call(model, (p, b), x_k)`` runs one step of all K clients as batched
  kernels ([K, B, C, H, W] input), with Adam applied to the stacked arrays
  (``torch._foreach`` ops or a hand-written vectorised Adam).  FedAvg's mean is then one
  weighted ``sum(0)`` over the stacked arrays.  Limits: clients must have equal step
  counts per round (pad with masked steps or group clients by size), BatchNorm in
  training mode needs ``functional_call`` with per-client buffers (supported through
  ``stack_module_state``'s buffers, in-place running-stat updates need
  ``replace_all_batch_norm_modules_`` or tracked stats off), and method hooks written
  against one working model (``ClientContext``) do not vectorise: this would be a
  separate fast path for FedAvg-like methods.  Measured on CPU it was 0.67x (the
  convolutions are already compute bound there), so it is a GPU-only lever: on a GPU a
  small CNN with B=64 uses a fraction of the device and K clients at once fill it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from fedpl_core.data.base import ImageDataset
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import derive_seed
from fedpl_core.fl.simulation import Simulation
from fedpl_core.fl.site import resolve_device
from fedpl_core.methods import get_method
from fedpl_core.nn.losses import masked_bce
from fedpl_core.nn.metrics import evaluate as compute_metrics
from fedpl_core.nn.models import build_model
from fedpl_core.partitions import iid


def data(n: int, c: int, size: int, seed: int = 0) -> ImageDataset:
    """Random uint8 images with 20 % positive labels (timing only)."""
    rng = np.random.default_rng(seed)
    return ImageDataset(
        rng.integers(0, 255, (n, 1, size, size), dtype=np.uint8),
        (rng.random((n, c)) < 0.2).astype(np.float32),
        [f"c{i}" for i in range(c)],
    )


def plain_fedavg(
    model,
    train: ImageDataset,
    client_indices,
    test: ImageDataset | None,
    rounds: int,
    bs: int,
    device,
    lr: float = 1e-3,
    seed: int = 0,
    eval_every: int = 10**9,
    eval_bs: int = 512,
    channels_last: bool = False,
    amp: bool = False,
):
    """FedAvg written by hand; returns the final global state and the last metrics."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(device, memory_format=fmt)
    images, labels = torch.from_numpy(train.images), torch.from_numpy(train.labels)
    if device.type == "cuda":
        images, labels = images.to(device), labels.to(device)
    clients = [torch.as_tensor(ix).to(images.device) for ix in client_indices]
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp and device.type == "cuda")
    global_sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    metrics = None
    for r in range(rounds):
        states, sizes = [], []
        for k, idx in enumerate(clients):
            model.load_state_dict(global_sd)
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            model.train()
            g = torch.Generator().manual_seed(derive_seed(seed, r, k))  # the engine's batch order
            n = len(idx)
            b = min(bs, n)
            perm = torch.randperm(n, generator=g).to(images.device)
            for s in range(0, n - b + 1, b):
                rows = idx[perm[s : s + b]]
                x = ((images[rows].float() / 255.0 - 0.5) / 0.25).contiguous(memory_format=fmt)
                y = labels[rows]
                opt.zero_grad(set_to_none=True)
                with autocast:
                    loss = masked_bce(model(x).float(), y)
                loss.backward()
                opt.step()
            states.append({k2: v.detach().clone() for k2, v in model.state_dict().items()})
            sizes.append(n)
        w = torch.tensor(sizes, dtype=torch.float64)
        w = (w / w.sum()).tolist()
        for key, v in global_sd.items():
            if v.is_floating_point():
                acc = torch.zeros_like(v, dtype=torch.float64)
                for wi, st in zip(w, states):
                    acc += st[key].double() * wi
                global_sd[key] = acc.to(v.dtype)
            else:
                global_sd[key] = torch.stack([st[key] for st in states]).max(0).values
        if test is not None and ((r + 1) % eval_every == 0 or r + 1 == rounds):
            model.load_state_dict(global_sd)
            model.eval()
            timgs = torch.from_numpy(test.images)
            probs = []
            with torch.no_grad(), autocast:
                for s in range(0, len(timgs), eval_bs):
                    x = ((timgs[s : s + eval_bs].to(device).float() / 255.0 - 0.5) / 0.25).contiguous(memory_format=fmt)
                    probs.append(torch.sigmoid(model(x).float()))
            metrics = compute_metrics(
                test.labels,
                torch.cat(probs).cpu().numpy(),
                task=test.task,
                class_names=test.class_names,
                mask=test.label_mask,
            )
    if device.type == "cuda":
        torch.cuda.synchronize()
    return global_sd, metrics


def engine_fedavg(model, train, part, test, a, channels_last: bool):
    cfg = EngineConfig(
        rounds=a.rounds,
        batch_size=a.batch_size,
        device=a.device,
        progress=False,
        eval_every=a.eval_every,
        channels_last=channels_last,
        amp=a.amp,
        selection=None,
    )
    sim = Simulation(get_method("fedavg"), model, train, part, test, cfg)
    sim.run()
    if sim.device.type == "cuda":
        torch.cuda.synchronize()
    return sim.server.global_state, sim.history[-1].get("auroc_mean")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-client", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--classes", type=int, default=8)
    ap.add_argument("--test", type=int, default=1024, help="test-set size (0: no evaluation)")
    ap.add_argument("--eval-every", type=int, default=10**9, help="evaluate every that many rounds and after the last")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast on both sides (CUDA only)")
    ap.add_argument(
        "--channels-last", action="store_true", help="run both sides in both layouts (NCHW and channels_last)"
    )
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's default)")
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    device = resolve_device(a.device)
    ds = data(a.clients * a.per_client + a.test, a.classes, a.image_size)
    train, test = ds.subset(np.arange(a.clients * a.per_client)), None
    if a.test:
        test = ds.subset(np.arange(a.clients * a.per_client, len(ds)))
    part = iid(train, a.clients, seed=0)
    client_indices = [c.indices for c in part.clients]
    layouts = [False, True] if a.channels_last else [False]
    times = {(side, cl): [] for side in ("plain", "engine") for cl in layouts}
    check = {}

    def fresh():
        torch.manual_seed(0)
        return build_model(a.model, a.classes, 1, a.image_size)

    for rep in range(a.repeats + 1):  # the first pass warms up (allocator, oneDNN / cuDNN), not timed
        for cl in layouts:
            m = fresh()
            t0 = time.perf_counter()
            sd_p, met = plain_fedavg(
                m,
                train,
                client_indices,
                test,
                a.rounds,
                a.batch_size,
                device,
                eval_every=a.eval_every,
                channels_last=cl,
                amp=a.amp,
            )
            tp = time.perf_counter() - t0
            m = fresh()
            t0 = time.perf_counter()
            sd_e, auc_e = engine_fedavg(m, train, part, test, a, cl)
            te = time.perf_counter() - t0
            if rep:
                times["plain", cl].append(tp)
                times["engine", cl].append(te)
            dw = max(float((sd_p[k].double() - sd_e[k].double()).abs().max()) for k in sd_e)
            check[cl] = (dw, None if met is None else met["auroc_mean"], auc_e)
    steps = a.rounds * a.clients * max(1, a.per_client // a.batch_size)
    env = os.environ.get("OMP_NUM_THREADS", "unset")
    print(
        f"model={a.model} device={device} K={a.clients} per_client={a.per_client} rounds={a.rounds} "
        f"steps={steps} batch={a.batch_size} size={a.image_size} classes={a.classes} test={a.test} "
        f"threads={torch.get_num_threads()} (OMP_NUM_THREADS={env}) amp={a.amp} "
        f"median of {a.repeats} after 1 warm-up; load average {os.getloadavg()[0]:.2f}"
    )
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"{'layout':<14}{'plain s':>9}{'engine s':>10}{'plain/engine':>14}{'max|dw|':>10}{'auroc p/e':>16}")
    for cl in layouts:
        dw, ap_, ae = check[cl]
        auc = "-" if ap_ is None else f"{ap_:.4f}/{ae:.4f}"
        print(
            f"{'channels_last' if cl else 'NCHW':<14}{med['plain', cl]:>9.2f}{med['engine', cl]:>10.2f}"
            f"{med['plain', cl] / med['engine', cl]:>14.3f}{dw:>10.1e}{auc:>16}"
        )
    if a.channels_last:
        print(
            f"lever channels_last: plain {med['plain', False] / med['plain', True]:.3f}x, "
            f"engine {med['engine', False] / med['engine', True]:.3f}x; "
            f"plain NCHW / engine channels_last = {med['plain', False] / med['engine', True]:.3f} "
            "(not an overhead ratio: the plain loop can use channels_last too)"
        )


if __name__ == "__main__":
    main()
