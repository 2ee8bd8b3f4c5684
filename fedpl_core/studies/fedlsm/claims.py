"""FedLSM's claims as :class:`~fedpl_core.report.findings.Claim` objects, tested on notebook
02's runs by :mod:`fedpl_core.report.findings`: the comparisons of its claims table
(:func:`comparison_claims`, one family: :func:`claims_table`, :func:`claims_sentences`) and the
headline claims of the findings page (:func:`headline_claims`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ...nn.metrics import metric_name
from ...report.findings import Claim, family_table, reproduced_count
from ...report.names import display_name
from .paper import ABLATION, CLAIM_METRICS, PAPER_TABLE1, PAPER_TABLE2, PAPER_TABLE3, TABLE2_METRICS, TASKS

#: The paper's table of each task, by our method labels (Table 1: NIH; Table 2: ISIC 2018 / HAM10000).
_PAPER_TABLES = {"Task 1": PAPER_TABLE1, "Task 2": PAPER_TABLE2}
#: The paper's column of a metric key ("auroc_mean" -> "AUC").
_COLUMN = {m: col for col, m in TABLE2_METRICS.items()}


def _reported(where: str, a: str, b: str, rows: dict[str, dict[str, float]], metric: str = "auroc_mean") -> dict:
    """A claim's ``paper_gain`` and ``paper_source``: ``a`` minus ``b`` in points of ``metric``
    from the paper's ``rows`` (by our labels, fractions of 1), and where, with both numbers."""
    col = _COLUMN[metric]
    x, y = rows[a][col], rows[b][col]
    return {
        "paper_gain": round(100 * (x - y), 2),
        "paper_source": f"{where}, {col}: {a} {100 * x:.1f} − {b} {100 * y:.1f}",
    }


def _ablation_rows(task: str) -> dict[str, dict[str, float]]:
    """The paper's Table 3 rows of ``task``, with FedLSM's own row (that of Tables 1 / 2)."""
    lsm = display_name("fedlsm")
    return {lsm: _PAPER_TABLES[task][lsm], **PAPER_TABLE3[task]}


def comparison_claims(tasks: Sequence[str] = TASKS) -> list[Claim]:
    """The paper's claim "FedLSM above FedAvg and FedAvg*" claim by claim: per task (a key of
    the frames), metric (:data:`CLAIM_METRICS`) and reference (the paper's FedAvg trains with
    the partial loss: FedAvg-PL), last round."""
    lsm = display_name("fedlsm")
    refs = [display_name(k) for k in ("fedavg_pl", "fedavg_star")]
    return [
        Claim(
            "FedLSM",
            f"{task}, {metric_name(metric)}: {lsm} above {ref}",
            lsm,
            ref,
            task,
            metric=metric,
            evidence="02 § Does FedLSM beat FedAvg and FedAvg*?",
        )
        for task in tasks
        for metric in CLAIM_METRICS[task]
        for ref in refs
    ]


