"""Result tables: mean +- std over seeds, paired tests, markdown and LaTeX output."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats


def fmt_mean_std(mean: float, std: float, decimals: int = 2) -> str:
    """``"mean ± std"``; with one value (``std`` NaN, as ``ddof=1`` gives for n = 1) the
    mean alone: a single seed has no spread to show.  A positive spread that rounds to zero
    is shown as an upper bound, so it cannot be read as one seed or as equal values.

    >>> fmt_mean_std(0.78781, 0.00013, 3), fmt_mean_std(0.5, 0.0, 3), fmt_mean_std(0.5, float("nan"), 3)
    ('0.788 ± <0.001', '0.500 ± 0.000', '0.500')
    """
    if std is None or not np.isfinite(std):
        return f"{mean:.{decimals}f}"
    if 0 < std < 0.5 * 10**-decimals:
        return f"{mean:.{decimals}f} ± <{10**-decimals:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def _mean_std_n(
    d: pd.DataFrame, by: Sequence[str] | str, cols: Sequence[str], scale: float
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per group of ``by`` (in order of appearance): the mean and sample std (ddof=1),
    both times ``scale``, and the count of each of ``cols``, from one
    ``groupby(...).agg(["mean", "std", "count"])``."""
    a = d.groupby(by, sort=False)[list(cols)].agg(["mean", "std", "count"])
    return a.xs("mean", axis=1, level=1) * scale, a.xs("std", axis=1, level=1) * scale, a.xs("count", axis=1, level=1)


def _fmt_frame(mean: pd.DataFrame, std: pd.DataFrame, decimals: int) -> pd.DataFrame:
    """:func:`fmt_mean_std` cell by cell over two frames of the same shape (strings)."""
    return pd.DataFrame(
        {c: [fmt_mean_std(a, b, decimals) for a, b in zip(mean[c], std[c])] for c in mean.columns},
        index=mean.index,
        columns=mean.columns,
    )


def summarize(
    df: pd.DataFrame,
    metrics: Sequence[str] = ("auroc_mean",),
    by: Sequence[str] = ("setting", "label"),
    which: str | None = "final",
    scale: float = 100.0,
    decimals: int = 2,
) -> pd.DataFrame:
    """``mean +- std`` (sample std, ddof=1; the mean alone for one seed) of each metric
    per group, as strings, with the numeric means in ``<metric>_mean`` columns for sorting
    and the number of runs in ``n``."""
    d = df if which is None or "which" not in df else df[df["which"] == which]
    by = [b for b in by if b in d.columns]
    mean, std, n = _mean_std_n(d, by, metrics, scale)
    text = _fmt_frame(mean, std, decimals)
    out = pd.DataFrame(index=mean.index)
    for m in metrics:
        out[m] = text[m]
        out[f"{m}_mean"] = mean[m]
    out["n"] = n[list(metrics)[0]]
    return out


def pivot_mean_std(
    df: pd.DataFrame,
    metric: str = "auroc_mean",
    rows: str = "label",
    cols: str = "setting",
    which: str | None = "final",
    scale: float = 100.0,
    decimals: int = 2,
) -> pd.DataFrame:
    """A paper-style table: rows (methods, by their display names: :func:`~fedpl_core.report.names.display_name`)
    x columns (settings) of ``mean ± std``; the index is named "method" when the rows are the labels."""
    from .names import display_name

    s = summarize(df, [metric], by=[cols, rows], which=which, scale=scale, decimals=decimals)
    out = s[metric].unstack(0).reindex(columns=list(dict.fromkeys(df[cols])), index=list(dict.fromkeys(df[rows])))
    if rows == "label":
        out.index = pd.Index([display_name(v) for v in out.index], name="method")
    out.columns.name = None if cols == "setting" else cols
    return out


def per_class_mean_std(
    df: pd.DataFrame, label_col: str = "label", which: str = "final", scale: float = 100.0, decimals: int = 1
) -> pd.DataFrame:
    """Rows: methods (by their display names); columns: classes (``auroc:<class>`` columns,
    ``_`` as a space) plus the mean."""
    from .names import class_name, display_name

    d = df[df["which"] == which] if "which" in df else df
    cols = [c for c in d.columns if c.startswith("auroc:")] + ["auroc_mean"]
    mean, std, _ = _mean_std_n(d, label_col, cols, scale)
    out = _fmt_frame(mean, std, decimals)
    out.columns = [class_name(c.replace("auroc:", "")) if c != "auroc_mean" else "Mean" for c in cols]
    out.index = pd.Index([display_name(v) for v in out.index], name="method")
    return out


