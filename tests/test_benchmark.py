"""The cross-paper benchmark's tables (hand-made results) and its settings."""

import pandas as pd
import pytest

from fedpl_core.studies import benchmark as B


def _frame():
    rows = []
    for seed, (a, b, c) in enumerate([(0.80, 0.70, 0.70), (0.82, 0.72, 0.72)]):
        for label, v in (("a", a), ("b", b), ("c", c)):
            rows.append({"setting": B.SETTINGS[1], "label": label, "seed": seed, "which": "final", "score": v})
        rows.append({"setting": B.SETTINGS[0], "label": "a", "seed": seed, "which": "final", "score": 0.5})
        rows.append({"setting": B.SETTINGS[0], "label": "b", "seed": seed, "which": "final", "score": 0.6})
    return pd.DataFrame(rows)


def test_leaderboard_ranks_means_with_ties_in_setting_order():
    board = B.leaderboard(_frame())
    assert list(board["setting"].unique()) == [B.SETTINGS[0], B.SETTINGS[1]]  # the SETTINGS order, not alphabetical
    s1 = board[board["setting"] == B.SETTINGS[1]].set_index("method")
    assert s1.loc["a", "rank"] == 1 and s1.loc["b", "rank"] == 2 and s1.loc["c", "rank"] == 2  # tie: better rank
    assert s1.loc["a", "score"] == "0.810 ± 0.014" and s1.loc["a", "n"] == 2
    ranks = B.rank_table(board)
    assert ranks.loc["a", "mean rank"] == pytest.approx((2 + 1) / 2) and ranks.loc["b", "mean rank"] == 1.5


def test_settings_cover_the_four_papers_and_every_registered_method():
    from fedpl_core.methods import available_methods

    cfgs = B.settings("smoke")
    assert list(cfgs) == list(B.SETTINGS)
    assert cfgs[B.SETTINGS[1]].partition == "label_set_mismatch" and cfgs[B.SETTINGS[1]].partition_kwargs["seed"] == 523
    assert cfgs[B.SETTINGS[2]].dataset == "fedpsl" and cfgs[B.SETTINGS[3]].dataset == "surgical-noniid"
    from fedpl_core.methods import METHODS

    multi = [m for m in available_methods() if "multilabel" in METHODS[m].tasks]
    ablations = ("fedlsm_no_awpa", "fedlsm_no_ude", "fedlsm_no_ue", "fedpsl_tadl", "fedpsl_tdma")
    assert B.methods() == [m for m in multi if m not in ablations]  # the classes' own ``ablation``
    assert "fedrs" not in B.methods() and "fedpu" not in B.methods()  # single-label methods
    assert {"fedlsm", "fedmlp", "fedpsl", "surgical"} <= set(B.methods())
    assert "fedavg" not in B.methods(["fedavg"])
    with pytest.raises(ValueError, match="unknown profile"):
        B.settings("tpu")


def test_the_leaderboard_a_reader_sees_names_methods_as_their_papers_do():
    from fedpl_core.methods import available_methods

    df = _frame().replace({"label": {"a": "fedavg_star", "b": "oracle_wbce", "c": "fedavg_pl"}})
    shown = B.leaderboard_table(B.leaderboard(df))
    assert not set(shown["method"]) & set(available_methods())  # no registry key
    assert {"FedAvg*", "Oracle (wBCE)"} <= set(shown["method"]) and "mean" not in shown
    table = B.methods_table(["fedavg_star", "surgical"])
    assert list(table.index) == ["FedAvg*", "Surgical Aggregation"]
    assert list(table["registry name (method=)"]) == ["fedavg_star", "surgical"]  # what a user types


def test_each_leaderboard_heading_names_the_score_it_ranks_by():
    assert "external: mean AUROC" in B.leaderboard_caption(B.SETTINGS[3], 3)
    assert B.leaderboard_caption(B.SETTINGS[0], 1).endswith("(mean AUROC, last round, 1 seed)")
