"""Headline claims: each paper's claims tested on one run, and the findings page of the site.

A study states its paper's claims one way: as :class:`Claim` objects (``study.headline_claims``,
and the comparisons of a notebook's claims table).  Every claim is tested the same way
(:func:`tested_claims`: paired over seeds, in points) and shown one of two ways:

* :func:`headline_table`: a notebook's headline claims, saved as
  ``figures/<notebook>_headline.csv`` (the paper profile's in ``figures/paper/``):
  each claim with the measured difference, its 95 % interval, p-value and Holm's p within the
  paper, the spread of its paired differences, its minimum detectable effect, the gain the
  paper reports, the power against half of it, and one of four verdicts
  (:func:`fedpl_core.report.tables.verdict`, :func:`margin`): *reproduced* (p < 0.05 in the
  paper's direction), *opposite* (p < 0.05 against it), *absent* (the interval inside ± half
  the paper's gain) or *inconclusive*; :func:`findings_page` and :func:`readme_block` join every
  such table of the committed runs, the paper profile's first and the cpu profile's beside it
  (:func:`both_profiles`), with the measured mechanism and where it is shown;
* :func:`family_table`: the claims of one table of a notebook as one family of tests, with
  Holm's adjustment of their p-values, the verdict and the sentence of each
  (:func:`fedpl_core.report.tables.describe_difference`), and :func:`reproduced_count`, how
  many of them the run reproduces before and after Holm's correction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .tables import (
    describe_difference,
    difference_columns,
    holm,
    minimum_detectable_effect,
    paired_difference,
    power,
    verdict,
)

#: The columns of a headline table, in order.
COLUMNS = (
    "paper",
    "claim",
    "setting",
    "a",
    "b",
    "metric",
    "diff",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "pairs",
    "sd",
    "mde",
    "paper_gain",
    "power",
    "verdict",
    "mechanism",
    "evidence",
    "paper_source",
)
#: The columns of a family table (:func:`family_table`), in order: the claim, its paired
#: difference (:func:`fedpl_core.report.tables.difference_columns`), Holm's p over the family,
#: the verdict and the sentence.
FAMILY_COLUMNS = (
    "paper",
    "claim",
    "frame",
    "setting",
    "a",
    "b",
    "metric",
    "diff (points)",
    "sd",
    "95 % CI",
    "pairs",
    "p",
    "p (Holm)",
    "verdict",
    "sentence",
)
_PAPER_ORDER = ("FedPSL", "FedLSM", "Surgical Aggregation", "FedMLP", "Introduction")


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper: "``a`` is above ``b`` in ``metric``" (``direction`` = -1:
    below), tested on the runs of ``frame`` (a key of the frames given to
    :func:`headline_table`), restricted to ``setting`` when given, at the round ``which``
    (``"final"``: the last; ``"best"``: the selected model; default: the table's); with ``a_setting`` /
    ``b_setting`` the two sides come from two settings (e.g. one method at two
    synchronisation intervals), paired on the seed.  ``mechanism``: what was measured to
    explain the result, in a sentence; ``evidence``: the notebook section or benchmark that
    shows it."""

    paper: str
    claim: str
    a: str
    b: str
    frame: str
    metric: str = "auroc_mean"
    direction: int = 1
    setting: str | None = None
    a_setting: str | None = None
    b_setting: str | None = None
    which: str | None = None
    mechanism: str = ""
    evidence: str = ""
    #: the gain the paper reports for the claim: ``a`` minus ``b`` in points of ``metric``, signed
    #: so that a positive number is the claim's direction; where it comes from (``paper_source``:
    #: the paper's table and rows).  None: the paper gives no number for it.
    paper_gain: float | None = None
    paper_source: str = ""

    def sides(self, df: pd.DataFrame) -> pd.DataFrame | None:
        """The runs of the two sides, labelled ``a`` and ``b`` and paired on the seed (and
        the setting when both sides share it); None when a side has no run."""
        if self.a_setting is not None or self.b_setting is not None:
            if "setting" not in df:
                return None
            parts = [
                df[(df["label"] == lab) & (df["setting"] == st)].assign(label=lab + " @ " + str(st), setting="")
                for lab, st in ((self.a, self.a_setting), (self.b, self.b_setting))
            ]
            if any(p.empty for p in parts):
                return None
            return pd.concat(parts, ignore_index=True)
        if self.setting is not None and "setting" in df:
            df = df[df["setting"] == self.setting]
        return df if {self.a, self.b} <= set(df.get("label", ())) else None

    @property
    def two_settings(self) -> bool:
        """Whether the two sides come from two settings (``a_setting`` / ``b_setting``)."""
        return self.a_setting is not None or self.b_setting is not None

    @property
    def setting_text(self) -> str:
        """The claim's setting as a table shows it: ``"<a_setting> against <b_setting>"``, the
        setting, or ``""``."""
        return f"{self.a_setting} against {self.b_setting}" if self.two_settings else (self.setting or "")