def paired_ttest(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Paired two-sided t-test (scipy.stats.ttest_rel): returns (t, p)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"paired t-test needs two equal-length samples of size >= 2, got {a.shape} and {b.shape}")
    r = stats.ttest_rel(a, b)
    return float(r.statistic), float(r.pvalue)


def curve_frame(df: pd.DataFrame, metric: str = "auroc_mean") -> pd.DataFrame:
    """Per-round values of ``metric`` as long rows (setting, label, seed, round, metric), from
    the histories that ``run_many(..., histories=True)`` keeps in ``df.attrs``; with a
    ``method`` column (the registry key of each run, which the figures colour by) when ``df``
    has one.

    >>> df = pd.DataFrame()
    >>> df.attrs["histories"] = {("K=2", "FL", 0): [{"round": 1, "auroc_mean": 0.6}, {"round": 2, "train_loss": 1.0},
    ...                                              {"round": 3, "auroc_mean": 0.7}]}
    >>> curve_frame(df).values.tolist()
    [['K=2', 'FL', 0, 1, 0.6], ['K=2', 'FL', 0, 3, 0.7]]
    """
    if "histories" not in df.attrs:
        raise KeyError("no per-round histories: call run_many(..., histories=True)")
    rows = [
        {"setting": st, "label": lab, "seed": seed, "round": h["round"], metric: h[metric]}
        for (st, lab, seed), hist in df.attrs["histories"].items()
        for h in hist
        if h.get(metric) is not None
    ]
    out = pd.DataFrame(rows, columns=["setting", "label", "seed", "round", metric])
    if {"method", "setting", "label", "seed"} <= set(df.columns) and len(out):
        runs = df.drop_duplicates(["setting", "label", "seed"]).set_index(["setting", "label", "seed"])["method"]
        out["method"] = [runs.get(k) for k in zip(out["setting"], out["label"], out["seed"])]
    return out


def late_gain(curves: pd.DataFrame, metric: str = "auroc_mean", scale: float = 100.0) -> pd.DataFrame:
    """How much each curve still rises over (about) the last quarter of its rounds: per
    (setting, label), the mean over seeds of the last evaluated value minus the last value
    evaluated at or before 3/4 of the last round, in points of ``scale``; ``n``: the seeds;
    ``start`` / ``end``: the rounds compared (with an evaluation every few rounds ``start``
    can lie before 3/4 of ``end``: the gain then spans more than a quarter).  Near zero (or
    below) means the curve has flattened; curves with fewer than 4 evaluations are left out.
    ``curves`` as :func:`curve_frame` gives it.

    >>> c = pd.DataFrame({"setting": "s", "label": "x", "seed": 0, "round": [2, 4, 6, 8],
    ...                   "auroc_mean": [0.60, 0.70, 0.74, 0.75]})
    >>> late_gain(c).round(6).values.tolist()  # round 8 against round 6 (the last at or before 0.75 x 8)
    [['s', 'x', 1.0, 1, 6, 8]]
    """
    out = []
    for (setting, label, _), g in curves.sort_values("round").groupby(["setting", "label", "seed"], sort=False):
        if len(g) < 4:
            continue
        last = g["round"].iloc[-1]
        before = g[g["round"] <= 0.75 * last]
        if len(before):
            out.append(
                (
                    setting,
                    label,
                    scale * (g[metric].iloc[-1] - before[metric].iloc[-1]),
                    int(before["round"].iloc[-1]),
                    int(last),
                )
            )
    d = pd.DataFrame(out, columns=["setting", "label", "gain", "start", "end"])
    return (
        d.groupby(["setting", "label"], sort=False)
        .agg(gain=("gain", "mean"), n=("gain", "count"), start=("start", "min"), end=("end", "max"))
        .reset_index()
    )


