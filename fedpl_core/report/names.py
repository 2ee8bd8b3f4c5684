"""What a reader sees instead of a registry key: methods, metrics and classes by name.

Each fact lives in one place and is only read here:

* a method's name, colour and paper: the class attributes ``display_name``, ``color`` and
  ``paper`` of its class (:class:`fedpl_core.methods.base.Method`); a paper's facts:
  :data:`fedpl_core.methods.papers.PAPERS`;
* a metric's name: :data:`fedpl_core.nn.metrics.METRIC_NAMES`;
* a class's name: its data set's class name with ``_`` as a space ("Pleural Thickening");
* a client's name: :func:`fedpl_core.partitions.report.client_names`.

A study's own label for a variant ("w/o AWPA", "TADL, batch 64", "FL + SA (FedBN+)") is
shown as it is; a registry key (``fedavg_star``) never is: :func:`display_name` turns it
into the class's name.  The figures (:mod:`fedpl_core.report.plotting`) and the tables
(:mod:`fedpl_core.report.tables`) map every label and metric through these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..methods.papers import PAPERS as _PAPERS
from ..nn.metrics import METRIC_NAMES, metric_name

#: The papers a method may belong to (its class's ``paper``), in the order of the notebooks: the
#: keys of :data:`fedpl_core.methods.papers.PAPERS`, where each paper's facts are.
PAPERS = tuple(_PAPERS)


def method_classes() -> dict[str, type]:
    """``{registry key: class}`` of every registered method (the optional modules loaded)."""
    from ..methods import METHODS, available_methods

    available_methods()
    return dict(METHODS)


def method_class(label: str, method: str | None = None) -> type | None:
    """The method class a label stands for: ``method`` (a registry key, e.g. the ``method``
    column of ``run_many``'s frame) when given, else the label itself when it is a registry
    key or a class's ``display_name``, else the label without a trailing ``" (...)"`` or
    ``", ..."`` variant note ("FedAvg-PL (FedBN+)", "FedAvg (wBCE), batch 16": the part
    before names the method); None when none matches (a study's own label such as "FL").

    >>> method_class("fedavg_star").display_name, method_class("FedAvg*").name, method_class("FL")
    ('FedAvg*', 'fedavg_star', None)
    >>> method_class("FedAvg (wBCE), batch 16").name, method_class("FL + SA (FedBN+)", "surgical").name
    ('fedavg_wbce', 'surgical')
    """
    classes = method_classes()
    if method is not None and str(method) in classes:
        return classes[str(method)]
    label = str(label)
    by_name = {c.display_name: c for c in classes.values() if c.display_name}
    for cand in (
        label,
        label.rsplit(", ", 1)[0],
        label[: label.rindex(" (")] if label.endswith(")") and " (" in label else label,
    ):
        if cand in classes:
            return classes[cand]
        if cand in by_name:
            return by_name[cand]
    return None


def display_name(label: str) -> str:
    """What a reader sees for a method label: a registry key's class ``display_name``
    ("fedavg_star" -> "FedAvg*"); any other label (a display name, a study's own variant
    label) as it is.

    >>> display_name("fedavg"), display_name("oracle_wbce"), display_name("TADL, batch 64")
    ('FedAvg', 'Oracle (wBCE)', 'TADL, batch 64')
    """
    classes = method_classes()
    label = str(label)
    return classes[label].display_name if label in classes and classes[label].display_name else label


def display_names(labels: Iterable[str]) -> list[str]:
    """:func:`display_name` of each label, in order."""
    return [display_name(lab) for lab in labels]


def class_name(name: str) -> str:
    """A data set's class name as a reader sees it: ``_`` as a space.

    >>> class_name("Pleural_Thickening")
    'Pleural Thickening'
    """
    return str(name).replace("_", " ")


def by_paper() -> dict[str, list[str]]:
    """``{paper: [registry keys]}`` (:data:`PAPERS` first, in that order, then any other
    paper a class names), each list sorted; read from the classes' ``paper`` attribute."""
    out: dict[str, list[str]] = {p: [] for p in PAPERS}
    for key, cls in sorted(method_classes().items()):
        out.setdefault(cls.paper or "", []).append(key)
    return {p: keys for p, keys in out.items() if keys}


def registry_words() -> set[str]:
    """The words no figure or table a reader sees may hold as a whole text (case counts):
    every method registry key, every metric key of :data:`~fedpl_core.nn.metrics.METRIC_NAMES`
    whose name differs from it (``auroc_mean``, ``map``; not ``accuracy``), and the frame
    columns ``label`` / ``value``."""
    return set(method_classes()) | {k for k, v in METRIC_NAMES.items() if v != k} | {"label", "value", "bacc", "ap"}


def rename_methods(labels: Mapping[str, str] | Iterable[str]) -> dict[str, str]:
    """``{label: display name}`` for the labels that change (registry keys), for
    ``DataFrame.rename``."""
    return {lab: display_name(lab) for lab in labels if display_name(lab) != lab}


__all__ = [
    "PAPERS",
    "method_classes",
    "method_class",
    "display_name",
    "display_names",
    "class_name",
    "by_paper",
    "registry_words",
    "rename_methods",
    "metric_name",
    "METRIC_NAMES",
]
