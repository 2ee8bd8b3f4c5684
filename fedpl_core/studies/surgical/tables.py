"""Notebook 03's tables: the ablations' and the non-IID experiment's tables with the paper's
paired t-tests (:func:`ablation_table`, :func:`noniid_table`), paired differences across
classes (:func:`class_difference`) and round by round (:func:`gap_by_round`,
:func:`round_gap`), the selected against the last model, the settings, data sets and grids
of the notebook, and what FL's negatives cost (:func:`noise_vs_data`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...report.tables import difference_columns, fmt_mean_std, paired_difference, paired_ttest, paired_values, stars
from ...runs.experiment_config import ExperimentConfig
from .class_scores import long_form
from .profile import Settings
from .runs import partition


def _fmt(mean: float, sd: float, mark: str = "") -> str:
    return fmt_mean_std(mean, sd, 3) + (f" {mark}" if mark else "")


def _mark(a: pd.Series, b: pd.Series) -> str:
    """Stars of a paired t-test of ``a`` against ``b`` on their common index ("ns": p >= 0.05)."""
    common = a.dropna().index.intersection(b.dropna().index)
    if len(common) < 2 or np.allclose(a[common], b[common]):
        return ""
    return stars(paired_ttest(a[common], b[common])[1]) or "ns"


def _reference(label: str, labels: Sequence[str], default: str) -> str:
    """FL + SA with the row's own strategy when there is one, else ``default``."""
    strat = label[label.find("(") + 1 : -1] if label.endswith(")") and "(" in label else ""
    cand = f"FL + SA ({strat})"
    return cand if strat and cand in labels else default


def ablation_summary(df: pd.DataFrame, which: str = "best") -> pd.DataFrame:
    """Mean AUROC over classes (and seeds) per (setting, label, column) of a tidy frame."""
    d = long_form(df[df["which"] == which]).dropna(subset=["auroc"])
    return d.groupby(["setting", "label", "column"], sort=False)["auroc"].mean().reset_index()


