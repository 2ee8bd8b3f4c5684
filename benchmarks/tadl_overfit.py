"""TADL where local training should over-fit: FedPSL's Table II federation at the paper's n = 1,000
images per client and its 10 local epochs a round, on the small CNN (5 rounds by default, half
the paper's 10, to fit 2 CPU cores; ``--rounds 10`` is the paper's 100 epochs), at the image
size and Adam learning rate of notebook 01's cpu profile (``--image-size 32 --lr 1e-3`` gives
the paper's lr at the earlier profile's size).

The cpu profile of ``notebooks/01_fedpsl.ipynb`` (200 images, 32 epochs) under-fits: FedAVG's best
round is its last, and TADL costs points there.  TADL is built against over-fitting of scarce local
data, so this script runs the paper's regime, where local training should over-fit (it prints
whether FedAVG's best round comes before the last), and compares FedAVG, FedPSL w/ TADL and
FedPSL on the last round and on the best round (selected on the test set: optimistic), paired
over seeds.  Uses the one runner and its cache::

    python benchmarks/tadl_overfit.py                       # 3 seeds, 2 workers: about 7 min on 2 cores
    python benchmarks/tadl_overfit.py --rounds 4 --local-epochs 5 --seeds 0 1   # shorter
"""

from __future__ import annotations

import argparse
import time

import torch

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.report.tables import describe_difference, paired_difference
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedpsl as study


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="images per client (the paper: 1,000)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--local-epochs", type=float, default=10.0)
    ap.add_argument("--image-size", type=int, default=None, help="default: the cpu profile's")
    ap.add_argument("--lr", type=float, default=None, help="default: the cpu profile's")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/tadl_overfit")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cpu = study.settings("cpu")
    size, lr = a.image_size or cpu.image_size, a.lr or cpu.engine.lr
    eng = EngineConfig(
        rounds=a.rounds,
        local_epochs=a.local_epochs,
        optimizer="adam",
        lr=lr,
        normalize="instance",
        augment="flip_shift",
        batch_size=32,
        eval_every=1,
        eval_batch_size=500,
        selection="auroc_mean",
        progress=False,
    )
    base = study.config(
        "II",
        pool=a.n,
        image_size=size,
        test_pos=cpu.test_pos,
        test_neg=cpu.test_neg,
        n=a.n,
        model=cpu.model,
        model_kwargs=cpu.model_kwargs,
        engine=eng,
    )
    methods = study.paper_methods(["FedAVG", "FedPSL w/ TADL", "FedPSL"], first_order=True, verbose=False)
    t0 = time.perf_counter()
    df = run_many(
        base,
        methods,
        a.seeds,
        a.results_dir,
        settings={"table": {"partition_kwargs": study.sizes_kwargs(a.n)}},
        workers=a.workers,
        progress=False,
    )
    print(
        f"{len(a.seeds)} seeds, n = {a.n}, {size} px, lr {lr:g}, {a.rounds} rounds x {a.local_epochs:g} epochs: "
        f"{time.perf_counter() - t0:.0f} s"
    )
    for which in ("final", "best"):
        d = df[df["which"] == which]
        means = d.groupby("label", sort=False)["auroc_mean"].agg(["mean", "std"]).round(3)
        print(f"\n{'last round' if which == 'final' else 'best round (test-selected, optimistic)'}:\n{means}")
        for lab in ("FedPSL w/ TADL", "FedPSL"):
            print("  " + describe_difference(paired_difference(df, lab, "FedAVG", which=which)))
    best = df[(df["which"] == "best") & (df["label"] == "FedAVG")]["round"]
    print(
        f"\nFedAVG's best round per seed: {best.tolist()} of {a.rounds} "
        + (
            "(it over-fits: the best round comes before the last)"
            if (best < a.rounds).all()
            else "(no clear over-fitting)"
        )
    )


if __name__ == "__main__":
    main()
