"""Headline claims tested on runs (report.findings): the verdict of each claim (the four of the
rule fixed before the runs), its power and minimum detectable effect, Holm's p, two settings
compared, claims without runs left out, the findings page (paper profile beside cpu) and the
README's generated block."""

import pandas as pd
import pytest

from fedpl_core.report.findings import (
    README_END,
    README_START,
    Claim,
    findings_page,
    headline_table,
    readme_block,
    update_readme,
)


def runs(diffs, setting="s", a="A", b="B", base=0.70):
    """Runs of A and B over seeds, A - B = ``diffs`` (AUROC points / 100)."""
    rows = []
    for seed, d in enumerate(diffs):
        rows.append({"setting": setting, "seed": seed, "label": b, "which": "final", "auroc_mean": base})
        rows.append({"setting": setting, "seed": seed, "label": a, "which": "final", "auroc_mean": base + d / 100})
    return pd.DataFrame(rows)


def test_each_claim_gets_the_verdict_its_paired_test_allows():
    frames = {"up": runs([3.0, 4.0, 5.0]), "down": runs([-3.0, -4.0, -5.0]), "noise": runs([3.0, -2.0, 0.5])}
    claims = [Claim("P", "A above B", "A", "B", f) for f in frames] + [
        Claim("P", "A below B", "A", "B", "down", direction=-1),
        Claim("P", "not run here", "A", "C", "up"),
        Claim("P", "no frame", "A", "B", "missing"),
    ]
    t = headline_table(claims, frames)
    assert list(t["verdict"]) == ["reproduced", "opposite", "inconclusive", "reproduced"]
    assert t["diff"].tolist() == [4.0, -4.0, 0.5, -4.0] and (t["pairs"] == 3).all()
    assert t.loc[0, "ci_low"] > 0 and t.loc[2, "ci_low"] < 0 < t.loc[2, "ci_high"]
    # Holm over the table's four tests: the smallest p times 4, and never below the raw p
    assert t["p_holm"].iloc[0] == pytest.approx(min(1.0, 4 * t["p"].min()), rel=1e-6)
    assert (t["p_holm"] >= t["p"]).all()


def test_a_tight_interval_inside_half_the_papers_gain_is_absent_and_a_wide_one_inconclusive():
    tight, wide = runs([0.2, -0.1, 0.1, 0.0, -0.2, 0.1]), runs([3.0, -2.0, 0.5])
    claims = [
        Claim("P", "tight", "A", "B", "tight", paper_gain=4.0),  # margin 2: the interval is inside +-2
        Claim("P", "wide", "A", "B", "wide", paper_gain=4.0),
        Claim("P", "tight, no paper number", "A", "B", "tight"),  # no margin: never absent
    ]
    t = headline_table(claims, {"tight": tight, "wide": wide})
    assert list(t["verdict"]) == ["absent", "inconclusive", "inconclusive"]
    assert -2.0 < t.loc[0, "ci_low"] and t.loc[0, "ci_high"] < 2.0
    # power against half the paper's gain: high for the tight runs, low for the wide ones, none without a gain
    assert t.loc[0, "power"] > 0.99 and t.loc[1, "power"] < 0.5 and pd.isna(t.loc[2, "power"])
    # the minimum detectable effect grows with the spread of the differences
    assert t.loc[0, "mde"] < 1.0 < t.loc[1, "mde"]


def test_two_settings_of_one_method_pair_on_the_seed():
    df = pd.concat([runs([0, 0, 0], "E=2", base=0.80), runs([0, 0, 0], "E=32", base=0.70)])
    df = df[df["label"] == "A"]
    claim = Claim("P", "rarer synchronisation is worse", "A", "A", "t", a_setting="E=32", b_setting="E=2", direction=-1)
    row = headline_table([claim], {"t": df.assign(auroc_mean=df["auroc_mean"] + df["seed"] * 0.001)}).iloc[0]
    assert row["diff"] == pytest.approx(-10.0) and row["setting"] == "E=32 against E=2"


def test_the_page_and_the_readme_block_show_every_claim(tmp_path):
    t = headline_table(
        [
            Claim("FedMLP", "FedMLP above FedAvg", "A", "B", "up"),
            Claim("FedPSL", "FedPSL above FedAvg", "A", "B", "noise"),
        ],
        {"up": runs([3.0, 4.0, 5.0]), "noise": runs([3.0, -2.0, 0.5])},
    )
    t.to_csv(tmp_path / "04_headline.csv", index=False)
    page = findings_page(tmp_path)  # the cpu profile only: the paper profile has not run
    assert page.index("## FedPSL") < page.index("## FedMLP")  # the papers' order
    assert "The paper profile has not been run yet" in page
    assert "Of 2 claims in the cpu profile: 1 reproduced, 0 opposite, 0 absent, 1 inconclusive." in page
    block = readme_block(tmp_path)
    assert "| FedMLP | FedMLP above FedAvg | not run yet |  | +4.0: reproduced |" in block
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nrest\n")
    assert update_readme(readme, tmp_path) and not update_readme(readme, tmp_path)
    assert block in readme.read_text() and readme.read_text().endswith("rest\n")


def test_the_paper_profile_is_the_headline_and_the_cpu_profile_stands_beside_it(tmp_path):
    claims = [
        Claim("FedPSL", "FedPSL above FedAvg", "A", "B", "t", paper_gain=3.0),
        Claim("FedPSL", "only in the cpu run", "A", "B", "c"),
    ]
    cpu = headline_table(claims, {"t": runs([3.0, -2.0, 0.5]), "c": runs([2.0, 2.2, 1.8])})
    paper = headline_table(claims[:1], {"t": runs([2.0, 3.0, 2.5, 3.5, 3.0, 2.0])})
    cpu.to_csv(tmp_path / "01_headline.csv", index=False)
    (tmp_path / "paper").mkdir()
    paper.to_csv(tmp_path / "paper" / "01_headline.csv", index=False)
    page = findings_page(tmp_path)
    assert "Of 1 claims in the paper profile: 1 reproduced, 0 opposite, 0 absent, 0 inconclusive." in page
    row = next(line for line in page.splitlines() if line.startswith("| FedPSL above FedAvg"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    # claim, paper's gain, the paper profile's difference with its Holm p, seeds, MDE, power, verdict, cpu
    assert cells[1] == "+3.0" and "Holm" in cells[2] and cells[3] == "6" and cells[6] == "**reproduced**"
    assert cells[7].endswith("3 seeds: inconclusive")
    other = next(line for line in page.splitlines() if line.startswith("| only in the cpu run"))
    assert "| not run (cut) |" in other and "reproduced" in other  # its notebook ran in the paper profile
    assert "*not run (cut)*: the paper profile runs the claim's notebook without" in page
    block = readme_block(tmp_path)
    assert "Claims in the paper profile's 1: 1 reproduced" in block and "; in the cpu profile's 2:" in block
