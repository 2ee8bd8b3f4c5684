"""Why notebook 01's cpu profile trains at 28 px with Adam at lr 3e-3: mean-AUROC curves of
FedPSL's Table II federation as notebook 01 builds it (200 images per client from the
notebook's image pools, small CNN, 2 local epochs a round, 3 seeds) for a few (image size,
learning rate) pairs, run for more rounds than the profile, with each method's gain over
the last quarter of the rounds
(:func:`fedpl_core.report.tables.late_gain`) and the wall time of each grid.  Uses the one runner and
its cache::

    python benchmarks/cpu_schedule.py                         # 32/1e-3, 32/3e-3, 28/3e-3; 20 rounds
    python benchmarks/cpu_schedule.py --pairs 28:3e-3 --rounds 30 --seeds 0 1 2
    python benchmarks/cpu_schedule.py --pairs 28:3e-3 28:6e-3 --rounds 32 --methods FedAVG FedPSL
    python benchmarks/cpu_schedule.py --pairs 28:3e-3 --rounds 32 --methods FedAVG FedPSL --set optimizer_state=keep
    python benchmarks/cpu_schedule.py --pairs 28:3e-3 --rounds 40 --methods FedAVG FedPSL --width 8

``--set`` and ``--width`` try other engine options and model widths on the same federation.
The mean over seeds of every evaluated round is printed, so a shorter schedule can be read
off a longer one (the learning rate does not depend on the number of rounds).
"""

from __future__ import annotations

import argparse
import ast
import time

import pandas as pd

from fedpl_core.report.tables import curve_frame, late_gain
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedpsl as study
from fedpl_core.studies.parameters import prepare


def _literal(kv: str) -> tuple[str, object]:
    key, _, value = kv.partition("=")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", nargs="+", default=["32:1e-3", "32:3e-3", "28:3e-3"], help="image_size:lr pairs")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="engine options for every run, e.g. optimizer_state=keep (values are Python literals or plain strings)",
    )
    ap.add_argument("--width", type=int, default=None, help="the small CNN's width (the profile's by default)")
    ap.add_argument("--methods", nargs="+", default=["FedAVG", "FedPSL", "IML", "Oracle"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/cpu_schedule")
    a = ap.parse_args()
    overrides = dict(_literal(kv) for kv in a.set)
    prepare("cpu")
    S = study.settings("cpu")
    if a.width is not None:
        S.model_kwargs = {**S.model_kwargs, "width": a.width}
    methods = study.paper_methods(a.methods, first_order=True, verbose=False)
    pd.set_option("display.width", 200)
    summary = []
    for pair in a.pairs:
        size, lr = pair.split(":")
        S.image_size = int(size)
        setting = {
            pair: {"partition_kwargs": study.sizes_kwargs(S.n), "rounds": a.rounds, "lr": float(lr), **overrides}
        }
        t = time.perf_counter()
        df = run_many(
            S.config("II", pool=S.pool),
            methods,
            a.seeds,
            a.results_dir,
            settings=setting,
            progress=False,
            histories=True,
            workers=a.workers,
        )
        wall = time.perf_counter() - t
        curves = curve_frame(df)
        extra = "".join(f", {k}={v}" for k, v in overrides.items())
        print(
            f"\n{size} px, lr {lr}, width {S.model_kwargs.get('width')}{extra}: {len(df) // 2} runs of "
            f"{a.rounds} rounds; mean AUROC over {len(a.seeds)} seeds by round"
        )
        print(curves.groupby(["round", "label"], sort=False)["auroc_mean"].mean().unstack().round(3).to_string())
        gain = late_gain(curves).set_index("label")["gain"]
        last = df[df["which"] == "final"].groupby("label")["auroc_mean"].mean()
        for label in gain.index:
            summary.append(
                {
                    "image_size": int(size),
                    "lr": float(lr),
                    "method": label,
                    "last": round(last[label], 3),
                    "late gain (points)": round(gain[label], 1),
                }
            )
        print(f"wall {wall:.0f} s with {a.workers} workers (runs already in the cache cost nothing)")
    print("\n" + pd.DataFrame(summary).to_string(index=False))


if __name__ == "__main__":
    main()
