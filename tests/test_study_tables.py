"""The tables and sentences the notebooks show, built by their study modules (the cells only
call and display them): each function on a small results frame whose answer is known."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from fedpl_core.runs.study import Histories
from fedpl_core.studies import benchmark, fedlsm, fedmlp, fedpsl, introduction, surgical
from fedpl_core.studies.notebook import bullets, join


def results(
    scores: dict[str, list[float]], setting: str = "s", metrics=("auroc_mean",), which=("final",), rounds: int = 4
) -> pd.DataFrame:
    """A ``run_many``-like frame: label -> one score a seed (every metric gets it, shifted by
    0.01 a metric), with per-round histories that climb linearly to the final score."""
    rows, hist = [], {}
    for label, vals in scores.items():
        for seed, v in enumerate(vals):
            for w in which:
                rows.append(
                    {
                        "setting": setting,
                        "label": label,
                        "seed": seed,
                        "which": w,
                        "round": rounds,
                        **{m: v + 0.01 * i for i, m in enumerate(metrics)},
                    }
                )
            hist[(setting, label, seed)] = [{"round": r, "auroc_mean": v * r / rounds} for r in range(1, rounds + 1)]
    df = pd.DataFrame(rows)
    df.attrs["histories"] = Histories(hist)  # as run_many keeps them
    return df


def test_frames_derived_from_a_grid_share_its_histories_instead_of_copying_them():
    """pandas deep-copies ``attrs`` into every derived frame; the histories are shared, read-only."""
    df = results({"A": [0.7, 0.8], "B": [0.6, 0.7]})
    h = df.attrs["histories"]
    derived = [df[df["label"] == "A"], df["auroc_mean"].to_frame(), next(iter(df.groupby("label")))[1]]
    assert all(d.attrs["histories"] is h for d in derived)
    assert len(h) == 4 and h[("s", "B", 1)][-1]["auroc_mean"] == pytest.approx(0.7)
    with pytest.raises(TypeError):
        h[("s", "C", 0)] = []  # read-only


# ------------------------------------------------------------------ prose helpers
def test_join_and_bullets_write_prose_not_lists():
    assert join([10, 8, 8]) == "10, 8 and 8" and join(["a", "b"], "or") == "a or b"
    assert bullets(["one"]) == "one" and bullets(["a", "b"]) == "* a\n* b"


# ------------------------------------------------------------------ 04 FedMLP
@pytest.fixture
def fedmlp_settings():
    return fedmlp.settings("smoke")


def test_fedmlp_claims_table_pairs_on_seeds_and_counts_what_holds(fedmlp_settings):
    st = fedmlp_settings
    st.missing = {"ICH": [4], "CXR": [7]}
    res = {
        "ICH": results(
            {"FedMLP": [0.70, 0.72, 0.74], "FedAvg-PL": [0.60, 0.61, 0.65], "FedAvg": [0.70, 0.72, 0.74]},
            setting="m=4",
            metrics=("auroc_mean", "map"),
        ),
        "CXR": results(
            {"FedMLP": [0.5, 0.5, 0.5], "FedAvg-PL": [0.5, 0.5, 0.5], "FedAvg": [0.5, 0.5, 0.5]},
            setting="m=7",
            metrics=("auroc_mean", "map"),
        ),
    }
    claims = fedmlp.claims_table(res, st)
    assert len(claims) == 8 and list(claims.columns[:4]) == ["table", "m", "metric", "vs"]
    ich = claims[(claims["table"] == "ICH") & (claims["vs"] == "FedAvg-PL") & (claims["metric"] == "auroc_mean")].iloc[
        0
    ]
    assert ich["diff (points)"] == pytest.approx(10.0) and ich["p"] < 0.05
    said = fedmlp.claims_sentences(claims)
    assert said[-1].startswith("FedMLP is significantly above the reference in 2 of 8 comparisons")
    shows = fedmlp.what_this_run_shows(claims, pd.DataFrame(), pd.DataFrame())
    assert "is reproduced here" in shows[0] and "is inconclusive here" in shows[1]
    assert "2 reproduce the paper's direction, 0 show the opposite and 6 cannot be told apart" in shows[2]


def test_fedmlp_closing_verdict_is_the_headline_tables(fedmlp_settings):
    """With the headline table the closing sentence gives its verdict, *absent* included: the
    CXR gap's interval (about +-2.5 points) lies inside half the paper's 11-point gain."""
    from fedpl_core.report.findings import headline_table

    st = fedmlp_settings
    st.missing = {"ICH": [4], "CXR": [7]}
    res = {
        "CXR": results(
            {"FedMLP": [0.50, 0.51, 0.50], "FedAvg-PL": [0.50, 0.50, 0.51], "FedAvg": [0.5, 0.5, 0.5]},
            setting="m=7",
            metrics=("auroc_mean", "map"),
        )
    }
    claims = fedmlp.claims_table(res, st)
    headline = headline_table(fedmlp.headline_claims(st), res)
    row = headline[(headline["b"] == "FedAvg-PL") & headline["claim"].str.contains("(CXR)", regex=False)]
    assert row["verdict"].tolist() == ["absent"]
    alone = fedmlp.what_this_run_shows(claims, pd.DataFrame(), pd.DataFrame())
    assert "FedAvg-PL in mean AUROC is inconclusive here" in alone[0]  # no margin without the headline
    shows = fedmlp.what_this_run_shows(claims, pd.DataFrame(), pd.DataFrame(), headline)
    assert "FedAvg-PL in mean AUROC is absent here" in shows[0]


def test_fedmlp_ablation_steps_are_paired_row_to_row_with_holm():
    ra = {
        "ICH": results({"FedAvg": [0.60, 0.61, 0.62], "+ MLD": [0.62, 0.63, 0.65], "FedMLP (+ ST)": [0.62, 0.63, 0.65]})
    }
    steps = fedmlp.ablation_steps(ra)
    assert list(steps.index) == [("ICH", "FedAvg -> + MLD"), ("ICH", "+ MLD -> FedMLP (+ ST)")]
    assert steps["AUC change (points)"].tolist() == pytest.approx([2.33, 0.0], abs=0.01)
    assert steps["p (Holm)"].iloc[0] >= steps["p"].iloc[0]
    shows = fedmlp.what_this_run_shows(
        pd.DataFrame(columns=["metric", "vs", "table", "diff (points)", "p"]), steps, pd.DataFrame()
    )
    assert shows == [
        f"The ablation's largest step is FedAvg -> + MLD in ICH: +2.3 points (p = {steps['p'].iloc[0]:.2g})."
    ]


def test_fedmlp_hot_cool_sentence_gives_a_verdict():
    g = {
        "diff": 3.0,
        "p": 0.01,
        "cool": 4.0,
        "hot": 1.0,
        "n_cool": 2,
        "n_hot": 3,
        "cool_clients": (1, 2),
        "hot_clients": (4, 5),
    }
    assert fedmlp.hot_cool_sentence(g, "ICH", 2).endswith("larger on the cool classes: reproduced here.")
    assert fedmlp.hot_cool_sentence(dict(g, diff=-3.0), "ICH", 2).endswith("opposite here.")
    assert "no hot / cool split" in fedmlp.hot_cool_sentence(dict(g, diff=None), "ICH", 2)


@pytest.mark.parametrize("ratio", [0.005, 0.01, 0.025, 0.05, 0.3])
def test_fedmlp_samples_for_a_tag_is_where_mld_sets_its_first_tag(ratio):
    """The count the sentence names is the method's own threshold: ``select_tags`` on that
    many untagged samples of one side sets one tag, on one fewer none."""
    import torch

    from fedpl_core.methods.fedmlp import select_tags

    need = int(fedmlp.samples_for_a_tag(ratio))
    for n, tags in ((need, 1), (need - 1, 0)):
        z = -torch.linspace(0.1, 1.0, n)  # every sample on the Z < 0 side
        neg, pos = select_tags(z, torch.zeros(n, dtype=torch.bool), ratio, ratio)
        assert (neg.numel(), pos.numel()) == (0, tags), (ratio, n)
    assert fedmlp.samples_for_a_tag(0.0) == float("inf")


def test_fedmlp_tag_floor_sentence_says_which_clients_can_tag():
    none = fedmlp.tag_floor_sentence(0.005, 0.01, {"ICH": [90] * 5, "CXR": [60] * 8})
    assert "once 100 of" in none and "once 200 of" in none
    assert none.endswith("no client can set a single tag, so MLD cannot act and FedMLP trains as WPC + CR.")
    mixed = fedmlp.tag_floor_sentence(0.005, 0.01, {"ICH": [110, 120], "CXR": [90] * 8, "big": [250]})
    assert "in ICH only a tag 1, once 100 of its 120 samples have Z < 0" in mixed
    assert "in CXR no client can set a tag" in mixed
    assert "in big every client can tag" in mixed
    assert "no tag 0 at T0 = 0" in fedmlp.tag_floor_sentence(0.0, 0.01, {"ICH": [150]})


def test_fedmlp_row_one_check_says_different_when_it_is():
    a = results({"FedAvg": [0.6, 0.7]})
    assert fedmlp.row_one_is_fedavg(a, a.copy(), "ICH", "m=4").endswith("identical on every seed")
    b = a.assign(auroc_mean=a["auroc_mean"] + 1e-9)
    assert fedmlp.row_one_is_fedavg(a, b, "ICH", "m=4").endswith("DIFFERENT")


# ------------------------------------------------------------------ 02 FedLSM
def test_fedlsm_claims_and_ablation_tables():
    r1 = results({"FedLSM": [0.60, 0.61, 0.62], "FedAvg-PL": [0.70, 0.72, 0.71], "FedAvg*": [0.70, 0.70, 0.70]})
    r2 = results(
        {"FedLSM": [0.90, 0.91, 0.92], "FedAvg-PL": [0.80, 0.80, 0.81], "FedAvg*": [0.85, 0.86, 0.88]},
        metrics=("auroc_mean", "f1"),
    )
    claims = fedlsm.claims_table({"Task 1": r1, "Task 2": r2})
    assert claims[["task", "metric", "vs"]].values.tolist() == [
        ["Task 1", "auroc_mean", "FedAvg-PL"],
        ["Task 1", "auroc_mean", "FedAvg*"],
        ["Task 2", "auroc_mean", "FedAvg-PL"],
        ["Task 2", "auroc_mean", "FedAvg*"],
        ["Task 2", "f1", "FedAvg-PL"],
        ["Task 2", "f1", "FedAvg*"],
    ]
    ra = {"Task 1": results({"FedLSM": [0.6, 0.62, 0.64], "w/o AWPA": [0.55, 0.56, 0.58]})}
    table3 = fedlsm.ablation_table(ra)
    row = table3[table3["method"] == "w/o AWPA"].iloc[0]
    assert row["mean ± SD"] == "56.3 ± 1.5" and row["vs FedLSM"] == pytest.approx(-5.67, abs=0.01)
    assert fedlsm.ablation_sentences(table3)[0].startswith("Task 1, mean AUROC: removing AWPA lowers the score by 5.7")
    shows = fedlsm.what_this_run_shows(claims, table3, pd.DataFrame(), {"Task 1": 0.0})
    assert shows[0].startswith("Task 1: the paper's claim that FedLSM is above FedAvg* in mean AUROC is opposite here")
    assert shows[1].startswith("Task 2: the paper's claim that FedLSM is above FedAvg* in AUC is reproduced here")
    assert "never engaged" in shows[2] and shows[-1] == (
        "Removing a component lowers the score significantly in 1 of the ablation's 1 rows."
    )


def test_fedlsm_closing_verdict_is_the_headline_tables_and_names_the_pseudo_labels_precision():
    """With the headline table the closing sentence gives its verdict, *absent* included (the
    Task 1 gap's interval lies inside half the paper's 3.1-point gain); without it, no margin."""
    from fedpl_core.report.findings import headline_table

    r1 = results({"FedLSM": [0.700, 0.705, 0.700], "FedAvg-PL": [0.6, 0.6, 0.6], "FedAvg*": [0.700, 0.700, 0.703]})
    claims = fedlsm.claims_table({"Task 1": r1})
    headline = headline_table(fedlsm.headline_claims(), {"Task 1": r1})
    row = headline[(headline["b"] == "FedAvg*") & headline["claim"].str.startswith("Table 1: ")]
    assert row["verdict"].tolist() == ["absent"]
    alone = fedlsm.what_this_run_shows(claims, pd.DataFrame(), pd.DataFrame())
    assert "in mean AUROC is inconclusive here" in alone[0]
    shows = fedlsm.what_this_run_shows(
        claims, pd.DataFrame(), pd.DataFrame(), {"Task 1": 0.78}, headline=headline, precision={"Task 1": 0.065}
    )
    assert "in mean AUROC is absent here" in shows[0]
    assert shows[1] == (
        "Task 1: FedLSM's teacher pseudo-labelled 78.0 % of the unknown entries by the last round; "
        "6.5 % of its positive pseudo-labels were right."
    )


def test_fedlsm_last_coverage_reads_the_last_round_of_each_seed():
    df = results({"FedLSM": [0.5, 0.5]})
    df.attrs["histories"] = {
        ("s", "FedLSM", s): [{"round": 1, "pl/coverage": 0.0}, {"round": 2, "pl/coverage": c}]
        for s, c in ((0, 0.1), (1, 0.3))
    }
    assert fedlsm.last_coverage(df) == pytest.approx(0.2) and fedlsm.last_coverage(df, "FedAvg") is None
    # the positive precision: each seed at its last round with a positive pseudo-label
    df.attrs["histories"] = {
        ("s", "FedLSM", 0): [{"round": 1, "pl/pos_precision": 0.5}, {"round": 2, "pl/pos_precision": 0.1}],
        ("s", "FedLSM", 1): [{"round": 1, "pl/pos_precision": 0.3}, {"round": 2, "pl/pos_precision": None}],
    }
    assert fedlsm.last_coverage(df, metric="pl/pos_precision") == pytest.approx(0.2)
    assert fedlsm.last_coverage(df, "FedAvg", metric="pl/pos_precision") is None


def test_fedlsm_tried_sentences_count_significant_wins():
    tried = pd.DataFrame(
        [
            {
                "task": "Task 1",
                "variant": "v",
                "pseudo-labelled share (last round)": 0.25,
                "positive precision": 0.5,
                "auroc_mean vs FedAvg": "+2.0 (p = 0.01)",
                "auroc_mean vs FedAvg*": "+1.0 (p = 0.2)",
            }
        ]
    ).set_index(["task", "variant"])
    (s,) = fedlsm.tried_sentences(tried)
    assert s == (
        "Task 1, v: pseudo-labels on 25.0% of the unknown entries; significantly above the reference in 1 "
        "comparison(s) (auroc_mean vs FedAvg)"
    )


# ------------------------------------------------------------------ 03 Surgical Aggregation
def test_surgical_round_gap_half_way_and_last_and_its_sentence():
    rows = []
    for k, lead in ((2, 1.0), (4, 2.0)):
        for seed in range(3):
            for r in (1, 2, 3, 4):
                rows += [
                    {
                        "K": k,
                        "label": "FL + SA",
                        "seed": seed,
                        "round": r,
                        "auroc_mean": 0.5 + 0.01 * lead + seed / 100,
                    },
                    {"K": k, "label": "FL + PL", "seed": seed, "round": r, "auroc_mean": 0.5 + seed / 100},
                ]
    gap = surgical.round_gap(pd.DataFrame(rows), "FL + SA", "FL + PL")
    assert gap["when"].tolist() == ["middle round (2)", "last round (4)"] * 2
    assert gap["gap"].tolist() == pytest.approx([1.0, 1.0, 2.0, 2.0])
    s = surgical.round_gap_sentence(gap)
    assert "K = 2: +1.0 and K = 4: +2.0 points, growing with every step of K" in s and "[" not in s


def test_surgical_round_gap_holds_a_run_stopped_early_at_its_last_model():
    """Early stopping (the paper profile): every FL + SA run stops at round 2, the FL + PL runs
    train to round 4. The later rounds pair each FL + SA run's last model with FL + PL's, instead
    of finding no FL + SA run there."""
    rows = [
        {"K": 2, "label": "FL + SA", "seed": seed, "round": r, "auroc_mean": 0.6 + r / 100 + seed / 1000}
        for seed in range(3)
        for r in (1, 2)
    ]
    rows += [
        {"K": 2, "label": "FL + PL", "seed": seed, "round": r, "auroc_mean": 0.6 + seed / 1000}
        for seed in range(3)
        for r in (1, 2, 3, 4)
    ]
    gap = surgical.round_gap(pd.DataFrame(rows), "FL + SA", "FL + PL")
    assert gap["when"].tolist() == ["middle round (2)", "last round (4)"]
    assert gap["gap"].tolist() == pytest.approx([2.0, 2.0]) and (gap["pairs"] == 3).all()


def test_surgical_end_points_and_settings_table_show_no_machine_path(tmp_path, monkeypatch):
    res = results({"FL + SA": [0.7, 0.72, 0.71], "FL": [0.6, 0.61, 0.6], "FL + PL": [0.7, 0.72, 0.71]}, which=("best",))
    (s,) = surgical.end_point_sentences({"Ablation (a)": res})
    assert s.startswith("**Ablation (a).** FL + SA is 10.7 points above FL") and "level with FL + PL" in s
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path))
    st = surgical.settings("smoke")
    st.results_dir = str(tmp_path / "r")
    table = surgical.settings_table(st)
    assert str(tmp_path) not in table.to_string() and table.loc["results_dir", "value"] == "$FEDPL_RESULTS/r"
    assert table.loc["profile", "value"] == "smoke"


# ------------------------------------------------------------------ 01 FedPSL
def test_fedpsl_comparisons_and_table5():
    df = results(
        {"FedPSL": [0.7, 0.72, 0.74], "FedAVG": [0.6, 0.63, 0.64], "Oracle": [0.9, 0.9, 0.91]}, which=("final", "best")
    )
    said = fedpsl.comparison_sentences(df, [("FedPSL", "FedAVG"), ("IML", "FedAVG")])
    assert (
        len(said) == 1 and said[0].startswith("FedPSL is 9.7 points above FedAVG") and "[best round*: +9.7" in said[0]
    )
    df5 = pd.concat(
        [results({"FedPSL": [0.7, 0.72]}, setting=f"E={e}", which=("final", "best")).assign(E=e) for e in (1, 2)]
    )
    t5 = fedpsl.table5(df5, df, "best")
    assert list(t5.columns) == ["E=1", "E=2"] and "Oracle" in t5.index
    assert "Oracle" not in fedpsl.table5(df5, df, "final").index
    (s,) = fedpsl.table5_sentences(df5, ["FedPSL"])
    assert s.startswith("FedPSL: mean AUROC 0.710 at E = 1 and 0.710 at E = 2")


def test_fedpsl_sweep_gain_sentence():
    gain = pd.DataFrame({"n": [30, 60], "diff": [2.0, -1.0], "p": [0.01, None]})
    assert fedpsl.sweep_gain_sentence(gain, "n", "Gain") == "Gain: n = 30: +2.0 (p = 0.01); n = 60: -1.0 (no test)."


# ------------------------------------------------------------------ 00 introduction
def test_introduction_findings_are_prose():
    methods = ["fedavg", "fedavg_pl", "surgical", "centralized", "oracle"]
    df = results(
        {
            "fedavg": [0.6, 0.62, 0.61],
            "fedavg_pl": [0.65, 0.66, 0.64],
            "surgical": [0.66, 0.69, 0.65],
            "centralized": [0.6, 0.6, 0.61],
            "oracle": [0.8, 0.81, 0.8],
        },
        setting="one class per client",
    )
    (para,) = introduction.findings(df, ["one class per client"], methods, [0, 1, 2])
    assert para.startswith("**one class per client.** The cost of partial labels: the Oracle is above every")
    assert "FedAvg does not decline" in para and "rounds 4, 4 and 4 (one per seed)" in para
    assert not re.search(r"\b(fedavg|fedavg_pl|surgical|oracle|centralized)\b", para), "a registry key in the prose"
    assert not re.search(r"\[\d", para), "a Python list in the prose"


def test_command_line_makes_the_same_run():
    from fedpl_core.apps import cli
    from fedpl_core.data import synthetic as S
    from fedpl_core.fl.engine_config import EngineConfig
    from fedpl_core.runs.experiment_config import ExperimentConfig

    cfg = ExperimentConfig(
        dataset="synthetic-cxr",
        classes=list(S.FEDMLP_CXR8),
        image_size=32,
        n_train=2400,
        n_test=1200,
        model_kwargs={"width": 8},
        partition="missing_classes",
        num_clients=8,
        partition_kwargs={"missing": 7, "seed": 0},
        method="fedavg_pl",
        seed=1,
        engine=EngineConfig(
            rounds=16, local_epochs=2, batch_size=32, lr=2e-3, eval_every=2, progress=False, channels_last=True
        ),
    )
    import shlex

    argv = shlex.split(introduction.command_line(cfg).replace("\\\n", " "))[3:]
    back = cli.config_from_args(cli.build_parser().parse_args(argv))
    assert back == cfg and back.run_id() == cfg.run_id()


# ------------------------------------------------------------------ 05 benchmark
def test_benchmark_ranks_by_hand_equal_the_package_and_the_closing_sentences():
    s1, s2 = benchmark.SETTINGS[:2]
    df = pd.concat(
        [
            results({"a": [0.8, 0.82], "b": [0.7, 0.72], "oracle": [0.9, 0.9]}, setting=s1),
            results({"a": [0.6, 0.62], "b": [0.9, 0.88], "oracle": [0.95, 0.95]}, setting=s2),
        ]
    )
    df["score"] = df["auroc_mean"]
    board = benchmark.leaderboard(df)
    means = df.groupby(["label", "setting"])["score"].mean().unstack()
    assert (
        benchmark.mean_ranks_by_hand(means).rename({"oracle": "Oracle"}).to_dict()
        == benchmark.rank_table(board)["mean rank"].astype(float).to_dict()
    )
    said = benchmark.best_sentences(board, df)
    assert (
        said[0].startswith(f"**{s1}**: best Oracle;")
        and "Oracle is" in said[0]
        and said[0].endswith("Best method without full labels: a (rank 2).")
    )
    shows = benchmark.what_this_run_shows(board, paper_methods=("b",))
    assert shows[0] == "Over the 2 settings the best mean ranks are Oracle (1.00), a (2.50) and b (2.50), of 3 methods."
    assert shows[1].startswith("The papers' own methods: b 2.50 (place 2).")


def test_fedlsm_ham_tdma_sentences_read_the_benchmarks_table_with_verdicts():
    ham = pd.DataFrame(
        [
            {
                "client loss": "softmax over all classes",
                "metric": "AUC",
                "FedAvg-PL": 80.0,
                "FedAvg*": 75.5,
                "TDMA gain (points)": -4.5,
                "p": 0.02,
                "pairs": 3,
            },
            {
                "client loss": "softmax over known classes",
                "metric": "AUC",
                "FedAvg-PL": 83.6,
                "FedAvg*": 84.8,
                "TDMA gain (points)": 1.2,
                "p": 0.2,
                "pairs": 3,
            },
        ]
        + [
            {
                "client loss": c,
                "metric": m,
                "FedAvg-PL": v,
                "FedAvg*": v + 1,
                "TDMA gain (points)": None,
                "p": None,
                "pairs": 3,
            }
            for c in ("softmax over all classes", "softmax over known classes")
            for m, v in (("Accuracy", 60.0), ("F1", 20.0))
        ]
        + [
            {
                "client loss": "always NV (no training)",
                "metric": m,
                "FedAvg-PL": v,
                "FedAvg*": v,
                "TDMA gain (points)": None,
                "p": None,
                "pairs": "",
            }
            for m, v in (("Accuracy", 64.8), ("F1", 11.2))
        ]
    )
    lines = fedlsm.ham_tdma_sentences(ham)
    assert lines[0].endswith("(p = 0.02; paper +2.2): opposite") and lines[1].endswith("inconclusive")
    assert lines[2] == "Accuracy: the trained runs score 60.0 to 61.0; always NV (no training) scores 64.8"
