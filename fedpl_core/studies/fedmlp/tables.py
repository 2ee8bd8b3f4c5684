"""Notebook 04's tables, from the runner's tidy frames: Tables 1-3 (:func:`results_table`,
:func:`ablation_table`, step by step: :func:`ablation_steps`), the hot and cool classes
(:func:`hot_cool`, :func:`hot_cool_gap`), the data, the tags' quality round by round
(:func:`tag_curves`, :func:`tag_quality`) and the FedMLP variants (:func:`variants_table`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...report.tables import fmt_mean_std, p_text
from ...runs.experiment_config import ExperimentConfig
from .paper import METRICS
from .profile import Settings
from .runs import variant_methods


def results_table(df: pd.DataFrame, which: str = "final", decimals: int = 1) -> pd.DataFrame:
    """Tables 1 / 2: rows = methods, columns = (missing level, metric), ``mean ± std`` x 100."""
    d = df[df["which"] == which]
    out = {}
    for setting in dict.fromkeys(d["setting"]):
        g = d[d["setting"] == setting].groupby("label", sort=False)
        for name, col in METRICS.items():
            m, s = g[col].mean() * 100, g[col].std(ddof=1) * 100
            out[(setting, name)] = {k: fmt_mean_std(m[k], s[k], decimals) for k in m.index}
    return pd.DataFrame(out)


def hot_cool(df: pd.DataFrame, cfg: ExperimentConfig, setting: str, which: str = "final") -> pd.DataFrame:
    """Per class: how many clients label it (hot = many, cool = few) and each method's
    mean AUROC x 100 over the seeds, for one ``setting`` of ``df``."""
    from ...runs.build import build_partition, load_data

    over = {"m": int(setting.split("=")[1])}
    c = cfg.replace(partition_kwargs={**cfg.partition_kwargs, "missing": over["m"]})
    part = build_partition(c, load_data(c).train)
    counts = pd.Series(
        [sum(bool(cl.class_mask[j]) for cl in part.clients) for j in range(len(part.class_names))],
        index=part.class_names,
        name="clients labelling it",
    )
    d = df[(df["which"] == which) & (df["setting"] == setting)]
    cols = {f"auroc:{n}": n for n in part.class_names if f"auroc:{n}" in d}
    per = d.groupby("label", sort=False)[list(cols)].mean().rename(columns=cols).T * 100
    return (
        pd.concat([counts, per.round(1)], axis=1)
        .sort_values("clients labelling it", ascending=False)
        .rename_axis("class")
    )


def hot_cool_gap(
    df: pd.DataFrame, cfg: ExperimentConfig, setting: str, a: str = "FedMLP", b: str = "FedAvg-PL", which: str = "final"
) -> dict[str, Any]:
    """FedMLP's claim that its missing-label tags help most on "cool" classes (labelled by
    few clients; the paper's discussion of Tables 1-2, no equation), as numbers:
    ``a`` minus ``b`` in per-class AUROC (points, paired on the seed) on the cool classes
    (labelled by fewer clients than the median class) and on the hot ones (more than the
    median), and Welch's t-test between the two sets of (class, seed) gains (indicative:
    the classes of one run are not independent).  Keys ``cool``, ``hot`` (mean gains),
    ``diff`` (cool minus hot), ``p``, ``n_cool`` / ``n_hot`` (classes) and ``cool_clients``
    / ``hot_clients`` (the range of clients labelling them); ``diff`` is None without both
    kinds, ``p`` also with fewer than two gains of a kind."""
    from scipy import stats

    hc = hot_cool(df, cfg, setting, which)
    n = hc["clients labelling it"]
    cool, hot = list(n.index[n < n.median()]), list(n.index[n > n.median()])
    d = df[(df["which"] == which) & (df["setting"] == setting)].set_index("seed")
    gains = {c: (d[d["label"] == a][f"auroc:{c}"] - d[d["label"] == b][f"auroc:{c}"]).dropna() * 100 for c in n.index}
    gc = pd.concat([gains[c] for c in cool]) if cool else pd.Series(dtype=float)
    gh = pd.concat([gains[c] for c in hot]) if hot else pd.Series(dtype=float)
    both = len(gc) > 0 and len(gh) > 0
    return {
        "cool": float(gc.mean()) if len(gc) else None,
        "hot": float(gh.mean()) if len(gh) else None,
        "diff": float(gc.mean() - gh.mean()) if both else None,
        "p": float(stats.ttest_ind(gc, gh, equal_var=False).pvalue) if len(gc) > 1 and len(gh) > 1 else None,
        "n_cool": len(cool),
        "n_hot": len(hot),
        "cool_clients": (int(n[cool].min()), int(n[cool].max())) if cool else None,
        "hot_clients": (int(n[hot].min()), int(n[hot].max())) if hot else None,
        "table": hc,
    }


#: The pseudo-label (tag) scores notebook 04 follows round by round.
TAG_KEYS = ("pl/coverage", "pl/accuracy", "pl/pos_precision", "pl/pos_recall")


def tag_curves(results: dict[str, pd.DataFrame], st: Settings, keys: Sequence[str] = TAG_KEYS) -> pd.DataFrame:
    """The tags' scores per round at each table's highest missing level (``results``:
    ``{table: run_many frame with histories}``), as long rows (``label``, ``seed``,
    ``round``, ``metric`` = ``"<table> (m=<m>): <key>"``, ``value``[, ``method``])."""
    from ...report.tables import curve_frame

    frames = []
    for t, res in results.items():
        top = f"m={st.missing[t][-1]}"
        for k in keys:
            cv = curve_frame(res, metric=k)
            cv = cv[cv["setting"] == top]
            frames.append(cv.rename(columns={k: "value"}).assign(metric=f"{t} ({top}): {k}"))
    frames = [f for f in frames if len(f)]
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["setting", "label", "seed", "round", "value", "metric"])
    )


def data_summary(base: dict[str, ExperimentConfig]) -> pd.DataFrame:
    """Per table: training and test images and the classes of its data (columns: tables)."""
    from ...runs.build import load_data

    out = {}
    for t, cfg in base.items():
        d = load_data(cfg)
        out[t] = {
            "training images": len(d.train),
            "test images": len(d.test),
            "classes": ", ".join(d.train.class_names),
        }
    return pd.DataFrame(out)


def variants_table(results: dict[str, pd.DataFrame], st: Settings) -> pd.DataFrame:
    """Per table (its highest missing level, ``results[table]`` the runs of FedAvg, FedAvg-PL,
    FedMLP and :func:`variant_methods`): each FedMLP variant's tagged share and tag accuracy
    at the last round (mean over seeds) and its paired AUC difference from FedAvg-PL and
    FedAvg (points, with p)."""
    from ...report.tables import curve_frame, paired_difference

    rows = []
    for t, rv in results.items():
        top = f"m={st.missing[t][-1]}"
        for lab in ["FedMLP"] + [v[0] for v in variant_methods(st)]:
            cov = curve_frame(rv, metric="pl/coverage").query("label == @lab")
            acc = curve_frame(rv, metric="pl/accuracy").query("label == @lab")
            row = {
                "table": t,
                "m": top,
                "variant": lab,
                "tagged share": (
                    round(float(cov.groupby("seed")["pl/coverage"].last().mean()), 3) if len(cov) else 0.0
                ),
                "tag accuracy": (
                    round(float(acc.groupby("seed")["pl/accuracy"].last().mean()), 3) if len(acc) else None
                ),
            }
            for ref in ("FedAvg-PL", "FedAvg"):
                d = paired_difference(rv, lab, ref, "auroc_mean")
                row[f"AUC vs {ref}"] = (
                    f"{d['diff']:+.1f} ({p_text(d['p'])})" if d["p"] is not None else f"{d['diff']:+.1f}"
                )
            rows.append(row)
    return pd.DataFrame(rows).set_index(["table", "m", "variant"])


def tag_quality(results: dict[str, pd.DataFrame], st: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tags' quality round by round at each table's highest missing level: the long
    curves of :func:`tag_curves` (``metric`` "<table> (m=<m>): <key>") that the figure draws,
    and the table of each method's last-round value of every :data:`TAG_KEYS` (mean over
    the seeds; rows table x method)."""
    cv = tag_curves(results, st)
    summary = []
    for (metric, lab), d in cv.groupby(["metric", "label"], sort=False):
        table, key = metric.split(" (", 1)[0], metric.split(": ", 1)[1]
        last = d.groupby("round")["value"].mean().iloc[-1]
        summary.append({"table": table, "method": lab, "metric": key, "last round": round(float(last), 3)})
    tags = pd.DataFrame(summary)
    if len(tags):
        tags = tags.pivot_table(index=["table", "method"], columns="metric", values="last round", sort=False)
    return cv, tags


