"""fedpl_core.report.tables: mean ± sd through one groupby-agg, Markdown through tabulate,
Holm through statsmodels, tables a reader sees with names (not registry keys) and columns that
say their threshold, written atomically inside their folder; every expected string below is
computed by hand."""

import os

import numpy as np
import pandas as pd
import pytest

from fedpl_core.report.tables import per_class_mean_std, pivot_mean_std, summarize, to_latex, to_markdown


def runs():
    """Two settings; in "s": A over seeds 0.70, 0.74, B over one seed, C over two seeds a
    hair apart; in "t": A over 0.60, 0.60 (no spread) and no B or C; a "best" row that
    ``which="final"`` must drop."""
    return pd.DataFrame(
        {
            "setting": ["s", "s", "s", "s", "s", "t", "t", "s"],
            "label": ["A", "A", "B", "C", "C", "A", "A", "A"],
            "which": ["final"] * 7 + ["best"],
            "auroc_mean": [0.70, 0.74, 0.80, 0.50000, 0.50001, 0.60, 0.60, 0.99],
            "auroc:X": [0.60, 0.64, 0.90, 0.5, 0.5, 0.1, 0.3, 0.99],
        }
    )


def test_summarize_mean_sd_n_by_hand():
    s = summarize(runs())
    # A in s: mean 72.00; sample sd sqrt((2^2 + 2^2) / 1) = 2.828...
    assert s.loc[("s", "A"), "auroc_mean"] == "72.00 ± 2.83"
    assert abs(s.loc[("s", "A"), "auroc_mean_mean"] - 72.0) < 1e-9
    assert s.loc[("s", "A"), "n"] == 2  # the "best" row is not counted
    assert s.loc[("s", "B"), "auroc_mean"] == "80.00" and s.loc[("s", "B"), "n"] == 1  # one seed: the mean alone
    # sd 100 x 0.00001 / sqrt 2 = 0.0007 > 0 rounds to 0.00: shown as an upper bound
    assert s.loc[("s", "C"), "auroc_mean"] == "50.00 ± <0.01"
    assert s.loc[("t", "A"), "auroc_mean"] == "60.00 ± 0.00"  # equal values: a spread of exactly 0
    assert list(s.index) == [("s", "A"), ("s", "B"), ("s", "C"), ("t", "A")]  # order of appearance
    assert list(s.columns) == ["auroc_mean", "auroc_mean_mean", "n"]


def test_summarize_several_metrics_other_scale_and_all_rows():
    s = summarize(runs(), metrics=["auroc_mean", "auroc:X"], by=("label",), scale=1.0, decimals=3)
    # A: 0.70, 0.74, 0.60, 0.60 -> mean 0.66, sd sqrt((0.04^2 + 0.08^2 + 2 x 0.06^2) / 3)
    # = sqrt(0.0152 / 3) = 0.0712
    assert s.loc["A", "auroc_mean"] == "0.660 ± 0.071"
    # X of A: 0.60, 0.64, 0.1, 0.3 -> mean 0.41, sd sqrt((0.19^2 + 0.23^2 + 0.31^2 + 0.11^2) / 3)
    # = sqrt(0.1972 / 3) = 0.2564
    assert s.loc["A", "auroc:X"] == "0.410 ± 0.256"
    assert list(s.columns) == ["auroc_mean", "auroc_mean_mean", "auroc:X", "auroc:X_mean", "n"]
    everything = summarize(runs(), by=("label",), which=None)
    assert everything.loc["A", "n"] == 5  # the "best" row counts too


def test_pivot_and_per_class_by_hand():
    t = pivot_mean_std(runs())
    assert list(t.index) == ["A", "B", "C"] and list(t.columns) == ["s", "t"]
    assert t.loc["A", "s"] == "72.00 ± 2.83" and t.loc["A", "t"] == "60.00 ± 0.00" and t.loc["B", "s"] == "80.00"
    assert pd.isna(t.loc["B", "t"])  # not run
    p = per_class_mean_std(runs())
    assert list(p.columns) == ["X", "Mean"] and list(p.index) == ["A", "B", "C"]
    # X of A: 60, 64, 10, 30 -> 41.0 ± 25.6 (one decimal by default); mean of A: 66.0 ± 7.1
    assert p.loc["A", "X"] == "41.0 ± 25.6" and p.loc["A", "Mean"] == "66.0 ± 7.1"
    assert p.loc["B", "X"] == "90.0" and p.loc["C", "X"] == "50.0 ± 0.0"


