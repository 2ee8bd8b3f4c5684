"""The sentences notebook 01 prints, computed from its numbers: the comparisons under Table II,
the TADL diagnosis, Table IV's one-class clients, the sweeps' gains, Table V's trend and the
closing verdicts (:func:`what_this_run_shows`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...report import tables as _tables
from .profile import Settings
from .tables import sweep_trend

#: The comparisons the notebook states under Table II, in this order: (a, b) = "a minus b".
TABLE2_COMPARISONS = [
    ("FedPSL", "FedAvg (wBCE)"),
    ("FedPSL", "FedProx (wBCE)"),
    ("FedPSL w/ TDMA", "FedAvg (wBCE)"),
    ("FedPSL w/ TADL", "FedAvg (wBCE)"),
    ("IML", "FedAvg (wBCE)"),
    ("Oracle (wBCE)", "FedPSL"),
    ("FixMatch", "IML"),
    ("FedMatch+", "FedMatch"),
    ("FedSSP", "FedAvg (wBCE)"),
    ("MixUp-PME", "IML"),
]


def p_text(p: float | None) -> str:
    """A p-value as text ("no test" with a single seed: None, or NaN in a table's column)."""
    return "no test" if p is None or p != p else _tables.p_text(p)


def comparison_sentences(df: pd.DataFrame, pairs: Sequence[tuple[str, str]] = TABLE2_COMPARISONS) -> list[str]:
    """Each pair of ``pairs`` that ``df`` has, as a sentence on the last round
    (:func:`~fedpl_core.report.tables.describe_difference`) with the paper's best-round*
    difference in brackets."""
    from ...report.tables import describe_difference, paired_difference

    labels = set(df["label"])
    out = []
    for a, b in pairs:
        if not {a, b} <= labels:
            continue
        last = describe_difference(paired_difference(df, a, b, which="final"))
        best = paired_difference(df, a, b, which="best")
        out.append(
            f"{last} [best round*: {best['diff']:+.1f} points, {p_text(best['p'])}]" if best["p"] is not None else last
        )
    return out


def diagnosis_sentences(
    dfd: pd.DataFrame, variants: Sequence[tuple[str, dict]], df2: pd.DataFrame, s: Settings
) -> list[str]:
    """The TADL diagnosis: each variant against FedAvg (wBCE) (last round), then whether FedAvg (wBCE)'s best
    round* lies in the last evaluation period in every seed (its curve still rising: an
    under-fitting regime)."""
    from ...report.tables import describe_difference, paired_difference

    out = [
        describe_difference(paired_difference(dfd, label, "FedAvg (wBCE)"))
        for label, _ in variants
        if label != "FedAvg (wBCE)"
    ]
    best = df2[(df2["label"] == "FedAvg (wBCE)") & (df2["which"] == "best")]
    at_end = int((best["round"] >= s.engine.rounds - s.engine.eval_every + 1).sum())
    out.append(
        f"FedAvg (wBCE)'s best round* is within the last evaluation period in {at_end} of {len(best)} seeds "
        f"({s.engine.rounds} rounds): "
        + (
            "its curve is still rising, an under-fitting regime, where a method "
            "that regularises local training has nothing to correct."
            if at_end == len(best)
            else "its curve has flattened before the end."
        )
    )
    return out


def one_class_sentences(df4: pd.DataFrame) -> list[str]:
    """Table IV's one-class, domain-shifted clients: FedPSL and TDMA alone against FedAvg (wBCE) on
    Tuberculosis and COVID-19 (last round, AUROC points)."""
    from ...report.tables import describe_difference, paired_difference

    out = []
    for cls in ("Tuberculosis", "COVID-19"):
        for a in ("FedPSL", "FedPSL w/ TDMA"):
            if {a, "FedAvg (wBCE)"} <= set(df4["label"]):
                out.append(
                    f"{cls}: " + describe_difference(paired_difference(df4, a, "FedAvg (wBCE)", metric=f"auroc:{cls}"))
                )
    return out


def sweep_gain_sentence(gain: pd.DataFrame, x: str, what: str) -> str:
    """:func:`sweep_differences` as one sentence: ``what`` then the difference at every value
    of ``x`` (points, paired over seeds)."""
    return (
        f"{what}: "
        + "; ".join(f"{x} = {int(getattr(r, x))}: {r.diff:+.1f} ({p_text(r.p)})" for r in gain.itertuples())
        + "."
    )


def table5_sentences(df5: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """Each method's mean AUROC at the smallest and the largest E (:func:`sweep_trend`)."""
    out = []
    for label in labels:
        t = sweep_trend(df5, "E", label)
        out.append(
            f"{label}: mean AUROC {t['lo']:.3f} at E = {t['x_lo']} and {t['hi']:.3f} at E = {t['x_hi']} "
            f"({t['diff']:+.1f} points, paired over {t['n']} seeds: {p_text(t['p'])})."
        )
    return out


def what_this_run_shows(df2: pd.DataFrame, df4: pd.DataFrame) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on each of the paper's
    claims about FedPSL and its modules (above FedAvg (wBCE) in Tables II and IV, last round), and on
    the one-class clients' classes in Table IV."""
    from ...report.tables import describe_difference, paired_difference, verdict

    out = []
    for name, df in (("Table II", df2), ("Table IV", df4)):
        for a in ("FedPSL", "FedPSL w/ TDMA", "FedPSL w/ TADL"):
            if {a, "FedAvg (wBCE)"} <= set(df["label"]):
                d = paired_difference(df, a, "FedAvg (wBCE)", which="final")
                out.append(
                    f"{name}: the paper's claim that {a} is above FedAvg (wBCE) is {verdict(d)} here "
                    f"({describe_difference(d)})."
                )
    for cls in ("Tuberculosis", "COVID-19"):
        if {"FedPSL", "FedAvg (wBCE)"} <= set(df4["label"]):
            d = paired_difference(df4, "FedPSL", "FedAvg (wBCE)", metric=f"auroc:{cls}")
            out.append(
                f"Table IV, {cls} (one client labels it): FedPSL above FedAvg (wBCE) is {verdict(d)} here "
                f"({describe_difference(d)})."
            )
    return out
