"""A Sphinx extension: napoleon reads the docstrings of functions, classes and modules only.

Loaded by the site's ``docs/conf.py`` (``extensions = [..., "fedpl_core.report.sphinx_docstrings"]``).
``sphinx.ext.napoleon`` turns the Google-style sections of a docstring (``Args:``,
``Returns:``, ``Raises:``, ``Attributes:``) into Sphinx fields.  It also reads the first line
of an attribute's, a module constant's or a property's docstring as ``type: description``.
The package writes those docstrings as plain sentences (a dataclass field's type is its
annotation, which autodoc shows), so napoleon would cut each at its first colon and show the
words before it as the type: ``Data source: a built-in synthetic set, ...`` would read
"Type: Data source".

This extension sets napoleon up and then hands it every docstring but those of
:data:`WHOLE` objects, which autodoc shows as written.  The ``Attributes:`` section of a class
docstring is part of the class's docstring, so napoleon still reads it.
"""

from __future__ import annotations

from typing import Any

#: The kinds of object (autodoc's ``what``) whose docstrings napoleon is not given.
WHOLE = frozenset({"attribute", "data", "property"})


def _napoleon_listener(app) -> Any:
    """The listener napoleon connected to ``autodoc-process-docstring``."""
    from sphinx.errors import ExtensionError
    from sphinx.ext import napoleon

    found = [
        listener
        for listener in app.events.listeners.get("autodoc-process-docstring", [])
        if listener.handler is napoleon._process_docstring
    ]
    if len(found) != 1:
        raise ExtensionError(
            "fedpl_core.report.sphinx_docstrings: napoleon's autodoc-process-docstring listener was not found; "
            "this version of Sphinx sets it up differently"
        )
    return found[0]


def setup(app):
    from sphinx.ext import napoleon

    app.setup_extension("sphinx.ext.napoleon")
    listener = _napoleon_listener(app)

    def sections(app, what: Any, name: str, obj: Any, options: Any, lines: list[str]) -> None:
        if what not in WHOLE:
            napoleon._process_docstring(app, what, name, obj, options, lines)

    app.disconnect(listener.id)
    app.connect("autodoc-process-docstring", sections, priority=listener.priority)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
