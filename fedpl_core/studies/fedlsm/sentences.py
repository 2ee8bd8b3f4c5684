"""The sentences notebook 02 prints, computed from its numbers: the ranking's verdicts
(:func:`describe_ordering`), TDMA's gain under each reading of FedAvg and with each number of
local iterations, the released code's mode, the variants tried, the ablation, the HAM10000
copy and its TDMA benchmark, and the closing verdicts (:func:`what_this_run_shows`)."""

from __future__ import annotations

import pandas as pd

from ...report.tables import p_text
from .paper import CLAIM_METRICS
from .runs import TDMA_GRID


def _interval(text) -> tuple[float, float] | None:
    """``"-3.1 to -0.9"`` as ``(-3.1, -0.9)``; None for no interval."""
    if not isinstance(text, str) or " to " not in text:
        return None
    lo, hi = text.split(" to ")
    return float(lo), float(hi)


def describe_ordering(steps: pd.DataFrame, alpha: float = 0.05) -> list[str]:
    """One sentence per metric of :func:`ordering`'s table, in the verdicts of
    :func:`~fedpl_core.report.tables.verdict`: each step "A above B" is *reproduced* (p <
    ``alpha`` in the paper's direction), *opposite* (p < ``alpha`` against it), *absent* (its 95 %
    interval inside +- half the paper's step) or *inconclusive*; the whole ranking is reproduced
    when every step is, opposite when a step is, else inconclusive.  Never "holds" or "fails"
    for a gap the runs cannot tell from 0."""
    from ...report.tables import verdict

    out = []
    for metric, g in steps.groupby("metric", sort=False):
        chain = " > ".join([g["A"].iloc[0]] + list(g["B"]))
        parts, verdicts = [], []
        for _, r in g.iterrows():
            p = None if r["p"] is None or r["p"] != r["p"] else float(r["p"])
            ci = _interval(r["95 % CI"])
            paper = abs(float(r["paper A - B"])) / 2 if r["paper A - B"] == r["paper A - B"] else None
            v = verdict({"diff": r["A - B (points)"], "p": p, "ci": ci}, alpha=alpha, margin=paper or None)
            verdicts.append(v)
            ci = f"95 % CI {r['95 % CI']}; " if isinstance(r["95 % CI"], str) and r["95 % CI"] else ""
            test = "no test" if p is None else p_text(p)
            parts.append(
                f"{r['A']} − {r['B']} = {r['A - B (points)']:+.1f} points ({ci}{test}; paper "
                f"{r['paper A - B']:+.1f}): {v}"
            )
        overall = (
            "reproduced"
            if all(v == "reproduced" for v in verdicts)
            else "opposite"
            if "opposite" in verdicts
            else "inconclusive"
        )
        pairs = int(g["pairs"].min()) if len(g) else 0
        out.append(
            f"{metric}: the ranking {chain} is {overall} here; " + "; ".join(parts) + f" (paired over {pairs} seed(s))."
        )
    return out


def describe_tdma_drift(table: pd.DataFrame, paper_gain: float = 5.0, alpha: float = 0.05) -> list[str]:
    """Sentences from ``benchmarks/fedlsm_tdma_drift.py``'s table (columns ``local iterations``,
    ``reading of FedAvg``, ``TDMA gain (points)``, ``p``, ``pairs``): TDMA's paired gain per
    reading of "FedAvg" and number of local iterations a round, and where the paper's gain
    (Table 1: +5.0) shows at p < ``alpha``."""
    out = []
    hits = []
    for reading, g in table.groupby("reading of FedAvg", sort=False):
        parts = []
        for _, r in g.sort_values("local iterations").iterrows():
            p = r["p"]
            test = "no test" if p is None or p != p else p_text(p)
            parts.append(f"{r['TDMA gain (points)']:+.1f} at {int(r['local iterations'])} ({test})")
            if r["TDMA gain (points)"] > 0 and p == p and p is not None and p < alpha:
                hits.append((reading, int(r["local iterations"]), r["TDMA gain (points)"], p))
        out.append(
            f"{reading}: TDMA (FedAvg* - FedAvg) " + ", ".join(parts) + " local iterations a round "
            f"(paired over {int(g['pairs'].min())} seeds)."
        )
    if hits:
        out.append(
            f"The paper's gain (+{paper_gain:.1f}) shows, above zero at p < {alpha:g}, with "
            + "; ".join(f"{rd} at {n} local iterations ({gain:+.1f}, {p_text(p)})" for rd, n, gain, p in hits)
            + ", and in no other setting."
        )
    else:
        out.append(f"The paper's gain (+{paper_gain:.1f}) shows in no setting at p < {alpha:g}.")
    return out