def describe_late_gain(gains: pd.DataFrame, highlight: Sequence[str] = (), rising: float = 2.0) -> str:
    """A sentence from :func:`late_gain`'s rows: the median gain between the rounds it
    compared, the range, the ``highlight`` methods' gains, and whether any curve is still
    rising (a gain above ``rising`` points).

    >>> g = pd.DataFrame({"setting": "s", "label": ["A", "B", "C"], "gain": [0.5, 3.0, -1.0], "n": 3,
    ...                   "start": 8, "end": 12})
    >>> describe_late_gain(g, ["B"])  # doctest: +NORMALIZE_WHITESPACE
    'From round 8 to round 12, the last, the curves gain +0.5 points (median over 3 methods, from -1.0 to
    +3.0; B +3.0). Some are still rising at the last round (more than 2 points): the schedule stops before
    they converge, and the tables compare them mid-climb.'
    """
    if gains.empty:
        return "Too few evaluated rounds (fewer than 4 a run) to tell whether the curves flatten."
    g = gains.groupby("label", sort=False)["gain"].mean()
    named = [f"{m} {g[m]:+.1f}" for m in highlight if m in g.index]
    start, end = int(gains["start"].min()), int(gains["end"].max())
    text = (
        f"From round {start} to round {end}, the last, the curves gain {g.median():+.1f} points (median over "
        f"{len(g)} methods, from {g.min():+.1f} to {g.max():+.1f}" + (f"; {', '.join(named)}" if named else "") + "). "
    )
    if (g > rising).any():
        return text + (
            f"Some are still rising at the last round (more than {rising:g} points): the schedule stops "
            "before they converge, and the tables compare them mid-climb."
        )
    return text + f"Every curve has flattened (none gains more than {rising:g} points)."


def paired_difference(
    df: pd.DataFrame,
    a: str,
    b: str,
    metric: str = "auroc_mean",
    *,
    which: str | None = "final",
    label_col: str = "label",
    pair_on: Sequence[str] = ("setting", "seed"),
    scale: float = 100.0,
) -> dict:
    """``a`` minus ``b`` on ``metric``, paired on ``pair_on`` (the same seed and setting).

    Returns ``{"a", "b", "diff", "sd", "n", "t", "p", "ci"}``: the mean difference (in points
    of ``scale``: 100 turns AUROC into percentage points), its standard deviation, the
    number of pairs, the two-sided paired t-test (``t``, ``p``) and the 95 % confidence
    interval of the mean difference (``ci``, points; scipy's ``ttest_rel(...).confidence_interval()``);
    ``t``, ``p`` and ``ci`` are None with fewer than two pairs or when every pair differs by
    the same amount, where the t statistic is undefined.

    >>> df = pd.DataFrame({"label": ["x"] * 3 + ["y"] * 3, "seed": [0, 1, 2] * 2,
    ...                    "auroc_mean": [0.80, 0.82, 0.84, 0.78, 0.79, 0.83]})
    >>> d = paired_difference(df, "x", "y", which=None)
    >>> round(d["diff"], 2), d["n"], round(d["p"], 3)  # differences 2, 3, 1: t = 2 / (1 / sqrt 3), 2 dof
    (2.0, 3, 0.074)
    >>> [round(v, 3) for v in d["ci"]]  # 2 -+ t_0.975(2 dof) 4.303 x 1 / sqrt 3
    [-0.484, 4.484]
    """
    d = df if which is None or "which" not in df else df[df["which"] == which]
    keys = [k for k in pair_on if k in d.columns]
    wide = d[d[label_col].isin([a, b])].pivot_table(index=keys, columns=label_col, values=metric, aggfunc="mean")
    for lab in (a, b):
        if lab not in wide:
            raise KeyError(f"no runs labelled {lab!r}; have {sorted(d[label_col].unique())}")
    wide = wide[[a, b]].dropna()
    return {"a": a, "b": b, **paired_values(wide[a], wide[b], scale)}


