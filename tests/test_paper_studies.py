"""The FedLSM and FedMLP studies: declarative settings, method lists, tables, real-data paths."""

import dataclasses

import pandas as pd
import pytest
from fixtures_data import ham_rows, write_ham10000

from fedpl_core.methods import get_method
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedlsm, fedmlp


def test_fedlsm_settings_follow_the_paper_tables():
    st = fedlsm.settings("cpu")
    t1, t2 = st.config("Task 1"), st.config("Task 2")
    assert (t1.num_clients, t2.num_clients) == (8, 5)  # Tables 5 and 6
    assert t1.partition == t2.partition == "label_set_mismatch" and t1.partition_kwargs == {
        "classes_per_client": 3,
        "seed": 523,
    }
    assert (t1.dataset, t2.dataset) == ("synthetic-cxr", "synthetic-skin") and len(t1.classes) == 14
    assert t1.engine.local_iters > t2.engine.local_iters and t1.engine.selection == "val_loss"  # as 200 / 30
    full = fedlsm.settings("full")
    assert (
        full.config("Task 1").engine.local_iters == 200 and full.config("Task 2").engine.local_iters == 30
    )  # Sec. 3.2
    assert full.config("Task 1").engine.lr == 1e-4 and full.config("Task 1").engine.weight_decay == 5e-4  # Table 4
    names1 = [o["method"] for _, o in fedlsm.methods("Task 1")]
    names2 = [o["method"] for _, o in fedlsm.methods("Task 2")]
    assert "fedrs" not in names1 and "fedpu" not in names1 and {"fedrs", "fedpu"} <= set(names2)  # single-label only
    assert "fedpsl" in names1 and names1[-1] == names2[-1] == "fedlsm"
    assert fedlsm.missing_methods() == []
    fo = dict(fedlsm.methods("Task 1", first_order=True))
    assert fo["FedPSL"] == {"method": "fedpsl", "method_kwargs": {"first_order": True}} and fo["FedLSM"] == {
        "method": "fedlsm"
    }
    with pytest.raises(ValueError, match="unknown task"):
        st.config("Task 3")


def test_fedlsm_task2_runs_unchanged_on_ham10000_files(tmp_path):
    """``data_roots={"Task 2": ...}`` swaps the synthetic skin lesions for HAM10000 read in its
    published layout; Task 1 stays on the built-in chest X-rays."""
    write_ham10000(tmp_path, rows=ham_rows(60), size=(40, 30))
    st = fedlsm.settings("smoke", data_roots={"Task 2": str(tmp_path)})
    cfg = st.config("Task 2")
    assert cfg.dataset == "ham10000" and cfg.data_root == str(tmp_path) and cfg.classes is None
    t1 = st.config("Task 1")
    assert t1.dataset == "synthetic-cxr" and t1.data_root is None and len(t1.classes) == 14
    assert fedlsm.settings("smoke").config("Task 2").dataset == "synthetic-skin"  # no root: built-in data
    df = run_many(cfg, [("FedAvg*", {"method": "fedavg_star"}), ("FedLSM", {"method": "fedlsm"})], [0], progress=False)
    final = df[df["which"] == "final"].set_index("label")
    assert set(final.index) == {"FedAvg*", "FedLSM"} and final["accuracy"].between(0, 1).all()
    assert fedlsm.table2(df).columns.tolist() == list(fedlsm.TABLE2_METRICS)


def test_fedlsm_data_roots_per_task_and_clear_errors(tmp_path):
    st = fedlsm.settings("cpu", data_roots={"Task 1": "/nih", "Task 2": "/ham"})
    assert st.config("Task 1").dataset == "nih" and st.config("Task 1").data_root == "/nih"
    assert st.config("Task 1").classes is None and st.config("Task 2").data_root == "/ham"
    assert fedlsm.settings("cpu", data_roots={"Task 1": "/nih"}).config("Task 2").dataset == "synthetic-skin"
    assert fedlsm.settings("cpu").data_roots == {} and fedlsm.settings("cpu", data_roots=None).data_roots == {}
    with pytest.raises(ValueError, match="unknown task 'Task 3' in data_roots.*'Task 2'"):
        fedlsm.settings("cpu", data_roots={"Task 3": str(tmp_path)})
    with pytest.raises(ValueError, match="unknown task 'ham10000' in data_roots"):  # caught in config() too
        dataclasses.replace(fedlsm.settings("cpu"), data_roots={"ham10000": "/ham"}).config("Task 2")
    with pytest.raises(TypeError, match="data_roots maps a task"):  # the old single data_root
        fedlsm.settings("cpu", data_roots=str(tmp_path))
    # papermill -p passes a dict as its text
    assert fedlsm.settings("cpu", data_roots='{"Task 2": "/ham"}').data_roots == {"Task 2": "/ham"}