def tested_claims(
    claims: Sequence[Claim], frames: Mapping[str, pd.DataFrame], which: str = "final"
) -> list[tuple[Claim, dict]]:
    """Test each claim on its runs: ``(claim, paired difference)`` with the
    :func:`~fedpl_core.report.tables.paired_difference` dict of ``a`` minus ``b`` (points,
    paired over seeds, at the claim's round ``which`` or else ``which``); a claim whose runs are
    not in ``frames`` (a profile that leaves them out) is left out.  The one test behind
    :func:`headline_table` and :func:`family_table`."""
    out = []
    for c in claims:
        df = frames.get(c.frame)
        df = c.sides(df) if df is not None else None
        if df is None:
            continue
        a, b = (f"{c.a} @ {c.a_setting}", f"{c.b} @ {c.b_setting}") if c.two_settings else (c.a, c.b)
        out.append((c, paired_difference(df, a, b, c.metric, which=c.which or which)))
    return out


def margin(claim: Claim) -> float | None:
    """The equivalence margin of ``claim``: half the gain its paper reports (points), or None
    when the paper gives no number (the claim can then not be found *absent*)."""
    return abs(claim.paper_gain) / 2 if claim.paper_gain else None


def headline_table(claims: Sequence[Claim], frames: Mapping[str, pd.DataFrame], which: str = "final") -> pd.DataFrame:
    """Test each claim on its runs (:func:`tested_claims`) and return one row per claim with
    :data:`COLUMNS`; a claim whose runs are not in ``frames`` is left out.

    Beside the difference, its 95 % interval and p: ``p_holm``, Holm's adjustment over the
    claims of the table (one paper's); ``sd``, the per-seed standard deviation of the paired
    differences; ``mde``, the smallest true difference the test detects with 80 % power at
    these seeds and that sd (:func:`~fedpl_core.report.tables.minimum_detectable_effect`);
    ``paper_gain``; ``power``, the test's power against half the paper's gain
    (:func:`~fedpl_core.report.tables.power`); and the verdict
    (:func:`~fedpl_core.report.tables.verdict` with :func:`margin`)."""
    rows = []
    for c, d in tested_claims(claims, frames, which):
        ci = d.get("ci") or (None, None)
        m = margin(c)
        rows.append(
            {
                "paper": c.paper,
                "claim": c.claim,
                "setting": c.setting_text,
                "a": c.a,
                "b": c.b,
                "metric": c.metric,
                "diff": round(d["diff"], 2),
                "ci_low": ci[0],
                "ci_high": ci[1],
                "p": d["p"],
                "p_holm": None,
                "pairs": d["n"],
                "sd": d["sd"],
                "mde": minimum_detectable_effect(d["sd"], d["n"]),
                "paper_gain": c.paper_gain,
                "power": power(d["sd"], d["n"], m) if m else None,
                "verdict": verdict(d, c.direction, margin=m),
                "mechanism": c.mechanism,
                "evidence": c.evidence,
                "paper_source": c.paper_source,
            }
        )
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out["p_holm"] = holm(list(out["p"]))
    return out


def headline_verdict(
    headline: pd.DataFrame, a: str, b: str, metric: str, claim_has: str, setting: str | None = None
) -> str | None:
    """The verdict :func:`headline_table` gave the one claim of ``a`` against ``b`` in ``metric``
    whose text contains ``claim_has`` (and whose setting is ``setting``, when given), so that a
    notebook's closing sentence says what its headline table says, *absent* included; None
    unless exactly one row matches."""
    h = headline[
        (headline["a"] == a)
        & (headline["b"] == b)
        & (headline["metric"] == metric)
        & headline["claim"].str.contains(claim_has, regex=False)
    ]
    if setting is not None:
        h = h[h["setting"] == setting]
    return str(h["verdict"].iloc[0]) if len(h) == 1 else None


