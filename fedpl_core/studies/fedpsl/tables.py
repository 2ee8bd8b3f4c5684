"""Notebook 01's tables, from the runner's tidy frames: the paper's table (methods x classes,
:func:`paper_table`), the paper's best round* beside the last round (:func:`selection_table`),
the sweeps of Fig. 3, Fig. 4 and Table V (:func:`sweep_table`, :func:`table5`) and their paired
differences (:func:`sweep_differences`, :func:`sweep_trend`)."""

from __future__ import annotations

import pandas as pd

from ...report.tables import fmt_mean_std, per_class_mean_std


def paper_table(df: pd.DataFrame, which: str = "best", decimals: int = 3) -> pd.DataFrame:
    """The paper's table: methods x (classes, Average), ``mean ± std`` over seeds (AUROC in [0, 1])."""
    t = per_class_mean_std(df, which=which, scale=1.0, decimals=decimals)
    return t.rename(columns={"Mean": "Average"})


def selection_table(df: pd.DataFrame, decimals: int = 3) -> pd.DataFrame:
    """Mean AUROC at the paper's best round (optimistic: picked on the test set) and at
    the last round, side by side, with the mean best round."""
    out = {}
    for which, col in (("best", "Average, best round*"), ("final", "Average, last round")):
        d = df[df["which"] == which].groupby("label", sort=False)["auroc_mean"]
        m, s = d.mean(), d.std(ddof=1)
        out[col] = [fmt_mean_std(a, b, decimals) for a, b in zip(m, s)]
        idx = m.index
    t = pd.DataFrame(out, index=idx)
    t["best round"] = df[df["which"] == "best"].groupby("label", sort=False)["round"].mean().round(1)
    t["last round"] = df[df["which"] == "final"].groupby("label", sort=False)["round"].max()
    t.index.name = "method"
    return t


def sweep_table(df: pd.DataFrame, x: str = "n", which: str = "best", decimals: int = 3) -> pd.DataFrame:
    """Methods x sweep values of ``mean ± std`` mean AUROC."""
    d = df[df["which"] == which].groupby(["label", x], sort=False)["auroc_mean"]
    m, s = d.mean().unstack(x), d.std(ddof=1).unstack(x)
    out = m.astype(object)
    for col in m.columns:
        out[col] = [fmt_mean_std(u, v, decimals) for u, v in zip(m[col], s[col])]
    out.columns.name = x
    return out


def sweep_differences(df: pd.DataFrame, x: str, a: str, b: str, which: str = "final") -> pd.DataFrame:
    """``a`` minus ``b`` (AUROC points, paired over seeds) at every value of the sweep
    column ``x``: columns ``x``, ``diff``, ``sd``, ``95 % CI``, ``pairs``, ``p``."""
    from ...report.tables import difference_columns, paired_difference

    rows = []
    for v, d in df.groupby(x, sort=True):
        r = paired_difference(d, a, b, which=which)
        rows.append({x: v, **difference_columns(r, diff="diff")})
    return pd.DataFrame(rows)


def sweep_trend(df: pd.DataFrame, x: str, label: str, which: str = "final") -> dict:
    """Mean AUROC of ``label`` at the smallest and the largest ``x``, and their paired
    difference (points, largest minus smallest, paired over seeds; t-test ``p``)."""
    from ...report.tables import paired_difference

    d = df[(df["label"] == label) & (df["which"] == which)]
    lo, hi = d[x].min(), d[x].max()
    r = paired_difference(d.assign(label=d[x]), hi, lo, which=None, pair_on=("seed",))
    means = d.groupby(x)["auroc_mean"].mean()
    return {
        "label": label,
        "x_lo": lo,
        "x_hi": hi,
        "lo": float(means[lo]),
        "hi": float(means[hi]),
        "diff": r["diff"],
        "n": r["n"],
        "p": r["p"],
    }


def table5(df5: pd.DataFrame, df2: pd.DataFrame, which: str = "best") -> pd.DataFrame:
    """Table V: mean AUROC per method and synchronisation interval E (columns "E=<E>"); the
    best-round table adds the Oracle's Table II result (it does not synchronise)."""
    t5 = sweep_table(df5, "E", which)
    if which == "best":
        oracle = df2[(df2["label"] == "Oracle") & (df2["which"] == "best")]["auroc_mean"]
        if len(oracle):
            t5.loc["Oracle"] = fmt_mean_std(oracle.mean(), oracle.std(ddof=1), 3)
    t5.columns = [f"E={e}" for e in t5.columns]
    return t5
