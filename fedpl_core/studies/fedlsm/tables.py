"""Notebook 02's tables, from the runner's tidy frames: Tables 1-3 (:func:`table1`,
:func:`table2`, :func:`ablation_table`), ours beside the paper's numbers (:func:`with_paper`)
and its ranking step by step (:func:`ordering`), model selection side by side, what TDMA adds,
the released code's mode, the pseudo-label diagnostics and the variants tried, and the label
sets of a partition."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...report.tables import fmt_mean_std, p_text
from .paper import CLAIM_METRICS, PAPER_TABLE1, PAPER_TABLE2, RANKING, RANKING_METRICS, TABLE2_METRICS, TASKS
from .runs import TDMA_GRID, TRIED_VARIANTS


def tdma_effect(df: pd.DataFrame, metric: str = "auroc_mean") -> pd.DataFrame:
    """Per reading of "FedAvg": FedAvg, FedAvg* (x 100, mean over seeds) and the paired
    difference FedAvg* - FedAvg with its 95 % CI and p-value (:func:`fedpl_core.report.tables.paired_difference`)."""
    from ...report.tables import difference_columns, paired_difference

    fin = df[df["which"] == "final"] if "which" in df else df
    mean = fin.groupby("label")[metric].mean() * 100
    rows = []
    for reading in dict.fromkeys(r for *_, r in TDMA_GRID):
        a, b = [lab for lab, *_, r in TDMA_GRID if r == reading]
        d = paired_difference(df, b, a, metric)
        rows.append(
            {
                "reading of FedAvg": reading,
                "FedAvg": round(mean[a], 1),
                "FedAvg*": round(mean[b], 1),
                **difference_columns(d, diff="TDMA gain (points)", sd=False),
            }
        )
    return pd.DataFrame(rows).set_index("reading of FedAvg")


def table1(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Table 1: per-class AUROC (x 100, mean ± std over seeds) and the mean, per method."""
    from ...report.tables import per_class_mean_std

    return per_class_mean_std(df, which=which, decimals=decimals)


