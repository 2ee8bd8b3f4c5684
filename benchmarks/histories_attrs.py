"""What keeping a grid's per-round histories in ``DataFrame.attrs`` costs a table built from it.

pandas deep-copies ``attrs`` into every frame it derives from another (a column, a selection,
a group).  ``run_many(..., histories=True)`` keeps its runs' histories there, so a table that
loops over a grid's frame used to copy every history at every step.  This times Surgical
Aggregation's best-against-last table (``best_vs_last``) on notebook 03's ablation (a), read from
the results cache of a profile that has run it, once with the histories as :class:`Histories`
(shared: a deep copy is the object itself) and once as a plain dict (copied)::

    python benchmarks/histories_attrs.py                  # the paper profile's cache (180 runs, up to 150 rounds)
    python benchmarks/histories_attrs.py --profile cpu    # the cpu profile's (36 runs of 16 rounds)

Both give the same table; the script says so.
"""

from __future__ import annotations

import argparse
import time
import warnings

from fedpl_core.base import paths
from fedpl_core.runs.study import run_many
from fedpl_core.studies import surgical as study
from fedpl_core.studies.parameters import apply_parameters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="paper", choices=["cpu", "paper"])
    args = ap.parse_args()
    st = study.settings(apply_parameters(study.profiles(None, False), args.profile, workers=1))
    results_dir = paths.notebook_outputs(args.profile, "03_surgical", None)
    settings = {f"K={k}": over for k, over in study.ablation_settings(st, "clients").items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_many(
            study.ablation_config(st), study.ablation_methods(st), st.seeds, results_dir,
            settings=settings, histories=True, progress=False,
        )  # fmt: skip
    print(f"ablation (a), {args.profile} profile: {len(res.attrs['histories'])} runs")
    t = time.perf_counter()
    shared = study.best_vs_last(res)
    t_shared = time.perf_counter() - t
    res.attrs["histories"] = dict(res.attrs["histories"])
    t = time.perf_counter()
    copied = study.best_vs_last(res)
    t_copied = time.perf_counter() - t
    print(
        f"best_vs_last: {t_shared:.2f} s with the histories shared, {t_copied:.2f} s with them copied; "
        f"the same table: {shared.equals(copied)}"
    )


if __name__ == "__main__":
    main()
