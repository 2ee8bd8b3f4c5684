"""Do the notebooks' mean-AUROC curves flatten?  Reads the cached runs of a
``make reproduce`` (``results/<notebook>/*.json``) and prints, per notebook and method,
how many AUROC points the curve still gains over the last quarter of its rounds: the
mean over runs of (last evaluated round) - (last evaluation at or before 75 % of the
rounds).  Runs with fewer than 4 evaluations (single-round sweeps) are left out.

    python benchmarks/curve_plateau.py                 # results/ of make reproduce
    python benchmarks/curve_plateau.py --results other_results_dir
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from fedpl_core.report.tables import late_gain


def curves(folder: Path) -> pd.DataFrame:
    """Per-round mean AUROC of every cached run in ``folder``, as :func:`fedpl_core.report.tables.curve_frame`
    rows with the notebook as setting, the method as label and the run id in place of the seed
    (one curve per run)."""
    rows = []
    for f in sorted(folder.glob("*.json")):
        d = json.loads(f.read_text())
        rows += [
            {
                "setting": folder.name,
                "label": d["config"]["method"],
                "seed": f.stem,
                "round": r["round"],
                "auroc_mean": r["auroc_mean"],
            }
            for r in d.get("history", [])
            if r.get("auroc_mean") is not None
        ]
    return pd.DataFrame(rows, columns=["setting", "label", "seed", "round", "auroc_mean"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default="results")
    a = p.parse_args()
    for folder in sorted(x for x in Path(a.results).iterdir() if x.is_dir()):
        g = late_gain(curves(folder))
        if g.empty:
            continue
        rise = dict(zip(g["label"], g["gain"]))
        top = max(rise, key=rise.get)
        print(
            f"{folder.name}: median {np.median(list(rise.values())):+.1f} points from round "
            f"{int(g['start'].min())} to {int(g['end'].max())} (max {rise[top]:+.1f}, {top}; {len(rise)} methods)"
        )
        print("    " + ", ".join(f"{m} {x:+.1f}" for m, x in sorted(rise.items())))


if __name__ == "__main__":
    main()