def table2(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Table 2: AUC, accuracy, macro F1, precision, recall (x 100, mean ± std over seeds)."""
    d = df[df["which"] == which]
    g = d.groupby("label", sort=False)
    out = pd.DataFrame(index=pd.Index(list(dict.fromkeys(d["label"])), name="method"))
    for name, col in TABLE2_METRICS.items():
        m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
        out[name] = [fmt_mean_std(m[i], s[i], decimals) for i in out.index]
    return out


def best_and_last(df: pd.DataFrame, metric: str = "auroc_mean", decimals: int = 1) -> pd.DataFrame:
    """Model selection side by side: ``metric`` of the best-validation round and of the last."""
    out = {}
    for which, name in (("best", "best val. round"), ("final", "last round")):
        g = df[df["which"] == which].groupby("label", sort=False)[metric]
        m, s = g.mean() * 100, g.std(ddof=1) * 100
        out[name] = {k: fmt_mean_std(m[k], s[k], decimals) for k in m.index}
    return pd.DataFrame(out)


def paper_table(task: str) -> dict[str, dict[str, float]]:
    """The paper's numbers for ``task``: Table 1's average AUC or Table 2's five metrics."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
    return PAPER_TABLE1 if task == "Task 1" else PAPER_TABLE2


def with_paper(
    df: pd.DataFrame, task: str, which: str = "final", decimals: int = 1, not_run: bool = True
) -> pd.DataFrame:
    """Our numbers (x 100, mean ± std over seeds) beside the paper's (x 100), a column pair
    ``"<metric> (ours)"``, ``"<metric> (paper)"`` per metric (Task 1: the mean AUROC and
    Table 1's average AUC; Task 2: Table 2's five metrics).  Rows: our methods in ``df``'s
    order, then (``not_run``) the paper's methods not run here (ours ``"not run"``)."""
    paper = paper_table(task)
    metrics = {"AUC": "auroc_mean"} if task == "Task 1" else TABLE2_METRICS
    d = df[df["which"] == which]
    g = d.groupby("label", sort=False)
    ours = list(dict.fromkeys(d["label"]))
    rows = ours + ([lab for lab in paper if lab not in ours] if not_run else [])
    out = pd.DataFrame(index=pd.Index(rows, name="method"))
    for name, col in metrics.items():
        m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
        out[f"{name} (ours)"] = [fmt_mean_std(m[i], s[i], decimals) if i in m.index else "not run" for i in rows]
        out[f"{name} (paper)"] = [f"{100 * paper[i][name]:.{decimals}f}" if i in paper else "" for i in rows]
    return out


def ordering(df: pd.DataFrame, task: str, ranking: Sequence[str] = RANKING, which: str = "final") -> pd.DataFrame:
    """The paper's ranking (``ranking``, best first: FedLSM > FedAvg* > FedAvg-PL) step by step,
    on the metrics of :data:`RANKING_METRICS`: for each metric and each neighbouring pair
    ``A - B``, the difference in points (x 100) paired on the seed, its sd, the number of
    pairs, the two-sided paired t-test's p (:func:`fedpl_core.report.tables.paired_difference`;
    None with fewer than two pairs), its 95 % confidence interval, Holm's adjustment of p over
    the whole table (one family of claims: :func:`fedpl_core.report.tables.holm`) and the paper's
    difference.  A pair with a method not in ``df`` is left out."""
    from ...report.tables import holm, paired_difference

    paper = paper_table(task)
    have = set(df["label"])
    rows = []
    for name, col in RANKING_METRICS[task].items():
        for a, b in zip(ranking[:-1], ranking[1:]):
            if not {a, b} <= have:
                continue
            d = paired_difference(df, a, b, col, which=which)
            pd_ = 100 * (paper[a][name] - paper[b][name]) if a in paper and b in paper else float("nan")
            ci = "" if d["ci"] is None else f"{d['ci'][0]:.1f} to {d['ci'][1]:.1f}"
            rows.append(
                {
                    "metric": name,
                    "A": a,
                    "B": b,
                    "A - B (points)": round(d["diff"], 2),
                    "sd": round(d["sd"], 2),
                    "95 % CI": ci,
                    "pairs": d["n"],
                    "p": d["p"],
                    "paper A - B": round(pd_, 1),
                }
            )
    cols = ["metric", "A", "B", "A - B (points)", "sd", "95 % CI", "pairs", "p", "p (Holm)", "paper A - B"]
    out = pd.DataFrame(rows, columns=[c for c in cols if c != "p (Holm)"])
    out.insert(out.columns.get_loc("p") + 1, "p (Holm)", holm(list(out["p"])))
    return out


def _canon(sets) -> list[list[str]]:
    return [sorted(c.replace("Pleural_", "") for c in s) for s in sets]  # NIH's spelling vs the paper's


def same_as_paper(part, task: str) -> bool:
    """Whether a partition's label sets are the paper's Table 5 (Task 1) or 6 (Task 2),
    NIH's ``Pleural_Thickening`` read as the paper's ``Thickening``."""
    from ... import partitions as P

    paper = {"Task 1": P.FEDLSM_TABLE_5, "Task 2": P.FEDLSM_TABLE_6}[task]
    return _canon(P.assigned_classes(part)) == _canon(P.table_assignment(paper))


def label_sets_table(part) -> pd.DataFrame:
    """The classes each client (A, B, ...) identifies, one row a client."""
    from ... import partitions as P

    return pd.DataFrame(
        {chr(65 + k): ", ".join(c) for k, c in enumerate(P.assigned_classes(part))}, index=["identified classes"]
    ).T


def code_mode_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The released code's behaviour beside paper mode: per task and metric, FedLSM (code)
    minus FedLSM and minus FedAvg*, and FedLSM minus FedAvg*, paired on the seed, with the
    sentence of each."""
    from ...report.tables import describe_difference, difference_columns, paired_difference

    rows = []
    for task, rc in results.items():
        for metric in CLAIM_METRICS[task]:
            for a, b in (("FedLSM (code)", "FedLSM"), ("FedLSM (code)", "FedAvg*"), ("FedLSM", "FedAvg*")):
                d = paired_difference(rc, a, b, metric)
                rows.append(
                    {
                        "task": task,
                        "metric": metric,
                        "comparison": f"{a} - {b}",
                        **difference_columns(d, sd=False),
                        "sentence": describe_difference(d),
                    }
                )
    return pd.DataFrame(rows)


def diagnostic_curves(res: pd.DataFrame, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """The per-round pseudo-label scores (``pl/*``) and logged diagnostics (``log/*``) of the
    runs of ``res`` (``run_many(..., histories=True)``) as long rows (``label``, ``seed``,
    ``round``, ``metric``, ``value``[, ``method``]), for ``labels`` only when given."""
    from ...report.tables import curve_frame

    keys = sorted({k for h in res.attrs["histories"].values() for r in h for k in r if k.startswith(("pl/", "log/"))})
    frames = [curve_frame(res, metric=k).rename(columns={k: "value"}).assign(metric=k) for k in keys]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["setting", "label", "seed", "round", "value", "metric"])
    out = pd.concat(frames, ignore_index=True)
    return out if labels is None else out[out["label"].isin(list(labels))]


def diagnostics(res: pd.DataFrame) -> pd.DataFrame:
    """The pseudo-label (``pl/*``) and uncertainty-split (``log/*``) records of every run,
    round by round, as long rows (label, seed, round, metric, value); empty without any."""
    return diagnostic_curves(res)


def diagnostics_table(cv: pd.DataFrame) -> pd.DataFrame:
    """:func:`diagnostics` as a table: rows (metric, method), columns the rounds, mean over seeds."""
    return cv.groupby(["metric", "label", "round"])["value"].mean().unstack("round").round(3)


def tried_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each variant of :data:`TRIED_VARIANTS` (``results[task]``: its runs with FedAvg,
    FedAvg* and FedLSM): its pseudo-labelled share and the precision of its positive
    pseudo-labels at the last round (mean over seeds), and its paired differences from FedAvg
    and FedAvg* (points, with p)."""
    from ...nn.metrics import metric_name
    from ...report.tables import curve_frame, paired_difference

    rows = []
    for task, rv in results.items():
        for lab, _ in TRIED_VARIANTS[task]:
            last = {}
            for k in ("pl/coverage", "pl/pos_precision"):
                cv = curve_frame(rv, metric=k)
                last[k] = cv[cv["label"] == lab].groupby("seed")[k].last().mean()
            row = {
                "task": task,
                "variant": lab,
                "pseudo-labelled share (last round)": round(float(last["pl/coverage"]), 3),
                "positive precision": round(float(last["pl/pos_precision"]), 3),
            }
            for metric in CLAIM_METRICS[task]:
                for ref in ("FedAvg-PL", "FedAvg*"):
                    d = paired_difference(rv, lab, ref, metric)
                    row[f"{metric_name(metric)} vs {ref}"] = (
                        f"{d['diff']:+.1f} ({p_text(d['p'])})" if d["p"] is not None else f"{d['diff']:+.1f}"
                    )
            rows.append(row)
    return pd.DataFrame(rows).set_index(["task", "variant"])


def ablation_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3: per task, metric and ablation row, mean ± SD over seeds (points) and each
    variant's paired difference from the full FedLSM."""
    from ...nn.metrics import metric_name
    from ...report.tables import difference_columns, paired_difference

    rows = []
    for task, ra in results.items():
        for lab in dict.fromkeys(ra["label"]):
            for metric in CLAIM_METRICS[task]:
                d = ra[(ra["label"] == lab) & (ra["which"] == "final")][metric] * 100
                row = {
                    "task": task,
                    "metric": metric_name(metric),
                    "method": lab,
                    "mean ± SD": f"{d.mean():.1f} ± {d.std(ddof=1):.1f}",
                }
                if lab != "FedLSM":
                    row.update(
                        difference_columns(paired_difference(ra, lab, "FedLSM", metric), diff="vs FedLSM", sd=False)
                    )
                rows.append(row)
    return pd.DataFrame(rows)


def last_coverage(res: pd.DataFrame, label: str = "FedLSM", metric: str = "pl/coverage") -> float | None:
    """``label``'s pseudo-labelled share of the unknown entries at its last evaluated round,
    mean over seeds (None without ``pl/coverage`` records).  ``metric="pl/pos_precision"``:
    the share of its positive pseudo-labels that are right, each seed at the last round that
    had any (a round without one records none; None when no round of any seed had one)."""
    from ...report.tables import curve_frame

    cv = curve_frame(res, metric=metric)
    cv = cv[cv["label"] == label] if len(cv) else cv
    return float(cv.sort_values("round").groupby("seed")[metric].last().mean()) if len(cv) else None
