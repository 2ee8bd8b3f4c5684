"""The sentences notebook 04 prints, computed from its numbers: the hot / cool comparison
(:func:`hot_cool_sentence`), how many samples a client needs before MLD can set a tag
(:func:`tag_floor_sentence`), the check of Table 3's first row against FedAvg and the closing
verdicts (:func:`what_this_run_shows`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ...report.tables import p_text


def hot_cool_sentence(g: dict[str, Any], table: str, m: int) -> str:
    """The hot / cool comparison of :func:`hot_cool_gap` as a sentence, with the verdict on
    the paper's claim that FedMLP gains most on the cool classes (Welch's test: reproduced,
    opposite or inconclusive; the paper gives no size for it, so never absent)."""
    from ...report.tables import verdict

    if g["diff"] is None:
        return f"{table}, m = {m}: no hot / cool split (every class is labelled by about as many clients)."
    word = verdict({"diff": g["diff"], "p": g["p"]})
    test = (
        "no test: too few (class, seed) gains"
        if g["p"] is None
        else f"Welch's t-test over class x seed gains, {p_text(g['p'])}"
    )
    return (
        f"{table}, m = {m}: FedMLP - FedAvg-PL is {g['cool']:+.1f} points on the {g['n_cool']} cool classes "
        f"(labelled by {g['cool_clients'][0]}-{g['cool_clients'][1]} clients) and {g['hot']:+.1f} on the "
        f"{g['n_hot']} hot ones ({g['hot_clients'][0]}-{g['hot_clients'][1]} clients): cool minus hot "
        f"{g['diff']:+.1f} points ({test}). The paper's claim that the gain is larger on the cool classes: "
        f"{word} here."
    )


def samples_for_a_tag(ratio: float) -> float:
    """The fewest untagged samples on one side of Z (Eq. 8-9) for which MLD's count
    ``floor(ratio * count)`` reaches one tag (``fedpl_core.methods.fedmlp.select_tags``, with
    its 1e-9 tolerance); infinite for a ratio of 0."""
    return math.inf if ratio <= 0 else float(math.ceil((1 - 1e-9) / ratio))


def tag_floor_sentence(t0: float, t1: float, sizes: Mapping[str, Sequence[int]]) -> str:
    """Whether a client of the run can set any tag at all: MLD tags ``floor(tau * count)``
    samples of a side, ``tau`` = T (or d_c T <= T with ST), so a client needs
    :func:`samples_for_a_tag` (T1) samples with Z < 0 for its first tag 1 and (T0) with
    Z >= 0 for its first tag 0.  ``sizes``: each table's client sizes (images)."""
    need1, need0 = samples_for_a_tag(t1), samples_for_a_tag(t0)
    biggest = {t: max(n) for t, n in sizes.items()}
    held = " and ".join(f"{n:,} ({t})" for t, n in biggest.items())

    def first(tag: str, t: float, need: float, side: str) -> str:
        if math.isinf(need):
            return f"no tag {tag} at T{tag} = 0"
        return f"its first tag {tag} for a class at T{tag} = {t:g} once {need:,.0f} of its untagged samples have {side}"

    head = (
        f"MLD rounds its counts down. A client sets {first('1', t1, need1, 'Z < 0')}, and "
        f"{first('0', t0, need0, 'Z >= 0')}; "
        f"ST multiplies both ratios by the learning degree (at most 1), so it needs more. The largest client "
        f"here holds {held} images: "
    )
    if all(n < min(need0, need1) for n in biggest.values()):
        return head + "no client can set a single tag, so MLD cannot act and FedMLP trains as WPC + CR."
    lo, hi = sorted(((need1, "tag 1", "Z < 0"), (need0, "tag 0", "Z >= 0")))
    clauses = []
    for t, n in biggest.items():
        if n < lo[0]:
            clauses.append(f"in {t} no client can set a tag")
        elif n < hi[0]:
            clauses.append(f"in {t} only a {lo[1]}, once {lo[0]:,.0f} of its {n:,} samples have {lo[2]}")
        else:
            clauses.append(f"in {t} every client can tag once its learning degree allows")
    return head + "; ".join(clauses) + "."


