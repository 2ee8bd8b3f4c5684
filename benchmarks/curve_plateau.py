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
import collections
import json
from pathlib import Path

import numpy as np


def late_rise(folder: Path) -> dict[str, float]:
    """``{method: mean gain in AUROC points over the last quarter of the rounds}``."""
    gains: dict[str, list[float]] = collections.defaultdict(list)
    for f in sorted(folder.glob("*.json")):
        d = json.loads(f.read_text())
        h = [(r["round"], r["auroc_mean"]) for r in d.get("history", []) if r.get("auroc_mean") is not None]
        if len(h) < 4:
            continue
        before = [a for r, a in h if r <= 0.75 * h[-1][0]]
        if before:
            gains[d["config"]["method"]].append(100 * (h[-1][1] - before[-1]))
    return {m: float(np.mean(g)) for m, g in sorted(gains.items())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", default="results")
    a = p.parse_args()
    for folder in sorted(Path(a.results).iterdir()):
        rise = late_rise(folder) if folder.is_dir() else {}
        if not rise:
            continue
        top = max(rise, key=rise.get)
        print(f"{folder.name}: median {np.median(list(rise.values())):+.1f} points over the last quarter "
              f"(max {rise[top]:+.1f}, {top}; {len(rise)} methods)")
        print("    " + ", ".join(f"{m} {g:+.1f}" for m, g in rise.items()))


if __name__ == "__main__":
    main()
