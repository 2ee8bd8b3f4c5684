"""FedLSM's Table 2 on the real HAM10000 images: notebook 02's Task 2 methods, paired over seeds.

Runs every Task 2 method of notebook 02 (``studies.fedlsm.methods("Task 2")``: FedAvg with 100 %
labels, FedAvg, FedAvg*, FedProx*, MOON*, FedRS, FedPU, FedAvg-FixMatch*, FSSL*, FedLSM) on
HAM10000 / ISIC 2018 read from ``--data-root`` (``HAM10000_metadata.csv`` and the ``{image_id}.jpg``
files anywhere below it, as Harvard Dataverse or Kaggle ship them), split 7:1:2 by lesion as in the
paper, with the K = 5 label sets of its Table 6.  Settings: ``studies.fedlsm.settings(profile,
data_roots={"Task 2": root})``, by default the notebook's cpu profile (small CNN at 28 px, 10 rounds
of 10 local iterations, Adam 3e-3, 3 seeds, last round), the same config and ``run_many`` call as
the notebook's real-data section (``--results-dir results/02_fedlsm`` shares its cached runs).
``--rounds`` / ``--local-iters`` lengthen the schedule; ``--n-train N`` draws a random subset of
the release (``N / 0.7`` images) before the 7:1:2 split, so about ``N`` images train (a quick
check; the default is the whole release, 7,010 / 1,001 / 2,004 images).

Prints Table 2 (x 100, mean ± sd over seeds) beside the paper's, the paired differences
FedLSM - FedAvg* and FedAvg* - FedAvg in AUC, accuracy and F1 (``studies.fedlsm.ordering``: paired
on the seed, two-sided paired t-test) and whether FedLSM > FedAvg* > FedAvg holds, from the numbers::

    python benchmarks/fedlsm_ham10000.py --data-root /data/HAM10000                # the notebook's cpu setting
    python benchmarks/fedlsm_ham10000.py --data-root /data/HAM10000 --rounds 40 --local-iters 30 \
        --out 02_real_ham10000_long.md
    python benchmarks/fedlsm_ham10000.py --data-root /data/HAM10000 --rounds 1 --n-train 300 --seeds 0 1
"""

from __future__ import annotations

import argparse
import math
import time

import pandas as pd

from fedpl_core.data.catalog import FEDLSM_FRACTIONS
from fedpl_core.report.tables import curve_frame, describe_late_gain, late_gain
from fedpl_core.runs.build import load_data
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedlsm
from fedpl_core.studies.parameters import default_workers, prepare

TASK = "Task 2"


