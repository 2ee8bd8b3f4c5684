"""Each plotting function rendered on a tiny frame: display names, integer rounds, one legend
for the figure outside every panel, seed bands, lines broken where a round has no value,
bars from 0, colours read from the method classes, and figures written only inside their
folder, never through a link."""

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedpl_core.report import plotting as PL  # noqa: E402


def _curves(metric="auroc_mean", labels=("FL", "FL + SA")):
    rows = [
        {"setting": k, "label": lab, "seed": s, "round": r, metric: 0.5 + 0.01 * r + 0.02 * s + (lab == "FL") * 0.05}
        for k in ("2", "4")
        for lab in labels
        for s in (0, 1)
        for r in (1, 2, 3, 4, 5)
    ]
    return pd.DataFrame(rows)


def _integer_ticks(ax):
    return all(float(t).is_integer() for t in ax.get_xticks())


def _legend_texts(fig):
    assert len(fig.legends) == 1 and not any(ax.get_legend() for ax in fig.axes)
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_plot_curves_labels_legend_outside_integer_rounds_and_bands():
    fig = PL.plot_curves(_curves())
    ax = fig.axes[0]
    assert ax.get_ylabel() == "mean AUROC" and ax.get_xlabel() == "round" and _integer_ticks(ax)
    assert _legend_texts(fig) == ["FL", "FL + SA"] and fig.legends[0].get_title().get_text() == "method"
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert fig.legends[0].get_window_extent(r).x0 >= ax.get_window_extent(r).x1  # right of the data
    assert ax.collections  # sd bands over the two seeds
    assert PL.figure_problems(fig) == []
    plt.close(fig)