def family_table(
    claims: Sequence[Claim], frames: Mapping[str, pd.DataFrame], which: str = "final", pairs: str = "runs"
) -> pd.DataFrame:
    """The claims of one table as one family of tests (:func:`tested_claims`): one row per
    claim tested with :data:`FAMILY_COLUMNS`: the claim (its ``frame``, setting, ``a``, ``b``,
    ``metric``), the paired difference's columns (:func:`~fedpl_core.report.tables.difference_columns`),
    Holm's adjustment of p over the family (``p (Holm)``, :func:`~fedpl_core.report.tables.holm`),
    the verdict (:func:`~fedpl_core.report.tables.verdict`) and the sentence
    :func:`~fedpl_core.report.tables.describe_difference` writes (``pairs`` names what was paired).

    >>> runs = pd.DataFrame({"label": ["A"] * 3 + ["B"] * 3, "seed": [0, 1, 2] * 2,
    ...                      "auroc_mean": [0.80, 0.82, 0.84, 0.78, 0.79, 0.83]})
    >>> t = family_table([Claim("P", "A above B", "A", "B", "t"), Claim("P", "A above C", "A", "C", "t")], {"t": runs})
    >>> t[["claim", "diff (points)", "95 % CI", "pairs", "verdict"]].values.tolist()
    [['A above B', 2.0, '-0.5 to 4.5', 3, 'inconclusive']]
    >>> t["sentence"].iloc[0]
    'A is 2.0 points above B (95 % CI -0.5 to 4.5; paired t-test over 3 runs: p = 0.074, not significant at 0.05)'
    """
    rows = [
        {
            "paper": c.paper,
            "claim": c.claim,
            "frame": c.frame,
            "setting": c.setting_text,
            "a": c.a,
            "b": c.b,
            "metric": c.metric,
            **difference_columns(d),
            "p (Holm)": None,
            "verdict": verdict(d, c.direction, margin=margin(c)),
            "sentence": describe_difference(d, pairs=pairs),
        }
        for c, d in tested_claims(claims, frames, which)
    ]
    out = pd.DataFrame(rows, columns=list(FAMILY_COLUMNS))
    out["p (Holm)"] = holm(list(out["p"]))
    return out


def reproduced_count(claims: pd.DataFrame, subject: str, alpha: float = 0.05) -> str:
    """How many of a family table's comparisons (columns ``diff (points)``, ``p`` and ``p (Holm)``,
    each "``subject`` above the reference": :func:`family_table`) the run reproduces, p < ``alpha``
    in the paper's direction, before and after Holm's correction for the family, in one sentence."""

    def below(col: str):
        return claims[col].map(lambda p: p is not None and p == p and float(p) < alpha)

    up = claims["diff (points)"] > 0
    n, raw, adjusted = len(claims), int((up & below("p")).sum()), int((up & below("p (Holm)")).sum())
    return (
        f"{subject} is significantly above the reference in {raw} of {n} comparisons "
        f"({adjusted} after Holm's correction for the {n} tests)."
    )


def p_text(p: float) -> str:
    """A p-value with two significant digits, three near 0.05, so that a p below 0.05 never reads
    as "p = 0.05" beside its verdict.

    >>> p_text(0.0497), p_text(0.0081), p_text(0.21)
    ('p = 0.0497', 'p = 0.0081', 'p = 0.21')
    """
    return f"p = {p:.3g}" if 0.045 <= p < 0.055 else f"p = {p:.2g}"


def _fmt_row(r: pd.Series) -> str:
    ci = f"; 95 % CI {r['ci_low']:.1f} to {r['ci_high']:.1f}" if pd.notna(r["ci_low"]) else ""
    p = f", {p_text(r['p'])}" if pd.notna(r["p"]) else ", no test"
    holm_p = f" (Holm {r['p_holm']:.2g})" if pd.notna(r.get("p_holm")) else ""
    return f"{r['a']} − {r['b']}: {r['diff']:+.1f} points{ci}{p}{holm_p}"


def _cell(text) -> str:
    return "" if pd.isna(text) else str(text).replace("|", "\\|").replace("\n", " ")


def _num(v, fmt: str = "{:.1f}") -> str:
    return "" if v is None or pd.isna(v) else fmt.format(float(v))


