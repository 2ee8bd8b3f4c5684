"""The FedLSM and FedMLP studies: declarative settings, method lists, tables, real-data paths."""
import dataclasses

import pandas as pd
import pytest

from fedpl_core.experiments import run_many
from fedpl_core.methods import get_method
from fedpl_core.studies import fedlsm, fedmlp
from fixtures_data import ham_rows, write_ham10000


def test_fedlsm_settings_follow_the_paper_tables():
    st = fedlsm.settings("cpu")
    t1, t2 = st.config("Task 1"), st.config("Task 2")
    assert (t1.num_clients, t2.num_clients) == (8, 5)  # Tables 5 and 6
    assert t1.partition == t2.partition == "label_set_mismatch" and t1.partition_kwargs == {"classes_per_client": 3,
                                                                                            "seed": 523}
    assert (t1.dataset, t2.dataset) == ("synthetic-cxr", "synthetic-skin") and len(t1.classes) == 14
    assert t1.engine.local_iters > t2.engine.local_iters and t1.engine.selection == "val_loss"  # as 200 / 30
    full = fedlsm.settings("full")
    assert full.config("Task 1").engine.local_iters == 200 and full.config("Task 2").engine.local_iters == 30  # Sec. 3.2
    assert full.config("Task 1").engine.lr == 1e-4 and full.config("Task 1").engine.weight_decay == 5e-4  # Table 4
    names1 = [o["method"] for _, o in fedlsm.methods("Task 1")]
    names2 = [o["method"] for _, o in fedlsm.methods("Task 2")]
    assert "fedrs" not in names1 and "fedpu" not in names1 and {"fedrs", "fedpu"} <= set(names2)  # single-label only
    assert "fedpsl" in names1 and names1[-1] == names2[-1] == "fedlsm"
    assert fedlsm.missing_methods() == []
    fo = dict(fedlsm.methods("Task 1", first_order=True))
    assert fo["FPSL"] == {"method": "fedpsl", "method_kwargs": {"first_order": True}} and fo["FedLSM"] == {"method": "fedlsm"}
    with pytest.raises(ValueError, match="unknown task"):
        st.config("Task 3")


def test_fedlsm_task2_runs_unchanged_on_ham10000_files(tmp_path):
    """``data_root`` swaps the synthetic skin lesions for HAM10000 read in its published layout."""
    write_ham10000(tmp_path, rows=ham_rows(60), size=(40, 30))
    st = dataclasses.replace(fedlsm.settings("smoke"), data_root=str(tmp_path))
    cfg = st.config("Task 2")
    assert cfg.dataset == "ham10000" and cfg.classes is None
    df = run_many(cfg, [("FedAvg*", {"method": "fedavg_star"}), ("FedLSM", {"method": "fedlsm"})], [0],
                  progress=False)
    final = df[df["which"] == "final"].set_index("label")
    assert set(final.index) == {"FedAvg*", "FedLSM"} and final["accuracy"].between(0, 1).all()
    assert fedlsm.table2(df).columns.tolist() == list(fedlsm.TABLE2_METRICS)


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
    assert abl["FedAvg"]["method_kwargs"] == {**st.fedmlp_kwargs(), "mld": False, "wpc": False, "cr": False,
                                                     "st": False}
    # every switch on is FedMLP itself: the same config as Tables 1-2's row, so one shared run
    assert abl["FedMLP (+ ST)"] == dict(fedmlp.methods(st))["FedMLP"]
    full = get_method("fedmlp", **abl["FedMLP (+ ST)"]["method_kwargs"])
    assert (full.mld, full.wpc, full.cr, full.st) == (True, True, True, True)
    cpu = fedmlp.settings("cpu")
    fm = dict(fedmlp.methods(cpu))["FedMLP"]
    assert fm["method_kwargs"] == {"warmup_rounds": cpu.warmup_rounds, "t0": cpu.t0, "t1": cpu.t1}
    assert cpu.config("ICH").dataset == "synthetic-ich"


def test_fedmlp_results_table_by_hand():
    rows = [{"setting": "m=1", "label": lab, "seed": s, "which": "final", "bacc": b, "auroc_mean": a, "map": m}
            for lab, vals in (("A", [(0.6, 0.8, 0.5), (0.8, 0.9, 0.7)]), ("B", [(0.5, 0.7, 0.4), (0.5, 0.7, 0.4)]))
            for s, (b, a, m) in enumerate(vals)]
    t = fedmlp.results_table(pd.DataFrame(rows))
    assert t.loc["A", ("m=1", "BACC")] == "70.0 ± 14.1"  # mean 0.7, sd of (0.6, 0.8) = 0.1414
    assert t.loc["B", ("m=1", "AUC")] == "70.0 ± 0.0"


def test_hot_cool_gap_compares_cool_and_hot_class_gains_paired_on_seed(monkeypatch):
    """Cool = labelled by fewer clients than the median class, hot = more; each gain is
    FedMLP minus FedAvg-PL on the same seed; Welch's test between the two sets."""
    from scipy import stats

    counts = pd.DataFrame({"clients labelling it": [1, 3, 5]}, index=["a", "b", "c"])
    monkeypatch.setattr(fedmlp, "hot_cool", lambda df, cfg, setting, which="final": counts)
    rows = []
    for seed, (ga, gc) in enumerate([(0.10, 0.01), (0.06, 0.03), (0.08, -0.01)]):
        rows.append({"label": "FedAvg-PL", "seed": seed, "which": "final", "setting": "m=2",
                     "auroc:a": 0.5, "auroc:b": 0.6, "auroc:c": 0.7})
        rows.append({"label": "FedMLP", "seed": seed, "which": "final", "setting": "m=2",
                     "auroc:a": 0.5 + ga, "auroc:b": 0.6, "auroc:c": 0.7 + gc})
    g = fedmlp.hot_cool_gap(pd.DataFrame(rows), cfg=None, setting="m=2")
    assert (g["n_cool"], g["n_hot"], g["cool_clients"], g["hot_clients"]) == (1, 1, (1, 1), (5, 5))
    assert g["cool"] == pytest.approx(8.0) and g["hot"] == pytest.approx(1.0) and g["diff"] == pytest.approx(7.0)
    assert g["p"] == pytest.approx(stats.ttest_ind([10, 6, 8], [1, 3, -1], equal_var=False).pvalue)
    one_seed = fedmlp.hot_cool_gap(pd.DataFrame(rows[:2]), cfg=None, setting="m=2")
    assert one_seed["diff"] == pytest.approx(9.0) and one_seed["p"] is None