def paired_values(x: Sequence[float], y: Sequence[float], scale: float = 100.0) -> dict:
    """``x`` minus ``y`` paired element by element, in points of ``scale``: ``{"diff", "sd",
    "n", "t", "p", "ci"}`` as :func:`paired_difference` returns them (``t``, ``p``, ``ci``
    None with fewer than two pairs or equal differences).

    >>> r = paired_values([0.80, 0.82, 0.84], [0.78, 0.79, 0.83])
    >>> round(r["diff"], 2), round(r["sd"], 2), r["n"], [round(v, 3) for v in r["ci"]]
    (2.0, 1.0, 3, [-0.484, 4.484])
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    diff = (x - y) * scale
    t = p = ci = None
    if len(diff) >= 2 and not np.allclose(diff, diff[0]):  # equal differences: t undefined
        t, p = paired_ttest(x, y)
        r = stats.ttest_rel(x * scale, y * scale).confidence_interval(0.95)
        ci = (float(r.low), float(r.high))
    return {
        "diff": float(diff.mean()) if len(diff) else float("nan"),
        "sd": float(diff.std(ddof=1)) if len(diff) > 1 else float("nan"),
        "n": int(len(diff)),
        "t": t,
        "p": p,
        "ci": ci,
    }


def difference_columns(d: dict, diff: str = "diff (points)", sd: bool = True) -> dict:
    """The columns of a result table for one paired difference (:func:`paired_difference`):
    the mean difference (2 decimals), its sd, the 95 % confidence interval as text, the
    number of pairs and the p-value (None without a test).

    >>> difference_columns({"diff": -2.004, "sd": 1.0, "n": 3, "p": 0.01, "ci": (-3.14, -0.86)})
    {'diff (points)': -2.0, 'sd': 1.0, '95 % CI': '-3.1 to -0.9', 'pairs': 3, 'p': 0.01}
    """
    out = {diff: round(d["diff"], 2)}
    if sd:
        out["sd"] = round(d["sd"], 2)
    out["95 % CI"] = f"{d['ci'][0]:.1f} to {d['ci'][1]:.1f}" if d.get("ci") else None
    out.update({"pairs": d["n"], "p": d["p"]})
    return out


def p_digits(p: float) -> str:
    """A p-value's digits: two significant, three near 0.05, so that a p below 0.05 never reads
    as 0.05 beside its verdict.

    >>> p_digits(0.0497), p_digits(0.0081), p_digits(0.21)
    ('0.0497', '0.0081', '0.21')
    """
    return f"{p:.3g}" if 0.045 <= p < 0.055 else f"{p:.2g}"


def p_text(p: float) -> str:
    """``"p = <digits>"`` (:func:`p_digits`), as a sentence writes it.

    >>> p_text(0.0497)
    'p = 0.0497'
    """
    return f"p = {p_digits(p)}"


def describe_difference(d: dict, unit: str = "points", alpha: float = 0.05, pairs: str = "runs") -> str:
    """One sentence from :func:`paired_difference`, with the verdict the numbers allow
    (``pairs`` names what was paired: runs, one (setting, seed) of the two methods each,
    or classes).

    >>> describe_difference({"a": "FedPSL", "b": "FedAVG", "diff": 2.04, "sd": 1.0, "n": 3, "t": 3.5, "p": 0.07})
    'FedPSL is 2.0 points above FedAVG (paired t-test over 3 runs: p = 0.07, not significant at 0.05)'
    >>> describe_difference({"a": "A", "b": "B", "diff": -2.0, "n": 3, "p": 0.01, "ci": (-3.1, -0.9)})
    'A is 2.0 points below B (95 % CI -3.1 to -0.9; paired t-test over 3 runs: p = 0.01, significant at 0.05)'
    """
    from .names import display_name

    a, b = display_name(d["a"]), display_name(d["b"])  # a registry key reads as its method's name
    size = abs(d["diff"])
    side = "above" if d["diff"] > 0 else "below"
    head = f"{a} is level with {b} (within 0.05 {unit})" if size < 0.05 else f"{a} is {size:.1f} {unit} {side} {b}"
    if d["p"] is None:
        return head + f" ({pairs}: {d['n']}, no test)"
    verdict = "significant" if d["p"] < alpha else "not significant"
    ci = f"95 % CI {d['ci'][0]:.1f} to {d['ci'][1]:.1f}; " if d.get("ci") else ""
    return head + f" ({ci}paired t-test over {d['n']} {pairs}: {p_text(d['p'])}, {verdict} at {alpha:g})"


#: The four verdicts a paper's claim can get from a paired comparison (:func:`verdict`), fixed
#: before any claim runs.
VERDICTS = ("reproduced", "opposite", "absent", "inconclusive")

#: The power the seeds are chosen for, and the test's level (two-sided).
POWER, ALPHA = 0.8, 0.05


def verdict(d: dict, direction: int = 1, alpha: float = ALPHA, margin: float | None = None) -> str:
    """The verdict on a claim "``a`` is above ``b``" (``direction`` = 1; -1 for "below") from
    :func:`paired_difference`, in this order:

    * ``"reproduced"``: the paired t-test gives p < ``alpha`` in the claim's direction;
    * ``"opposite"``: p < ``alpha`` against it;
    * ``"absent"``: the 95 % interval of the difference lies inside +- ``margin`` (an
      equivalence result; the findings take half the gain the paper reports);
    * ``"inconclusive"``: anything else, and every claim without a test (fewer than two
      pairs, or every pair differing by the same amount) or, for ``absent``, without a margin.

    Never "holds" or "fails" for a gap the runs cannot tell from 0.

    >>> verdict({"diff": 2.0, "p": 0.01}), verdict({"diff": -2.0, "p": 0.01}), verdict({"diff": 5.0, "p": 0.2})
    ('reproduced', 'opposite', 'inconclusive')
    >>> verdict({"diff": 0.3, "p": 0.4, "ci": (-0.8, 1.4)}, margin=1.5)  # inside +-1.5: no effect of that size
    'absent'
    >>> verdict({"diff": 0.3, "p": 0.4, "ci": (-0.8, 1.6)}, margin=1.5)  # 1.6 is outside
    'inconclusive'
    >>> verdict({"diff": -2.0, "p": 0.01}, direction=-1), verdict({"diff": 1.0, "p": None}, margin=5.0)
    ('reproduced', 'inconclusive')
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be 1 (a above b) or -1 (a below b), got {direction!r}")
    if margin is not None and not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"margin must be a positive number of points, got {margin!r}")
    p = d.get("p")
    if p is not None and p < alpha and d["diff"] != 0:
        return VERDICTS[0] if (d["diff"] > 0) == (direction > 0) else VERDICTS[1]
    ci = d.get("ci")
    if p is not None and ci and margin is not None and -margin < ci[0] and ci[1] < margin:
        return VERDICTS[2]
    return VERDICTS[3]


