"""Notebooks made safe to publish: what the documentation site does to every executed
notebook before Sphinx reads it (:mod:`fedpl_core.report.docs`).

Reports get shared, so the site must be safe to build from someone else's notebooks.  A
notebook can carry script in many places; each is closed here, and
:mod:`fedpl_core.report.sphinx_safety` checks the pages once more after Sphinx has parsed them:

* **outputs**: only the MIME types of :data:`KEPT_MIME` are kept (text, HTML, Markdown,
  LaTeX, PNG / JPEG / GIF).  JavaScript, SVG (which can hold script), widget state and
  anything unknown are dropped, each counted; a widget output (a progress bar) goes whole, its
  text fallback with it.  HTML is cleaned by `nh3
  <https://nh3.readthedocs.io>`_ (the Rust sanitiser ammonia): no ``<script>``, ``<style>``,
  event attributes or ``javascript:`` links; tables keep their ``class`` and ``text-align``;
  images only from ``data:image/...`` or a relative path;
* **markdown cells**: MyST directives and roles (````` ```{include} `````, ``{download}``,
  ``{raw}``, ``{eval-rst}``: they read files or write raw HTML) become plain code; raw HTML
  is cleaned after parsing (:mod:`~fedpl_core.report.sphinx_safety`); attachments are dropped;
* **notebook metadata**: only ``kernelspec`` and ``language_info`` are kept (MyST-NB reads
  its settings, such as executing the notebook, from a notebook's metadata);
* **file names**: a notebook is published under its own name only when that name is plain
  (:func:`check_name`: letters, digits, ``_``, ``-``, ``.``), so no name becomes a
  ``javascript:`` link or a path, and is not a page the builder writes beside the notebooks
  (:data:`RESERVED`: ``index``, the notebooks' table of contents);
* **math**: MathJax turns ``\\href{URL}{text}`` and ``\\url{URL}`` into links, so math (a markdown
  cell's ``$...$``, a LaTeX output, raw HTML) that links anywhere but ``http(s)`` or an anchor
  is refused (:func:`unsafe_tex_links`); the site's MathJax also loads its ``ui/safe``
  extension (``docs/conf.py``);
* **the banner** (the state of the results, on every page, from the run record) is text,
  escaped before it reaches a page (:func:`banner_html`).
"""

from __future__ import annotations

import html
import re
from typing import Any

#: Output MIME types kept on a page; every other one is dropped.
KEPT_MIME = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "image/gif")
#: Tags and attributes HTML outputs keep (nh3's defaults, with the classes and alignment of
#: pandas tables).
_ATTRIBUTES = {
    "*": {"class", "title", "style", "align", "colspan", "rowspan"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "th": {"scope"},
    "ol": {"start"},
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}\.ipynb$")
#: Page names the site builder writes beside the notebooks itself (``notebooks/index.md``): a
#: notebook of that name (in any case: a case-blind file system) would clash with it.
RESERVED = ("index",)
#: A MyST directive fence (```{name} or :::{name}) or role ({name}`...`).
_DIRECTIVE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*\{[^}\n]*\}", re.MULTILINE)
_ROLE = re.compile(r"\{[A-Za-z][\w:.+-]*\}(?=`)")


class UnsafeInput(ValueError):
    """A notebook that cannot be published as it is (a name that is not plain)."""


def safe_url(url: str, image: bool = False) -> bool:
    """Whether a link (``image``: an image source) may stand in a page: ``http(s)`` and
    ``mailto`` links, ``#`` anchors, relative paths that do not climb out (``..``), and for
    images ``data:image/...`` as well.  ``javascript:``, ``data:text/html``, ``file:`` and
    absolute paths are refused."""
    u = url.strip()
    low = re.sub(r"[\x00-\x20]", "", u).lower()
    if image and low.startswith(("data:image/png", "data:image/jpeg", "data:image/gif")):
        return True
    if re.match(r"^[a-z][a-z0-9+.-]*:", low):
        return low.startswith(("http:", "https:")) or (not image and low.startswith("mailto:"))
    if low.startswith(("/", "\\", "//")):
        return False
    return ".." not in re.split(r"[/\\]", u.split("#")[0].split("?")[0])


def _filter(tag: str, attr: str, value: str) -> str | None:
    if attr in ("href", "src"):
        return value if safe_url(value, image=(tag == "img" and attr == "src")) else None
    if attr == "style":  # alignment only (pandas writes text-align on header rows)
        kept = [d for d in value.split(";") if d.split(":")[0].strip().lower() in ("text-align", "vertical-align")]
        return ";".join(kept) or None
    return value