def _ranked_runs(lsm, star, avg, metric="auroc_mean"):
    rows = [
        {
            "label": lab,
            "seed": s,
            "which": "final",
            "setting": "",
            "auroc_mean": v,
            "accuracy": v,
            "f1": v,
            "precision": v,
            "recall": v,
        }
        for lab, vals in (("FedAvg-PL", avg), ("FedAvg*", star), ("FedLSM", lsm))
        for s, v in enumerate(vals)
    ]
    return pd.DataFrame(rows)


def test_fedlsm_paper_numbers_beside_ours_and_the_ranking_test():
    df = _ranked_runs([0.90, 0.92, 0.94], [0.85, 0.86, 0.88], [0.80, 0.83, 0.84])
    wp = fedlsm.with_paper(df, "Task 2")
    assert wp.columns.tolist()[:4] == ["AUC (ours)", "AUC (paper)", "Accuracy (ours)", "Accuracy (paper)"]
    assert wp.loc["FedLSM", "AUC (ours)"] == "92.0 ± 2.0" and wp.loc["FedLSM", "AUC (paper)"] == "96.0"
    assert wp.loc["FedAvg*", "F1 (paper)"] == "62.0" and wp.loc["FedPSL", "AUC (ours)"] == "not run"
    assert fedlsm.with_paper(df, "Task 1").loc["FedLSM", "AUC (paper)"] == "79.1"  # Table 1's average AUC
    assert fedlsm.with_paper(df, "Task 2", not_run=False).index.tolist() == ["FedAvg-PL", "FedAvg*", "FedLSM"]
    steps = fedlsm.ordering(df, "Task 2")
    assert steps["metric"].tolist() == ["AUC", "AUC", "Accuracy", "Accuracy", "F1", "F1"]
    auc = steps[steps["metric"] == "AUC"].set_index("A")
    # FedLSM - FedAvg*: 5, 6, 6 points; FedAvg* - FedAvg: 5, 3, 4
    assert auc.loc["FedLSM", "A - B (points)"] == pytest.approx(5.67, abs=0.01)
    assert auc.loc["FedAvg*", "A - B (points)"] == pytest.approx(4.0)
    assert auc.loc["FedLSM", "paper A - B"] == pytest.approx(1.1)  # 0.960 - 0.949
    assert auc.loc["FedAvg*", "paper A - B"] == pytest.approx(2.2)  # 0.949 - 0.927
    assert auc["p"].max() < 0.05 and (auc["pairs"] == 3).all()
    text = fedlsm.describe_ordering(steps)
    assert len(text) == 3 and text[0].startswith("AUC: the ranking FedLSM > FedAvg* > FedAvg-PL is reproduced here")
    # FedLSM significantly below FedAvg*: that step and the ranking are opposite, computed from the numbers
    worse = fedlsm.describe_ordering(
        fedlsm.ordering(_ranked_runs([0.80, 0.82, 0.83], [0.85, 0.86, 0.88], [0.80, 0.83, 0.84]), "Task 1")
    )
    assert len(worse) == 1 and "is opposite here" in worse[0]
    assert "FedLSM − FedAvg* = -4.7 points" in worse[0] and worse[0].count(": opposite") == 1
    # above, but the interval spans 0: not distinguishable, never "holds" or "fails"
    noisy = fedlsm.describe_ordering(
        fedlsm.ordering(_ranked_runs([0.95, 0.85, 0.90], [0.85, 0.86, 0.88], [0.80, 0.83, 0.84]), "Task 1")
    )
    assert "is inconclusive here" in noisy[0] and "hold" not in noisy[0] and "fail" not in noisy[0]