def ablation_steps(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3 step by step: per table, the paired AUC change of each row of the ablation
    from the row above (points, 95 % interval, p), and Holm's p over all the steps."""
    from ...report.tables import holm, paired_difference

    rows = []
    for t, ra in results.items():
        labels = list(dict.fromkeys(ra["label"]))
        for prev, cur in zip(labels, labels[1:]):
            d = paired_difference(ra, cur, prev, "auroc_mean")
            rows.append(
                {
                    "table": t,
                    "step": f"{prev} -> {cur}",
                    "AUC change (points)": round(d["diff"], 2),
                    "95 % CI": "" if d["ci"] is None else f"{d['ci'][0]:.1f} to {d['ci'][1]:.1f}",
                    "p": None if d["p"] is None else float(f"{d['p']:.2g}"),
                }
            )
    steps = pd.DataFrame(rows).set_index(["table", "step"])
    steps["p (Holm)"] = [None if p is None else float(f"{p:.2g}") for p in holm(list(steps["p"]))]
    return steps


def ablation_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 3: :func:`results_table` of each table's ablation runs side by side (columns
    prefixed by the table)."""
    frames = [
        results_table(ra).rename(columns=lambda c, t=t: f"{t} ({c})" if isinstance(c, str) else c, level=0)
        for t, ra in results.items()
    ]
    return pd.concat(frames, axis=1)
