"""Headline claims tested on runs (report.findings): the verdict of each claim, two settings
compared, claims without runs left out, the findings page and the README's generated block."""

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
    assert list(t["verdict"]) == ["reproduced", "opposite", "not distinguishable", "reproduced"]
    assert t["diff"].tolist() == [4.0, -4.0, 0.5, -4.0] and (t["pairs"] == 3).all()
    assert t.loc[0, "ci_low"] > 0 and t.loc[2, "ci_low"] < 0 < t.loc[2, "ci_high"]


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
    page = findings_page(tmp_path)
    assert page.index("## FedPSL") < page.index("## FedMLP")  # the papers' order
    assert "Of 2 claims: 1 reproduced, 0 opposite, 1 not distinguishable." in page
    block = readme_block(tmp_path)
    assert "| FedMLP | FedMLP above FedAvg | +4.0 (p = 0.02) | reproduced |" in block
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nrest\n")
    assert update_readme(readme, tmp_path) and not update_readme(readme, tmp_path)
    assert block in readme.read_text() and readme.read_text().endswith("rest\n")