def power(sd: float, n: int, effect: float, alpha: float = ALPHA) -> float | None:
    """The power of the two-sided paired t-test at level ``alpha`` over ``n`` pairs whose
    differences have standard deviation ``sd``, against a true mean difference ``effect``:
    the chance that ``|t| > t(1 - alpha / 2, n - 1)`` when ``t`` follows the noncentral t
    distribution with ``n - 1`` degrees of freedom and noncentrality ``effect / sd x sqrt(n)``
    (``statsmodels``' ``TTestPower``; where its series does not converge, as for very large
    effects, scipy's noncentral t directly, and 1 where both lose it far beyond the critical
    value).  None when it is undefined (n < 2, sd not positive, an effect that is not a number).

    >>> round(power(sd=2.0, n=5, effect=3.0), 2)  # d = 1.5 over 5 pairs
    0.71
    >>> power(sd=0.22, n=5, effect=3.0)  # d = 13.6: certain
    1.0
    """
    from statsmodels.stats.power import TTestPower

    if n < 2 or not (sd > 0 and math.isfinite(sd)) or not math.isfinite(effect):
        return None
    d = abs(effect) / sd
    out = float(TTestPower().power(effect_size=d, nobs=n, alpha=alpha, alternative="two-sided"))
    if not math.isfinite(out):
        df, nc, crit = n - 1, d * math.sqrt(n), float(stats.t.ppf(1 - alpha / 2, n - 1))
        out = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
        if not math.isfinite(out):
            out = 1.0 if nc > 2 * crit + 10 else math.nan
    return out if math.isnan(out) else min(1.0, out)


def minimum_detectable_effect(sd: float, n: int, target: float = POWER, alpha: float = ALPHA) -> float | None:
    """The smallest true mean difference (in the units of ``sd``) that the two-sided paired
    t-test over ``n`` pairs detects with power ``target`` at level ``alpha``; None when
    undefined (n < 2, sd not positive).

    >>> round(minimum_detectable_effect(sd=1.0, n=5), 2), round(minimum_detectable_effect(sd=1.0, n=20), 2)
    (1.68, 0.66)
    """
    from statsmodels.stats.power import TTestPower

    if n < 2 or not (sd > 0 and math.isfinite(sd)):
        return None
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=target, alternative="two-sided")
    return float(np.asarray(d).item()) * sd


