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


def plain(markdown: str) -> str:
    """Markdown with each link read as its text (the README block links glossary terms)."""
    import re

    return re.sub(r'\[([^\]]*)\]\((?:[^()"\s]+)(?:\s+"[^"]*")?\)', r"\1", markdown)


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
    block = plain(readme_block(tmp_path))
    assert "| FedMLP | FedMLP above FedAvg |  | not run yet |  | +4.0: reproduced |" in block
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{README_START}\nold\n{README_END}\nrest\n")
    assert update_readme(readme, tmp_path) and not update_readme(readme, tmp_path)
    assert readme_block(tmp_path) in readme.read_text() and readme.read_text().endswith("rest\n")


def test_the_paper_profile_is_the_headline_and_the_cpu_profile_stands_beside_it(tmp_path):
    claims = [
        Claim("FedPSL", "FedPSL above FedAvg", "A", "B", "t", paper_gain=3.0, evidence="01 § 2. Table II"),
        Claim("FedPSL", "only in the cpu run", "A", "B", "c", evidence="01 § 2. Table II"),
    ]
    cpu = headline_table(claims, {"t": runs([3.0, -2.0, 0.5]), "c": runs([2.0, 2.2, 1.8])})
    paper = headline_table(claims[:1], {"t": runs([2.0, 3.0, 2.5, 3.5, 3.0, 2.0])})
    cpu.to_csv(tmp_path / "01_headline.csv", index=False)
    (tmp_path / "paper").mkdir()
    paper.to_csv(tmp_path / "paper" / "01_headline.csv", index=False)
    page = findings_page(tmp_path)
    assert "Of 1 claims in the paper profile: 1 reproduced, 0 opposite, 0 absent, 0 inconclusive." in page
    row = next(line for line in page.splitlines() if line.startswith("| 1 | FedPSL above FedAvg"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    # #, claim, data, paper's gain, the paper profile's difference, p (Holm p), seeds, MDE, power, verdict, cpu
    assert cells[3] == "+3.0" and cells[4].startswith("[+") and "(" in cells[5] and cells[6] == "6"
    assert cells[9] == "**reproduced**" and cells[10].endswith(": inconclusive](") is False
    assert ": inconclusive" in cells[10]
    other = next(line for line in page.splitlines() if line.startswith("| 2 | only in the cpu run"))
    assert "| not run (cut) |" in other and "reproduced" in other  # its notebook ran in the paper profile
    assert "*not run (cut)*: the paper profile runs the claim's notebook without" in page
    block = plain(readme_block(tmp_path))
    assert "Claims in the paper profile's 1: 1 reproduced" in block and "; in the cpu profile's 2:" in block


def test_pooled_settings_are_counted_as_seeds_times_settings_and_two_settings_name_the_contrast(tmp_path):
    pooled = pd.concat([runs([1.0, 2.0, 3.0], "k=2"), runs([2.0, 1.0, 2.5], "k=4")])
    two = pd.concat([runs([0, 0, 0], "E=2", base=0.80), runs([0, 0, 0], "E=32", base=0.70)])
    claims = [
        Claim("Surgical Aggregation", "Ablation: A above B", "A", "B", "pooled"),
        Claim(
            "FedPSL", "rarer synchronisation is worse", "A", "A", "two", a_setting="E=32", b_setting="E=2", direction=-1
        ),
    ]
    t = headline_table(claims, {"pooled": pooled, "two": two[two["label"] == "A"]})
    assert t[["pairs", "seeds", "settings"]].values.tolist() == [[6, 3, 2], [3, 3, 1]]
    assert t.loc[1, "contrast"] == "A at E=32 − A at E=2" and t.loc[0, "contrast"] == "A − B"
    (tmp_path / "paper").mkdir()
    for folder in (tmp_path, tmp_path / "paper"):
        t.to_csv(folder / "01_headline.csv", index=False)
    page = findings_page(tmp_path)
    assert "| 3 × 2 settings |" in page and "| 3 |" in page
    assert "rarer synchronisation is worse (A at E=32 − A at E=2)" in page
    assert "3 seeds × 2 settings)" in plain(readme_block(tmp_path))


def test_each_row_names_its_data_and_the_page_says_how_to_make_the_real_data_rows(tmp_path):
    built_in, real = runs([3.0, 4.0, 5.0]).assign(data="built-in"), runs([1.0, 2.0, 0.5]).assign(data="HAM10000")
    claims = [
        Claim("FedLSM", "Table 1: A above B", "A", "B", "b"),
        Claim("FedLSM", "HAM10000: A above B", "A", "B", "r"),
    ]
    headline_table(claims, {"b": built_in, "r": real}).to_csv(tmp_path / "02_headline.csv", index=False)
    page = findings_page(tmp_path)
    assert "| 1 | Table 1: A above B | built-in |" in page and "| 2 | HAM10000: A above B | HAM10000 |" in page
    assert "except 1 on HAM10000 (FedLSM row 2)" in page and "data_roots" in page
    assert "| HAM10000: A above B | HAM10000 |" in plain(readme_block(tmp_path))


def test_every_claim_of_every_study_links_its_sections_and_benchmarks():
    """Each reference of a study's evidence names one heading of its notebook (or a benchmark a
    page describes); a reference that names none, or two, is refused."""
    from fedpl_core.report.findings import evidence_links, headline_link
    from fedpl_core.studies import fedlsm, fedmlp, fedpsl, surgical

    claims = [
        *fedpsl.headline_claims(fedpsl.settings("cpu")),
        *fedlsm.headline_claims(),
        *fedlsm.comparison_claims(),
        *surgical.headline_claims(),
        *fedmlp.headline_claims(fedmlp.settings("cpu")),
        *fedmlp.comparison_claims(fedmlp.settings("cpu")),
    ]
    assert len(claims) > 40
    for c in claims:
        links = evidence_links(c.evidence)
        assert links and all(link.startswith("[") and "](" in link for link in links), c.claim
        assert headline_link(c.evidence, "paper").endswith("#the-papers-headline-claims-tested"), c.claim
    with pytest.raises(ValueError, match="0 headings of notebook 01_fedpsl contain it"):
        evidence_links("01 § No such section")
    with pytest.raises(ValueError, match="2 headings"):
        evidence_links("03 § Ablation")
    with pytest.raises(ValueError, match="no page of"):
        evidence_links("benchmarks/no_such_benchmark.py")


def test_links_go_to_the_site_pages_or_to_the_checkouts_executed_notebooks():
    from fedpl_core.report.findings import evidence_links

    site, repo = evidence_links("01 § 6. Table V"), evidence_links("01 § 6. Table V", "cpu", site=False)
    assert site == ["[Table V](notebooks/paper/01_fedpsl.ipynb#6-table-v-synchronisation-frequency)"]
    assert repo == ["[Table V](../reports/01_fedpsl.ipynb#6-table-v-synchronisation-frequency)"]


def test_a_mechanism_shared_by_several_rows_is_said_once(tmp_path):
    why = "the same mechanism behind three rows"
    claims = [Claim("FedPSL", f"claim {i}", "A", "B", "t", mechanism=why if i != 2 else "") for i in range(1, 5)]
    headline_table(claims, {"t": runs([3.0, 4.0, 5.0])}).to_csv(tmp_path / "01_headline.csv", index=False)
    page = findings_page(tmp_path)
    assert page.count(why[1:]) == 1 and "- **M1** (rows 1, 3, 4). The same mechanism behind three rows." in page


def test_every_row_of_the_committed_findings_page_links_its_evidence_and_names_its_data():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "findings.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| # ")]
    assert len(rows) >= 40
    for row in rows:
        cells = [c.strip() for c in row.split("|")[1:-1]]
        assert "](" in cells[-1], f"no evidence link: {row[:80]}"
        assert cells[2] in ("built-in", "HAM10000"), f"no data named: {row[:80]}"


