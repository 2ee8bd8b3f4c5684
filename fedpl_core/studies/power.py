"""How many seeds the paper profile runs: chosen for power, before its claims run.

For each headline claim, the per-seed standard deviation of its paired difference is taken from
the committed cpu profile's run (its headline tables, ``figures/*_headline.csv``: the same data,
partitions and methods in a shorter schedule), and the paper's reported gain from the claim
(:attr:`fedpl_core.report.findings.Claim.paper_gain`).  The paired t-test needs
:func:`~fedpl_core.report.tables.seeds_for_power` pairs for 80 % power against **half** the
paper's gain at p < 0.05; a notebook runs the most that any of its claims needs, at least 5 seeds
and at most what its time budget allows (:data:`SEED_CAP`).  A claim whose paper gives no number
has no planned power: its notebook still runs the capped seeds, and the run reports its minimum
detectable effect.

A claim paired over several settings (Surgical Aggregation's ablations: one pair per setting and
seed) gets ``pairs / seeds`` pairs a seed, as in the cpu run.

:func:`plan` computes the table; ``python -m fedpl_core.studies.power`` prints it and writes it
to ``figures/paper/seed_plan.csv``, the record kept beside the paper profile's run.  The plan was
made once, before the paper profile's claims ran; the seeds it chose are the rows'
``PAPER_SEEDS`` of each study, and the tests check that they agree with the recorded plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from scipy import stats

from ..report.tables import ALPHA, POWER, minimum_detectable_effect, power, seeds_for_power

#: The most seeds each paper's notebook can run in the paper profile within 2.5 hours on 2
#: cores (two worker processes), from the measured cost of one seed's headline runs
#: (docs/notebooks.md, "The paper profile"); at least 5 everywhere.
SEED_CAP = {"FedPSL": 12, "FedLSM": 5, "Surgical Aggregation": 12, "FedMLP": 5}
#: The fewest seeds any claim is tested on.
MIN_SEEDS = 5
#: The notebook of each paper.
NOTEBOOKS = {"FedPSL": "01", "FedLSM": "02", "Surgical Aggregation": "03", "FedMLP": "04"}


def spread(headline: pd.DataFrame) -> pd.Series:
    """The per-seed standard deviation of each claim's paired difference in a headline table:
    its ``sd`` column, or, in a table without one, recovered from the 95 % interval,
    ``sd = half-width x sqrt(n) / t(0.975, n - 1)``."""
    if "sd" in headline:
        return headline["sd"].astype(float)
    n = headline["pairs"].astype(float)
    half = (headline["ci_high"] - headline["ci_low"]).astype(float) / 2
    t = n.map(lambda k: stats.t.ppf(0.975, k - 1) if k > 1 else math.nan)
    return half * n.map(math.sqrt) / t


def claims_of_paper_profile() -> list:
    """Every headline claim as the paper profile states it (its settings decide the sweeps'
    points), with the paper's gains."""
    from . import fedlsm, fedmlp, fedpsl, surgical

    return [
        *fedpsl.headline_claims(fedpsl.settings("paper")),
        *fedlsm.headline_claims(),
        *surgical.headline_claims(),
        *fedmlp.headline_claims(fedmlp.settings("paper")),
    ]


def plan(cpu_figures: str | Path, claims: list | None = None, cap: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The seed plan: one row per claim with the cpu run's spread (``sd``, points), seeds and
    pairs a seed; the paper's gain; the pairs the claim needs for 80 % power against half of it
    (``pairs needed``); the notebook's seeds (``seeds``: the most any of its claims needs, at
    least :data:`MIN_SEEDS`, at most ``cap``); and at those seeds the planned power and minimum
    detectable effect (``mde``) at the cpu run's spread."""
    from ..report.findings import read_headlines

    cap = dict(SEED_CAP if cap is None else cap)
    claims = claims_of_paper_profile() if claims is None else claims
    cpu = read_headlines(cpu_figures, ("paper", "claim", "diff", "ci_low", "ci_high", "pairs"))
    if cpu.empty:
        raise FileNotFoundError(f"no headline table in {cpu_figures}: the plan needs the cpu profile's run")
    cpu = cpu.assign(sd=spread(cpu)).drop_duplicates(["paper", "claim"])
    rows = []
    for c in claims:
        hit = cpu[(cpu["paper"] == c.paper) & (cpu["claim"] == c.claim)]
        sd = float(hit["sd"].iloc[0]) if len(hit) else math.nan
        cpu_pairs = int(hit["pairs"].iloc[0]) if len(hit) else 3
        per_seed = max(1, round(cpu_pairs / 3))  # the cpu profile ran 3 seeds
        half = abs(c.paper_gain) / 2 if c.paper_gain else None
        need = seeds_for_power(sd, half) if half and math.isfinite(sd) else None
        rows.append(
            {
                "paper": c.paper,
                "claim": c.claim,
                "sd": round(sd, 3),
                "cpu pairs": cpu_pairs,
                "pairs a seed": per_seed,
                "paper gain": c.paper_gain,
                "pairs needed": need,
                "seeds needed": None if need is None else math.ceil(need / per_seed),
            }
        )
    out = pd.DataFrame(rows)
    seeds = {}
    for paper, g in out.groupby("paper", sort=False):
        needed = g["seeds needed"].dropna()
        want = int(needed.max()) if len(needed) else cap.get(paper, MIN_SEEDS)
        seeds[paper] = max(MIN_SEEDS, min(want, cap.get(paper, MIN_SEEDS)))
    out["seeds"] = out["paper"].map(seeds)
    pairs = out["seeds"] * out["pairs a seed"]
    out["planned power"] = [
        power(sd, int(n), abs(g) / 2, ALPHA) if pd.notna(g) and g else None
        for sd, n, g in zip(out["sd"], pairs, out["paper gain"])
    ]
    out["mde"] = [minimum_detectable_effect(sd, int(n), POWER, ALPHA) for sd, n in zip(out["sd"], pairs)]
    return out


def paper_seeds(table: pd.DataFrame) -> dict[str, list[int]]:
    """The seeds of each paper's notebook in a plan: ``0 .. seeds - 1``."""
    return {p: list(range(int(n))) for p, n in table.groupby("paper", sort=False)["seeds"].first().items()}


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..base.fileio import atomic_write
    from ..base.paths import figures_dir

    ap = argparse.ArgumentParser(
        prog="python -m fedpl_core.studies.power", description="Print (and record) the paper profile's seed plan."
    )
    ap.add_argument("--cpu-figures", default=str(figures_dir("cpu")), help="the cpu profile's headline tables")
    ap.add_argument("--write", action="store_true", help="write figures/paper/seed_plan.csv")
    a = ap.parse_args(argv)
    table = plan(a.cpu_figures)
    with pd.option_context("display.width", 200, "display.max_rows", 100, "display.max_colwidth", 60):
        print(table.round(2).to_string(index=False))
    print({p: len(s) for p, s in paper_seeds(table).items()})
    if a.write:
        target = figures_dir("paper") / "seed_plan.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(target) as f:
            table.to_csv(f, index=False)
        print(f"written: {target}")
    return 0


__all__ = ["SEED_CAP", "MIN_SEEDS", "spread", "plan", "paper_seeds", "claims_of_paper_profile"]

if __name__ == "__main__":
    raise SystemExit(main())
