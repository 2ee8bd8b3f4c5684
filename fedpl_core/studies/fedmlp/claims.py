"""FedMLP's claims as :class:`~fedpl_core.report.findings.Claim` objects, tested on notebook
04's runs by :mod:`fedpl_core.report.findings`: the comparisons of its claims table
(:func:`comparison_claims`, one family: :func:`claims_table`, :func:`claims_sentences`) and the
headline claims of the findings page (:func:`headline_claims`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...nn.metrics import metric_name
from ...report.findings import Claim, family_table, reproduced_count
from ...report.names import display_name
from .paper import ABLATION, METRICS, PAPER_TABLE3, PAPER_TABLES, TABLES
from .profile import Settings

#: The paper's column of a metric key ("auroc_mean" -> "AUC").
_COLUMN = {m: col for col, m in METRICS.items()}


def _reported(where: str, a: str, b: str, rows: dict[str, dict[str, float]], metric: str = "auroc_mean") -> dict:
    """A claim's ``paper_gain`` and ``paper_source``: ``a`` minus ``b`` in points of ``metric``
    from the paper's ``rows`` (by our labels, in %), and where, with both numbers."""
    col = _COLUMN[metric]
    x, y = rows[a][col], rows[b][col]
    return {"paper_gain": round(x - y, 2), "paper_source": f"{where}, {col}: {a} {x:.2f} − {b} {y:.2f}"}


def _table_gain(t: str, m: int, a: str, b: str) -> dict:
    """The paper's gain of ``a`` over ``b`` in Table 1 / 2 (data set ``t``) at missing level
    ``m``; none where the paper runs no such level."""
    name, table = PAPER_TABLES[t]
    if m not in table:
        levels = ", ".join(map(str, table))
        return {"paper_source": f"the paper reports no number: {name} has no m = {m} (its levels: {levels})"}
    return _reported(f"{name}, missing {m}", a, b, table[m])


def comparison_claims(st: Settings, tables: Sequence[str] = TABLES) -> list[Claim]:
    """The paper's claim "FedMLP above FedAvg-PL and FedAvg" claim by claim: per table (a key of
    the frames), missing level (the two highest the profile runs: the claim's setting
    ``"m=<m>"``), metric (mean AUROC, mAP) and reference, last round."""
    mlp = display_name("fedmlp")
    refs = [display_name(k) for k in ("fedavg_pl", "fedavg")]
    return [
        Claim(
            "FedMLP",
            f"{t}, m = {m}, {metric_name(metric)}: {mlp} above {ref}",
            mlp,
            ref,
            t,
            metric=metric,
            setting=f"m={m}",
            evidence="04 § Does FedMLP beat FedAvg-PL and FedAvg",
        )
        for t in tables
        for m in st.missing[t][-2:]
        for metric in ("auroc_mean", "map")
        for ref in refs
    ]


def claims_table(results: dict[str, pd.DataFrame], st: Settings) -> pd.DataFrame:
    """The paper's claim "FedMLP above FedAvg-PL and FedAvg" in numbers: :func:`comparison_claims`
    of the tables in ``results`` tested as one family (:func:`fedpl_core.report.findings.family_table`):
    one row per table, missing level ``m``, metric and reference (``vs``), with the paired
    difference's columns, the sentence :func:`~fedpl_core.report.tables.describe_difference`
    writes and Holm's p over the family."""
    t = family_table(comparison_claims(st, list(results)), results)
    t = t.rename(columns={"frame": "table", "b": "vs"}).assign(m=t["setting"].str.split("=").str[1].astype(int))
    return t[["table", "m", "metric", "vs", "diff (points)", "sd", "95 % CI", "pairs", "p", "sentence", "p (Holm)"]]


def claims_sentences(claims: pd.DataFrame) -> list[str]:
    """Each claim of :func:`claims_table` as a sentence, then how many the run reproduces
    (p < 0.05 in the paper's direction), before and after Holm's correction
    (:func:`fedpl_core.report.findings.reproduced_count`)."""
    out = [f"{r['table']}, m = {r['m']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in claims.iterrows()]
    if len(claims):
        out.append(reproduced_count(claims, "FedMLP"))
    return out


def headline_claims(st: Settings) -> list:
    """FedMLP's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 04 on its runs, last round: ``frames`` keys ``"ICH"`` / ``"CXR"`` (Tables 1-2,
    at the highest missing level the profile runs) and ``"ablation ICH"`` / ``"ablation
    CXR"`` (Table 3, each component against the row above it)."""
    mlp, avg, pl = (display_name(k) for k in ("fedmlp", "fedavg", "fedavg_pl"))
    tags = (
        "after a short warm-up the outputs have barely left 0.5, so the features cannot place the prototypes and "
        "the tags are few or wrong; with one labelled class per client the partial loss trains each head row on "
        "one client (cpu profile). Paper profile (500 rounds, warm-up 50, T0 = 0.5 % and T1 = 1 % on clients of "
        "120 (ICH) / 90 (CXR) images): MLD set no tag in any run, because its count is rounded down and a single "
        "tag needs 100 untagged samples on one side, so FedMLP trains as WPC + CR; its gap to FedAvg is WPC's, a "
        "loss on the one labelled class where FedAvg fits every class with the missing ones as 0: on CXR that "
        "costs 7.0 points (Table 3's WPC step, p = 0.005)"
    )
    where = "04 § How good are the tags?; 04 § Where does FedMLP lose; benchmarks/fedmlp_tagging.py"
    no_tags = (
        "paper profile: the same numbers as the row above on every seed (no test), since MLD set no tag "
        "(Tables 1-2's mechanism)"
    )
    out = []
    for t, table in (("ICH", "Table 1"), ("CXR", "Table 2")):
        level = st.missing[t][-1]
        m = f"m={level}"
        out += [
            Claim(
                "FedMLP",
                f"{table} ({t}): {mlp} above {ref} where labels are scarcest",
                mlp,
                ref,
                t,
                setting=m,
                mechanism=tags,
                evidence=where,
                **_table_gain(t, level, mlp, ref),
            )
            for ref in (pl, avg)
        ]
    for t in TABLES:
        rows = [lab for lab, _ in ABLATION]
        out += [
            Claim(
                "FedMLP",
                f"Table 3 ({t}): {b} adds to {a}",
                b,
                a,
                f"ablation {t}",
                mechanism=no_tags if b in ("+ MLD", "FedMLP (+ ST)") else "",
                evidence="04 § Table 3: component ablation",
                **_reported(f"Table 3 ({t})", b, a, PAPER_TABLE3[t]),
            )
            for a, b in zip(rows[:-1], rows[1:])
        ]
    return out
