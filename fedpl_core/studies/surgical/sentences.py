"""The sentences notebook 03 prints, computed from its numbers: FL + SA's lead half-way and
at the end, the ablations' end points, what FL's negatives cost, the shared and unique
classes, the unique classes round by round, and the closing verdicts
(:func:`what_this_run_shows`)."""

from __future__ import annotations

import pandas as pd

from ...report.tables import describe_difference, p_text, paired_difference, verdict
from .tables import class_difference


def round_gap_sentence(gap: pd.DataFrame, by: str = "K") -> str:
    """:func:`round_gap` as a sentence: the gap at each value half-way and at the end, and
    whether it grows with every step of ``by`` (the head-dilution prediction)."""
    from ..notebook import join

    mid = gap[gap["when"].str.startswith("middle")].set_index(by)
    last = gap[gap["when"].str.startswith("last")].set_index(by)

    def trend(g):
        steps = g["gap"].diff().dropna()
        return f"growing with every step of {by}" if (steps > 0).all() else f"**not** growing with every step of {by}"

    def listing(g):
        return join(
            f"{by} = {k}: {r.gap:+.1f} ({p_text(r.p)})"
            if r.p is not None and r.p == r.p
            else f"{by} = {k}: {r.gap:+.1f}"
            for k, r in g.iterrows()
        )

    return (
        f"FL + SA minus FL + PL half-way ({mid['when'].iloc[0]}): {listing(mid)} points, {trend(mid)}; "
        f"at the last round: {listing(last)} points, {trend(last)}."
    )


def end_point_sentences(results: dict[str, pd.DataFrame]) -> list[str]:
    """FL + SA against FL and FL + PL on the selected model, paired over every (setting,
    seed) of each ablation in ``results`` (name -> runs), one sentence an ablation."""
    return [
        f"**{name}.** "
        + "; ".join(
            describe_difference(paired_difference(res, "FL + SA", other, which="best")) for other in ("FL", "FL + PL")
        )
        + "."
        for name, res in results.items()
    ]


def noise_vs_data_sentence(trade: pd.DataFrame) -> str:
    """:func:`noise_vs_data`'s first setting (the fewest shared classes) as a sentence."""
    worst = trade.iloc[0]
    return (
        f"With {trade.index[0]} shared classes, FL trains each class on all the images with "
        f"{worst.iloc[0]:.1f} % of its negative labels wrong, while FL + SA trains it on {worst.iloc[1]:.1f} % of "
        "them. Trained centrally, labels missing at random and treated as negatives cost about as much as dropping "
        "them (`benchmarks/synthetic_learnability.py`). That is how FL can stay level with FL + SA, or ahead of "
        "it, in an IID split: the end points above show which way this run went."
    )


def shared_unique_sentences(df: pd.DataFrame) -> list[str]:
    """FL + SA against FL + PL, FL and the individually trained models on each column (unique
    and shared classes of each source), for FedAvg and FedBN+, paired over the column's
    classes (the paper's test), one sentence a (column, strategy)."""
    out = []
    for strategy in ("FedAvg", "FedBN+"):
        sa = f"FL + SA ({strategy})"
        for col in ("NIH: unique", "CheXpert: unique", "NIH: shared", "CheXpert: shared"):
            parts = [
                describe_difference(class_difference(df, col, sa, other), pairs="classes")
                for other in (f"FL + PL ({strategy})", f"FL ({strategy})", "Individual")
            ]
            out.append(f"**{col}, {strategy}**: " + "; ".join(parts) + ".")
    return out


def unique_gap_sentences(gaps: pd.DataFrame, df: pd.DataFrame) -> list[str]:
    """:func:`unique_gaps` on the unique classes as sentences: the largest lead and its round,
    the gap at the last round, the rounds where the lead is significant, the rounds the
    models are selected at (``df``: the selected models), and both methods against the
    individually trained models."""
    from ..notebook import join

    best = df[df["which"] == "best"].groupby("label")["round"].mean()
    lines = []
    for (strategy, col), g in gaps[gaps["column"].str.endswith("unique")].groupby(["strategy", "column"], sort=False):
        top = g.loc[g["gap"].idxmax()]
        last = g[g["round"] == g["round"].max()].iloc[0]
        sig = [int(r) for r in g[(g["p"] < 0.05) & (g["gap"] > 0)]["round"]]
        lines.append(
            f"**{col}, {strategy}**: largest lead {top['gap']:+.1f} at round {int(top['round'])} "
            f"({p_text(top['p'])}), {last['gap']:+.1f} at the last round {int(last['round'])} "
            f"({p_text(last['p'])}); significant (p < 0.05) "
            + (f"in rounds {join(sig)}" if sig else "in no round")
            + f"; models selected at round {best[f'FL + SA ({strategy})']:.1f} (SA) / "
            f"{best[f'FL + PL ({strategy})']:.1f} (PL) on average."
        )
    cols = ("NIH: unique", "CheXpert: unique")
    ind = {c: class_difference(df, c, "FL + SA (FedAvg)", "Individual")["diff"] for c in cols}
    pl_ind = {c: class_difference(df, c, "FL + PL (FedAvg)", "Individual")["diff"] for c in cols}
    lines.append(
        "Against the individually trained models on the unique classes (selected models, FedAvg): "
        + "; ".join(f"{c}: FL + SA {ind[c]:+.1f}, FL + PL {pl_ind[c]:+.1f} points" for c in cols)
        + ". Whatever both share there is not the head aggregation, the only thing in which they differ."
    )
    return lines


def what_this_run_shows(ablations: dict[str, pd.DataFrame], noniid: pd.DataFrame) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's claim
    that FL + SA is above FL + PL and FL (the ablations, paired over (setting, seed); the
    unique classes of the non-IID experiment, paired over classes)."""
    out = []
    for name, res in ablations.items():
        for other in ("FL + PL", "FL"):
            d = paired_difference(res, "FL + SA", other, which="best")
            out.append(
                f"{name}: the paper's claim that FL + SA is above {other} is {verdict(d)} here "
                f"({describe_difference(d)})."
            )
    for col in ("NIH: unique", "CheXpert: unique"):
        d = class_difference(noniid, col, "FL + SA (FedAvg)", "FL + PL (FedAvg)")
        out.append(
            f"Non-IID, {col} classes: the claim that surgical aggregation keeps the unique classes above the "
            f"partial loss is {verdict(d)} here ({describe_difference(d, pairs='classes')})."
        )
    return out
