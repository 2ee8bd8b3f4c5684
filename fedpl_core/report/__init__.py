"""What a reader sees: paper-style tables with paired tests, confidence intervals and Holm's
correction (:mod:`~fedpl_core.report.tables`), figures (:mod:`~fedpl_core.report.plotting`),
the names they show for methods, metrics and classes (:mod:`~fedpl_core.report.names`) and the static site of the executed notebooks (:mod:`~fedpl_core.report.site`,
``make report``).  Imports nothing at package level."""
