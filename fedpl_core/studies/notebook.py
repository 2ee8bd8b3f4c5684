"""What the notebooks' cells call to show a table or a few sentences: the cells call a study
function that builds a table or sentences, then one of these to save and display it.  A
claim's sentence comes from :func:`fedpl_core.report.findings.family_table`, the one place a
claim is tested.

* :func:`readable_tables`: every table a notebook displays from then on, as a learner reads it
  (:func:`fedpl_core.report.tables.readable`: whole text, p to 2-3 digits, counts as integers,
  an explained dash where there is no value);
* :func:`show`: save a table (``figures/<stem>.csv/.md/.tex``) and display it under a caption;
* :func:`bullets`: sentences as a Markdown list;
* :func:`join`: names as prose ("A, B and C"), never a Python list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..report.tables import save_table


def join(items: Iterable[Any], word: str = "and") -> str:
    """``items`` as prose: ``"a"``, ``"a and b"``, ``"a, b and c"`` (``word``: "and" / "or").

    >>> join([10, 8, 8]), join(["x"]), join([])
    ('10, 8 and 8', 'x', '')
    """
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {word} {items[-1]}"


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


def readable_tables() -> None:
    """Display every pandas table of this notebook's kernel from now on as a learner reads it
    (:func:`fedpl_core.report.tables.readable`), in Jupyter's HTML and in text; outside a
    kernel, nothing."""
    import pandas as pd

    from ..report.tables import readable

    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with Jupyter
        return
    shell = get_ipython()
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, lambda df: readable(df)._repr_html_())
    formatters["text/plain"].for_type(pd.DataFrame, lambda df, printer, cycle: printer.text(repr(readable(df))))


def show(table, stem: str, caption: str, folder: Any = None) -> None:
    """Save ``table`` as ``<figures folder>/<stem>.csv/.md/.tex``
    (:func:`~fedpl_core.report.tables.save_table`) and display it under a bold ``caption``."""
    from IPython.display import Markdown, display

    save_table(table, stem, folder=folder)
    display(Markdown(f"**{caption}**"))
    display(table)


__all__ = ["join", "bullets", "say", "show", "readable_tables"]