#: The profile whose verdicts are the findings' headline, and where its tables are, inside the
#: cpu profile's figures folder (:data:`fedpl_core.base.paths.OWN_FOLDER`).
HEADLINE_PROFILE = "paper"


def read_headlines(figures: str | Path | None, columns: Sequence[str] = COLUMNS) -> pd.DataFrame:
    """Every ``*_headline.csv`` of ``figures``, joined (a table without ``columns``, of an older
    layout, is left out)."""
    if figures is None or not Path(figures).is_dir():
        return pd.DataFrame(columns=list(columns))
    frames = [pd.read_csv(p) for p in sorted(Path(figures).glob("*_headline.csv")) if not p.is_symlink()]
    frames = [f for f in frames if set(columns) <= set(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(columns))


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    order = {p: i for i, p in enumerate(_PAPER_ORDER)}
    return df.assign(_o=df["paper"].map(lambda p: order.get(p, len(order)))).sort_values("_o", kind="stable")


def both_profiles(figures: str | Path | None, paper_figures: str | Path | None = None) -> pd.DataFrame:
    """The claims of both profiles side by side: the cpu profile's headline tables in
    ``figures`` and the paper profile's in ``paper_figures`` (default ``<figures>/paper``), one
    row per claim (its paper and text), the paper profile's columns as they are and the cpu
    profile's prefixed ``cpu_``; a claim only one profile tested has the other's columns empty."""
    cpu = read_headlines(figures)
    if paper_figures is None and figures is not None:
        paper_figures = Path(figures) / HEADLINE_PROFILE
    paper = read_headlines(paper_figures)
    key = ["paper", "claim"]
    cpu = cpu.assign(_k=cpu.groupby(key).cumcount())
    paper = paper.assign(_k=paper.groupby(key).cumcount())
    right = cpu.rename(columns={c: f"cpu_{c}" for c in cpu.columns if c not in (*key, "_k")})
    both = paper.merge(right, on=[*key, "_k"], how="outer", sort=False)
    for c in ("mechanism", "evidence", "paper_gain", "paper_source"):  # the claim's own facts: either profile's
        both[c] = both[c].where(both[c].notna(), both[f"cpu_{c}"])
    # the claims in the order their notebooks state them: the cpu run's, then any only the paper profile has
    order = {k: i for i, k in enumerate(dict.fromkeys([*_keys(cpu, key), *_keys(paper, key)]))}
    both = both.assign(_i=[order[k] for k in _keys(both, key)]).sort_values("_i", kind="stable")
    return _ordered(both.drop(columns=["_k", "_i"])).drop(columns="_o").reset_index(drop=True)


def _keys(df: pd.DataFrame, key: list[str]) -> list[tuple]:
    return list(zip(*(df[k] for k in [*key, "_k"]))) if len(df) else []


def not_run(df: pd.DataFrame) -> pd.Series:
    """For each row of :func:`both_profiles` without a paper-profile verdict, why: ``"not run
    (cut)"`` where the paper profile ran the claim's notebook without its runs (to keep within
    its budget; the notebooks page's table of the profile names the cuts), ``"not run yet"``
    where it has not run the notebook; empty for the rows it tested."""
    ran_papers = set(df.loc[df["verdict"].notna(), "paper"])
    why = df["paper"].map(lambda p: NOT_RUN[0] if p in ran_papers else NOT_RUN[1])
    return why.where(df["verdict"].isna(), "")


#: The two reasons of :func:`not_run`, as the page and the README show them.
NOT_RUN = ("not run (cut)", "not run yet")


def counts_sentence(verdicts: pd.Series) -> str:
    """``"r reproduced, o opposite, a absent, i inconclusive"`` of a column of verdicts."""
    from .tables import VERDICTS

    counts = verdicts.value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)


#: How a claim is decided, fixed before the claims run (the findings page and the docs say it).
RULE = (
    "The verdict, fixed before the runs: **reproduced** (paired t-test p < 0.05 in the paper's direction), "
    "**opposite** (p < 0.05 against it), **absent** (the 95 % interval of the difference lies inside ± half "
    "the gain the paper reports: no effect of the paper's size) or **inconclusive** (anything else). The "
    "seeds of the paper profile were chosen, before it ran, so that the test has 80 % power against half "
    "the paper's gain where the budget allows; *MDE* is the smallest difference the test detects with 80 % "
    "power at the seeds used and the spread the run measured, *power* its power against half the paper's "
    "gain. Each paper's claims are one family: the verdicts use the raw p, and Holm's adjusted p beside it "
    "keeps the chance of any false *reproduced* or *opposite* within a paper at 5 %, so a verdict whose "
    "Holm p is 0.05 or more may be one of its family's chance results."
)