def test_two_panels_drawn_one_by_one_share_one_legend_beside_both():
    """The old per-axes legend at bbox (1, 1) lay over the right-hand panel (02_curves)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    PL.plot_curves(_curves(labels=("fedavg", "fedavg_star")), ax=axes[0])
    PL.plot_curves(_curves(labels=("fedavg", "fedlsm")), ax=axes[1])
    assert _legend_texts(fig) == ["FedAvg", "FedAvg*", "FedLSM"]  # display names, each once
    assert PL.figure_problems(fig) == []
    plt.close(fig)


def test_plot_curve_grid_titles_labels_and_one_legend():
    c = _curves()
    c["K"] = c["setting"].astype(int)
    fig = PL.plot_curve_grid(c, col="K")
    assert [ax.get_title() for ax in fig.axes[:2]] == ["K = 2", "K = 4"]
    assert fig.axes[0].get_ylabel() == "mean AUROC" and all(_integer_ticks(ax) for ax in fig.axes[:2])
    fig2 = PL.plot_curve_grid(_curves())  # col="setting": the setting's own name
    assert [ax.get_title() for ax in fig2.axes[:2]] == ["2", "4"]
    assert _legend_texts(fig) == ["FL", "FL + SA"] and fig.legends[0].get_title().get_text() == "method"
    assert PL.figure_problems(fig) == [] and PL.figure_problems(fig2) == []
    plt.close("all")


def test_a_line_breaks_at_rounds_without_a_value_but_not_at_the_off_grid_last_round():
    """04_tag_quality joined FedIRM's values at rounds 6 and 8 across round 7, where it had
    none; a run evaluated every 2 rounds and at its last (odd) round is one line."""
    rows = [{"label": "FedMLP", "seed": 0, "round": r, "metric": "pl/accuracy", "value": 0.9} for r in range(1, 14)]
    rows += [
        {"label": "FedIRM", "seed": 0, "round": r, "metric": "pl/accuracy", "value": v}
        for r, v in ((5, 0.1), (6, 1.0), (8, 1.0), (13, 0.0))
    ]
    fig = PL.plot_metric_panels(pd.DataFrame(rows), ["pl/accuracy"])
    irm = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "FedIRM")
    x, y = np.asarray(irm.get_xdata(), float), np.asarray(irm.get_ydata(), float)
    assert np.isnan(y[x == 7]).all() and np.isnan(y[(x > 8) & (x < 13)]).all()  # broken at 7 and after 8
    assert np.isfinite(y[np.isin(x, [5, 6, 8, 13])]).all()
    assert fig.axes[0].get_ylim()[1] <= 1.05  # a share / accuracy axis spans [0, 1], not 1.2
    plt.close(fig)
    s = pd.Series([0.5, 0.6, 0.7, 0.75], index=[2, 4, 6, 7])  # eval_every 2, last round 7
    assert PL.with_gaps(s, PL._typical_step(s.index)).index.tolist() == [2, 4, 6, 7]


def test_plot_metric_panels_wraps_names_panels_and_marks_or_drops_flat_ones():
    rows = []
    for m in ("pl/coverage", "pl/accuracy", "pl/pos_precision", "pl/pos_recall", "log/mean_uncertainty"):
        for lab in ("FedMLP", "CBAFed", "FedIRM"):
            for s in (0, 1):
                for r in (1, 2, 3):
                    v = 0.0 if m == "pl/coverage" else 0.1 * r + 0.01 * s + (lab == "FedMLP") * 0.2
                    rows.append({"label": lab, "seed": s, "round": r, "metric": m, "value": v})
    d = pd.DataFrame(rows)
    fig = PL.plot_metric_panels(d, list(dict.fromkeys(d["metric"])), ncols=4, constant="note")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5 and len(fig.axes) == 8  # 2 rows of 4, three hidden
    titles = [ax.get_title() for ax in visible]
    assert titles[0] == "pseudo-labels: share of missing entries tagged (constant: 0)"
    assert titles[2] == "pseudo-labels: positive precision" and titles[4] == "mean uncertainty"
    assert visible[0].get_ylim()[1] > 0.5  # the flat panel is not auto-scaled around 0
    assert all(_integer_ticks(ax) for ax in visible)
    assert _legend_texts(fig) == ["FedMLP", "CBAFed", "FedIRM"]
    # three lines at 0 on top of each other would hide two: the panel names them instead
    assert [t.get_text() for t in visible[0].texts] == ["0 in every round: FedMLP, CBAFed, FedIRM"]
    assert not [line for line in visible[0].get_lines() if line.get_label() in ("FedMLP", "CBAFed", "FedIRM")]
    styles = {line.get_linestyle() for line in visible[1].get_lines() if not line.get_label().startswith("_")}
    assert len(styles) == 3  # lines that move keep a style each
    plt.close(fig)
    dropped = PL.plot_metric_panels(d, list(dict.fromkeys(d["metric"])), ncols=4)  # the default: drop
    shown = [ax.get_title() for ax in dropped.axes if ax.get_visible()]
    assert len(shown) == 4 and not any("constant" in t for t in shown)
    assert any("share of missing entries tagged 0" in t.get_text() for t in dropped.texts)  # listed under it
    assert PL.figure_problems(dropped) == []
    plt.close(dropped)


def test_plot_metric_panels_with_nothing_moving_says_the_values_without_empty_axes():
    rows = [
        {"label": "FedMLP", "seed": s, "round": r, "metric": m, "value": 0.0}
        for m in ("pl/coverage", "pl/pos_recall")
        for s in (0, 1)
        for r in (1, 2, 3)
    ]
    fig = PL.plot_metric_panels(pd.DataFrame(rows), ["pl/coverage", "pl/pos_recall"], title="tags")
    assert fig.axes == []
    said = "\n".join(t.get_text() for t in fig.texts)
    assert "share of missing entries tagged: 0 in every round" in said and "positive recall: 0 in every round" in said
    assert fig.get_figheight() < 2
    plt.close(fig)


def test_per_class_bars_start_at_zero_with_class_and_method_names():
    long = pd.DataFrame(
        [
            {"label": lab, "seed": s, "class": c, "auroc": 0.6 + 0.05 * s}
            for lab in ("fedavg", "oracle")
            for s in (0, 1)
            for c in ("Pleural_Thickening", "Mass")
        ]
    )
    fig = PL.plot_per_class(long, order=["Mass", "Pleural_Thickening"])
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0 and ax.get_ylabel() == "AUROC"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Mass", "Pleural Thickening"]
    assert _legend_texts(fig) == ["FedAvg", "Oracle"]
    assert PL.figure_problems(fig) == []
    plt.close(fig)


def test_colours_come_from_the_method_classes_and_differ_within_a_figure():
    from fedpl_core.methods import METHODS, available_methods

    for name in available_methods():
        assert PL.method_color(name) == METHODS[name].color
    assert PL.method_color("FedAvg*") == METHODS["fedavg_star"].color  # a display name
    assert PL.method_color("FL") != METHODS["fedavg"].color  # a study's own label, no method given ...
    assert PL.method_color("FL", "fedavg") == METHODS["fedavg"].color  # ... gets its run's method colour
    pal = PL.method_palette(
        ["FL + SA (FedAvg)", "FL + SA (FedBN+)"], {"FL + SA (FedAvg)": "surgical", "FL + SA (FedBN+)": "surgical"}
    )
    assert pal["FL + SA (FedAvg)"] == METHODS["surgical"].color and len(set(pal.values())) == 2


def test_plot_ranks_is_a_heatmap_of_ranks_with_the_mean_rank():
    from fedpl_core.studies import benchmark as B

    board = pd.DataFrame(
        [{"setting": s, "method": m, "rank": r} for s in B.SETTINGS[:2] for m, r in (("fedavg", 1), ("fedmlp", 2))]
        + [{"setting": B.SETTINGS[0], "method": "fedlsm", "rank": 3}]
    ).astype({"rank": "Int64"})
    fig = B.plot_ranks(board)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "method"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["FedAvg", "FedMLP", "FedLSM"]  # by mean rank, by name
    assert ax.get_xticklabels()[-1].get_text() == "mean rank"
    # fedlsm ran in one setting only: its other cell stays empty (nullable ranks)
    assert sorted(t.get_text() for t in ax.texts) == ["1", "1", "1", "2", "2", "2", "3", "3"]
    assert PL.figure_problems(fig) == []
    plt.close(fig)


def test_savefig_replaces_a_planted_link_and_keeps_names_inside_the_folder(tmp_path):
    folder, victim = tmp_path / "figures", tmp_path / "victim.png"
    folder.mkdir()
    victim.write_bytes(b"precious")
    os.symlink(victim, folder / "partition_report.png")
    fig = PL.plot_curves(_curves())
    p = PL.savefig(fig, "partition_report", folder)
    assert victim.read_bytes() == b"precious"  # not written through the link
    assert not p.is_symlink() and p.read_bytes()[:4] == b"\x89PNG"
    for bad in ("../../x.png", "../x", str(tmp_path / "abs.png"), "sub/../../x.png"):
        with pytest.raises(ValueError, match="leaves its folder"):
            PL.savefig(fig, bad, folder)
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "abs.png").exists()
    os.symlink(tmp_path, folder / "out")  # a planted folder link leading out
    with pytest.raises(ValueError, match="through a link"):
        PL.savefig(fig, "out/y.png", folder)
    assert not (tmp_path / "y.png").exists()
    plt.close(fig)


REPORT = [
    "--n-train",
    "120",
    "--n-test",
    "60",
    "--image-size",
    "28",
    "--num-clients",
    "3",
    "--classes",
    "Effusion,Pneumothorax,Nodule",
    "--progress",
    "false",
]


def test_cli_report_refuses_a_figure_outside_the_folder_before_any_work(capsys, tmp_path, monkeypatch):
    from fedpl_core.apps import cli

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "a" / "figures"))
    loaded = []
    monkeypatch.setattr("fedpl_core.runs.build.load_data", lambda *a, **k: loaded.append(1))
    for bad in ("../../x.png", "../x"):
        rc = cli.main(["report", "--figure", bad, *REPORT])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("fedpl: error: ") and err.count("\n") == 1 and "'..'" in err, err
    assert not loaded and not (tmp_path / "x.png").exists()


def test_cli_report_replaces_a_link_planted_at_the_figure_instead_of_writing_through_it(capsys, tmp_path, monkeypatch):
    from fedpl_core.apps import cli

    figures, victim = tmp_path / "figures", tmp_path / "victim.png"
    figures.mkdir()
    victim.write_bytes(b"precious")
    os.symlink(victim, figures / "partition_report.png")
    monkeypatch.setenv("FEDPL_FIGURES", str(figures))
    assert cli.main(["report", *REPORT]) == 0, capsys.readouterr().err
    assert victim.read_bytes() == b"precious"
    assert not (figures / "partition_report.png").is_symlink()
    assert (figures / "partition_report.png").read_bytes()[:4] == b"\x89PNG"
    out = tmp_path / "elsewhere" / "r.png"  # an absolute --figure is used as is
    assert cli.main(["report", "--figure", str(out), *REPORT]) == 0 and out.is_file()


@pytest.mark.parametrize(
    "module",
    ["fedpl_core.report.names", "fedpl_core.nn.metrics", "fedpl_core.partitions.report", "fedpl_core.report.plotting"],
)
def test_doctests_of_the_names_and_figures(module):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_the_methods_listing_groups_by_the_classes_paper():
    from fedpl_core.apps import cli
    from fedpl_core.methods import METHODS
    from fedpl_core.methods.papers import PAPERS

    text = cli.methods_text(width=200)
    heading = None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            heading = line
        elif line.startswith("  ") and line[2] != " ":
            paper = METHODS[line.split()[0]].paper
            assert heading == PAPERS[paper].heading, (line, heading)


def test_methods_at_0_in_every_round_are_named_in_the_panel_and_one_that_moves_is_drawn():
    rows = [
        {"label": lab, "seed": s, "round": r, "metric": "pl/pos_recall", "value": (0.1 * r if lab == "FedMLP" else 0.0)}
        for lab in ("FedMLP", "CBAFed", "FedFixMatch")
        for s in (0, 1)
        for r in (1, 2, 3)
    ]
    fig = PL.plot_metric_panels(pd.DataFrame(rows), ["pl/pos_recall"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["0 in every round: CBAFed, FedFixMatch"]
    assert {line.get_label() for line in ax.get_lines()} & {"FedMLP", "CBAFed", "FedFixMatch"} == {"FedMLP"}
    plt.close(fig)
