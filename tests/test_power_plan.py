"""The paper profile's seeds are chosen for power before its claims run (studies.power): the
spread read back from a headline table, the seeds a claim needs, the cap and the floor, and the
recorded plan against the profiles' seeds."""

import math
from pathlib import Path

import pandas as pd
import pytest

from fedpl_core.report.findings import Claim, headline_table
from fedpl_core.report.tables import power, seeds_for_power
from fedpl_core.studies.power import MIN_SEEDS, paper_seeds, plan, spread

ROOT = Path(__file__).resolve().parents[1]


def runs(diffs, base=0.70):
    rows = []
    for seed, d in enumerate(diffs):
        rows.append({"setting": "s", "seed": seed, "label": "B", "which": "final", "auroc_mean": base})
        rows.append({"setting": "s", "seed": seed, "label": "A", "which": "final", "auroc_mean": base + d / 100})
    return pd.DataFrame(rows)


def test_the_spread_recovered_from_the_interval_is_the_sd_of_the_differences():
    diffs = [1.0, 4.0, 2.5, -0.5]
    t = headline_table([Claim("P", "c", "A", "B", "t")], {"t": runs(diffs)})
    assert t["sd"].iloc[0] == pytest.approx(pd.Series(diffs).std(), rel=1e-9)
    assert spread(t.drop(columns="sd")).iloc[0] == pytest.approx(pd.Series(diffs).std(), rel=1e-6)


def test_a_notebook_runs_the_seeds_its_hungriest_claim_needs_between_the_floor_and_the_cap(tmp_path):
    # cpu run: three seeds; differences with sd 2 (claim "a") and sd 0.5 (claim "b")
    t = headline_table(
        [Claim("P", "a", "A", "B", "a"), Claim("P", "b", "A", "B", "b"), Claim("Q", "c", "A", "B", "b")],
        {"a": runs([0.0, 2.0, 4.0]), "b": runs([1.0, 1.5, 2.0])},
    )
    t.to_csv(tmp_path / "01_headline.csv", index=False)
    claims = [
        Claim("P", "a", "A", "B", "a", paper_gain=6.0),  # half: 3 points at sd 2 -> 6 seeds
        Claim("P", "b", "A", "B", "b", paper_gain=20.0),  # needs the floor only
        Claim("Q", "c", "A", "B", "b"),  # no paper number: the cap
    ]
    p = plan(tmp_path, claims, cap={"P": 20, "Q": 7})
    assert p.set_index("claim")["seeds needed"].to_dict()["a"] == seeds_for_power(2.0, 3.0) == 6
    assert paper_seeds(p) == {"P": list(range(6)), "Q": list(range(7))}
    a = p.set_index("claim").loc["a"]
    assert a["planned power"] == pytest.approx(power(2.0, 6, 3.0)) and a["planned power"] >= 0.8
    assert math.isnan(p.set_index("claim").loc["c", "planned power"])
    capped = plan(tmp_path, claims, cap={"P": 4, "Q": 4})  # a cap below the floor: the floor wins
    assert set(capped["seeds"]) == {MIN_SEEDS}


def test_the_plan_needs_the_cpu_run():
    with pytest.raises(FileNotFoundError, match="needs the cpu profile's run"):
        plan(ROOT / "no-such-folder", [])


def test_the_recorded_plan_is_the_seeds_the_paper_rows_run():
    from fedpl_core.studies import fedlsm, fedmlp, fedpsl, surgical

    recorded = pd.read_csv(ROOT / "figures" / "paper" / "seed_plan.csv")
    seeds = paper_seeds(recorded)
    rows = {"FedPSL": fedpsl, "FedLSM": fedlsm, "Surgical Aggregation": surgical, "FedMLP": fedmlp}
    for paper, study in rows.items():
        if "paper" in study.PROFILES:
            assert study.PROFILES["paper"]["seeds"] == seeds[paper], paper
    assert (recorded["seeds"] >= MIN_SEEDS).all()