def clean_html(html: str) -> str:
    """``html`` without script, styles, event handlers or unsafe links (nh3)."""
    import nh3

    return nh3.clean(
        html,
        attributes=_ATTRIBUTES,
        attribute_filter=_filter,
        url_schemes={"http", "https", "mailto", "data"},
        strip_comments=True,
    )


def neutralise_myst(markdown: str) -> str:
    """A markdown cell's MyST directives and roles as plain text: a directive fence becomes
    a plain code fence (its body is shown, not run), ``{role}`...``` loses its role."""
    return _ROLE.sub("", _DIRECTIVE.sub(lambda m: m.group(1) + m.group(2) + "text", markdown))


#: A TeX link command (``\\href``, ``\\url``) and its first argument when it is given in braces.
_TEX_LINK = re.compile(r"\\(href|url)(?![A-Za-z])\s*(\{([^{}]*)\})?")


def unsafe_tex_links(tex: str) -> list[str]:
    """The links of TeX (``\\href{URL}{...}``, ``\\url{URL}``) that MathJax would make and a page
    must not hold: a target that is not ``http(s)`` or a ``#`` anchor (``javascript:``,
    ``data:``, ``file:``), a target that is not one plain braced argument (a macro could make it),
    and ``\\href`` / ``\\url`` used any other way (``\\def\\h{\\href}``).  Empty when the math
    is safe."""
    bad = []
    for m in _TEX_LINK.finditer(tex):
        target = m.group(3)
        if target is None:
            bad.append(m.group(0)[:40])
            continue
        low = re.sub(r"[\x00-\x20]", "", target).lower()
        if not (low.startswith(("http:", "https:")) or (low.startswith("#") and safe_url(target))):
            bad.append(target[:40])
    return bad


def banner_html(text: str) -> str:
    """The banner of every page (the state of the results, :func:`fedpl_core.report.record.describe`)
    as HTML: escaped text, so nothing in a run record becomes markup or script."""
    return html.escape(str(text), quote=True)


def check_name(name: str) -> str:
    """``name`` when it is a plain notebook file name and not a :data:`RESERVED` one; else
    :class:`UnsafeInput`."""
    if not _NAME.fullmatch(name):
        raise UnsafeInput(f"notebook name {name!r} is not plain (letters, digits, '_', '-', '.'; ending .ipynb)")
    if name[: -len(".ipynb")].lower() in RESERVED:
        raise UnsafeInput(
            f"notebook name {name!r} is taken by a page the site makes itself (notebooks/index.md); rename the notebook"
        )
    return name


def sanitise_notebook(nb: Any) -> dict[str, int]:
    """Make ``nb`` (an nbformat 4 notebook, changed in place) safe to publish; returns
    what was removed, by kind (``{"javascript output": 2, ...}``)."""
    removed: dict[str, int] = {}

    def count(kind: str) -> None:
        removed[kind] = removed.get(kind, 0) + 1

    kept_meta = {k: nb.metadata[k] for k in ("kernelspec", "language_info") if k in nb.metadata}
    if set(nb.metadata) - set(kept_meta):
        count("notebook metadata")
    nb.metadata = type(nb.metadata)(kept_meta)
    for cell in nb.cells:
        if cell.get("attachments"):
            cell.pop("attachments")
            count("attachment")
        cell.metadata = type(cell.metadata)({k: v for k, v in cell.metadata.items() if k == "tags"})
        if cell.cell_type == "markdown":
            text = neutralise_myst(cell.source)
            if text != cell.source:
                count("MyST directive or role")
            cell.source = text
        elif cell.cell_type == "raw":
            cell.metadata = type(cell.metadata)()  # a raw cell's format decides how it is written out
        elif cell.cell_type == "code":
            widgets = [o for o in cell.get("outputs", []) if any("widget" in m for m in (o.get("data") or {}))]
            if widgets:  # a widget (a progress bar) is gone with its script; its text fallback means nothing
                cell.outputs = [o for o in cell.outputs if o not in widgets]
                removed["widget output"] = removed.get("widget output", 0) + len(widgets)
            for out in cell.get("outputs", []):
                data = out.get("data")
                if not data:
                    continue
                for mime in list(data):
                    if mime not in KEPT_MIME:
                        del data[mime]
                        count("javascript output" if "javascript" in mime else f"{mime} output")
                if "text/html" in data:
                    html = data["text/html"]
                    html = "".join(html) if isinstance(html, list) else html
                    clean = clean_html(html)
                    if clean != html:
                        count("HTML output cleaned (tags or attributes outside the allowed set)")
                    data["text/html"] = clean
    return removed


__all__ = [
    "KEPT_MIME",
    "UnsafeInput",
    "safe_url",
    "clean_html",
    "neutralise_myst",
    "unsafe_tex_links",
    "banner_html",
    "check_name",
    "RESERVED",
    "sanitise_notebook",
]
