"""Sphinx configuration of the fedpl documentation site (``make docs``).

Built offline: MathJax is served from the site itself (sphinx-mathjax-offline, MathJax 3) with
its ``ui/safe`` extension (no ``javascript:`` link, no style or class from math), the theme
(furo) loads no remote font or script, and search is Sphinx's own index.  The executed
notebooks are staged and sanitised by :mod:`fedpl_core.report.docs` before Sphinx reads them.
"""

import json as _json
from pathlib import Path as _Path

project = "fedpl"
author = "the fedpl developers"
copyright = "2026, the fedpl developers"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the Google-style "Args:" / "Returns:" sections of the docstrings
    "fedpl_core.report.sphinx_docstrings",  # ... of functions and classes only: attribute docstrings stay whole
    "sphinx-mathjax-offline",
    "fedpl_core.report.sphinx_safety",
    "fedpl_core.report.sphinx_glossary",  # each page's first use of a glossary term links to its entry
]
nb_execution_mode = "off"  # the notebooks come executed (reports/); nothing runs while building
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"  # no type-only lists for undocumented arguments
autodoc_preserve_defaults = True  # defaults as written (ROOT / "reports"), not evaluated (the builder's own paths)
suppress_warnings = ["mystnb.unknown_mime_type"]

# MathJax's own guard: ui/safe (served from the site, _static/mathjax/ui/safe.js) filters the links,
# classes, styles and ids math may make; only http(s) links and anchors are kept.
mathjax3_config = {
    "loader": {"load": ["ui/safe"]},
    "options": {
        "safeOptions": {
            "safeProtocols": {"http": True, "https": True, "file": False, "javascript": False, "data": False}
        }
    },
}

html_theme = "furo"
html_title = "fedpl"
# The site's own styles (_static/fedpl.css: the notebooks' tables get borders, padding and numbers aligned
# right); a pages folder without them builds with the theme's alone.
_styles = _Path(__file__).with_name("_static") / "fedpl.css"
html_static_path = ["_static"] if _styles.is_file() else []
html_css_files = ["fedpl.css"] if _styles.is_file() else []
html_show_sourcelink = False
html_copy_source = False

# Generated when the site is built (fedpl_core.report.docs): the state of the results, shown on every page.
from fedpl_core.report.sanitize import banner_html as _banner_html

_gen = _Path(__file__).with_name("_fedpl.json")
_state = _json.loads(_gen.read_text()) if _gen.is_file() else {}
# The banner is text (the run record's checked fields); the theme writes the announcement as HTML,
# so it is escaped here: nothing in a record becomes markup.
html_theme_options = {"announcement": _banner_html(_state["banner"])} if _state.get("banner") else {}
