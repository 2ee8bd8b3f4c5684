"""What the notebooks' cells call to show a table or a few sentences: the cells call a study
function that builds a table or sentences, then one of these to save and display it.

* :func:`show`: save a table (``figures/<stem>.csv/.md/.tex``) and display it under a caption;
* :func:`bullets`: sentences as a Markdown list;
* :func:`claim`: one sentence with the verdict a paper's claim gets from a paired
  comparison (:func:`fedpl_core.report.tables.verdict`: reproduced, opposite or not
  distinguishable), never "success" or "failure" for a gap whose interval spans 0;
* :func:`join`: names as prose ("A, B and C"), never a Python list.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..report.tables import describe_difference, save_table, verdict


def join(items: Iterable[Any], word: str = "and") -> str:
    """``items`` as prose: ``"a"``, ``"a and b"``, ``"a, b and c"`` (``word``: "and" / "or").

    >>> join([10, 8, 8]), join(["x"]), join([])
    ('10, 8 and 8', 'x', '')
    """
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {word} {items[-1]}"


def claim(d: dict, claim_text: str, direction: int = 1, pairs: str = "runs") -> str:
    """One sentence on a paper's claim from :func:`~fedpl_core.report.tables.paired_difference`
    ``d`` (``a`` minus ``b``): ``"<claim_text>: <verdict> here; <the difference as
    describe_difference writes it>."``  ``direction`` 1: the claim is "a above b"; -1: below.

    >>> claim({"a": "FedMLP", "b": "FedAvg", "diff": 1.0, "n": 3, "p": 0.4, "ci": (-2.0, 4.0)},
    ...       "FedMLP above FedAvg (the paper's Table 1)")
    "FedMLP above FedAvg (the paper's Table 1): not distinguishable here; FedMLP is 1.0 points above FedAvg (95 % CI -2.0 to 4.0; paired t-test over 3 runs: p = 0.4, not significant at 0.05)."
    """
    return f"{claim_text}: {verdict(d, direction)} here; {describe_difference(d, pairs=pairs)}."


def bullets(sentences: Sequence[str]) -> str:
    """``sentences`` as a Markdown bullet list (one sentence, or none: plain text)."""
    sentences = [s for s in sentences if s]
    if len(sentences) <= 1:
        return "".join(sentences)
    return "\n".join(f"* {s}" for s in sentences)


def say(sentences: Sequence[str] | str) -> None:
    """Display ``sentences`` (a list: :func:`bullets`) as Markdown in the notebook."""
    from IPython.display import Markdown, display

    display(Markdown(sentences if isinstance(sentences, str) else bullets(sentences)))


def show(table, stem: str, caption: str, folder: Any = None) -> None:
    """Save ``table`` as ``<figures folder>/<stem>.csv/.md/.tex``
    (:func:`~fedpl_core.report.tables.save_table`) and display it under a bold ``caption``."""
    from IPython.display import Markdown, display

    save_table(table, stem, folder=folder)
    display(Markdown(f"**{caption}**"))
    display(table)


__all__ = ["join", "claim", "bullets", "say", "show"]
