"""Every figure the notebooks and the figure benchmarks make, rendered from tiny made-up runs
(frames of ``run_many``'s shape, with per-round histories) and held to
:func:`fedpl_core.report.plotting.figure_problems`: no text shows a registry key, one legend
that lies over no panel, no colliding tick labels, integer round and count ticks, bars from
0, no constant panel.  Each notebook figure cell calls the function named here; the checker
itself is shown to find the defects the figures used to have."""

import importlib.util
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedpl_core import partitions as P  # noqa: E402
from fedpl_core.data import synthetic as S  # noqa: E402
from fedpl_core.report import plotting as PL  # noqa: E402
from fedpl_core.report.tables import curve_frame  # noqa: E402
from fedpl_core.runs.build import load_data  # noqa: E402
from fedpl_core.studies import benchmark as B  # noqa: E402
from fedpl_core.studies import fedlsm, fedmlp, fedpsl, introduction, surgical  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLASSES = ["Effusion", "Pleural_Thickening", "Mass", "Nodule"]


def runs(methods, settings=("s",), seeds=(0, 1), rounds=(2, 4, 6, 8), extra=None, classes=CLASSES):
    """A frame of ``run_many``'s shape (``final`` and ``best`` rows with ``auroc:<class>``
    columns) and its per-round histories; ``extra(label, round, seed)`` adds record keys."""
    rows, hist = [], {}
    for st in settings:
        for i, (lab, method) in enumerate(methods):
            for s in seeds:
                h = []
                for r in rounds:
                    rec = {"round": r, "auroc_mean": 0.55 + 0.02 * r + 0.01 * i + 0.004 * s}
                    rec.update((extra or (lambda *_: {}))(lab, r, s))
                    h.append(rec)
                hist[(st, lab, s)] = h
                for which in ("final", "best"):
                    row = {
                        "setting": st,
                        "label": lab,
                        "method": method,
                        "seed": s,
                        "which": which,
                        "round": rounds[-1],
                        "auroc_mean": h[-1]["auroc_mean"],
                        "map": 0.4,
                        "f1": 0.3,
                    }
                    row.update({f"auroc:{c}": 0.5 + 0.05 * j + 0.02 * i + 0.01 * s for j, c in enumerate(classes)})
                    rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["histories"] = hist
    return df


@pytest.fixture(scope="module")
def cxr():
    return S.make_cxr(240, CLASSES, 28, seed=0)


def _parts(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "one class per client": P.missing_classes(ds, 4, missing=3, seed=0),
            "2 of 4 classes missing": P.missing_classes(ds, 4, missing=2, seed=0),
        }


def _fedpsl_cfg(table):
    return fedpsl.config(table, pool=20, image_size=28, test_pos=4, test_neg=4, n=8)


# ------------------------------------------------------------------ the notebooks' figures, one each
def nb00(ds):
    df = runs(
        [(m, m) for m in ("fedavg", "fedavg_pl", "surgical", "centralized", "oracle")],
        settings=("one class per client", "4 of 8 classes missing"),
    )
    long = PL.per_class_long(df[df.setting == "4 of 8 classes missing"])
    return {
        "00_finding_atlas": lambda: introduction.plot_finding_atlas(S.finding_atlas(image_size=28)),
        "00_prevalence": lambda: introduction.plot_prevalence(ds),
        "00_partitions": lambda: introduction.plot_partitions(_parts(ds), ds),
        "00_curves": lambda: PL.plot_curve_grid(curve_frame(df), title="mean AUROC per round"),
        "00_per_class": lambda: PL.plot_per_class(
            long, order=list(reversed(CLASSES)), title="per-class AUROC, hot to cool"
        ),
    }


def nb01(ds):
    methods = [(lab, key) for lab, key, _ in fedpsl.TABLE_II_METHODS[:4]]
    df2 = runs(methods)
    sweep = pd.concat([runs(methods[:1] + [("FedPSL", "fedpsl")], settings=(f"n={n}",)) for n in (50, 100, 200)])
    sweep["n"] = fedpsl.setting_value(sweep)
    st = fedpsl.settings("smoke")
    return {
        "01_table1_labels": lambda: P.plot_label_report(
            fedpsl.partition(_fedpsl_cfg("II")), load_data(_fedpsl_cfg("II")).train
        ),
        "01_tdma_weights": lambda: fedpsl.plot_head_weights(_fedpsl_cfg("II"), title="head-row weights"),
        "01_table4_sources": lambda: fedpsl.plot_sources(_fedpsl_cfg("IV")),
        "01_table2_per_class": lambda: fedpsl.plot_per_class_selection(df2),
        "01_table2_curves": lambda: PL.plot_curves(curve_frame(df2), title="Table II: mean AUROC per round"),
        "01_table4_per_class": lambda: PL.plot_per_class(PL.per_class_long(df2, "best")),
        "01_fig3_data_size": lambda: fedpsl.plot_sweep(sweep, "n", "images per client n", "Fig. 3"),
        "01_fig4_extreme_clients": lambda: fedpsl.plot_sweep(sweep, "n", fedpsl.fig4_xlabel(st), "Fig. 4"),
    }