def seeds_for_power(
    sd: float, effect: float, target: float = POWER, alpha: float = ALPHA, minimum: int = 5, cap: int | None = None
) -> int:
    """How many seeds (pairs) the two-sided paired t-test needs for power ``target`` against a
    true mean difference ``effect``, with differences of standard deviation ``sd``: the
    smallest whole n (at least ``minimum``, at most ``cap``) whose :func:`power` reaches it.

    >>> seeds_for_power(sd=2.0, effect=3.0), seeds_for_power(sd=2.0, effect=1.0), seeds_for_power(2.0, 1.0, cap=20)
    (6, 34, 20)
    """
    if not (effect and math.isfinite(effect)):
        raise ValueError(f"effect must be a non-zero number, got {effect!r}")
    if not (sd > 0 and math.isfinite(sd)):
        return minimum
    n = max(minimum, 2)
    while (power(sd, n, effect, alpha) or 0.0) < target:
        if cap is not None and n >= cap:
            return cap
        n += 1
    return n if cap is None else min(n, cap)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None and NaN stay None):
    ``statsmodels.stats.multitest.multipletests(method="holm")`` over the given ones, the
    i-th smallest of m becoming max over j <= i of min(1, (m - j + 1) p_(j)), rounded to 12
    digits.  Use it where one notebook tests several claims at once.

    >>> holm([0.01, 0.04, 0.03, None])  # m = 3: 3 x 0.01; max(0.03, 2 x 0.03); max(0.06, 1 x 0.04)
    [0.03, 0.06, 0.06, None]
    """
    from statsmodels.stats.multitest import multipletests

    idx = [i for i, p in enumerate(pvalues) if p is not None and p == p]
    out: list[float | None] = [None] * len(pvalues)
    if idx:
        adjusted = multipletests([float(pvalues[i]) for i in idx], method="holm")[1]
        for i, v in zip(idx, adjusted):
            out[i] = round(float(v), 12)
    return out


def stars(p: float | None) -> str:
    """Significance stars: ``*`` p < 0.05, ``**`` p < 0.01, ``***`` p < 0.001."""
    if p is None or not np.isfinite(p):
        return ""
    return "***" if p < 1e-3 else "**" if p < 1e-2 else "*" if p < 0.05 else ""


def to_markdown(df: pd.DataFrame, index: bool = True) -> str:
    """A GitHub (pipe) markdown table through ``DataFrame.to_markdown`` (tabulate).  The
    index becomes leading column(s) named after its level(s) (``index`` when unnamed);
    a missing value (NaN, None) is an empty cell; every other cell is ``str(value)``
    (no number parsing, so ``"80.00"`` stays ``80.00``).

    >>> print(to_markdown(pd.DataFrame({"x": [1.0, float("nan")], "y": ["80.00", "b"]}), index=False))
    | x   | y     |
    |:----|:------|
    | 1.0 | 80.00 |
    |     | b     |
    """
    d = df.reset_index() if index else df
    d = d.astype(object).where(d.notna(), None)  # tabulate shows None as its missingval ("")
    return d.to_markdown(index=False, disable_numparse=True)


def to_latex(df: pd.DataFrame, caption: str | None = None, label: str | None = None, index: bool = True) -> str:
    """LaTeX through pandas' Styler (booktabs rules); ``index=False`` leaves the index out."""
    sty = (df.style if index else df.style.hide(axis="index")).format(na_rep="")
    return sty.to_latex(caption=caption, label=label, hrules=True).replace("±", r"$\pm$")


def figures_dir() -> Path:
    """Where notebooks write figures and tables (absolute): :func:`fedpl_core.base.paths.figures_dir`,
    i.e. ``$FEDPL_FIGURES`` if set, else ``outputs/smoke/figures`` in the smoke profile (a
    smoke run never overwrites the committed cpu-profile outputs), else the checkout's
    ``figures/`` (whatever the working directory), else ``./figures``."""
    from ..base import paths

    return paths.figures_dir()


def committed_table(stem: str) -> pd.DataFrame | None:
    """A table committed under the checkout's ``figures/`` (``<stem>.csv``), e.g. a benchmark's
    (``figures/bench_*.csv``), whatever the working directory and ``$FEDPL_FIGURES``; None
    when the package does not run from a checkout that has it.  Notebooks quote benchmark
    results through this, so their sentences come from the committed numbers."""
    from pathlib import Path

    p = Path(__file__).resolve().parents[2] / "figures" / f"{stem}.csv"
    return pd.read_csv(p) if p.is_file() else None


def _is_p(column) -> bool:
    name = str(column)
    return name == "p" or name.startswith(("p (", "p-value"))


