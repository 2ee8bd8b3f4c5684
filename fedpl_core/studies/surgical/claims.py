"""Surgical Aggregation's headline claims as :class:`~fedpl_core.report.findings.Claim`
objects, which notebook 03 tests on its runs (:func:`fedpl_core.report.findings.headline_table`;
the non-IID claims on :func:`~fedpl_core.studies.surgical.class_scores.column_scores`)."""

from __future__ import annotations

from ...report.findings import Claim


def headline_claims() -> list:
    """Surgical Aggregation's headline claims (:class:`~fedpl_core.report.findings.Claim`),
    tested by notebook 03 on its runs with the models selected on the clients' validation
    loss (the paper's protocol): ``frames`` keys ``"a"`` and ``"b"`` (the two ablations, paired
    over every setting and seed) and ``"non-IID"`` (:func:`column_scores` of the
    class-heterogeneous runs)."""
    iid = (
        "in an IID split FL trains each class on every image with some negatives wrong, FL + SA only on the "
        "images of the clients that label it"
    )
    out = [
        Claim(
            "Surgical Aggregation",
            f"Ablation ({k}): FL + SA above {ref}",
            "FL + SA",
            ref,
            k,
            which="best",
            mechanism=iid if ref == "FL" else "",
            evidence=f"notebook 03, ablation ({k})",
        )
        for k in ("a", "b")
        for ref in ("FL", "FL + PL")
    ]
    out += [
        Claim(
            "Surgical Aggregation",
            f"Non-IID: FL + SA above FL + PL on {src}'s unique classes ({s})",
            f"FL + SA ({s})",
            f"FL + PL ({s})",
            "non-IID",
            metric=f"{src}: unique",
            which="best",
            mechanism="with two clients FL + PL's only handicap on a unique class is that its head row is "
            "averaged with the other client's untouched row",
            evidence="notebook 03, round by round",
        )
        for src in ("NIH", "CheXpert")
        for s in ("FedAvg", "FedBN+")
    ]
    return out
