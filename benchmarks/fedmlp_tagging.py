"""FedMLP's missing-label detection (MLD) with the paper's proportions over 100+ rounds.

Why FedMLP's tags help or hurt: in notebook 04's cpu profile (16 rounds, a 4-round warm-up, detection ratios 5x
the paper's) MLD cost FedMLP points and its tags were about a third right.  The paper
warms up for 10 % of its rounds (50 of 500) and tags with T0 = 0.5 %, T1 = 1 % for 450
rounds.  This runs Table 3's setting (CXR, one labelled class per client, K = 8) on
images small enough to afford 100 rounds, and compares

* ``paper proportions``: warm-up 10 % of the rounds, T0 / T1 = 0.5 % / 1 % (the paper's);
* ``cpu profile proportions``: warm-up 25 %, T0 / T1 = 2.5 % / 5 % (notebook 04's);
* FedMLP without MLD (WPC + CR: what the tags add) and FedAvg;

printing the final mean AUROC with paired differences, and plotting per round the mean
AUROC and, scored against the hidden labels, the tags' accuracy, the precision of the
positive tags and their coverage of the missing entries (``pl/*`` of the history)::

    python benchmarks/fedmlp_tagging.py                      # 100 rounds, 28 px, 2 seeds
    python benchmarks/fedmlp_tagging.py --rounds 200 --seeds 0 1 2
    python benchmarks/fedmlp_tagging.py --redraw             # the figure again from the saved curves

It writes ``figures/bench_fedmlp_tagging_curves.csv`` (the per-round means over the seeds that
the figure shows, with ``.md`` / ``.tex``) and ``figures/bench_fedmlp_tagging.png``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fedpl_core.nn.metrics import metric_name  # noqa: E402
from fedpl_core.report.plotting import draw_lines, figure_legend, method_palette, savefig  # noqa: E402
from fedpl_core.report.tables import curve_frame, paired_difference, save_table  # noqa: E402
from fedpl_core.runs.study import run_many  # noqa: E402
from fedpl_core.studies import fedmlp  # noqa: E402
from fedpl_core.studies.parameters import prepare  # noqa: E402

#: What the figure shows per round: the mean AUROC of every method, and for FedMLP's two runs
#: with tags the tags' scores against the hidden labels and the learning degree.
KEYS = ["auroc_mean", "pl/accuracy", "pl/pos_precision", "pl/coverage", "log/learning_degree"]
STEM = "bench_fedmlp_tagging"


def methods(rounds: int) -> list[tuple[str, dict]]:
    paper = dict(warmup_rounds=max(1, rounds // 10), t0=0.005, t1=0.01)
    cpu = dict(warmup_rounds=max(1, rounds // 4), t0=0.025, t1=0.05)
    return [
        ("FedAvg", {"method": "fedavg"}),
        ("FedMLP w/o MLD", {"method": "fedmlp", "method_kwargs": {**paper, "mld": False}}),
        ("FedMLP, paper proportions", {"method": "fedmlp", "method_kwargs": paper}),
        ("FedMLP, cpu profile proportions", {"method": "fedmlp", "method_kwargs": cpu}),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--image-size", type=int, default=28)
    ap.add_argument(
        "--n-train",
        type=int,
        default=3200,
        help="training images (K = 8 clients; the paper's T0 = 0.5 % tags nothing below ~400 a client)",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/fedmlp_tagging")
    ap.add_argument("--figures", default="figures", help="where the curves table and the figure go")
    ap.add_argument("--redraw", action="store_true", help="draw the figure again from the saved curves, run nothing")
    a = ap.parse_args()
    if a.redraw:
        redraw(a.figures)
        return
    prepare("cpu")
    st = fedmlp.settings("cpu")
    base = st.config("CXR").replace(image_size=a.image_size, n_train=a.n_train, partition_kwargs={"missing": 7})
    base = base.replace(engine=replace(base.engine, rounds=a.rounds, eval_every=max(1, a.rounds // 25)))
    t = time.time()
    df = run_many(
        base, methods(a.rounds), a.seeds, results_dir=a.results_dir, workers=a.workers, progress=False, histories=True
    )
    print(f"{df.groupby(['label', 'seed']).ngroups} runs in {time.time() - t:.0f} s")
    fin = df[df["which"] == "final"]
    out = fin.groupby("label", sort=False)["auroc_mean"].agg(["mean", "std"]).mul(100).round(1).astype(object)
    for ref in ("FedAvg", "FedMLP w/o MLD"):
        for lab in out.index:
            if lab != ref:
                d = paired_difference(fin, lab, ref)
                out.loc[lab, f"vs {ref}"] = (
                    f"{d['diff']:+.1f} (p {d['p']:.3f})" if d["p"] is not None else f"{d['diff']:+.1f}"
                )
    pd.set_option("display.width", 200)
    print(out.fillna("").to_string())
    curves = None
    for key in KEYS:  # one long frame per history key, merged on (setting, label, seed, round)
        c = curve_frame(df, key).drop(columns="method", errors="ignore")
        curves = c if curves is None else curves.merge(c, how="outer", on=["setting", "label", "seed", "round"])
    tagged = curves[curves["label"].str.startswith("FedMLP, ")]
    last = tagged.dropna(subset=["pl/accuracy"]).groupby(["label", "round"])[KEYS[1:]].mean()
    print("\ntags (mean over seeds) every 10 % of the rounds:")
    step = max(1, a.rounds // 10)
    print(last[last.index.get_level_values("round") % step == 0].round(3).to_string())
    means = curves.groupby(["label", "round"], sort=False)[KEYS].mean()
    means.loc[~means.index.get_level_values("label").str.startswith("FedMLP, "), KEYS[1:]] = float("nan")
    save_table(means.round(4), f"{STEM}_curves", folder=a.figures)
    title = (
        f"FedMLP Table 3 setting (CXR, one class per client), {a.image_size} px, {a.n_train} images, "
        f"{len(a.seeds)} seeds"
    )
    print(f"figure: {savefig(plot_tagging(means.reset_index(), title), STEM, a.figures, dpi=120)}")


def plot_tagging(means: pd.DataFrame, title: str = ""):
    """One panel per quantity of :data:`KEYS` (the mean AUROC of every method; the tags'
    accuracy, positive precision and coverage and the learning degree of FedMLP's tagged
    runs), from the per-round means (``means``: columns ``label``, ``round`` and the keys, as
    saved in ``bench_fedmlp_tagging_curves.csv``), lines broken where a round has no value,
    shares on [0, 1], one legend."""
    labels = list(dict.fromkeys(means["label"]))
    colors = method_palette(labels, {"FedAvg": "fedavg"})
    fig, axes = plt.subplots(1, len(KEYS), figsize=(4.2 * len(KEYS), 3.8))
    for ax, key in zip(axes, KEYS):
        d = means[["label", "round", key]].dropna()
        draw_lines(ax, d, "round", key, [lab for lab in labels if lab in set(d["label"])], colors, band=False)
        ax.set_title(metric_name(key), fontsize=9)
        ax.set_ylabel(metric_name(key).split(": ")[-1])
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        if key.startswith("pl/"):
            ax.set_ylim(-0.03, 1.03)
    if title:
        fig.suptitle(title)
    figure_legend(fig)
    return fig


def redraw(folder: str) -> None:
    """The figure again from the saved per-round means (no run)."""
    means = pd.read_csv(Path(folder) / f"{STEM}_curves.csv")
    fig = plot_tagging(means, "FedMLP Table 3 setting (CXR, one class per client)")
    print(f"figure: {savefig(fig, STEM, folder, dpi=120)}")


if __name__ == "__main__":
    main()