#: Count columns of result tables: shown as whole numbers (a missing value makes pandas hold
#: them as floats, "3.0").
COUNT_COLUMNS = (
    "pairs",
    "n",
    "classes",
    "seeds",
    "runs",
    "clients",
    "round",
    "rounds",
    "best round",
    "last round",
    "start",
    "end",
)
_KEY = __import__("re").compile(r"[A-Za-z0-9*+]+(?:[_/][A-Za-z0-9*+]+)+")


def reader_text(value):
    """A header or cell as a reader sees it: a method registry key by its display name, a
    metric or record key by its name, the frame column ``label`` as "method" (also inside a
    header: ``"auroc_mean vs FedAvg"`` -> "mean AUROC vs FedAvg"); anything else as it is.

    >>> reader_text("fedavg_star"), reader_text("auroc_mean vs FedAvg"), reader_text("pl/coverage"), reader_text(3)
    ('FedAvg*', 'mean AUROC vs FedAvg', 'pseudo-labels: share of missing entries tagged', 3)
    """
    if not isinstance(value, str):
        return value
    from ..nn.metrics import METRIC_NAMES, metric_name
    from .names import display_name, method_classes

    def one(word: str) -> str:
        if word in method_classes():
            return display_name(word)
        if word in METRIC_NAMES or word.startswith(("pl/", "log/")):
            return metric_name(word)
        return word

    if value == "label":
        return "method"
    if value in method_classes() or value in METRIC_NAMES:
        return one(value)
    return _KEY.sub(lambda m: one(m.group(0)), value)