def platform_paragraph() -> str:
    """Which numeric platform made the committed numbers of each profile (the checkout's run
    records, :func:`fedpl_core.report.record.trained_on`), and what follows on another one; the
    same text on every machine, so that the committed page is the page any machine generates."""
    from .record import committed_record, trained_on

    said = []
    for profile in ("paper", "cpu"):
        text = trained_on(committed_record(profile))
        if text:
            said.append(f"The {profile} profile's runs: {text[0].lower()}{text[1:]}")
    return " ".join(
        [
            *said,
            "The numbers are exact on that platform (torch, its CPU kernels and threads). On another one the last "
            "digits move, and a verdict should not; `python -m fedpl_core reproduce` and the site's banner say "
            "when the reader's platform differs.",
        ]
    )


def findings_page(figures: str | Path | None, paper_figures: str | Path | None = None) -> str:
    """The Markdown of the findings page: each claim's verdict in the paper profile (the
    headline, its tables in ``paper_figures``, default ``<figures>/paper``) beside the cpu
    profile's (the quick teaching run, its tables in ``figures``)."""
    df = both_profiles(figures, paper_figures)
    lines = [
        "# Findings",
        "",
        "Every headline claim of the four papers, tested on the committed runs on the built-in data, in two "
        "profiles: the **paper profile** (the papers' own training schedules on the small model, with seeds "
        "chosen for power: the headline) and the **cpu profile** (10 to 16 short rounds and 3 seeds: the "
        "quick teaching run). A difference is in points of the metric (AUROC x 100 unless named), paired over "
        "seeds; *paper* is the gain the paper reports.",
        "",
        RULE,
        "",
        platform_paragraph(),
        "",
    ]
    if df.empty:
        return "\n".join(lines + ["No headline table was found: run the notebooks (`make reproduce`).", ""])
    ran = df["verdict"].notna()
    if ran.any():
        lines.append(f"Of {int(ran.sum())} claims in the paper profile: {counts_sentence(df.loc[ran, 'verdict'])}.")
    else:
        lines.append("The paper profile has not been run yet: only the cpu profile's verdicts are shown.")
    cpu = df["cpu_verdict"].notna()
    if cpu.any():
        lines.append(f"Of {int(cpu.sum())} claims in the cpu profile: {counts_sentence(df.loc[cpu, 'cpu_verdict'])}.")
    why = not_run(df)
    if ran.any() and (why != "").any():
        lines += [
            "",
            f"*{NOT_RUN[0]}*: the paper profile runs the claim's notebook without the claim's runs, to keep within "
            "its time budget ([the paper profile](notebooks.md#the-paper-profile) lists what it cuts); "
            f"*{NOT_RUN[1]}*: the paper profile has not run the claim's notebook.",
        ]
    lines.append("")
    head = (
        "| claim | paper | paper profile | seeds | MDE | power | verdict | cpu profile | mechanism | shown in |",
        "|---|---|---|---|---|---|---|---|---|---|",
    )
    for paper, g in df.assign(_why=why).groupby("paper", sort=False):
        lines += [f"## {paper}", "", *head]
        for _, r in g.iterrows():
            setting = _cell(r["setting"]) if pd.notna(r["verdict"]) else _cell(r["cpu_setting"])
            claim = _cell(r["claim"]) + (f" ({setting})" if setting else "")
            gain = _num(r["paper_gain"], "{:+.1f}")
            if pd.notna(r["verdict"]):
                run = _fmt_row(r)
                seeds, mde, pw = str(int(r["pairs"])), _num(r["mde"]), _num(r["power"], "{:.0%}")
                v = f"**{r['verdict']}**"
            else:
                run, seeds, mde, pw, v = r["_why"], "", "", "", ""
            if pd.notna(r["cpu_verdict"]):
                cp = _num(r["cpu_diff"], "{:+.1f}")
                cp += f", {p_text(r['cpu_p'])}" if pd.notna(r["cpu_p"]) else ", no test"
                cp += f", {int(r['cpu_pairs'])} seeds: {r['cpu_verdict']}"
            else:
                cp = "not run"
            lines.append(
                f"| {claim} | {gain} | {run} | {seeds} | {mde} | {pw} | {v} | {cp} | {_cell(r['mechanism'])} "
                f"| {_cell(r['evidence'])} |"
            )
        lines.append("")
    return "\n".join(lines)


