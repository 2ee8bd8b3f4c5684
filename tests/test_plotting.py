"""Each plotting function rendered on a tiny frame: human labels, integer rounds, one legend
entry per method, seed bands where there are seeds, a flat panel marked as such."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fedpl_core.report import plotting as PL  # noqa: E402


def _curves(metric="auroc_mean"):
    rows = [{"setting": k, "label": lab, "seed": s, "round": r, metric: 0.5 + 0.01 * r + 0.02 * s + (lab == "FL") * 0.05}
            for k in ("2", "4") for lab in ("FL", "FL + SA") for s in (0, 1) for r in (1, 2, 3, 4, 5)]
    return pd.DataFrame(rows)


def _integer_ticks(ax):
    return all(float(t).is_integer() for t in ax.get_xticks())


def test_plot_curves_labels_legend_outside_integer_rounds_and_bands():
    fig = PL.plot_curves(_curves())
    ax = fig.axes[0]
    assert ax.get_ylabel() == "mean AUROC" and ax.get_xlabel() == "round" and _integer_ticks(ax)
    leg = ax.get_legend()
    assert [t.get_text() for t in leg.get_texts()] == ["FL", "FL + SA"] and leg.get_title().get_text() == "method"
    assert leg.get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1  # outside the data, to the right
    assert ax.collections  # sd bands over the two seeds
    plt.close(fig)


def test_plot_curve_grid_titles_and_labels():
    c = _curves()
    c["K"] = c["setting"].astype(int)
    fig = PL.plot_curve_grid(c, col="K")
    assert [ax.get_title() for ax in fig.axes[:2]] == ["K = 2", "K = 4"]
    assert fig.axes[0].get_ylabel() == "mean AUROC" and all(_integer_ticks(ax) for ax in fig.axes[:2])
    fig2 = PL.plot_curve_grid(_curves())  # col="setting": the setting's own name
    assert [ax.get_title() for ax in fig2.axes[:2]] == ["2", "4"]
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["FL", "FL + SA"] and fig.legends[0].get_title().get_text() == "method"
    plt.close("all")


def test_plot_metric_panels_wraps_names_panels_and_marks_flat_ones():
    rows = []
    for m in ("pl/coverage", "pl/accuracy", "pl/pos_precision", "pl/pos_recall", "log/mean_uncertainty"):
        for lab in ("FedMLP", "CBAFed", "FedIRM"):
            for s in (0, 1):
                for r in (1, 2, 3):
                    v = 0.0 if m == "pl/coverage" else 0.1 * r + 0.01 * s + (lab == "FedMLP") * 0.2
                    rows.append({"label": lab, "seed": s, "round": r, "metric": m, "value": v})
    d = pd.DataFrame(rows)
    fig = PL.plot_metric_panels(d, list(dict.fromkeys(d["metric"])), ncols=4)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5 and len(fig.axes) == 8  # 2 rows of 4, three hidden
    titles = [ax.get_title() for ax in visible]
    assert titles[0] == "pseudo-labels: share of missing entries tagged (constant: 0)"
    assert titles[2] == "pseudo-labels: positive precision" and titles[4] == "mean uncertainty"
    assert visible[0].get_ylim()[1] > 0.5  # the flat panel is not auto-scaled around 0
    assert all(_integer_ticks(ax) for ax in visible)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["FedMLP", "CBAFed", "FedIRM"]
    styles = {line.get_linestyle() for line in visible[0].get_lines()}
    assert len(styles) == 3  # coinciding lines at 0 stay distinguishable
    plt.close(fig)


def test_plot_ranks_is_a_heatmap_of_ranks_with_the_mean_rank():
    from fedpl_core.studies import benchmark as B

    board = pd.DataFrame([{"setting": s, "method": m, "rank": r} for s in B.SETTINGS[:2]
                          for m, r in (("fedavg", 1), ("fedmlp", 2))] +
                         [{"setting": B.SETTINGS[0], "method": "fedlsm", "rank": 3}]).astype({"rank": "Int64"})
    fig = B.plot_ranks(board)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "method"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fedavg", "fedmlp", "fedlsm"]  # by mean rank
    assert ax.get_xticklabels()[-1].get_text() == "mean rank"
    # fedlsm ran in one setting only: its other cell stays empty (nullable ranks)
    assert sorted(t.get_text() for t in ax.texts) == ["1", "1", "1", "2", "2", "2", "3", "3"]
    plt.close(fig)
