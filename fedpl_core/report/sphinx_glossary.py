"""A Sphinx extension: on every page of the site, the first use of each glossary term links to
its entry on the glossary page.

Loaded by the site's ``docs/conf.py`` (``extensions = [..., "fedpl_core.report.sphinx_glossary"]``).
The terms, their spellings and their anchors are :mod:`fedpl_core.report.glossary`'s; the
glossary page is the document named by the ``fedpl_glossary_page`` setting (default
``"glossary"``, the page ``glossary.md``).  Nothing is linked when the site has no such page.

When each page is written (``doctree-resolved``), its text is read in order, and the first
occurrence of each term, as a whole word, becomes a link to ``glossary.html#<anchor>`` with the
term's expansion as its title.  Left as they are: titles and captions, code and literal text,
math, text already inside a link, raw content, and the glossary page itself.  Markdown pages and
notebook pages are treated alike.  On the glossary page, each term's section is given its anchor
(:func:`fedpl_core.report.glossary.anchors`) where MyST did not already, so that the same
``#anchor`` works on the site and on GitHub.
"""

from __future__ import annotations

from docutils import nodes

from . import glossary as G

#: Nodes whose text is never linked: headings and captions, code, math, links, raw content.
SKIPPED = (
    nodes.title,
    nodes.subtitle,
    nodes.rubric,
    nodes.caption,
    nodes.literal,
    nodes.literal_block,
    nodes.doctest_block,
    nodes.math,
    nodes.math_block,
    nodes.reference,
    nodes.target,
    nodes.raw,
    nodes.comment,
    nodes.image,
    nodes.option_string,
    nodes.FixedTextElement,
)
_SKIPPED_NAMES = {"pending_xref", "desc_signature", "desc_name", "desc_addname", "toctree", "download_reference"}


def _skipped(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIPPED) or parent.tagname in _SKIPPED_NAMES:
            return True
        parent = parent.parent
    return False


def link_first_uses(doctree: nodes.document, uri: str, seen: set[str] | None = None) -> set[str]:
    """Link the first use of each term in ``doctree`` to ``uri + "#" + anchor``; returns the terms
    linked (``seen``, when given, holds terms not to link and is updated)."""
    seen = set() if seen is None else seen
    forms = G.surface_forms()
    pattern = G.term_pattern(forms)
    where = G.anchors()
    for text in list(doctree.findall(nodes.Text)):
        if len(seen) == len(G.TERMS):
            break
        if text.parent is None or _skipped(text):
            continue
        source = str(text)
        new: list[nodes.Node] = []
        last = 0
        for m in pattern.finditer(source):
            name = forms[m.group(0)]
            if name in seen:
                continue
            seen.add(name)
            if m.start() > last:
                new.append(nodes.Text(source[last : m.start()]))
            new.append(
                nodes.reference(
                    m.group(0),
                    m.group(0),
                    internal=True,
                    refuri=f"{uri}#{where[name]}",
                    reftitle=G.TERMS[name].expansion,
                    classes=["fedpl-term"],
                )
            )
            last = m.end()
        if new:
            if last < len(source):
                new.append(nodes.Text(source[last:]))
            text.parent.replace(text, new)
    return seen


def _page(app) -> str:
    return app.config.fedpl_glossary_page


def _anchor_sections(app, doctree: nodes.document) -> None:
    """On the glossary page, give each term's section its anchor where it lacks it."""
    if app.env.docname != _page(app):
        return
    where = G.anchors()
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        name = title.astext().strip() if title is not None else ""
        anchor = where.get(name)
        if anchor and anchor not in section["ids"] and anchor not in doctree.ids:
            section["ids"].append(anchor)
            doctree.ids[anchor] = section


def _link(app, doctree: nodes.document, docname: str) -> None:
    page = _page(app)
    if docname == page or page not in app.env.found_docs:
        return
    try:
        uri = app.builder.get_relative_uri(docname, page)
    except Exception:  # a builder with no page for it (NoUri): nothing to link to
        return
    link_first_uses(doctree, uri)


def setup(app):
    app.add_config_value("fedpl_glossary_page", "glossary", "env")
    app.connect("doctree-read", _anchor_sections)
    app.connect("doctree-resolved", _link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