#: The README's generated block lies between these two lines.
README_START, README_END = (
    "<!-- findings: generated by python -m fedpl_core.report.findings -->",
    "<!-- findings: end -->",
)


def readme_block(figures: str | Path | None, paper_figures: str | Path | None = None) -> str:
    """One screen for the README's front page: each claim's verdict in the paper profile (the
    headline) beside the cpu profile's, and the counts of both."""
    df = both_profiles(figures, paper_figures)
    if df.empty:
        return "No headline table was found: run the notebooks (`make reproduce`)."
    lines = ["| paper | claim | paper profile | verdict | cpu profile |", "|---|---|---|---|---|"]
    for _, r in df.assign(_why=not_run(df)).iterrows():
        if pd.notna(r["verdict"]):
            p = p_text(r["p"]) if pd.notna(r["p"]) else "no test"
            run, v = f"{r['diff']:+.1f} ({p}, {int(r['pairs'])} seeds)", str(r["verdict"])
        else:
            run, v = r["_why"], ""
        cpu = f"{r['cpu_diff']:+.1f}: {r['cpu_verdict']}" if pd.notna(r["cpu_verdict"]) else "not run"
        lines.append(f"| {r['paper']} | {_cell(r['claim'])} | {run} | {v} | {cpu} |")
    ran, cpu = df["verdict"].notna(), df["cpu_verdict"].notna()
    counts = [f"the paper profile's {int(ran.sum())}: {counts_sentence(df.loc[ran, 'verdict'])}"] if ran.any() else []
    if cpu.any():
        counts.append(f"the cpu profile's {int(cpu.sum())}: {counts_sentence(df.loc[cpu, 'cpu_verdict'])}")
    lines += ["", f"Claims in {'; in '.join(counts)} (differences in points, paired over seeds)."]
    return "\n".join(lines)


def update_readme(readme: str | Path, figures: str | Path | None, paper_figures: str | Path | None = None) -> bool:
    """Rewrite the README's generated block from ``figures`` (and ``paper_figures``,
    :func:`readme_block`); True when it changed."""
    from ..base.fileio import atomic_write

    text = Path(readme).read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise ValueError(f"{readme} has no generated findings block ({README_START} ... {README_END})")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{readme_block(figures, paper_figures)}\n{README_END}{tail}"
    if new != text:
        with atomic_write(readme) as f:
            f.write(new)
    return new != text


def main(argv: list[str] | None = None) -> int:
    import argparse

    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(
        prog="python -m fedpl_core.report.findings",
        description="Rewrite the README's findings block and the findings page "
        "(docs/findings.md) from the headline tables.",
    )
    ap.add_argument("--readme", default=str(root / "README.md"))
    ap.add_argument("--page", default=str(root / "docs" / "findings.md"))
    ap.add_argument("--figures", default=str(root / "figures"), help="the cpu profile's figures and tables")
    ap.add_argument(
        "--paper-figures", default=None, help="the paper profile's figures and tables (default: <figures>/paper)"
    )
    a = ap.parse_args(argv)
    changed = update_readme(a.readme, a.figures, a.paper_figures)
    print(f"{a.readme}: findings block {'rewritten' if changed else 'unchanged'}")
    from ..base.fileio import atomic_write

    with atomic_write(a.page) as f:
        f.write(findings_page(a.figures, a.paper_figures))
    print(f"{a.page}: written")
    return 0


__all__ = [
    "COLUMNS",
    "FAMILY_COLUMNS",
    "Claim",
    "tested_claims",
    "headline_table",
    "headline_verdict",
    "family_table",
    "reproduced_count",
    "read_headlines",
    "not_run",
    "NOT_RUN",
    "both_profiles",
    "counts_sentence",
    "margin",
    "findings_page",
    "readme_block",
    "update_readme",
]

if __name__ == "__main__":
    raise SystemExit(main())