def config(a: argparse.Namespace):
    """The notebook's Task 2 config on ``a.data_root``, with the schedule flags applied."""
    st = fedlsm.settings(a.profile, seeds=a.seeds, device=a.device, data_roots={TASK: a.data_root})
    if a.rounds:
        st.rounds = a.rounds
    if a.local_iters:
        st.local_iters = {**st.local_iters, TASK: a.local_iters}
    cfg = st.config(TASK)
    if a.n_train:
        cfg = cfg.replace(dataset_kwargs={"max_images": math.ceil(a.n_train / FEDLSM_FRACTIONS[0])})
    return st, cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", required=True, help="HAM10000 folder (HAM10000_metadata.csv + the JPEGs below it)")
    ap.add_argument("--profile", default="cpu", choices=["smoke", "cpu", "full"])
    ap.add_argument("--rounds", type=int, default=None, help="communication rounds (default: the profile's, cpu 10)")
    ap.add_argument("--local-iters", type=int, default=None, help="local iterations a round (default: cpu 10)")
    ap.add_argument(
        "--n-train",
        type=int,
        default=None,
        help="about this many training images (a random subset of the release before the split)",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="training seeds (default: the profile's)")
    ap.add_argument("--methods", nargs="+", default=None, help="labels of 02's Task 2 methods (default: all)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--workers", type=int, default=None, help="parallel runs (default: one per core, cpu profile)")
    ap.add_argument("--results-dir", default="results/benchmarks/fedlsm_ham10000")
    ap.add_argument(
        "--out",
        default=None,
        help="also write the report as Markdown under this name in the figures folder (e.g. 02_real_ham10000_long.md)",
    )
    a = ap.parse_args()
    if a.out:
        from fedpl_core.report.tables import output_path

        output_path(a.out)  # a name that leaves the figures folder is refused before any training
    prepare(a.profile, a.device)
    workers = a.workers or default_workers(a.profile, a.device)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    st, cfg = config(a)
    data = load_data(cfg)
    val = len(data.extra["val"]) if "val" in data.extra else 0
    methods = fedlsm.methods(TASK, a.methods, first_order=a.profile != "full")
    print(
        f"HAM10000 from {a.data_root}: {len(data.train)} training / {val} validation / {len(data.test)} test "
        f"images at {cfg.image_size} px; profile {a.profile}: {cfg.model} {cfg.model_kwargs}, {st.rounds} rounds of "
        f"{cfg.engine.local_iters} local iterations, lr {cfg.engine.lr:g}, seeds {st.seeds}, {len(methods)} "
        f"methods, {workers} worker(s)"
    )
    t = time.perf_counter()
    df = run_many(cfg, methods, st.seeds, a.results_dir, progress=False, histories=True, workers=workers)
    seconds = time.perf_counter() - t
    print(f"{len(df) // 2} runs in {seconds:.0f} s (cached runs are not re-run)\n")
    steps = fedlsm.ordering(df, TASK)
    report = [
        "Table 2, last round (x 100, mean ± sd over seeds), beside the paper's (DenseNet-121, 224 px, "
        "50 rounds of 30 iterations):",
        fedlsm.with_paper(df, TASK, not_run=a.methods is None).to_string(),
        "",
        "Paired differences (points, same seed; p: two-sided paired t-test):",
        steps.set_index("metric").to_string(),
        "",
        *fedlsm.describe_ordering(steps),
        describe_late_gain(late_gain(curve_frame(df)), ["FedLSM", "FedAvg*", "FedAvg-PL"]),
    ]
    print("\n".join(report))
    if a.out:
        write_report(a, cfg, st, data, val, methods, seconds, report)


def write_report(a, cfg, st, data, val, methods, seconds, report) -> None:
    """The printed report as Markdown at ``a.out``, with the command (the data folder as a
    placeholder: no machine path), the data and the run's cost."""
    import os
    import shlex
    import sys

    from fedpl_core.base.fileio import atomic_write
    from fedpl_core.report.tables import output_path

    args = [("<HAM10000 folder>" if prev == "--data-root" else x) for prev, x in zip([""] + sys.argv[1:], sys.argv[1:])]
    args = [x for prev, x in zip([""] + args, args) if prev != "--out" and x != "--out"]
    text = [
        f"# 02 Task 2 on the real HAM10000, {st.rounds} rounds x {cfg.engine.local_iters} local iterations",
        "",
        f"Made by `python benchmarks/fedlsm_ham10000.py {' '.join(shlex.quote(x) for x in args)}` "
        f"({seconds:,.0f} s for the runs not cached, {os.cpu_count()} cores).",
        f"Data: {len(data.train):,} training / {val:,} validation / {len(data.test):,} test HAM10000 images "
        f"(split 7:1:2 by lesion, the official `HAM10000_metadata.csv`), resized to {cfg.image_size} px; "
        f"{cfg.model} {cfg.model_kwargs}, Adam {cfg.engine.lr:g}, seeds {', '.join(map(str, st.seeds))}, "
        f"{len(methods)} methods, last round. The paper: DenseNet-121 at 224 px, 50 rounds of 30 iterations.",
        "",
        "```",
        *report,
        "```",
        "",
    ]
    with atomic_write(output_path(a.out)) as f:
        f.write("\n".join(text))
    print(f"report -> {a.out}")


if __name__ == "__main__":
    main()
