"""What does FedLSM's strong view cost a baseline in notebook 02's short schedule?

What FedLSM's strong view costs: in 02's cpu profile FedLSM's pseudo-labels never engage (Task 1: ``pl/coverage``
0 every round), so FedLSM's student is trained on its strong view
(:func:`fedpl_core.methods.fedlsm.paper_strong_view`: flips, brightness, a blur or noise,
shift / scale / rotation) of D_l u D_m and nothing else differs much from FedAvg*.  This
trains FedAvg* itself on that strong view in exactly 02's setting (same data, partition,
schedule and seeds) and compares it with FedAvg* on the notebook's ``flip_shift`` and with
FedLSM, paired on the seed::

    python benchmarks/fedlsm_strong_view.py                 # Task 1, 3 seeds, about 2 min
    python benchmarks/fedlsm_strong_view.py --task "Task 2"

The strong-view runs replace the engine's augmentation in this process (run serially, so
the patch applies) and are cached in a folder of their own, since the run id does not know it.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

import fedpl_core.fl.preprocess as PP
from fedpl_core.methods.fedlsm import paper_strong_view
from fedpl_core.report.tables import describe_difference, paired_difference
from fedpl_core.runs.study import run_many
from fedpl_core.studies import fedlsm
from fedpl_core.studies.parameters import prepare

_ENGINE = PP.augment_batch


def strong(x: torch.Tensor, kind: str, generator, memory_format=torch.contiguous_format) -> torch.Tensor:
    """FedLSM's strong view as the engine's training augmentation (on the [0, 1] image; its
    photometric magnitudes are relative to each image's range)."""
    return paper_strong_view(x, generator).contiguous(memory_format=memory_format)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="Task 1", choices=fedlsm.TASKS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--results-dir", default="results/benchmarks/fedlsm_strong_view")
    a = ap.parse_args()
    prepare("cpu")
    st = fedlsm.settings("cpu")
    base = st.config(a.task)
    ref = [m for m in fedlsm.methods(a.task, ["FedAvg*", "FedLSM"], first_order=True)]
    t = time.time()
    df = run_many(base, ref, st.seeds, f"{a.results_dir}/engine", progress=False, workers=a.workers)
    PP.augment_batch = strong
    try:
        ds = run_many(
            base,
            [("FedAvg* on FedLSM's strong view", {"method": "fedavg_star"})],
            st.seeds,
            f"{a.results_dir}/strong",
            progress=False,
            workers=1,
            backend="serial",
        )
    finally:
        PP.augment_batch = _ENGINE
    both = pd.concat([df, ds])
    fin = both[both["which"] == "final"]
    print(f"{a.task}, {len(st.seeds)} seeds, {time.time() - t:.0f} s; mean AUROC x 100, last round:")
    print((fin.groupby("label", sort=False)["auroc_mean"].agg(["mean", "std"]) * 100).round(1).to_string())
    for x, y in (
        ("FedAvg* on FedLSM's strong view", "FedAvg*"),
        ("FedLSM", "FedAvg*"),
        ("FedLSM", "FedAvg* on FedLSM's strong view"),
    ):
        print(describe_difference(paired_difference(both, x, y)))


if __name__ == "__main__":
    main()