def test_to_markdown_index_missing_values_and_no_number_parsing():
    t = pivot_mean_std(runs())
    assert to_markdown(t) == (
        "| method   | s             | t            |\n"
        "|:---------|:--------------|:-------------|\n"
        "| A        | 72.00 ± 2.83  | 60.00 ± 0.00 |\n"
        "| B        | 80.00         |              |\n"
        "| C        | 50.00 ± <0.01 |              |"
    )
    d = pd.DataFrame({"x": [1.0, np.nan], "y": [None, "0.10"], "n": [3, 4]})
    assert to_markdown(d) == (  # an unnamed index is the column "index"; None and NaN are empty
        "| index   | x   | y    | n   |\n"
        "|:--------|:----|:-----|:----|\n"
        "| 0       | 1.0 |      | 3   |\n"
        "| 1       |     | 0.10 | 4   |"
    )
    assert to_markdown(d, index=False).splitlines()[0] == "| x   | y    | n   |"
    two = summarize(runs())[["auroc_mean", "n"]]
    assert to_markdown(two).splitlines()[:3] == [  # a MultiIndex: one column per level
        "| setting   | label   | auroc_mean    | n   |",
        "|:----------|:--------|:--------------|:----|",
        "| s         | A       | 72.00 ± 2.83  | 2   |",
    ]


def test_to_latex_through_styler():
    tex = to_latex(pivot_mean_std(runs()), caption="c", label="tab:x")
    assert r"72.00 $\pm$ 2.83" in tex and r"\toprule" in tex and r"\caption{c}" in tex


def test_save_table_shows_two_digit_p_values_and_no_default_index(tmp_path):
    from fedpl_core.report.tables import difference_columns, paired_difference, save_table

    df = pd.DataFrame(
        {"label": ["x"] * 3 + ["y"] * 3, "seed": [0, 1, 2] * 2, "auroc_mean": [0.80, 0.82, 0.84, 0.78, 0.79, 0.83]}
    )
    row = difference_columns(paired_difference(df, "x", "y", which=None))
    # differences 2, 3, 1 points: mean 2, sd 1, t = 2 sqrt(3) on 2 dof, CI 2 -+ 4.303 / sqrt(3)
    assert row["diff (points)"] == 2.0 and row["sd"] == 1.0 and row["pairs"] == 3
    assert row["95 % CI"] == "-0.5 to 4.5" and round(row["p"], 3) == 0.074
    paths = save_table(pd.DataFrame([{"comparison": "x - y", **row}]), "t", tmp_path)
    md = open(paths["md"]).read().splitlines()
    assert md[0].split("|")[1].strip() == "comparison"  # no "index" column of 0..n-1
    assert md[2].split("|")[-2].strip() == "0.074"  # p to two significant digits
    assert pd.read_csv(paths["csv"], index_col=0)["p"].iloc[0] == pytest.approx(0.07417, abs=1e-5)  # every digit
    assert "0.074" in open(paths["tex"]).read() and "nan" not in open(paths["tex"]).read()


