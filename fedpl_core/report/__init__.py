"""What a reader sees: paper-style tables with paired tests, confidence intervals and Holm's
correction (:mod:`~fedpl_core.report.tables`), figures (:mod:`~fedpl_core.report.plotting`),
the names they show for methods, metrics and classes (:mod:`~fedpl_core.report.names`),
each paper's headline claims and the findings page (:mod:`~fedpl_core.report.findings`), and
the documentation site (:mod:`~fedpl_core.report.docs`, ``make docs``: Sphinx + MyST-NB,
offline; notebooks sanitised by :mod:`~fedpl_core.report.sanitize` and pages checked by
:mod:`~fedpl_core.report.sphinx_safety`; the run record :mod:`~fedpl_core.report.record`).
Imports nothing at package level."""