def row_one_is_fedavg(fedavg: pd.DataFrame, row_one: pd.DataFrame, table: str, setting: str) -> str:
    """Whether Table 3's first row (``fedmlp`` with every component off, ``row_one``) gives
    FedAvg's final mean AUROC (``fedavg``) on every seed, as a sentence."""
    both = pd.concat([fedavg.assign(label="FedAvg"), row_one.assign(label="Table 3, row 1")])
    fin = both[both["which"] == "final"].pivot_table(index="seed", columns="label", values="auroc_mean")
    same = bool((fin["FedAvg"] == fin["Table 3, row 1"]).all())
    return (
        f"{table}, {setting}: FedAvg {fin['FedAvg'].mean() * 100:.2f}, Table 3 row 1 (every component off) "
        f"{fin['Table 3, row 1'].mean() * 100:.2f}: " + ("identical on every seed" if same else "DIFFERENT")
    )


def what_this_run_shows(
    claims: pd.DataFrame, steps: pd.DataFrame, tags: pd.DataFrame, headline: pd.DataFrame | None = None
) -> list[str]:
    """The notebook's closing sentences, from its numbers: the verdict on the paper's headline
    claim (FedMLP above FedAvg-PL in mean AUROC at the highest missing level of each table),
    how many tags FedMLP set and how accurate they were, and the largest step of the
    ablation.  With ``headline`` (the notebook's :func:`~fedpl_core.report.findings.headline_table`)
    the headline claim's verdict is that table's, *absent* included (its interval inside
    ± half the paper's gain); without it, :func:`~fedpl_core.report.tables.verdict` without a
    margin (never *absent*)."""
    from ...report.findings import headline_verdict
    from ...report.tables import VERDICTS, verdict

    out = []
    claims = claims.assign(verdict=[verdict({"diff": r["diff (points)"], "p": r["p"]}) for _, r in claims.iterrows()])
    auc = claims[(claims["metric"] == "auroc_mean") & (claims["vs"] == "FedAvg-PL")] if len(claims) else claims
    for t, g in auc.groupby("table", sort=False):
        r = g.iloc[-1]  # the highest missing level
        word = r["verdict"]
        if headline is not None:
            word = headline_verdict(headline, "FedMLP", "FedAvg-PL", "auroc_mean", f"({t})", f"m={r['m']}") or word
        out.append(
            f"In {t} with {r['m']} missing classes a client, the paper's claim that FedMLP is above FedAvg-PL "
            f"in mean AUROC is {word} here: FedMLP is {abs(r['diff (points)']):.1f} points "
            f"{'above' if r['diff (points)'] > 0 else 'below'} it"
            + (f" (95 % CI {r['95 % CI']})." if r["95 % CI"] else " (one seed: no interval).")
        )
    counts = {v: int((claims["verdict"] == v).sum()) for v in VERDICTS} if len(claims) else {}
    if counts:
        out.append(
            f"Of the {len(claims)} comparisons with FedAvg-PL and FedAvg (mean AUROC and mAP), "
            f"{counts['reproduced']} reproduce the paper's direction, {counts['opposite']} show the opposite "
            f"and {counts['absent'] + counts['inconclusive']} cannot be told apart from no difference."
        )
    if len(tags) and "pl/coverage" in tags:
        for (t, lab), r in tags.iterrows():
            if lab == "FedMLP":
                acc = r.get("pl/accuracy")
                out.append(
                    f"FedMLP tagged {100 * r['pl/coverage']:.1f} % of the missing entries in {t} by the last "
                    "round" + (f", {100 * acc:.1f} % of them correctly." if acc == acc and acc is not None else ".")
                )
    if len(steps):
        big = steps["AUC change (points)"].abs().idxmax()
        r = steps.loc[big]
        out.append(
            f"The ablation's largest step is {big[1]} in {big[0]}: {r['AUC change (points)']:+.1f} points"
            + (f" ({p_text(r['p'])})." if r["p"] is not None and r["p"] == r["p"] else ".")
        )
    return out