def _old_holm(pvalues):
    """The package's own Holm adjustment before statsmodels took over (kept here as the oracle)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and p == p]
    out = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (len(idx) - rank) * float(pvalues[i])))
        out[i] = round(running, 12)
    return out


def test_holm_is_statsmodels_and_equals_the_old_adjustment_exactly():
    from statsmodels.stats.multitest import multipletests

    import fedpl_core.report.tables as T

    assert T.holm([0.01, 0.04, 0.03, None]) == [0.03, 0.06, 0.06, None]  # the old doctest's values
    assert T.holm([None, float("nan")]) == [None, None] and T.holm([]) == []
    rng = np.random.default_rng(0)
    for _ in range(25):  # families of 1-8 with ties, None and NaN
        p = list(
            rng.choice([rng.uniform(0, 1), rng.uniform(0, 0.05), 0.5, None, float("nan")], size=rng.integers(1, 9))
        )
        assert T.holm(p) == _old_holm(p), p
    calls = []
    real = multipletests

    def spy(*a, **k):
        calls.append(k.get("method"))
        return real(*a, **k)

    import statsmodels.stats.multitest as M

    M.multipletests, saved = spy, M.multipletests
    try:
        T.holm([0.2, 0.01])
    finally:
        M.multipletests = saved
    assert calls == ["holm"]  # the kept library does the adjustment


def test_tables_a_reader_sees_use_names_not_registry_keys():
    from fedpl_core.report.tables import for_reading, save_table  # noqa: F401

    df = pd.DataFrame(
        {
            "label": ["fedavg_star", "fedavg_star", "FL + SA"],
            "setting": ["s"] * 3,
            "which": "final",
            "seed": [0, 1, 0],
            "auroc_mean": [0.7, 0.72, 0.8],
            "auroc:Pleural_Thickening": [0.6, 0.7, 0.8],
        }
    )
    t = pivot_mean_std(df)
    assert list(t.index) == ["FedAvg*", "FL + SA"] and t.index.name == "method"
    p = per_class_mean_std(df)
    assert list(p.columns) == ["Pleural Thickening", "Mean"] and list(p.index) == ["FedAvg*", "FL + SA"]
    claims = pd.DataFrame(
        {
            "metric": ["auroc_mean", "pl/coverage"],
            "vs": ["fedavg_pl", "FedAvg*"],
            "pairs": [3.0, float("nan")],
            "auroc_mean vs FedAvg": [1.0, 2.0],
        }
    )
    shown, index = for_reading(claims)
    assert list(shown.columns) == ["metric", "vs", "pairs", "mean AUROC vs FedAvg"] and not index
    assert shown["metric"].tolist() == ["mean AUROC", "pseudo-labels: share of missing entries tagged"]
    assert shown["vs"].tolist() == ["FedAvg-PL", "FedAvg*"]
    assert to_markdown(shown, index=False).splitlines()[2].split("|")[3].strip() == "3"  # not "3.0"


def test_per_class_table_names_the_threshold_of_its_threshold_metrics():
    """The README's res.per_class() showed "bacc 0.5" and f1 / precision / recall 0.0 for every
    class, unexplained: metrics at a 0.5 threshold that low scores never reach."""
    from fedpl_core.nn.metrics import multiclass_metrics, multilabel_metrics, per_class_table
    from fedpl_core.runs.results import RunResult

    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    s = np.array([[0.4, 0.1], [0.2, 0.3], [0.3, 0.2], [0.1, 0.4]])  # every score below 0.5
    m = multilabel_metrics(y, s, class_names=["Effusion", "Pleural_Thickening"])
    res = RunResult(config={}, history=[], final=m, best={}, class_names=m["class_names"], timings={})
    t = res.per_class()
    assert list(t.columns) == ["AUROC", "AP", "BACC @ 0.5", "F1 @ 0.5", "precision @ 0.5", "recall @ 0.5"]
    assert t.loc["Effusion", "AUROC"] == 1.0 and t.loc["Effusion", "F1 @ 0.5"] == 0.0  # ranked right, none above 0.5
    assert (per_class_table(m, display=False).values == t.values).all()  # the same numbers
    assert list(per_class_table(multilabel_metrics(y, s, threshold=0.25)).columns)[2] == "BACC @ 0.25"
    mc = multiclass_metrics(np.array([0, 1, 1]), np.array([[0.6, 0.4], [0.3, 0.7], [0.6, 0.4]]))
    assert list(per_class_table(mc).columns) == ["AUROC", "precision (arg max)", "recall (arg max)", "F1 (arg max)"]


def test_save_table_writes_atomically_inside_its_folder_never_through_a_link(tmp_path):
    from fedpl_core.report.tables import save_table

    folder, victim = tmp_path / "figures", tmp_path / "victim.md"
    folder.mkdir()
    victim.write_text("precious")
    os.symlink(victim, folder / "00_mean_auroc.md")
    paths = save_table(pd.DataFrame({"a": [1]}), "00_mean_auroc", folder)
    assert victim.read_text() == "precious" and not os.path.islink(paths["md"])
    assert open(paths["md"]).read().startswith("| a")
    for bad in ("../T", "../../T", str(tmp_path / "T"), "", "a/../../T"):
        with pytest.raises(ValueError, match="leaves its folder"):
            save_table(pd.DataFrame({"a": [1]}), bad, folder)
    assert not list(tmp_path.glob("T.*"))
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