def claims_table(results: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The paper's claim "FedLSM above FedAvg and FedAvg*" in numbers: :func:`comparison_claims`
    of the tasks in ``results`` tested as one family (:func:`fedpl_core.report.findings.family_table`):
    per task and metric, FedLSM minus each reference (``vs``), paired on the seed, the sentence
    :func:`~fedpl_core.report.tables.describe_difference` writes, and Holm's p over the family."""
    t = family_table(comparison_claims(list(results)), results)
    return t.rename(columns={"frame": "task", "b": "vs"})[
        ["task", "metric", "vs", "diff (points)", "sd", "95 % CI", "pairs", "p", "sentence", "p (Holm)"]
    ]


def claims_sentences(claims: pd.DataFrame) -> list[str]:
    """Each claim of :func:`claims_table` as a sentence, then how many the run reproduces
    (p < 0.05 in the paper's direction), before and after Holm's correction
    (:func:`fedpl_core.report.findings.reproduced_count`)."""
    out = [f"{r['task']}, {metric_name(r['metric'])}: {r['sentence']}" for _, r in claims.iterrows()]
    if len(claims):
        out.append(reproduced_count(claims, "FedLSM"))
    return out


def headline_claims() -> list:
    """FedLSM's headline claims (:class:`~fedpl_core.report.findings.Claim`), tested by
    notebook 02 on its runs, last round: ``frames`` keys ``"Task 1"`` and ``"Task 2"`` (Tables
    1-2), ``"ablation Task 1"`` / ``"ablation Task 2"`` (Table 3) and ``"HAM10000"`` (Table 2's
    methods on the real images, when the notebook was given them)."""
    lsm, avg, star = (display_name(k) for k in ("fedlsm", "fedavg_pl", "fedavg_star"))
    cpu = (
        "cpu profile: at the paper's thresholds the teacher labels nothing in the notebook's 10 rounds, so FedLSM "
        "is its strong-view training without pseudo-labels. "
    )
    pl1 = cpu + (
        "Paper profile (50 rounds of 200 local iterations): the teacher engages in round 2-5 of every seed, and "
        "its positives are the weighted-BCE student's false positives on the unknown classes; AWPA weights head "
        "row c by each client's count of positive labels and pseudo-labels, so a client that pseudo-labels c on "
        "most of its images outweighs those that know c (in a pilot on data seed 101: 22 % of the head weight at "
        "once, 56 % by round 12). By round 15-40 of every seed the outputs no longer separate any class (AUROC "
        "0.500 in all 14), the training loss has risen from about 3 at round 5 to 30-38 at round 50, and the "
        "pseudo-labels are almost all positive (66-81 % of the unknown entries labelled; accuracy 0.064-0.069, "
        "equal to the positives' precision). FedLSM ends at 0.500-0.508"
    )
    pl2 = cpu + (
        "Paper profile (50 rounds of 30 local iterations): the teacher engages in round 8-16, and its "
        "pseudo-labels are right: at round 50 it labels 14-22 % of the images whose class the client does not "
        "identify, 97-99 % of them correctly, so FedLSM trains on more images than FedAvg*"
    )
    where_pl = "02 § Why it works (or not); benchmarks/fedlsm_teacher.py; benchmarks/fedlsm_strong_view.py"
    drift = (
        "TDMA's gain needs unknown labels trained as negatives and long local training: the rows it drops drift "
        "further towards 'no' the longer clients train between aggregations"
    )
    out = [
        Claim(
            "FedLSM",
            f"Table 1: {lsm} above {avg}",
            lsm,
            avg,
            "Task 1",
            mechanism=pl1,
            evidence=where_pl,
            **_reported("Table 1", lsm, avg, PAPER_TABLE1),
        ),
        Claim(
            "FedLSM",
            f"Table 1: {lsm} above {star}",
            lsm,
            star,
            "Task 1",
            mechanism=pl1,
            evidence=where_pl,
            **_reported("Table 1", lsm, star, PAPER_TABLE1),
        ),
        Claim(
            "FedLSM",
            f"Table 1: TDMA lifts FedAvg ({star} above {avg})",
            star,
            avg,
            "Task 1",
            mechanism=drift,
            evidence="02 § Which FedAvg?; benchmarks/fedlsm_tdma_drift.py",
            **_reported("Table 1", star, avg, PAPER_TABLE1),
        ),
        Claim(
            "FedLSM",
            f"Table 2: {lsm} above {avg} in AUC",
            lsm,
            avg,
            "Task 2",
            mechanism=pl2,
            evidence=where_pl,
            **_reported("Table 2", lsm, avg, PAPER_TABLE2),
        ),
        Claim(
            "FedLSM",
            f"Table 2: {lsm} above {star} in AUC",
            lsm,
            star,
            "Task 2",
            mechanism=pl2,
            evidence=where_pl,
            **_reported("Table 2", lsm, star, PAPER_TABLE2),
        ),
        Claim(
            "FedLSM",
            f"Table 2: {lsm} above {star} in F1",
            lsm,
            star,
            "Task 2",
            metric="f1",
            mechanism=pl2,
            evidence=where_pl,
            **_reported("Table 2", lsm, star, PAPER_TABLE2, "f1"),
        ),
    ]
    for task in TASKS:
        out += [
            Claim(
                "FedLSM",
                f"Table 3 ({task}): {lsm} above {lab}",
                lsm,
                lab,
                f"ablation {task}",
                evidence="02 § Table 3: ablation",
                **_reported(f"Table 3 ({task})", lsm, lab, _ablation_rows(task)),
            )
            for lab, _ in ABLATION[1:]
        ]
    ham = (
        "with the engine's softmax over all 7 classes a client trains the rows of the classes it does not "
        "identify as negatives, and TDMA drops those rows"
    )
    out += [
        Claim(
            "FedLSM",
            f"HAM10000: {lsm} above {star} in AUC",
            lsm,
            star,
            "HAM10000",
            evidence="02 § Real data: Tables 1-2; benchmarks/fedlsm_ham10000.py",
            **_reported("Table 2 (HAM10000)", lsm, star, PAPER_TABLE2),
        ),
        Claim(
            "FedLSM",
            f"HAM10000: {star} above {avg} in AUC",
            star,
            avg,
            "HAM10000",
            mechanism=ham,
            evidence="02 § Does TDMA help FedAvg on HAM10000; benchmarks/fedlsm_ham_tdma.py",
            **_reported("Table 2 (HAM10000)", star, avg, PAPER_TABLE2),
        ),
    ]
    return out
