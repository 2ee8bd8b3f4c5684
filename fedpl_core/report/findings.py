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

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .tables import (
    describe_difference,
    difference_columns,
    holm,
    minimum_detectable_effect,
    p_digits,
    p_text,
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
    "contrast",
    "data",
    "metric",
    "diff",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "pairs",
    "seeds",
    "settings",
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
    explain the result, in a sentence; ``evidence``: where it is shown, as references separated
    by ``"; "``: ``"NN § heading"`` (the section of notebook ``NN`` whose heading contains that
    text) or ``"benchmarks/<file>.py"`` (:func:`evidence_links` turns them into links)."""

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
    def contrast(self) -> str:
        """The difference the claim tests, named by its sides and, when they differ, their
        settings: ``"A − B"`` or ``"A at E=100 − A at E=10"``."""
        if self.two_settings:
            return f"{self.a} at {self.a_setting} − {self.b} at {self.b_setting}"
        return f"{self.a} − {self.b}"

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
    paired over seeds, at the claim's round ``which`` or else ``which``), plus what was paired:
    ``seeds`` (distinct seeds), ``settings`` (distinct settings pooled, 1 when the claim names
    its setting) and ``data`` (the data the runs trained on, ``result_rows``' ``data``, joined);
    a claim whose runs are not in ``frames`` (a profile that leaves them out) is left out.  The
    one test behind :func:`headline_table` and :func:`family_table`."""
    out = []
    for c in claims:
        df = frames.get(c.frame)
        df = c.sides(df) if df is not None else None
        if df is None:
            continue
        a, b = (f"{c.a} @ {c.a_setting}", f"{c.b} @ {c.b_setting}") if c.two_settings else (c.a, c.b)
        d = paired_difference(df, a, b, c.metric, which=c.which or which)
        pooled = "setting" in df and c.setting is None and not c.two_settings
        d["seeds"] = int(df["seed"].nunique()) if "seed" in df else None
        d["settings"] = int(df["setting"].nunique()) if pooled else 1
        d["data"] = ", ".join(sorted(map(str, df["data"].dropna().unique()))) if "data" in df else ""
        out.append((c, d))
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
                "contrast": c.contrast,
                "data": d["data"],
                "metric": c.metric,
                "diff": round(d["diff"], 2),
                "ci_low": ci[0],
                "ci_high": ci[1],
                "p": d["p"],
                "p_holm": None,
                "pairs": d["n"],
                "seeds": d["seeds"],
                "settings": d["settings"],
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


def headline_view(headline: pd.DataFrame) -> pd.DataFrame:
    """A notebook's headline table (:func:`headline_table`) as a learner reads it: the claim whole,
    its contrast where two settings are compared, the data, the difference and its 95 % interval
    in points to one decimal, p and Holm's p (floats, shown to 2-3 digits by
    :func:`fedpl_core.report.tables.readable`), the seeds paired (:func:`seeds_text`), MDE, the
    paper's gain, the power and the verdict; empty where a claim has no value."""
    rows = []
    for _, r in headline.iterrows():
        setting = r.get("setting") if isinstance(r.get("setting"), str) else ""
        said = r["contrast"] if " against " in setting and isinstance(r.get("contrast"), str) else setting
        ci = f"{_minus(f'{r.ci_low:.1f}')} to {_minus(f'{r.ci_high:.1f}')}" if pd.notna(r["ci_low"]) else None
        rows.append(
            {
                "claim": r["claim"] + (f" ({said})" if said else ""),
                "data": r.get("data") if isinstance(r.get("data"), str) and r.get("data") else None,
                "difference": _signed(r["diff"]),
                "95 % CI": ci,
                "p": r["p"],
                "p (Holm)": r["p_holm"],
                "seeds": seeds_text(r.get("seeds"), r.get("settings"), r["pairs"]),
                "MDE": _num(r["mde"]) or None,
                "paper": _minus(_num(r["paper_gain"], "{:+.1f}")) or None,
                "power": _num(r["power"], "{:.0%}") or None,
                "verdict": r["verdict"],
            }
        )
    out = pd.DataFrame(rows)
    out.attrs["note"] = (
        "–: no value: no test (one seed, or the two sides gave the same numbers on every seed), or the "
        "paper gives no number for the claim (so no power against half of it)."
    )
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


#: The profile whose verdicts are the findings' headline, and where its tables are, inside the
#: cpu profile's figures folder (:data:`fedpl_core.base.paths.OWN_FOLDER`).
HEADLINE_PROFILE = "paper"


def _fmt_row(r: pd.Series) -> str:
    """The paper-profile cell: the difference and its 95 % interval (points), or "no test"."""
    if pd.isna(r["ci_low"]):
        return f"{_signed(r['diff'])}, no test"
    return f"{_signed(r['diff'])} ({_minus(f'{r.ci_low:.1f}')} to {_minus(f'{r.ci_high:.1f}')})"


def _signed(v: float) -> str:
    return _minus(f"{v:+.1f}")


def _minus(text: str) -> str:
    return text.replace("-", "−")


def _cell(text) -> str:
    return "" if pd.isna(text) else str(text).replace("|", "\\|").replace("\n", " ")


def _num(v, fmt: str = "{:.1f}") -> str:
    return "" if v is None or pd.isna(v) else fmt.format(float(v))


def _p_pair(p, holm_p) -> str:
    """``"0.0011 (0.0064)"``: the raw p and Holm's beside it (:func:`~fedpl_core.report.tables.p_digits`)."""
    if pd.isna(p):
        return "no test"
    return p_digits(p) + (f" ({p_digits(holm_p)})" if pd.notna(holm_p) else "")


def seeds_text(seeds, settings, pairs, unit: str = "") -> str:
    """What a claim's test paired: ``"12"`` seeds, or ``"12 × 3 settings"`` where it pools the
    seeds of several settings; the number of pairs when the seeds are not recorded.  ``unit``
    (e.g. ``"seeds"``) follows the number of seeds (of pairs: ``"pairs"``).

    >>> seeds_text(12, 3, 36), seeds_text(5, 1, 5), seeds_text(None, None, 9), seeds_text(12, 3, 36, "seeds")
    ('12 × 3 settings', '5', '9', '12 seeds × 3 settings')
    """
    if pd.isna(seeds):
        return "" if pd.isna(pairs) else f"{int(pairs)}{' pairs' if unit else ''}"
    n = f"{int(seeds)}{' ' + unit if unit else ''}"
    return f"{n} × {int(settings)} settings" if pd.notna(settings) and int(settings) > 1 else n


#: Where a claim's notebook sections are, per profile: the site's staged notebooks
#: (:func:`fedpl_core.report.docs.stage`) and the checkout's executed ones (``reports/``).
_NOTEBOOK_DIRS = {
    ("site", "cpu"): "notebooks/",
    ("site", "paper"): "notebooks/paper/",
    ("repo", "cpu"): "../reports/",
    ("repo", "paper"): "../reports/paper/",
}
#: The pages that describe the benchmarks, searched in this order for a benchmark's section.
BENCHMARK_PAGES = ("benchmarks.md", "investigations.md")
_ROOT = Path(__file__).resolve().parents[2]


def _slug(heading: str) -> str:
    from .glossary import github_slug

    return github_slug(heading)


def _headings(lines: Sequence[str]) -> list[str]:
    return [line.lstrip("#").strip() for line in lines if line.startswith("#") and line.lstrip("#").startswith(" ")]


def _notebook_headings(number: str, notebooks: Path) -> tuple[str, list[str]]:
    found = sorted(notebooks.glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(
            f"evidence names notebook {number}, but {notebooks} has {len(found)} notebooks {number}_*.ipynb"
        )
    return found[0].stem, _file_headings(found[0], found[0].stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _file_headings(path: Path, mtime_ns: int) -> list[str]:
    """The headings of a notebook's markdown cells (read once a version: the page asks for each
    row's)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return _headings(
        [line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()]
    )


def _one_heading(headings: Sequence[str], text: str, where: str) -> str:
    hits = [h for h in headings if text in h]
    if len(hits) != 1:
        raise ValueError(f"evidence {text!r}: {len(hits)} headings of {where} contain it, not one")
    return hits[0]


def evidence_links(
    evidence: str, profile: str = HEADLINE_PROFILE, site: bool = True, root: str | Path | None = None
) -> list[str]:
    """The Markdown links of a claim's ``evidence`` (:class:`Claim`): each ``"NN § heading"`` to
    that section of the executed notebook of ``profile`` (on the site, or in the checkout's
    ``reports/`` with ``site=False``), each ``"benchmarks/<file>.py"`` to the section of the
    benchmarks or investigations page that describes it.  A reference that names no single
    heading is refused with a ``ValueError`` naming it.

    >>> evidence_links("01 § 6. Table V; benchmarks/tadl_overfit.py")
    ['[Table V](notebooks/paper/01_fedpsl.ipynb#6-table-v-synchronisation-frequency)', \
'[tadl_overfit.py](benchmarks.md#mechanisms-behind-the-papers-results)']
    """
    import re

    base = Path(root) if root is not None else _ROOT
    links: list[str] = []
    if not isinstance(evidence, str):  # none given (read back from a table as NaN)
        return links
    for ref in filter(None, (r.strip() for r in evidence.split(";"))):
        if ref.startswith("benchmarks/"):
            name = ref
            for page in BENCHMARK_PAGES:
                lines = (base / "docs" / page).read_text(encoding="utf-8").splitlines()
                at = next((i for i, line in enumerate(lines) if name in line), None)
                if at is not None:
                    heading = (_headings(lines[:at]) or [""])[-1]
                    links.append(f"[{Path(name).name}]({page}#{_slug(heading)})")
                    break
            else:
                raise ValueError(f"evidence {name!r}: no page of {', '.join(BENCHMARK_PAGES)} describes it")
            continue
        number, sep, text = ref.partition(" § ")
        if not sep or not number.isdigit():
            raise ValueError(f"evidence {ref!r} is neither 'NN § heading' nor 'benchmarks/<file>.py'")
        stem, headings = _notebook_headings(number, base / "notebooks")
        heading = _one_heading(headings, text, f"notebook {stem}")
        folder = _NOTEBOOK_DIRS[("site" if site else "repo", profile)]
        shown = re.sub(r"^\d+\.\s*", "", text).rstrip(":")
        links.append(f"[{shown}]({folder}{stem}.ipynb#{_slug(heading)})")
    return links


def headline_link(evidence: str, profile: str, site: bool = True, root: str | Path | None = None) -> str | None:
    """The link target of the headline claims section ("The paper's headline claims, tested") of
    the notebook the claim's first notebook reference names, in ``profile``."""
    for ref in evidence.split(";") if isinstance(evidence, str) else ():
        number, sep, _ = ref.strip().partition(" § ")
        if sep and number.isdigit():
            base = Path(root) if root is not None else _ROOT
            stem, headings = _notebook_headings(number, base / "notebooks")
            heading = _one_heading(headings, HEADLINE_SECTION, f"notebook {stem}")
            return f"{_NOTEBOOK_DIRS[('site' if site else 'repo', profile)]}{stem}.ipynb#{_slug(heading)}"
    return None


#: The heading of each notebook's section that tests the paper's headline claims.
HEADLINE_SECTION = "The paper's headline claims, tested"


#: Columns of :data:`COLUMNS` an older headline table may lack: read as empty.
LATER_COLUMNS = ("contrast", "data", "seeds", "settings")


def read_headlines(figures: str | Path | None, columns: Sequence[str] = COLUMNS) -> pd.DataFrame:
    """Every ``*_headline.csv`` of ``figures``, joined (a table without ``columns``, of an older
    layout, is left out; :data:`LATER_COLUMNS` it lacks are empty)."""
    if figures is None or not Path(figures).is_dir():
        return pd.DataFrame(columns=list(columns))
    frames = [pd.read_csv(p) for p in sorted(Path(figures).glob("*_headline.csv")) if not p.is_symlink()]
    frames = [
        f.reindex(columns=[*f.columns, *(c for c in LATER_COLUMNS if c in columns and c not in f)])
        for f in frames
        if set(columns) - set(LATER_COLUMNS) <= set(f.columns)
    ]
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
    "gain."
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


#: The paper-profile command that makes the rows on real data (``data_roots`` of notebook 02; the
#: cpu profile's with ``--profile cpu``).
REAL_DATA_COMMAND = (
    "python -m fedpl_core reproduce --profile paper --notebooks 02 --output reports/paper "
    '-p data_roots \'{"Task 2": "<HAM10000 folder>"}\''
)


def _data_of(r: pd.Series) -> str:
    data = r["data"] if pd.notna(r.get("data")) and r.get("data") else r.get("cpu_data")
    return "" if data is None or pd.isna(data) else str(data)


def data_sentence(df: pd.DataFrame) -> str:
    """Which rows of :func:`both_profiles` ran on real data (not the built-in data), and how to
    make them: a plain ``make reproduce`` runs on the built-in data only."""
    data = df.apply(_data_of, axis=1)
    real = df[(data != "") & (data != "built-in")]
    if real.empty:
        return "Every claim ran on the built-in data: `make reproduce` and `make reproduce-paper` make them all."
    named = sorted(set(data[real.index]))

    def listed(numbers: list[int]) -> str:  # "13", "13 and 14", "1, 2 and 5"
        words = [str(n) for n in numbers]
        return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"

    rows = "; ".join(
        f"{paper} {'row' if len(g) == 1 else 'rows'} {listed(list(g['_row']))}"
        for paper, g in real.groupby("paper", sort=False)
    )
    return (
        f"Every claim ran on the built-in data except {len(real)} on {', '.join(named)} ({rows}). Those need "
        f"the data set's folder ([Data](data.md) says where to get it) and notebook 02's `data_roots`: "
        f"`{REAL_DATA_COMMAND}` (and `--profile cpu --output reports` for the cpu profile's column); "
        "`make reproduce` and `make reproduce-paper` alone run the built-in rows only."
    )


#: What the findings page says about the tests as a family.
MULTIPLICITY = (
    "**Many tests.** A paper's claims are tested together, so by chance alone about one in twenty true "
    "nulls gives p < 0.05. The verdicts use each claim's own p, fixed before the runs; *Holm p* beside it "
    "is Holm's adjustment over the paper's claims, which keeps the chance of any false *reproduced* or "
    "*opposite* within a paper at 5 %. A verdict whose Holm p is 0.05 or more may be one of its family's "
    "chance results."
)


def findings_page(figures: str | Path | None, paper_figures: str | Path | None = None, site: bool = True) -> str:
    """The Markdown of the findings page: each claim's verdict in the paper profile (the
    headline, its tables in ``paper_figures``, default ``<figures>/paper``) beside the cpu
    profile's (the quick teaching run, its tables in ``figures``), one row a claim, each linked
    to where it is shown (:func:`evidence_links`: the site's notebooks, or the checkout's
    ``reports/`` with ``site=False``), each measured mechanism said once under its paper's table."""
    df = both_profiles(figures, paper_figures)
    lines = [
        *(["---", "hide-toc: true", "---", ""] if site else []),  # the theme's page column, for the tables
        "# Findings",
        "",
        "Every headline claim of the four papers, tested on the committed runs in two profiles: the **paper "
        "profile** (the papers' own training schedules on the small model, with seeds chosen for power: the "
        "headline; its difference, interval, p, seeds, MDE, power and verdict) and the **cpu profile** (10 to "
        "16 short rounds and 3 seeds: the quick teaching run; its difference and verdict). Each row links its "
        "numbers to the notebook that made them (the paper profile's difference to the paper profile's "
        "notebook, the cpu column to the cpu notebook, where its p is) and *shown in* to the sections and "
        "benchmarks that show why; *(M1)* beside a verdict names the mechanism measured, said once under each "
        "paper's table.",
        "",
    ]
    if df.empty:
        return "\n".join(lines + [RULE, "", "No headline table was found: run the notebooks (`make reproduce`).", ""])
    df = df.assign(_row=df.groupby("paper", sort=False).cumcount() + 1, _why=not_run(df))
    ran = df["verdict"].notna()
    if ran.any():
        lines.append(f"Of {int(ran.sum())} claims in the paper profile: {counts_sentence(df.loc[ran, 'verdict'])}.")
    else:
        lines.append("The paper profile has not been run yet: only the cpu profile's verdicts are shown.")
    cpu = df["cpu_verdict"].notna()
    if cpu.any():
        lines.append(f"Of {int(cpu.sum())} claims in the cpu profile: {counts_sentence(df.loc[cpu, 'cpu_verdict'])}.")
    papers = list(dict.fromkeys(df["paper"]))
    lines += [
        "",
        "The claims of "
        + ", ".join(f"[{p}](#{_slug(p)})" for p in papers)
        + "; then [the numeric platform](#the-numeric-platform).",
    ]
    lines += ["", data_sentence(df), "", RULE, "", MULTIPLICITY, ""]
    lines += [
        "A difference is in points of the metric (AUROC x 100 unless the claim names another), paired over "
        'seeds; *paper* is the gain the paper reports; *seeds* counts the seeds paired ("12 × 3 settings": '
        "the seeds of three settings pooled)."
    ]
    if ran.any() and (df["_why"] != "").any():
        lines += [
            "",
            f"*{NOT_RUN[0]}*: the paper profile runs the claim's notebook without the claim's runs, to keep within "
            "its time budget ([the paper profile](notebooks.md#the-paper-profile) lists what it cuts); "
            f"*{NOT_RUN[1]}*: the paper profile has not run the claim's notebook.",
        ]
    lines.append("")
    head = (
        "| # | claim | data | paper | difference (95 % CI) | p (Holm p) | seeds | MDE | power | verdict (why) "
        "| cpu profile | shown in |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    )
    for paper, g in df.groupby("paper", sort=False):
        mechanisms = list(dict.fromkeys(m for m in g["mechanism"] if pd.notna(m) and m))
        lines += [f"## {paper}", "", *(["```{table}", ":class: findings", ""] if site else []), *head]
        for _, r in g.iterrows():
            two = " against " in str(r.get("setting") or r.get("cpu_setting") or "")
            contrast = r["contrast"] if pd.notna(r.get("contrast")) else r.get("cpu_contrast")
            claim = _cell(r["claim"]) + (f" ({_cell(contrast)})" if two and pd.notna(contrast) else "")
            if not two:
                setting = _cell(r["setting"]) if pd.notna(r["verdict"]) else _cell(r["cpu_setting"])
                claim += f" ({setting})" if setting else ""
            gain = _minus(_num(r["paper_gain"], "{:+.1f}"))
            if pd.notna(r["verdict"]):
                target = headline_link(r["evidence"], HEADLINE_PROFILE, site)
                run = f"[{_fmt_row(r)}]({target})" if target else _fmt_row(r)
                p = _p_pair(r["p"], r["p_holm"])
                seeds = seeds_text(r.get("seeds"), r.get("settings"), r["pairs"])
                mde, pw, v = _num(r["mde"]), _num(r["power"], "{:.0%}"), f"**{r['verdict']}**"
            else:
                run, p, seeds, mde, pw, v = r["_why"], "", "", "", "", ""
            if pd.notna(r["cpu_verdict"]):
                cp = f"{_signed(r['cpu_diff'])}: {r['cpu_verdict']}"
                target = headline_link(r["evidence"], "cpu", site)
                cp = f"[{cp}]({target})" if target else cp
            else:
                cp = "not run"
            why = f"M{mechanisms.index(r['mechanism']) + 1}" if r["mechanism"] in mechanisms else ""
            shown = ", ".join(
                evidence_links(r["evidence"], HEADLINE_PROFILE if pd.notna(r["verdict"]) else "cpu", site)
            )
            lines.append(
                f"| {r['_row']} | {claim} | {_cell(_data_of(r))} | {gain} | {run} | {p} | {seeds} | {mde} | {pw} "
                f"| {v}{f' ({why})' if why else ''} | {cp} | {shown} |"
            )
        lines += ["```", ""] if site else [""]
        for i, m in enumerate(mechanisms, 1):
            numbers = list(g.loc[g["mechanism"] == m, "_row"])
            text = _cell(m) if m.startswith("cpu") else _cell(m[:1].upper() + m[1:])
            lines.append(
                f"- **M{i}** ({'row' if len(numbers) == 1 else 'rows'} {', '.join(_ranges(numbers))}). {text}."
            )
        lines += [""] if mechanisms else []
    lines += ["## The numeric platform", "", platform_paragraph(), ""]
    if site:  # the site links each page's first uses itself (fedpl_core.report.sphinx_glossary)
        return "\n".join(lines)
    from .glossary import link_terms_markdown

    return link_terms_markdown("\n".join(lines), target="glossary.md")


def _ranges(numbers: Sequence[int]) -> list[str]:
    """``[1, 2, 3, 5]`` -> ``["1-3", "5"]``."""
    out: list[list[int]] = []
    for n in numbers:
        if out and n == out[-1][-1] + 1:
            out[-1].append(n)
        else:
            out.append([n])
    return [f"{g[0]}-{g[-1]}" if len(g) > 2 else ", ".join(map(str, g)) for g in out]


#: The README's generated block lies between these two lines.
README_START, README_END = (
    "<!-- findings: generated by python -m fedpl_core.report.findings -->",
    "<!-- findings: end -->",
)


def readme_block(figures: str | Path | None, paper_figures: str | Path | None = None) -> str:
    """One screen for the README's front page: each claim's verdict in the paper profile (the
    headline) beside the cpu profile's, the data it ran on, and the counts of both."""
    df = both_profiles(figures, paper_figures)
    if df.empty:
        return "No headline table was found: run the notebooks (`make reproduce`)."
    lines = ["| paper | claim | data | paper profile | verdict | cpu profile |", "|---|---|---|---|---|---|"]
    for _, r in df.assign(_why=not_run(df)).iterrows():
        if pd.notna(r["verdict"]):
            p = p_text(r["p"]) if pd.notna(r["p"]) else "no test"
            seeds = seeds_text(r.get("seeds"), r.get("settings"), r["pairs"], unit="seeds")
            run, v = f"{_signed(r['diff'])} ({p}, {seeds})", str(r["verdict"])
        else:
            run, v = r["_why"], ""
        cpu = f"{_signed(r['cpu_diff'])}: {r['cpu_verdict']}" if pd.notna(r["cpu_verdict"]) else "not run"
        lines.append(f"| {r['paper']} | {_cell(r['claim'])} | {_cell(_data_of(r))} | {run} | {v} | {cpu} |")
    ran, cpu = df["verdict"].notna(), df["cpu_verdict"].notna()
    counts = [f"the paper profile's {int(ran.sum())}: {counts_sentence(df.loc[ran, 'verdict'])}"] if ran.any() else []
    if cpu.any():
        counts.append(f"the cpu profile's {int(cpu.sum())}: {counts_sentence(df.loc[cpu, 'cpu_verdict'])}")
    lines += ["", f"Claims in {'; in '.join(counts)} (differences in points, paired over seeds)."]
    from .glossary import link_terms_markdown

    return link_terms_markdown("\n".join(lines), target="docs/glossary.md")  # GitHub: each name's first use


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
        "(docs/findings.md, its links to the checkout's executed notebooks; the site's links to its "
        "own pages) from the headline tables.",
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
        f.write(findings_page(a.figures, a.paper_figures, site=False))
    print(f"{a.page}: written")
    return 0


__all__ = [
    "COLUMNS",
    "FAMILY_COLUMNS",
    "Claim",
    "tested_claims",
    "headline_table",
    "headline_view",
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
    "evidence_links",
    "headline_link",
    "seeds_text",
    "data_sentence",
    "readme_block",
    "update_readme",
]

if __name__ == "__main__":
    raise SystemExit(main())
