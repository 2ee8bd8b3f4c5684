"""Headline claims: each paper's claims tested on one run, and the findings page of the site.

A study lists its paper's headline claims as :class:`Claim` objects (``study.HEADLINE``); its
notebook tests them on its own runs with :func:`headline_table` and saves the table as
``figures/<notebook>_headline.csv``.  :func:`findings_page` joins every such table of the
committed run into one page: each claim with the measured difference, its 95 % interval and
p-value, and one of three verdicts (:func:`fedpl_core.report.tables.verdict`): *reproduced*
(p < 0.05 in the paper's direction), *opposite* (p < 0.05 against it) or *not
distinguishable* (the interval spans 0); with the measured mechanism and where it is shown.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from .tables import paired_difference, verdict

#: The columns of a headline table, in order.
COLUMNS = ("paper", "claim", "setting", "a", "b", "metric", "diff", "ci_low", "ci_high", "p", "pairs", "verdict",
           "mechanism", "evidence")
_PAPER_ORDER = ("FedPSL", "FedLSM", "Surgical Aggregation", "FedMLP", "Introduction")


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper: "``a`` is above ``b`` in ``metric``" (``direction`` = -1:
    below), tested on the runs of ``frame`` (a key of the frames given to
    :func:`headline_table`), restricted to ``setting`` when given.  ``mechanism``: what was
    measured to explain the result, in a sentence; ``evidence``: the notebook section or
    benchmark that shows it."""

    paper: str
    claim: str
    a: str
    b: str
    frame: str
    metric: str = "auroc_mean"
    direction: int = 1
    setting: str | None = None
    mechanism: str = ""
    evidence: str = ""


def headline_table(claims: Sequence[Claim], frames: Mapping[str, pd.DataFrame], which: str = "final") -> pd.DataFrame:
    """Test each claim on its runs (paired over seeds, :func:`paired_difference`, in points)
    and return one row per claim with :data:`COLUMNS`; a claim whose runs are not in
    ``frames`` (a profile that leaves them out) is left out."""
    rows = []
    for c in claims:
        df = frames.get(c.frame)
        if df is None:
            continue
        if c.setting is not None and "setting" in df:
            df = df[df["setting"] == c.setting]
        have = set(df["label"]) if "label" in df else set()
        if not {c.a, c.b} <= have:
            continue
        d = paired_difference(df, c.a, c.b, c.metric, which=which)
        ci = d.get("ci") or (None, None)
        rows.append({"paper": c.paper, "claim": c.claim, "setting": c.setting or "", "a": c.a, "b": c.b,
                     "metric": c.metric, "diff": round(d["diff"], 2), "ci_low": ci[0], "ci_high": ci[1],
                     "p": d["p"], "pairs": d["n"], "verdict": verdict(d, c.direction),
                     "mechanism": c.mechanism, "evidence": c.evidence})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _fmt_row(r: pd.Series) -> str:
    ci = (f"; 95 % CI {r['ci_low']:.1f} to {r['ci_high']:.1f}" if pd.notna(r["ci_low"]) else "")
    p = f", p = {r['p']:.2g}" if pd.notna(r["p"]) else ", no test"
    return f"{r['a']} − {r['b']}: {r['diff']:+.1f} points{ci}{p} ({int(r['pairs'])} seeds)"


def _cell(text) -> str:
    return "" if pd.isna(text) else str(text).replace("|", "\\|").replace("\n", " ")


def read_headlines(figures: str | Path | None) -> pd.DataFrame:
    """Every ``*_headline.csv`` of ``figures``, joined."""
    if figures is None or not Path(figures).is_dir():
        return pd.DataFrame(columns=list(COLUMNS))
    frames = [pd.read_csv(p) for p in sorted(Path(figures).glob("*_headline.csv")) if not p.is_symlink()]
    frames = [f for f in frames if set(COLUMNS) <= set(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))


def findings_page(figures: str | Path | None) -> str:
    """The Markdown of the findings page, from the headline tables in ``figures``."""
    df = read_headlines(figures)
    lines = ["# Findings", "",
             "Every headline claim of the four papers, tested on the committed run (built-in data, 3 seeds, "
             "the cpu profile; each notebook tests its paper's claims on its own runs). A difference is in "
             "points of the metric (AUROC x 100 unless named), paired over seeds. The verdict: "
             "**reproduced** (p < 0.05 in the paper's direction), **opposite** (p < 0.05 against it) or "
             "**not distinguishable** (the 95 % interval of the difference spans 0). With three seeds the "
             "tests have little power: *not distinguishable* is not evidence of no effect.", ""]
    if df.empty:
        return "\n".join(lines + ["No headline table was found: run the notebooks (`make reproduce`).", ""])
    counts = df["verdict"].value_counts()
    lines += ["Of {n} claims: {r} reproduced, {o} opposite, {d} not distinguishable.".format(
        n=len(df), r=counts.get("reproduced", 0), o=counts.get("opposite", 0),
        d=counts.get("not distinguishable", 0)), ""]
    order = {p: i for i, p in enumerate(_PAPER_ORDER)}
    df = df.assign(_o=df["paper"].map(lambda p: order.get(p, len(order)))).sort_values("_o", kind="stable")
    for paper, g in df.groupby("paper", sort=False):
        lines += [f"## {paper}", "", "| claim | this run | verdict | mechanism | shown in |", "|---|---|---|---|---|"]
        for _, r in g.iterrows():
            claim = _cell(r["claim"]) + (f" ({_cell(r['setting'])})" if _cell(r["setting"]) else "")
            lines.append(f"| {claim} | {_fmt_row(r)} | **{r['verdict']}** | {_cell(r['mechanism'])} | "
                         f"{_cell(r['evidence'])} |")
        lines.append("")
    return "\n".join(lines)


__all__ = ["COLUMNS", "Claim", "headline_table", "read_headlines", "findings_page"]