def tdma_sentences(df: pd.DataFrame) -> list[str]:
    """What TDMA adds under each reading of FedAvg (:data:`TDMA_GRID`), one sentence each."""
    from ...report.tables import describe_difference, paired_difference

    out = []
    for reading in dict.fromkeys(rd for *_, rd in TDMA_GRID):
        labels = [lab for lab, *_, rd in TDMA_GRID if rd == reading]
        out.append(f"{reading}: {describe_difference(paired_difference(df, *labels[::-1]))}")
    return out


def code_mode_sentences(code_mode: pd.DataFrame) -> list[str]:
    """:func:`code_mode_table`'s sentences, each after its task and metric (by its name)."""
    from ...nn.metrics import metric_name

    return [f"{r['task']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in code_mode.iterrows()]


def tried_sentences(tried: pd.DataFrame) -> list[str]:
    """One sentence per variant of :func:`tried_table`: its pseudo-labelled share and the
    comparisons in which it is significantly above the reference."""
    out = []
    for (task, lab), r in tried.iterrows():
        wins = [
            c
            for c in tried.columns
            if " vs " in c
            and isinstance(r[c], str)
            and r[c].startswith("+")
            and "p = " in r[c]
            and float(r[c].split("p = ")[1].rstrip(")")) < 0.05
        ]
        out.append(
            f"{task}, {lab}: pseudo-labels on {r['pseudo-labelled share (last round)']:.1%} of the unknown "
            f"entries; significantly above the reference in {len(wins)} comparison(s)"
            + (f" ({', '.join(wins)})" if wins else "")
        )
    return out


def ablation_sentences(table3: pd.DataFrame) -> list[str]:
    """What removing each component does in :func:`ablation_table`, one sentence a row."""
    from ...nn.metrics import metric_name

    out = []
    for _, r in table3.iterrows():
        if r["method"] != "FedLSM":
            change = "lowers" if r["vs FedLSM"] < 0 else "raises"
            sig = "n/a" if r["p"] is None or r["p"] != r["p"] else p_text(r["p"])
            out.append(
                f"{r['task']}, {metric_name(r['metric'])}: removing {r['method'][4:]} {change} the score by "
                f"{abs(r['vs FedLSM']):.1f} points ({sig})"
            )
    return out


def image_files_note(ds) -> str:
    """What the first image file's size says about a HAM10000 copy (the official JPEGs are
    600 x 450)."""
    from PIL import Image

    paths = ds.extra.get("paths")
    if paths is None or not len(paths):
        return "image files of unknown size"
    with Image.open(paths[0]) as im:
        w, h = im.size
    if (w, h) == (600, 450):
        return "600 x 450 JPEGs (the official release's size)"
    if (w, h) == (200, 150):
        return (
            "200 x 150 JPEGs downscaled from the official 600 x 450 (the size of the public GitHub snapshot "
            "mmalek06/bounding-box-detection-ham1000 this project checked against)"
        )
    return f"{w} x {h} images"


def ham_tdma_sentences(ham: pd.DataFrame) -> list[str]:
    """The committed HAM10000 TDMA benchmark (``figures/bench_fedlsm_ham_tdma.csv``) as
    sentences: TDMA's gain with each client loss (with its verdict), and what accuracy and F1
    score against the classifier that always answers the most frequent class.  The FedAvg
    column is the paper's FedAvg (``FedAvg-PL``; ``FedAvg`` in tables written before the
    display names)."""
    from ...report.tables import verdict

    avg = "FedAvg-PL" if "FedAvg-PL" in ham.columns else "FedAvg"
    trivial = ham["client loss"].str.startswith("always")
    lines = []
    for loss, r in ham[~trivial & (ham["metric"] == "AUC")].set_index("client loss").iterrows():
        p = None if r["p"] != r["p"] else r["p"]
        lines.append(
            f"{loss}: FedAvg* − {avg} = {r['TDMA gain (points)']:+.1f} AUC points "
            f"({'no test' if p is None else p_text(p)}; paper +2.2): "
            f"{verdict({'diff': r['TDMA gain (points)'], 'p': p})}"
        )
    for metric in ("Accuracy", "F1"):
        runs = ham[~trivial & (ham["metric"] == metric)][[avg, "FedAvg*"]].to_numpy()
        base_ = ham[trivial & (ham["metric"] == metric)]
        lines.append(
            f"{metric}: the trained runs score {runs.min():.1f} to {runs.max():.1f}; "
            f"{base_['client loss'].iloc[0]} scores {base_[avg].iloc[0]:.1f}"
        )
    return lines


def what_this_run_shows(
    claims: pd.DataFrame,
    table3: pd.DataFrame,
    tdma: pd.DataFrame,
    coverage: dict[str, float] | None = None,
    headline: pd.DataFrame | None = None,
    precision: dict[str, float] | None = None,
) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's claim
    (FedLSM above FedAvg* in each task's first metric), whether pseudo-labelling engaged
    (``coverage``: FedLSM's pseudo-labelled share at the last round, per task; ``precision``:
    the share of its positive pseudo-labels that are right), what TDMA adds under each reading
    of FedAvg, and how many ablation rows fall significantly below FedLSM.  With ``headline``
    (the notebook's :func:`~fedpl_core.report.findings.headline_table`) a claim's verdict is that
    table's, *absent* included (its interval inside ± half the paper's gain); without it,
    :func:`~fedpl_core.report.tables.verdict` without a margin (never *absent*)."""
    from ...report.findings import headline_verdict
    from ...report.tables import verdict

    out = []
    for _, r in claims[claims["vs"] == "FedAvg*"].iterrows() if len(claims) else []:
        if r["metric"] != CLAIM_METRICS[r["task"]][0]:
            continue
        word = verdict({"diff": r["diff (points)"], "p": r["p"]})
        if headline is not None:  # Task 1's claims are Table 1's, Task 2's Table 2's
            word = headline_verdict(headline, "FedLSM", "FedAvg*", r["metric"], f"Table {r['task'][-1]}: ") or word
        out.append(
            f"{r['task']}: the paper's claim that FedLSM is above FedAvg* in "
            f"{'mean AUROC' if r['task'] == 'Task 1' else 'AUC'} "
            f"is {word} here (FedLSM {abs(r['diff (points)']):.1f} points "
            f"{'above' if r['diff (points)'] > 0 else 'below'}"
            + (f", 95 % CI {r['95 % CI']})." if r["95 % CI"] else ", one seed: no interval).")
        )
    for task, share in (coverage or {}).items():
        right = (precision or {}).get(task)
        out.append(
            f"{task}: FedLSM's teacher pseudo-labelled {100 * share:.1f} % of the unknown entries by the last "
            "round"
            + (
                ": pseudo-labelling never engaged, so FedLSM here is its strong-view training alone."
                if share == 0
                else (f"; {100 * right:.1f} % of its positive pseudo-labels were right." if right is not None else ".")
            )
        )
    if len(tdma):
        col = next((c for c in tdma.columns if "diff" in c or "gain" in c), None)
        if col is not None:
            out.append(
                "TDMA's gain over FedAvg: "
                + "; ".join(f"{reading} {r[col]:+.1f} points" for reading, r in tdma.iterrows())
                + "."
            )
    if len(table3):
        below = table3[
            (table3["method"] != "FedLSM")
            & (table3["vs FedLSM"] < 0)
            & table3["p"].map(lambda p: p is not None and p == p and p < 0.05)
        ]
        n = int((table3["method"] != "FedLSM").sum())
        out.append(f"Removing a component lowers the score significantly in {len(below)} of the ablation's {n} rows.")
    return out