def _diag(lab, r, s):
    return {
        "log/pl_share": 0.0,
        "log/share_dl": 0.2,
        "log/uncertainty": 0.99 - 0.001 * r,
        "pl/accuracy": min(1.0, 0.5 + 0.1 * r + 0.3 * s),
        "pl/coverage": 0.1 * r / 8,
    }


def nb02(ds):
    m = [(lab, key) for lab, key, tasks in fedlsm.PAPER_METHODS if "Task 1" in tasks]
    res1 = runs(m, extra=_diag)
    res2 = runs([x for x in m if x[1] != "fedpsl"] + [("FedRS", "fedrs")], extra=_diag)
    return {
        "02_label_sets": lambda: P.plot_masks(_parts(ds)),
        "02_curves": lambda: fedlsm.plot_task_curves({"Task 1": res1, "Task 2": res2}),
        "02_diagnostics_task1": lambda: fedlsm.plot_diagnostics(res1, "Task 1"),
        "02_real_ham10000_curves": lambda: PL.plot_curves(curve_frame(res2), title="Task 2 on HAM10000"),
    }


def nb03(ds):
    abl = [
        ("Oracle", "oracle"),
        ("Central", "centralized"),
        ("FL", "fedavg"),
        ("FL + PL", "fedavg_pl"),
        ("FL + SA", "surgical"),
    ]
    res_k = runs(abl, settings=("2", "4", "8"))
    for c in CLASSES:
        res_k[f"external/auroc:{c}"] = res_k[f"auroc:{c}"] - 0.05
    curves = curve_frame(res_k)
    curves["K"] = curves["setting"].astype(int)
    het = [
        (f"{f} ({s})", m) for f, m in (("FL + PL", "fedavg_pl"), ("FL + SA", "surgical")) for s in ("FedAvg", "FedBN+")
    ] + [("Individual", "local")]
    res_20 = runs(het, classes=[])
    for src, cls in (("NIH", ["Effusion", "Mass", "Hernia"]), ("CheXpert", ["Effusion", "Mass", "Fracture"])):
        for j, c in enumerate(cls):
            res_20[f"{src}/auroc:{c}"] = 0.6 + 0.05 * j
    gaps = pd.DataFrame(
        [
            {"strategy": s, "round": r, "column": c, "gap": 0.5 * r - (c == "NIH: shared")}
            for s in ("FedAvg", "FedBN+")
            for r in range(1, 17)
            for c in ("NIH: unique", "NIH: shared", "CheXpert: unique")
        ]
    )
    return {
        "03_label_sets": lambda: P.plot_masks(list(_parts(ds).values()), titles=["(a) K = 4", "(b) shared"]),
        "03_ablation_clients": lambda: surgical.plot_ablation(res_k, "number of clients K", title="Ablation (a)"),
        "03_curves_clients": lambda: PL.plot_curve_grid(
            curves, col="K", labels=["FL", "FL + PL", "FL + SA"], title="Ablation (a): mean AUROC per round"
        ),
        "03_noniid_shared_unique": lambda: surgical.plot_shared_unique(res_20),
        "03_unique_gap_by_round": lambda: surgical.plot_gap_by_round(gaps),
    }


def _tags(lab, r, s):
    if lab == "FedIRM":  # tags in a few rounds only: no value in between
        return {"pl/accuracy": 1.0, "pl/coverage": 0.01} if r in (4, 6, 14) else {"pl/coverage": 0.0}
    return {
        "pl/accuracy": 0.6 + 0.01 * r,
        "pl/coverage": min(1.0, 0.05 * r),
        "pl/pos_precision": 0.2 + 0.01 * r,
        "pl/pos_recall": 0.1 * s + 0.01 * r,
    }


def nb04(ds):
    st = fedmlp.settings("smoke")
    m = [(lab, key) for lab, key in fedmlp.PAPER_METHODS if key in ("fedavg", "rscfed", "fedirm", "fedmlp")]
    results = {
        t: runs(m, settings=(f"m={st.missing[t][-1]}",), rounds=tuple(range(1, 17)), extra=_tags) for t in fedmlp.TABLES
    }
    return {
        "04_label_sets": lambda: P.plot_masks(_parts(ds)),
        "04_tag_quality": lambda: fedmlp.plot_tag_quality(results, st),
    }


def nb05(ds):
    df = pd.concat(
        [
            runs([(k, k) for k in B.methods()[:12]], settings=(s,)).assign(score=lambda d: d["auroc_mean"])
            for s in B.SETTINGS
        ]
    )
    return {"05_ranks": lambda: B.plot_ranks(B.leaderboard(df))}


