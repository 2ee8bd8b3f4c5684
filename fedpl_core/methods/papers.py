"""The papers a method may belong to: the one place for each paper's facts.

A method class names its paper in its ``paper`` attribute (:class:`~fedpl_core.methods.base.Method`);
what the paper is (its name, venue, notebook, the data and tasks it studies, its page) is here,
read by the figures and tables (:mod:`fedpl_core.report.names`), by the catalogue that
``docs/methods.md`` shows and by ``python -m fedpl_core methods`` (through the generated index,
:mod:`fedpl_core.methods.catalog`).
"""

from __future__ import annotations

from dataclasses import dataclass

BOTH_TASKS = ("multilabel", "multiclass")
MULTILABEL = ("multilabel",)


@dataclass(frozen=True)
class Paper:
    """One paper (or the common baselines) as a reader sees it."""

    #: what a method class's ``paper`` attribute says
    key: str
    #: the name a heading shows
    name: str
    #: where it appeared (empty for the common baselines)
    venue: str
    #: the notebook that reproduces it, without ``.ipynb`` (empty: every paper's)
    notebook: str
    #: the data it studies, in a few words
    data: str
    #: the tasks it studies (a method defined for fewer says for which)
    tasks: tuple[str, ...]
    #: its page of the documentation, relative to ``docs/``
    page: str

    @property
    def heading(self) -> str:
        """ "FedPSL (IEEE TMI; notebook 01): multi-label chest X-rays"."""
        if not self.venue:
            return f"{self.name} ({self.data})"
        return f"{self.name} ({self.venue}; notebook {self.notebook[:2]}): {self.data}"


#: The papers in the order of the notebooks, the common baselines first.
PAPERS: dict[str, Paper] = {
    p.key: p
    for p in (
        Paper("baseline", "Common baselines", "", "", "every paper", BOTH_TASKS, "papers/baselines.md"),
        Paper("FedPSL", "FedPSL", "IEEE TMI", "01_fedpsl", "multi-label chest X-rays", MULTILABEL, "papers/fedpsl.md"),
        Paper(
            "FedLSM",
            "FedLSM",
            "MICCAI 2023",
            "02_fedlsm",
            "multi-label chest X-rays (Task 1), single-label skin lesions (Task 2)",
            BOTH_TASKS,
            "papers/fedlsm.md",
        ),
        Paper(
            "Surgical Aggregation",
            "Surgical Aggregation",
            "ML4H 2024",
            "03_surgical_aggregation",
            "multi-label chest X-rays, different label spaces",
            MULTILABEL,
            "papers/surgical.md",
        ),
        Paper(
            "FedMLP",
            "FedMLP",
            "MICCAI 2024",
            "04_fedmlp",
            "multi-label head CT and chest X-rays",
            MULTILABEL,
            "papers/fedmlp.md",
        ),
    )
}

__all__ = ["Paper", "PAPERS", "BOTH_TASKS", "MULTILABEL"]
