"""Calibration of the built-in synthetic data (results in the README).

With a small CNN at 32x32 and 8 clients of a few thousand images each:
* a centralised model trained on full labels (Oracle) should reach a mean AUROC in
  [0.75, 0.97] with per-class AUROCs spread over at least 0.10;
* in the one-labelled-class-per-client setting, FedAvg treating missing labels as
  negatives should end at least 5 AUROC points below it.

    python benchmarks/calibration.py                   # 8 x 2000 images, 10 rounds
    python benchmarks/calibration.py --per-client 500 --rounds 5 --methods oracle fedavg
"""

from __future__ import annotations

import argparse

from fedpl_core.data import synthetic as S
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-client", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--methods", nargs="+", default=["oracle", "fedavg", "fedavg_pl", "centralized"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="auto")
    a = ap.parse_args()
    base = ExperimentConfig(
        classes=S.FEDMLP_CXR8,
        image_size=a.image_size,
        n_train=a.per_client * a.clients,
        n_test=4000,
        num_clients=a.clients,
        partition="missing_classes",
        partition_kwargs={"missing": len(S.FEDMLP_CXR8) - 1},
        seed=a.seed,
        engine=EngineConfig(rounds=a.rounds, device=a.device, progress=False),
    )
    res = {}
    for m in a.methods:
        r = run(base.replace(method=m))
        res[m] = r
        pc = [v for v in r.final["auroc_per_class"] if v is not None]
        print(
            f"{m:12s} mean AUROC {r.final['auroc_mean']:.3f}  per-class min {min(pc):.3f} max {max(pc):.3f} "
            f"spread {max(pc) - min(pc):.3f}  ({r.timings['total_s']:.0f} s)",
            flush=True,
        )
        print("    " + "  ".join(f"{c}={v:.3f}" for c, v in zip(r.class_names, r.final["auroc_per_class"])))
    if "oracle" in res and "fedavg" in res:
        o, f = res["oracle"].final, res["fedavg"].final
        pc = [v for v in o["auroc_per_class"] if v is not None]
        print(
            f"\noracle mean in [0.75, 0.97]: {0.75 <= o['auroc_mean'] <= 0.97}; "
            f"spread >= 0.10: {max(pc) - min(pc) >= 0.10}; "
            f"fedavg gap = {100 * (o['auroc_mean'] - f['auroc_mean']):.1f} points (>= 5: "
            f"{o['auroc_mean'] - f['auroc_mean'] >= 0.05})"
        )


if __name__ == "__main__":
    main()
