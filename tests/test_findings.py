"""Findings computed from the numbers: paired differences, their sentences, the profiles,
the palette and the per-round frames (the modules' doctests hold hand-computed cases)."""

import doctest
import importlib

import pandas as pd
import pytest

from fedpl_core.report.tables import describe_difference, paired_difference


@pytest.mark.parametrize(
    "module",
    [
        "fedpl_core.report.tables",
        "fedpl_core.report.findings",
        "fedpl_core.studies.parameters",
        "fedpl_core.report.plotting",
    ],
)
def test_doctests(module):
    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_paired_difference_pairs_by_setting_and_seed_not_by_row_order():
    # rows shuffled; a - b is 10 points in setting s1 and -10 in s2 for every seed: mean 0
    rows = [
        {
            "setting": st,
            "seed": sd,
            "label": lab,
            "which": "final",
            "auroc_mean": 0.5 + (0.1 if (lab == "a") == (st == "s1") else 0.0) + 0.01 * sd,
        }
        for st in ("s1", "s2")
        for sd in (0, 1)
        for lab in ("a", "b")
    ]
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=0)
    d = paired_difference(df, "a", "b")
    assert d["n"] == 4 and d["diff"] == pytest.approx(0.0) and d["sd"] == pytest.approx(11.547, abs=1e-3)
    only_s1 = paired_difference(df[df["setting"] == "s1"], "a", "b")
    assert only_s1["diff"] == pytest.approx(10.0) and only_s1["p"] is None  # identical differences: no test
    with pytest.raises(KeyError, match="no runs labelled 'c'"):
        paired_difference(df, "a", "c")


def test_describe_difference_states_the_verdict_the_numbers_allow():
    sig = {"a": "SA", "b": "PL", "diff": -2.04, "sd": 0.5, "n": 9, "t": -12.0, "p": 0.001}
    assert (
        describe_difference(sig, pairs="classes")
        == "SA is 2.0 points below PL (paired t-test over 9 classes: p = 0.001, significant at 0.05)"
    )
    tiny = dict(sig, diff=0.01, p=None, n=1)
    assert describe_difference(tiny) == "SA is level with PL (within 0.05 points) (runs: 1, no test)"


def test_late_gain_averages_seeds_and_skips_short_curves():
    from fedpl_core.report.tables import late_gain

    rows = []
    for seed, end in ((0, 0.80), (1, 0.76)):  # rounds given out of order
        for rnd, v in ((16, end), (4, 0.6), (12, 0.74), (8, 0.7), (14, 0.9)):
            rows.append({"setting": "a", "label": "m", "seed": seed, "round": rnd, "auroc_mean": v})
    rows += [{"setting": "a", "label": "short", "seed": 0, "round": r, "auroc_mean": 0.5} for r in (1, 2, 3)]
    g = late_gain(pd.DataFrame(rows))
    # 0.75 x 16 = 12: each seed's last value against its round-12 value (round 14 is not the reference)
    assert g["label"].tolist() == ["m"]
    assert g["gain"].iloc[0] == pytest.approx(100 * ((0.80 - 0.74) + (0.76 - 0.74)) / 2)
    assert g["n"].iloc[0] == 2
    assert (g["start"].iloc[0], g["end"].iloc[0]) == (12, 16)


def test_every_registered_method_and_paper_label_has_one_fixed_colour():
    """One fixed palette, declared by the methods: every registered class declares its own
    display name (unique), colour and paper; a paper table's label is its class's display
    name (or a variant of it), gets its class's colour, and the methods of one table have
    different colours, so a figure of that table draws them without reassigning any."""
    import matplotlib.colors

    from fedpl_core.methods import METHODS, available_methods
    from fedpl_core.report.names import PAPERS, method_class
    from fedpl_core.report.plotting import method_color, method_palette
    from fedpl_core.studies import fedlsm, fedmlp, fedpsl

    names = [METHODS[m].display_name for m in available_methods()]
    assert len(set(names)) == len(names), "two methods share a display name"
    for m in available_methods():
        own = vars(METHODS[m])
        assert {"display_name", "color", "paper"} <= set(own), f"{m} does not declare its own name, colour, paper"
        assert matplotlib.colors.is_color_like(own["color"]) and own["paper"] in PAPERS, m
    pairs = {
        "FedPSL Table II": [(lab, name) for lab, name, _ in fedpsl.TABLE_II_METHODS],
        **{
            f"FedLSM {t}": [(lab, name) for lab, name, tasks in fedlsm.PAPER_METHODS if t in tasks]
            + fedlsm.ABLATION[1:]
            for t in fedlsm.TASKS
        },
        "FedMLP Tables 1-2": list(fedmlp.PAPER_METHODS),
    }
    for table, rows in pairs.items():
        labels = [lab for lab, _ in rows]
        methods = dict(rows)
        assert len({method_color(lab, methods[lab]) for lab in labels}) == len(labels), table
        assert method_palette(labels, methods) == {lab: METHODS[methods[lab]].color for lab in labels}, table
        for lab, name in rows:
            if not lab.startswith("w/o"):  # FedLSM's ablations keep the paper's own row names
                assert lab == METHODS[name].display_name and method_class(lab) is METHODS[name], (table, lab)


def test_committed_table_reads_the_checkout_figures_whatever_the_cwd(tmp_path, monkeypatch):
    from fedpl_core.report.tables import committed_table

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path))
    t = committed_table("02_tdma_readings")
    assert t is not None and list(t.columns)[:3] == ["reading of FedAvg", "FedAvg", "FedAvg*"]
    assert committed_table("no_such_table") is None