def test_headline_view_names_the_contrast_writes_the_interval_and_says_what_its_dashes_mean():
    from fedpl_core.report.findings import headline_view
    from fedpl_core.report.tables import readable

    two = pd.concat([runs([0, 0, 0], "E=2", base=0.80), runs([1.0, -1.0, 0.5], "E=32", base=0.70)])
    two = two[two["label"] == "A"]
    claims = [
        Claim("P", "rarer synchronisation is worse", "A", "A", "t", a_setting="E=32", b_setting="E=2", direction=-1),
        Claim("P", "one seed", "A", "B", "one"),
    ]
    t = headline_table(claims, {"t": two, "one": runs([2.0])})
    view = headline_view(t)
    assert view.loc[0, "claim"] == "rarer synchronisation is worse (A at E=32 − A at E=2)"
    assert view.loc[0, "difference"] == "−9.8" and view.loc[0, "seeds"] == "3"
    lo, hi = view.loc[0, "95 % CI"].split(" to ")
    assert lo.startswith("−1") and float(lo.replace("−", "-")) < -9.8 < float(hi.replace("−", "-"))
    assert pd.isna(view.loc[1, "95 % CI"]) and pd.isna(view.loc[1, "p"])  # one seed: no test
    shown = repr(readable(view))
    assert "–: no value: no test (one seed" in shown and "rarer synchronisation is worse (A at E=32" in shown