def test_fedmlp_settings_levels_and_ablation():
    st = fedmlp.settings("full")
    assert st.missing == {"ICH": [1, 2, 3, 4], "CXR": [1, 3, 5, 7]}  # Tables 1 and 2
    assert st.config("ICH").num_clients == 5 and st.config("CXR").num_clients == 8
    assert st.config("ICH").classes == ["epidural", "intraparenchymal", "intraventricular", "subarachnoid", "subdural"]
    assert st.config("CXR").engine.selection is None  # the paper reports the last round
    assert (st.t0, st.t1, st.lr) == (0.005, 0.01, 3e-5)
    assert fedmlp.level_settings(st, "CXR")["m=7"] == {"partition_kwargs": {"missing": 7}}
    assert fedmlp.one_class_setting("ICH", 5) == {"m=4": {"partition_kwargs": {"missing": 4}}}
    abl = dict(fedmlp.ablation_methods(st))
    assert abl["FedAvg"]["method_kwargs"] == {
        **st.fedmlp_kwargs(),
        "mld": False,
        "wpc": False,
        "cr": False,
        "st": False,
    }
    # every switch on is FedMLP itself: the same config as Tables 1-2's row, so one shared run
    assert abl["FedMLP (+ ST)"] == dict(fedmlp.methods(st))["FedMLP"]
    full = get_method("fedmlp", **abl["FedMLP (+ ST)"]["method_kwargs"])
    assert (full.mld, full.wpc, full.cr, full.st) == (True, True, True, True)
    cpu = fedmlp.settings("cpu")
    fm = dict(fedmlp.methods(cpu))["FedMLP"]
    assert fm["method_kwargs"] == {"warmup_rounds": cpu.warmup_rounds, "t0": cpu.t0, "t1": cpu.t1}
    assert cpu.config("ICH").dataset == "synthetic-ich"


def test_fedmlp_results_table_by_hand():
    rows = [
        {"setting": "m=1", "label": lab, "seed": s, "which": "final", "bacc": b, "auroc_mean": a, "map": m}
        for lab, vals in (("A", [(0.6, 0.8, 0.5), (0.8, 0.9, 0.7)]), ("B", [(0.5, 0.7, 0.4), (0.5, 0.7, 0.4)]))
        for s, (b, a, m) in enumerate(vals)
    ]
    t = fedmlp.results_table(pd.DataFrame(rows))
    assert t.loc["A", ("m=1", "BACC")] == "70.0 ± 14.1"  # mean 0.7, sd of (0.6, 0.8) = 0.1414
    assert t.loc["B", ("m=1", "AUC")] == "70.0 ± 0.0"


def test_hot_cool_gap_compares_cool_and_hot_class_gains_paired_on_seed(monkeypatch):
    """Cool = labelled by fewer clients than the median class, hot = more; each gain is
    FedMLP minus FedAvg-PL on the same seed; Welch's test between the two sets."""
    from scipy import stats

    counts = pd.DataFrame({"clients labelling it": [1, 3, 5]}, index=["a", "b", "c"])
    # hot_cool_gap reads hot_cool from its own module
    monkeypatch.setattr(fedmlp.tables, "hot_cool", lambda df, cfg, setting, which="final": counts)
    rows = []
    for seed, (ga, gc) in enumerate([(0.10, 0.01), (0.06, 0.03), (0.08, -0.01)]):
        rows.append(
            {
                "label": "FedAvg-PL",
                "seed": seed,
                "which": "final",
                "setting": "m=2",
                "auroc:a": 0.5,
                "auroc:b": 0.6,
                "auroc:c": 0.7,
            }
        )
        rows.append(
            {
                "label": "FedMLP",
                "seed": seed,
                "which": "final",
                "setting": "m=2",
                "auroc:a": 0.5 + ga,
                "auroc:b": 0.6,
                "auroc:c": 0.7 + gc,
            }
        )
    g = fedmlp.hot_cool_gap(pd.DataFrame(rows), cfg=None, setting="m=2")
    assert (g["n_cool"], g["n_hot"], g["cool_clients"], g["hot_clients"]) == (1, 1, (1, 1), (5, 5))
    assert g["cool"] == pytest.approx(8.0) and g["hot"] == pytest.approx(1.0) and g["diff"] == pytest.approx(7.0)
    assert g["p"] == pytest.approx(stats.ttest_ind([10, 6, 8], [1, 3, -1], equal_var=False).pvalue)
    one_seed = fedmlp.hot_cool_gap(pd.DataFrame(rows[:2]), cfg=None, setting="m=2")
    assert one_seed["diff"] == pytest.approx(9.0) and one_seed["p"] is None
