"""Do notebooks 01's and 02's headline comparisons depend on their curves still rising?

Their cpu profiles stop while the mean-AUROC curves still rise (16 rounds in 01, 10 in 02:
what fits 15 minutes a notebook on 2 cores).  This runs each headline pair in exactly the
notebook's cpu setting (same data, partition, schedule and seeds; only ``rounds`` grows,
the learning rate does not depend on it) for ``--scale`` times the rounds, and prints, at the
notebook's last round and at the long run's:

* each method's mean AUROC and its late gain (``tables.late_gain``: the rise over about the
  last quarter of the rounds, in points);
* the difference between the pair, paired on the seed, with its t-test
  (``tables.paired_difference``);
* for a method that pseudo-labels (FedLSM), the share of unknown entries that carry a
  pseudo-label and the precision of the positive ones, scored against the hidden labels.

The first part of a long run *is* the notebook's run (rounds 1..R are the same computation),
so both columns come from one run per (method, seed)::

    python benchmarks/long_runs.py               # 01 Table II: 64 rounds; 02 Tasks 1 and 2: 40 rounds
    python benchmarks/long_runs.py --scale 2 --only "02 Task 2"
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from fedpl_core.report.tables import curve_frame, late_gain, paired_difference
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedlsm, fedpsl
from fedpl_core.studies.parameters import prepare


def cases() -> dict[str, tuple]:
    """name -> (base config, methods, profile rounds, settings, (a, b) of the headline difference)."""
    s1 = fedpsl.settings("cpu")
    base1 = s1.config("II", pool=s1.pool)  # the notebook's Table II federation, its image pools
    m1 = fedpsl.paper_methods(["FedAVG", "FedPSL"], first_order=s1.first_order, verbose=False)
    out = {"01 Table II": (base1, m1, s1.engine.rounds, fedpsl.table2_settings(s1), ("FedPSL", "FedAVG"))}
    s2 = fedlsm.settings("cpu")
    for task in fedlsm.TASKS:
        m2 = fedlsm.methods(task, ["FedAvg", "FedLSM"], first_order=True)
        out[f"02 {task}"] = (s2.config(task), m2, s2.rounds, None, ("FedLSM", "FedAvg"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=4, help="rounds = scale x the notebook's")
    ap.add_argument("--only", nargs="+", default=None, help="case names (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/long_runs")
    a = ap.parse_args()
    prepare("cpu")
    pd.set_option("display.width", 200)
    summary = []
    for name, (base, methods, rounds, settings, (ma, mb)) in cases().items():
        if a.only and name not in a.only:
            continue
        long = rounds * a.scale
        settings = {k: {**v, "rounds": long} for k, v in (settings or {"long": {}}).items()}
        t = time.perf_counter()
        df = run_many(
            base,
            methods,
            [0, 1, 2],
            a.results_dir,
            settings=settings,
            progress=False,
            histories=True,
            workers=a.workers,
        )
        curves = curve_frame(df)
        print(
            f"\n{name}: {long} rounds ({time.perf_counter() - t:.0f} s with {a.workers} workers); "
            "mean AUROC over 3 seeds by round"
        )
        print(curves.groupby(["round", "label"], sort=False)["auroc_mean"].mean().unstack().round(3).to_string())
        pl = curve_frame(df, "pl/coverage").merge(curve_frame(df, "pl/pos_precision"), how="left")
        if len(pl) and (pl["pl/coverage"] > 0).any():  # a method that pseudo-labels: when and how well
            by = pl.groupby(["label", "round"])[["pl/coverage", "pl/pos_precision"]].mean().round(3)
            on = by[by["pl/coverage"] > 0]
            print(
                f"pseudo-labels (share of the unknown entries; precision of the positive ones), mean over seeds, "
                f"rounds where any is set:\n{on.iloc[:: max(1, len(on) // 8)].to_string()}"
            )
        for end in (rounds, long):
            part = curves[curves["round"] <= end]
            gain = late_gain(part).set_index("label")
            last = part[part["round"] == end].groupby("label")["auroc_mean"].mean()
            d = paired_difference(part[part["round"] == end], ma, mb, which=None)
            summary.append(
                {
                    "case": name,
                    "round": end,
                    "A": ma,
                    "B": mb,
                    "AUROC A": round(last[ma], 3),
                    "AUROC B": round(last[mb], 3),
                    "late gain A": round(gain.loc[ma, "gain"], 1),
                    "late gain B": round(gain.loc[mb, "gain"], 1),
                    "from round": int(gain["start"].min()),
                    "A - B": round(d["diff"], 1),
                    "p": None if d["p"] is None else round(d["p"], 3),
                }
            )
    print("\n" + pd.DataFrame(summary).to_string(index=False))


if __name__ == "__main__":
    main()
