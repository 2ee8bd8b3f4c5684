"""Learnability check of the synthetic chest X-rays (not a test).

Trains a small CNN (3 conv layers + BN + ReLU, global average pooling, linear head)
centrally on fully labelled synthetic images and prints per-class AUROC on a held-out
test set drawn from the same distribution (different seed).  Used to tune the finding
registry of ``fedpl_core.data.synthetic`` so that some findings are easy and some hard.

    python benchmarks/synthetic_learnability.py --n-train 8000 --n-test 4000 --epochs 5 --balanced-test 300
    python benchmarks/synthetic_learnability.py --task skin
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from sklearn.metrics import roc_auc_score

from fedpl_core.data import synthetic as syn


def small_cnn(in_ch: int, n_out: int, width: int = 32) -> nn.Module:
    def block(i, o, pool):
        layers = [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
        return layers + ([nn.MaxPool2d(2)] if pool else [])

    return nn.Sequential(
        *block(in_ch, width, True),
        *block(width, 2 * width, True),
        *block(2 * width, 2 * width, False),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(2 * width, n_out),
    )


def to_tensor(images: np.ndarray) -> torch.Tensor:
    x = torch.from_numpy(images).float() / 255.0
    return (x - x.mean(dim=(1, 2, 3), keepdim=True)) / (x.std(dim=(1, 2, 3), keepdim=True) + 1e-3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=["cxr", "skin"], default="cxr")
    p.add_argument("--classes", default="NIH14", help="NIH14, FEDMLP_CXR8, FEDPSL6, FEDPSL8 or comma-separated names")
    p.add_argument("--n-train", type=int, default=8000)
    p.add_argument("--n-test", type=int, default=4000)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--strength", type=float, default=1.0)
    p.add_argument(
        "--no-pos-weight",
        dest="pos_weight",
        action="store_false",
        help="plain BCE instead of BCE weighted by N_neg/N_pos per class (FedPSL's loss)",
    )
    p.add_argument(
        "--balanced-test", type=int, default=0, help="also evaluate on FedPSL's balanced test (k pos + k neg per class)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    t0 = time.time()
    if a.task == "cxr":
        classes = getattr(syn, a.classes) if hasattr(syn, a.classes) else a.classes.split(",")
        train = syn.make_cxr(a.n_train, classes, a.image_size, seed=a.seed, strength=a.strength)
        test = syn.make_cxr(a.n_test, classes, a.image_size, seed=a.seed + 1000, strength=a.strength)
    else:
        train = syn.make_skin(a.n_train, image_size=a.image_size, seed=a.seed, strength=a.strength)
        test = syn.make_skin(a.n_test, image_size=a.image_size, seed=a.seed + 1000, strength=a.strength)
    print(f"data: {time.time() - t0:.1f} s; {train.summary()}")
    x, y = to_tensor(train.images), torch.from_numpy(train.labels)
    model = small_cnn(train.channels, train.num_classes, a.width)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if train.task == syn.MULTICLASS:
        loss_fn = nn.CrossEntropyLoss()
    else:
        pw = (len(y) - y.sum(0)) / y.sum(0).clamp(min=1) if a.pos_weight else None
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=pw)
    for ep in range(a.epochs):
        model.train()
        perm, tot = torch.randperm(len(x)), 0.0
        for i in range(0, len(x), a.batch_size):
            b = perm[i : i + a.batch_size]
            out = model(x[b])
            loss = loss_fn(out, y[b].argmax(1)) if train.task == syn.MULTICLASS else loss_fn(out, y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(b)
        print(f"epoch {ep + 1}: loss {tot / len(x):.4f} ({time.time() - t0:.0f} s)")

    def predict(ds):
        model.eval()
        with torch.no_grad():
            out = torch.cat([model(to_tensor(ds.images[i : i + 512])) for i in range(0, len(ds), 512)])
        return (out.softmax(1) if ds.task == syn.MULTICLASS else out.sigmoid()).numpy()

    sets = [("test", test, predict(test))]
    if a.balanced_test and a.task == "cxr":
        bt = syn.make_balanced_test(
            classes, a.balanced_test, a.balanced_test, a.image_size, seed=a.seed + 2000, strength=a.strength
        )
        sets.append(("balanced", bt, predict(bt)))
    print(f"\n{'class':<28}{'train pos':>10}" + "".join(f"{n + ' pos':>14}{'AUROC':>8}" for n, _, _ in sets))
    aucs = {n: [] for n, _, _ in sets}
    for j, c in enumerate(train.class_names):
        row = f"{c:<28}{int(train.labels[:, j].sum()):>10}"
        for n, ds, pr in sets:
            idx = ds.extra["blocks"][c] if n == "balanced" else np.arange(len(ds))
            yt = ds.labels[idx, j]
            auc = roc_auc_score(yt, pr[idx, j]) if 0 < yt.sum() < len(yt) else float("nan")
            aucs[n].append(auc)
            row += f"{int(yt.sum()):>14}{auc:>8.3f}"
        print(row)
    for n, v in aucs.items():
        v = np.array(v)
        print(
            f"{n}: mean AUROC {np.nanmean(v):.3f}, min {np.nanmin(v):.3f}, max {np.nanmax(v):.3f}, "
            f"spread {np.nanmax(v) - np.nanmin(v):.3f}"
        )
    if train.task == syn.MULTICLASS:
        acc = (sets[0][2].argmax(1) == test.labels.argmax(1)).mean()
        print(f"accuracy {acc:.3f}")
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