def ablation_table(df: pd.DataFrame, which: str = "best", reference: str = "FL + SA") -> pd.DataFrame:
    """Rows: methods; columns: held-out / external test; cells: mean ± SD over the
    iterations of the mean AUROC, with stars of a paired t-test against ``reference``
    across iterations (ns: p >= 0.05, * < 0.05, ** < 0.01, *** < 0.001).  ``df``: the
    tidy frame of ``run_many``; ``which="best"``: the models selected by validation loss."""
    s = ablation_summary(df, which)
    labels = list(dict.fromkeys(s["label"]))
    cols = list(dict.fromkeys(s["column"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=cols, dtype=object)
    for c in cols:
        piv = s[s["column"] == c].pivot(index="setting", columns="label", values="auroc")
        for lab in labels:
            v = piv[lab].dropna()
            mark = _mark(piv[lab], piv[reference]) if lab != reference and reference in piv else ""
            # the Oracle is one run shown in every iteration: no spread to report
            spread = v.std(ddof=1) if v.nunique() > 1 else float("nan")
            out.loc[lab, c] = _fmt(v.mean(), spread, mark)
    return out


def noniid_table(
    df: pd.DataFrame, columns: Sequence[str], which: str = "best", reference: str = "FL + SA (FedBN+)"
) -> pd.DataFrame:
    """Rows: methods; columns: ``columns`` (of :func:`table_columns`); cells: mean ± SD
    over the column's classes of the class AUROCs (each the mean over seeds), "-" where
    there is none, stars of a paired t-test across class AUROCs against FL + SA with the
    row's strategy (``reference`` for rows without one)."""
    d = long_form(df[df["which"] == which])
    labels = list(dict.fromkeys(d["label"]))
    out = pd.DataFrame(index=pd.Index(labels, name="method"), columns=list(columns), dtype=object)
    for c in columns:
        per_class = (
            d[d["column"] == c].groupby(["label", "cls"], sort=False)["auroc"].mean().unstack("label").astype(float)
        )
        for lab in labels:
            v = per_class[lab].dropna() if lab in per_class else pd.Series(dtype=float)
            if v.empty:
                out.loc[lab, c] = "-"
                continue
            ref = _reference(lab, labels, reference)
            mark = _mark(per_class[lab], per_class[ref]) if lab != ref and ref in per_class else ""
            out.loc[lab, c] = _fmt(v.mean(), v.std(ddof=1) if len(v) > 1 else float("nan"), mark)
    return out


def class_difference(df: pd.DataFrame, column: str, a: str, b: str, which: str = "best") -> dict:
    """``a`` minus ``b`` on one table column (e.g. ``"NIH: unique"``), paired across the
    column's classes (each class AUROC the mean over seeds), as the paper tests: the
    :func:`~fedpl_core.report.tables.paired_difference` dict (``n`` = classes)."""
    d = long_form(df[df["which"] == which])
    per_class = d[d["column"] == column].groupby(["label", "cls"])["auroc"].mean().reset_index()
    return paired_difference(per_class.rename(columns={"auroc": "auroc_mean"}), a, b, which=None, pair_on=("cls",))


def gap_by_round(
    df: pd.DataFrame,
    a: str,
    b: str,
    columns: Sequence[str] = ("NIH: unique", "CheXpert: unique", "NIH: shared", "CheXpert: shared"),
) -> pd.DataFrame:
    """``a`` minus ``b`` round by round on the non-IID experiment's columns, from the per-round
    histories of ``run_many(..., histories=True)``: one row per (round, column) with the mean
    over the column's classes of the class AUROC difference (points; each class AUROC the mean
    over seeds), the two-sided paired t-test over those classes (as :func:`class_difference`
    tests) with its 95 % CI, and the number of classes.

    FL + SA and FL + PL differ only in the head rows of the classes a client lacks: FL + PL
    averages a unique class's row with the other clients' rows of it, which the partial loss
    leaves untouched, so the class moves at a fraction of its speed.  This shows when that
    dilution costs and whether it is still there at the rounds the models are selected.  A run
    stopped early counts with its last model at the later rounds (:func:`held_to_the_end`)."""
    rows = []
    for (_, label, seed), hist in df.attrs["histories"].items():
        if label not in (a, b):
            continue
        for rec in hist:
            sets = {src: rec[f"{src}/class_names"] for src in ("NIH", "CheXpert") if f"{src}/class_names" in rec}
            shared = set.intersection(*(set(v) for v in sets.values())) if len(sets) > 1 else set()
            for src, names in sets.items():
                for c, v in zip(names, rec[f"{src}/auroc_per_class"]):
                    rows.append(
                        {
                            "label": label,
                            "seed": seed,
                            "round": rec["round"],
                            "cls": c,
                            "auroc": v,
                            "column": f"{src}: {'shared' if c in shared else 'unique'}",
                        }
                    )
    long = held_to_the_end(pd.DataFrame(rows), ["label", "seed", "cls", "column"], "auroc")
    per = long.groupby(["round", "column", "cls", "label"])["auroc"].mean().unstack("label").dropna()
    out = []
    for (r, col), d in per.groupby(level=["round", "column"]):
        if col not in columns:
            continue
        gap = paired_values(d[a], d[b])
        out.append({"round": r, "column": col, **difference_columns(gap, diff="gap", sd=False)})
    out = pd.DataFrame(out).rename(columns={"pairs": "classes"})
    out["p"] = out["p"].astype(float)  # no test (one class): NaN, so the column compares with numbers
    return out


def best_vs_last(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean AUROC of the selected (``best``: lowest validation loss) and the last-round
    (``final``) models per method and column, with the mean selected round."""
    d = long_form(df).dropna(subset=["auroc"])
    if columns is not None:
        d = d[d["column"].isin(columns)]
    g = d.groupby(["label", "column", "which"], sort=False)["auroc"].mean().unstack("which")
    g = g[[w for w in ("best", "final") if w in g.columns]]
    g["best round"] = d[d["which"] == "best"].groupby(["label", "column"], sort=False)["round"].mean()
    return g.round(3)


def settings_table(st: Settings) -> pd.DataFrame:
    """The notebook's settings, one row a field (folders as :func:`fedpl_core.base.paths.shown`
    writes them: no machine path)."""
    from ...base.paths import shown

    out = {}
    for k, v in vars(st).items():
        if k in ("results_dir", "data_root") and v:
            out[k] = shown(v, "FEDPL_RESULTS")
        elif isinstance(v, (list, tuple)):
            out[k] = ", ".join(map(str, v))  # prose, not a Python list
        else:
            out[k] = str(v)
    return pd.Series(out, name="value").to_frame()


def data_sets_table(abl, nd) -> pd.DataFrame:
    """Images, classes and imaging domains of every data set of the ablation (``abl``) and
    the non-IID experiment (``nd``), and the public images that calibrate BatchNorm."""
    sets = {
        "ablation: train pool": abl.train,
        "ablation: test": abl.test,
        "ablation: external": abl.extra["external"],
        "non-IID: NIH + CheXpert train": nd.train,
        "non-IID: NIH test": nd.extra["NIH"],
        "non-IID: CheXpert test": nd.extra["CheXpert"],
        "non-IID: external": nd.extra["external"],
    }
    table = pd.DataFrame(
        {
            name: {
                "images": len(ds),
                "classes": ds.num_classes,
                "domain(s)": ", ".join(map(str, sorted(set(ds.domains.tolist())))) if ds.domains is not None else "-",
            }
            for name, ds in sets.items()
        }
    ).T
    table.loc["public (BatchNorm calibration)"] = [0 if abl.public is None else len(abl.public), "-", "-"]
    return table


def grid_tables(
    iterations: dict, methods: Sequence[tuple[str, dict]], name: str = "K"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An experiment as the two tables of its declarative grid: the iterations (one row a
    value of ``name``, its config overrides) and the rows (one a method, its overrides)."""
    its = pd.DataFrame(iterations).T.rename_axis(name)
    rows = pd.DataFrame([{"label": label, **{k: str(v) for k, v in over.items()}} for label, over in methods])
    rows = rows.rename(columns={"method": "registry name (method=)", "method_kwargs": "options (method_kwargs=)"})
    return its, rows.set_index("label").rename_axis("method").fillna("")


def held_to_the_end(long: pd.DataFrame, run: Sequence[str], value: str) -> pd.DataFrame:
    """``long`` (one row a run's evaluated round) with each run's last value repeated at every
    later round that another run of the frame reaches: a run stopped early (``patience``, the
    paper profile) keeps its last model, so a round-by-round comparison pairs every seed at
    every round instead of the seeds still training.  ``run``: the columns that name a run (and,
    for per-class rows, its class); a frame whose runs all end at the same round is returned
    with the same rows.

    >>> d = pd.DataFrame({"label": ["A", "A", "B"], "round": [1, 2, 1], "v": [0.5, 0.6, 0.7]})
    >>> held_to_the_end(d, ["label"], "v").values.tolist()
    [['A', 1, 0.5], ['A', 2, 0.6], ['B', 1, 0.7], ['B', 2, 0.7]]
    """
    wide = long.pivot_table(index=list(run), columns="round", values=value, aggfunc="first")
    return wide.ffill(axis=1).stack().rename(value).reset_index()


def round_gap(curves: pd.DataFrame, a: str, b: str, by: str = "K") -> pd.DataFrame:
    """``a`` minus ``b`` (points, paired over seeds) half-way through training (the middle
    evaluated round) and at the last round, for every value of ``by``; a run stopped early
    counts with its last model at the later rounds (:func:`held_to_the_end`)."""
    rows = []
    for v, cv in curves.groupby(by):
        cv = held_to_the_end(cv, ["label", "seed"], "auroc_mean")
        rounds_ = sorted(cv["round"].unique())
        for when, r in (("middle round", rounds_[len(rounds_) // 2 - 1]), ("last round", rounds_[-1])):
            d = paired_difference(cv[cv["round"] == r], a, b, which=None)
            rows.append({by: v, "when": f"{when} ({r})", **difference_columns(d, diff="gap")})
    return pd.DataFrame(rows)


def noise_vs_data(base: ExperimentConfig, settings_s: dict, truth: np.ndarray) -> pd.DataFrame:
    """What FL's negatives cost and what FL + SA gives up, counted from the partitions of
    ablation (b) without training: per setting (mean over classes), the share of FL's
    negative labels that are wrong (positives of clients that do not annotate the class)
    and the share of the images that train a class under FL + PL / FL + SA (those of the
    clients that annotate it).  ``truth``: every true label of the pool, hidden from the
    clients."""
    rows = []
    for name, over in settings_s.items():
        part = partition(base.replace(**over))
        n = sum(len(c.indices) for c in part.clients)
        for j, _ in enumerate(part.class_names):
            has = [c for c in part.clients if c.class_mask[j]]
            lack = [c for c in part.clients if not c.class_mask[j]]
            wrong = sum(int(truth[c.indices, j].sum()) for c in lack)  # positives FL trains as negatives
            negatives = sum(len(c.indices) - int(truth[c.indices, j].sum()) for c in has) + sum(
                len(c.indices) for c in lack
            )
            rows.append(
                {
                    "shared classes": name,
                    "FL: wrong negative labels (%)": 100 * wrong / max(negatives, 1),
                    "FL + PL / SA: images that train the class (%)": 100 * sum(len(c.indices) for c in has) / n,
                }
            )
    return pd.DataFrame(rows).groupby("shared classes", sort=False).mean().round(1)


def unique_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """FL + SA minus FL + PL round by round (:func:`gap_by_round`) for FedAvg and FedBN+, one
    frame with a ``strategy`` column."""
    return pd.concat(
        {s: gap_by_round(df, f"FL + SA ({s})", f"FL + PL ({s})") for s in ("FedAvg", "FedBN+")}, names=["strategy"]
    ).reset_index(level=0)


def best_vs_last_table(results: dict[str, tuple[pd.DataFrame, Sequence[str] | None]]) -> pd.DataFrame:
    """:func:`best_vs_last` of every experiment (name -> (runs, columns or None)) in one table."""
    return pd.concat({name: best_vs_last(df, cols) for name, (df, cols) in results.items()}, names=["experiment"])