def for_reading(df: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The table as the Markdown and LaTeX files show it: p-values to two significant
    digits, three near 0.05 (:func:`p_digits`; the CSV keeps every digit), count columns
    (:data:`COUNT_COLUMNS`) as whole numbers, registry keys in headers, index and cells by their
    names (:func:`reader_text`), and no default 0..n-1 index column.  Returns the table and whether to write its index.

    >>> t, index = for_reading(pd.DataFrame({"label": ["fedavg_pl"], "diff": [1.5], "pairs": [3.0],
    ...                                      "p": [0.049437148533]}))
    >>> t.to_dict("records"), index
    ([{'method': 'FedAvg-PL', 'diff': 1.5, 'pairs': 3, 'p': '0.0494'}], False)
    """
    shown = df.copy()
    for c in shown.columns:
        if _is_p(c):
            shown[c] = [None if v is None or v != v else p_digits(float(v)) for v in shown[c]]
        elif str(c) in COUNT_COLUMNS and pd.api.types.is_float_dtype(shown[c]):
            vals = shown[c].dropna()
            if len(vals) and np.all(np.asarray(vals) == np.round(np.asarray(vals))):
                shown[c] = shown[c].astype("Int64")
        elif pd.api.types.is_object_dtype(shown[c]) or pd.api.types.is_string_dtype(shown[c]):
            shown[c] = [reader_text(v) for v in shown[c]]
    shown = shown.rename(
        columns=lambda c: (
            reader_text(c) if isinstance(c, str) else tuple(reader_text(x) for x in c) if isinstance(c, tuple) else c
        )
    )
    shown.columns.names = [reader_text(n) for n in shown.columns.names]
    if not (isinstance(df.index, pd.RangeIndex) and df.index.name is None):
        shown.index = shown.index.map(
            lambda v: tuple(reader_text(x) for x in v) if isinstance(v, tuple) else reader_text(v)
        )
        shown.index.names = [reader_text(n) for n in df.index.names]
    default_index = isinstance(df.index, pd.RangeIndex) and df.index.name is None
    return shown, not default_index


#: What a table shows where it has no value, and what that means unless the table says otherwise.
DASH = "–"
DASH_NOTE = "–: no value here (not annotated, no test, nothing to measure, or the reference itself)."


class ReadableTable:
    """A table as a learner reads it in a notebook (:func:`readable`): every cell whole (no
    "..."), p-values to two significant digits (three near 0.05), counts as whole numbers,
    registry keys by their names (:func:`for_reading`), numbers to 3 decimals, and a dash, with
    its meaning under the table, where there is no value.  Jupyter shows its HTML, a terminal its
    text."""

    def __init__(self, df: pd.DataFrame, note: str | None = None, precision: int = 3):
        shown, self.index = for_reading(df)
        for c in shown.columns:  # None and <NA> as NaN, which the writers show as the dash
            if not pd.api.types.is_float_dtype(shown[c]):
                shown[c] = shown[c].astype(object).where(shown[c].notna(), np.nan)
        self.missing = bool(shown.isna().to_numpy().any())
        self.table = shown
        note = note or df.attrs.get("note")  # a table may say what its own dashes mean
        self.note = (note or DASH_NOTE) if self.missing else None
        self.precision = precision

    def _options(self):
        return pd.option_context(
            "display.max_colwidth", None, "display.precision", self.precision, "display.width", 10_000
        )

    def _repr_html_(self) -> str:
        from html import escape

        with self._options():
            html = self.table.to_html(index=self.index, na_rep=DASH)
        return html + (f"<p><small>{escape(self.note)}</small></p>" if self.note else "")

    def __repr__(self) -> str:
        with self._options():
            text = self.table.to_string(index=self.index, na_rep=DASH)
        return text + (f"\n{self.note}" if self.note else "")


def readable(df: pd.DataFrame, note: str | None = None, precision: int = 3) -> ReadableTable:
    """``df`` as a learner reads it (:class:`ReadableTable`); ``note`` says what its dashes
    mean (default: the table's ``attrs["note"]``, else :data:`DASH_NOTE`).

    >>> print(readable(pd.DataFrame({"claim": ["A above B"], "pairs": [3.0], "p": [0.0496], "sd": [float("nan")]})))
        claim pairs      p  sd
    A above B     3 0.0496   –
    –: no value here (not annotated, no test, nothing to measure, or the reference itself).
    """
    return ReadableTable(df, note, precision)


def output_root(folder: str | Path | None = None) -> Path:
    """The folder figures and tables are written into: ``folder`` as the user named it (a
    link there is the user's own choice, so it is resolved), default :func:`figures_dir`.
    Below it the writer follows no link (:func:`fedpl_core.base.fileio.check_inside`)."""
    return Path(figures_dir() if folder is None else folder).expanduser().resolve()


def output_path(name: str | Path, folder: str | Path | None = None, what: str = "table") -> Path:
    """Where a figure or table named ``name`` goes: ``folder / name`` (default folder
    :func:`figures_dir`).  A name must stay inside its folder: an empty name, an absolute one,
    one with a ``..`` part, or one whose sub-folders lead out of the folder through a link is
    refused with a ``ValueError`` of one line, before anything is written.

    >>> output_path("01_table2.csv", "/tmp/f").as_posix()
    '/tmp/f/01_table2.csv'
    >>> output_path("../x.png", "/tmp/f", what="figure")
    Traceback (most recent call last):
    ...
    ValueError: figure name '../x.png' leaves its folder: give a name inside it (no '..', not absolute)
    """
    text = str(name)
    parts = Path(text).parts
    if not text.strip() or Path(text).is_absolute() or ".." in parts or Path(text).name in ("", ".", ".."):
        raise ValueError(f"{what} name {text!r} leaves its folder: give a name inside it (no '..', not absolute)")
    base = output_root(folder)
    target = base / text
    if len(parts) > 1:  # a sub-folder: it must not lead out of the folder through a link
        root, parent = base.resolve(), target.parent.resolve()
        if parent != root and root not in parent.parents:
            raise ValueError(f"{what} name {text!r} leads out of its folder {base} through a link")
    return target


def save_table(df: pd.DataFrame, stem: str, folder: str | Path | None = None) -> dict[str, str]:
    """Write ``<stem>.csv`` (every digit, the frame as it is), ``.md`` and ``.tex`` (for a
    reader: :func:`for_reading`) into ``folder`` (default :func:`figures_dir`), each through
    :func:`fedpl_core.base.fileio.atomic_write` (a link planted at a name is replaced, never written
    through, nor through a link in a sub-folder); returns the paths.  A stem that would leave
    the folder is refused before anything is written (:func:`output_path`)."""
    from ..base.fileio import atomic_write_text

    output_path(str(stem), folder)  # the stem itself: not empty, not absolute, no '..'
    paths = {ext: output_path(f"{stem}.{ext}", folder) for ext in ("csv", "md", "tex")}
    shown, index = for_reading(df)
    texts = {"csv": df.to_csv(), "md": to_markdown(shown, index=index) + "\n", "tex": to_latex(shown, index=index)}
    for ext, path in paths.items():
        atomic_write_text(path, texts[ext], root=output_root(folder))
    return {ext: str(path) for ext, path in paths.items()}
