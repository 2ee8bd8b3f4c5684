"""What does training-time augmentation cost on the built-in chest X-rays, and why?

What training views cost: methods that train on views (FedMLP, FedLSM's student, the FixMatch family)
lost about 6 points to baselines that trained on clean images.  This runs ``fedavg`` in
notebook 04's cpu setting of FedMLP's Table 2 at its highest missing level (CXR, m = 7:
one labelled class per client; same data, partition, schedule and seeds) under each
training augmentation, at the notebook's 16 rounds and at ``--scale`` times as many:

* ``none``, ``flip``;
* ``shift`` / ``flip_shift`` as they were before the engine's shift padded by reflection
  (translation by up to 1/8 of the size, **zero** padding: a black band of up to 4 px along
  the border of a 32-px image);
* ``flip_shift`` now (the same translation, **reflect** padding, FixMatch's weak view);
* ``flip_affine``, FedMLP's released transform (rotation +-10 degrees, translation +-2 %).

The zero-padded variants are the old :func:`fedpl_core.fl.preprocess.augment_batch`, kept
here (:func:`zero_padded`) only to measure it, run in this process (the grid's worker
processes, forked once, would not see the patch) and cached in a folder of their own,
since the run id does not know the padding::

    python benchmarks/augmentation_cost.py              # 16 and 64 rounds, 3 seeds
    python benchmarks/augmentation_cost.py --scale 1    # 16 rounds only
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import pandas as pd
import torch

import fedpl_core.fl.preprocess as PP
from fedpl_core.report.tables import paired_difference
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedmlp
from fedpl_core.studies.parameters import prepare

_NEW = PP.augment_batch


def zero_padded(x: torch.Tensor, kind: str, generator, memory_format=torch.contiguous_format) -> torch.Tensor:
    """The engine's former shift: zero padding instead of reflection."""
    b, _, h, w = x.shape
    if "flip" in kind:
        flip = torch.rand(b, generator=generator).lt(0.5)
        x = torch.where(flip.view(b, 1, 1, 1), x.flip(-1), x)
    if "shift" in kind:
        p = max(1, h // 8)
        off = torch.randint(0, 2 * p + 1, (2, b), generator=generator)
        xp = torch.nn.functional.pad(x, (p, p, p, p))
        rows = torch.arange(h)[None, :] + off[0][:, None]
        cols = torch.arange(w)[None, :] + off[1][:, None]
        x = xp.permute(0, 2, 3, 1)[torch.arange(b)[:, None, None], rows[:, :, None], cols[:, None, :]]
        x = x.permute(0, 3, 1, 2).contiguous(memory_format=memory_format)
    return x


#: label -> (EngineConfig.augment, augment function)
VARIANTS = {
    "none": ("none", _NEW),
    "flip": ("flip", _NEW),
    "shift, zero pad (before)": ("shift", zero_padded),
    "flip_shift, zero pad (before)": ("flip_shift", zero_padded),
    "flip_shift, reflect pad (now)": ("flip_shift", _NEW),
    "flip_affine (FedMLP's code)": ("flip_affine", _NEW),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=4, help="also run scale x the notebook's rounds (1: only those)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/augmentation_cost")
    a = ap.parse_args()
    prepare("cpu")
    st = fedmlp.settings("cpu")
    base = st.config("CXR").replace(partition_kwargs={"missing": 7})
    rows, runs = [], {}
    for scale in sorted({1, a.scale}):
        rounds = st.rounds * scale
        for label, (aug, fn) in VARIANTS.items():
            cfg = base.replace(engine=replace(base.engine, rounds=rounds, augment=aug, eval_every=max(1, rounds // 8)))
            old = fn is zero_padded
            PP.augment_batch = fn  # the patch reaches this process only: the old variants run here, serially
            t = time.time()
            try:
                df = run_many(
                    cfg,
                    [("FedAvg", {"method": "fedavg"})],
                    st.seeds,
                    progress=False,
                    workers=1 if old else a.workers,
                    backend="serial" if old else None,
                    results_dir=f"{a.results_dir}/{'zero' if old else 'now'}",
                )
            finally:
                PP.augment_batch = _NEW
            d = df[df["which"] == "final"].assign(label=label)
            runs[(rounds, label)] = d
            rows.append(
                {
                    "rounds": rounds,
                    "augmentation": label,
                    "AUROC": d["auroc_mean"].mean() * 100,
                    "sd": d["auroc_mean"].std(ddof=1) * 100,
                    "s": round(time.time() - t),
                }
            )
    out = pd.DataFrame(rows)
    for (rounds, label), d in runs.items():
        if label != "none":
            diff = paired_difference(pd.concat([d, runs[(rounds, "none")]]), label, "none", metric="auroc_mean")
            out.loc[(out.rounds == rounds) & (out.augmentation == label), "vs none"] = diff["diff"]
            out.loc[(out.rounds == rounds) & (out.augmentation == label), "p"] = diff["p"]
    pd.set_option("display.width", 200)
    print(out.round({"AUROC": 1, "sd": 1, "vs none": 1, "p": 3}).to_string(index=False))


if __name__ == "__main__":
    main()