def _benchmark(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def benchmarks(ds):
    drift = _benchmark("fedlsm_tdma_drift")
    tagging = _benchmark("fedmlp_tagging")
    labels = ("FedAvg", "FedMLP w/o MLD", "FedMLP, paper proportions")
    means = pd.DataFrame(
        [
            {"label": lab, "round": r, **{k: 0.6 + 0.002 * r for k in tagging.KEYS}}
            for lab in labels
            for r in range(4, 101, 4)
        ]
    )
    return {
        "bench_fedlsm_tdma_drift": lambda: drift.plot_drift(
            pd.read_csv(ROOT / "figures" / "bench_fedlsm_tdma_drift.csv")
        ),
        "bench_fedmlp_tagging": lambda: tagging.plot_tagging(means, "FedMLP Table 3 setting"),
    }


BUILDERS = [nb00, nb01, nb02, nb03, nb04, nb05, benchmarks]


@pytest.fixture(scope="module")
def figures(cxr):
    out = {}
    for b in BUILDERS:
        out.update(b(cxr))
    return out


NAMES = [
    "00_finding_atlas",
    "00_prevalence",
    "00_partitions",
    "00_curves",
    "00_per_class",
    "01_table1_labels",
    "01_tdma_weights",
    "01_table4_sources",
    "01_table2_per_class",
    "01_table2_curves",
    "01_table4_per_class",
    "01_fig3_data_size",
    "01_fig4_extreme_clients",
    "02_label_sets",
    "02_curves",
    "02_diagnostics_task1",
    "02_real_ham10000_curves",
    "03_label_sets",
    "03_ablation_clients",
    "03_curves_clients",
    "03_noniid_shared_unique",
    "03_unique_gap_by_round",
    "04_label_sets",
    "04_tag_quality",
    "05_ranks",
    "bench_fedlsm_tdma_drift",
    "bench_fedmlp_tagging",
]


def test_every_figure_is_listed(figures):
    assert sorted(figures) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_figure_shows_names_one_legend_clear_of_every_panel(figures, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = figures[name]()
    try:
        assert PL.figure_problems(fig) == [], name
    finally:
        plt.close(fig)


def test_the_figures_name_clients_by_one_rule(figures):
    """FedPSL's clients are numbered 1-4 in its tables, every other partition's lettered:
    figures letter them all."""
    fig = figures["01_table1_labels"]()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["A", "B", "C", "D"]
    fig2 = figures["01_tdma_weights"]()
    assert [t.get_text() for t in fig2.axes[0].get_yticklabels()] == ["A", "B", "C", "D"]
    plt.close("all")


def test_02_diagnostics_drop_constant_panels_keep_accuracy_in_0_1_and_one_colour_per_method(figures):
    fig = figures["02_diagnostics_task1"]()
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles and not any("constant" in t for t in titles)
    assert any(
        "left out" in t.get_text() and "share of missing entries pseudo-labelled 0" in t.get_text() for t in fig.texts
    )
    acc = next(ax for ax in fig.axes if ax.get_title() == "pseudo-labels: accuracy")
    assert acc.get_ylim()[1] <= 1.05  # sd bands above 1 are cut, the axis stays [0, 1]
    colours = {h.get_label(): h.get_color() for h in fig.legends[0].legend_handles}
    assert len(set(colours.values())) == len(colours) == 3
    plt.close(fig)


def test_the_checker_finds_the_old_figures_defects():
    """The figures as they were (a legend at bbox (1, 1) on every axes, registry keys as
    labels, round ticks at 2.5, bars from 0.4, tick labels on top of each other, a constant
    panel): each defect is reported."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    for ax in axes[:2]:
        ax.plot([1, 2, 3], [0.6, 0.7, 0.8], label="fedavg_star")
        ax.plot([1, 2, 3], [0.5, 0.6, 0.65], label="FedAvg")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="label")
        ax.set_xlabel("round")
        ax.set_ylabel("auroc")
        ax.set_xticks([1, 1.5, 2, 2.5, 3])
    axes[2].bar(["Mass", "Nodule"], [0.6, 0.7])
    axes[2].set_ylim(0.4, 1.0)
    axes[2].set_ylabel("AUROC")
    axes[2].set_xlabel("class")
    problems = "\n".join(PL.figure_problems(fig))
    for bad in (
        "'fedavg_star' shows a registry key",
        "'label' shows a registry key",
        "'auroc' shows a registry key",
        "2 legends",
        "lies over panel 2",
        "ticks are not whole numbers",
        "bars start at 0.4",
    ):
        assert bad in problems, bad
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.hist(np.linspace(-0.03, 0.16, 30), bins=20)
    ax.set_xticks(np.linspace(-0.025, 0.15, 8))
    ax.plot([0, 1], [2, 2])
    problems = "\n".join(PL.figure_problems(fig))
    assert "overlap" in problems and "no label" in problems  # "-0.0250.000"; a panel without a y label
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [0.2, 0.2, 0.2])
    ax.set(xlabel="round", ylabel="share")
    assert any("every line is constant" in p for p in PL.figure_problems(fig))
    plt.close(fig)
