"""A Sphinx extension: every page of the documentation site is checked after parsing, so a
notebook or page from someone else cannot put script or local files into the site.

Loaded by the site's ``docs/conf.py`` (``extensions = [..., "fedpl_core.report.sphinx_safety"]``).
A transform that runs while each document is read (before Sphinx collects its images and
downloads):

* raw HTML (a markdown cell's ``<script>`` or ``<img onerror=...>``, an HTML output) is
  cleaned with :func:`fedpl_core.report.sanitize.clean_html`; raw content in any other
  format is dropped;
* a link whose target is not safe (``javascript:``, ``file:``, ``data:text/html``, an
  absolute path, a path that climbs out with ``..``) loses its target and keeps its text;
* an image or a download whose file is not inside the site's sources is removed;
* math (``$...$``, a math block, a LaTeX output) whose ``\\href`` or ``\\url`` would link
  anywhere but ``http(s)`` or an anchor (:func:`fedpl_core.report.sanitize.unsafe_tex_links`)
  is shown as its text, not rendered; raw HTML holding such math is dropped.

Together with ``raw_enabled`` and ``file_insertion_enabled`` off (``docs/conf.py``: no
``raw`` or ``include`` directive reads a file) and the notebooks' sanitising
(:func:`fedpl_core.report.sanitize.sanitise_notebook`), this is what makes building the site
from others' notebooks safe.  Each removal is reported as a Sphinx warning naming the page,
so a strict build (``-W``) of our own pages fails on one.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.transforms import Transform

from .sanitize import clean_html, safe_url, unsafe_tex_links


class SafePage(Transform):
    default_priority = 50  # early: before Sphinx's image and download collectors see the doctree
    #: where MyST-NB writes the notebooks' output images (``jupyter_execute``, beside the folder the
    #: pages are built in), set when the builder starts
    #:
    #: :meta hide-value:
    outputs: Path | None = None

    def apply(self) -> None:
        from sphinx.util import logging

        log = logging.getLogger(__name__)
        doc = self.document
        source = doc.get("source", "")
        env = getattr(doc.settings, "env", None)
        srcdir = Path(env.srcdir).resolve() if env is not None else None
        outputs = self.outputs
        removed: list[str] = []

        for node in list(doc.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))):
            bad = unsafe_tex_links(node.astext())
            if bad:  # MathJax would make a link of it: shown as text, never typeset
                removed.append(f"math link {bad[0]!r}")
                plain = nodes.literal_block if isinstance(node, nodes.math_block) else nodes.literal
                node.replace_self(plain(node.astext(), node.astext()))
        for node in list(doc.findall(nodes.raw)):
            if "html" in node.get("format", "").split():
                text = node.astext()
                if unsafe_tex_links(text):
                    removed.append("raw HTML with a math link")
                    node.parent.remove(node)
                    continue
                clean = clean_html(text)
                if clean != text:
                    removed.append("unsafe HTML")
                    node.replace(node.children[0] if node.children else node, nodes.Text(clean))
            else:
                removed.append(f"raw {node.get('format', '')} content")
                node.parent.remove(node)
        for node in list(doc.findall(nodes.reference)):
            uri = node.get("refuri")
            if uri is not None and not safe_url(uri):
                removed.append(f"link {uri[:40]!r}")
                del node["refuri"]
        for node in list(doc.findall(nodes.image)):
            uri = node.get("uri", "")
            if not (_inside(uri, source, srcdir, image=True) or _inside(uri, source, srcdir, root=outputs)):
                removed.append(f"image {uri[:40]!r}")
                node.parent.remove(node)
        for node in list(doc.findall(lambda n: n.tagname == "download_reference")):
            target = node.get("reftarget", "")
            if not _inside(target, source, srcdir):
                removed.append(f"download {target[:40]!r}")
                node.parent.replace(node, nodes.Text(node.astext()))
        if removed:
            log.warning(
                "removed from the page: %s", ", ".join(removed), location=source or None, type="fedpl", subtype="unsafe"
            )


def _inside(uri: str, source: str, srcdir: Path | None, image: bool = False, root: Path | None = None) -> bool:
    """A local file inside the site's sources (``root``: inside that folder instead; paths
    starting with ``/`` are relative to the sources, as in Sphinx), or a safe remote / data image."""
    if image and (uri.startswith("data:") or "://" in uri):
        return safe_url(uri, image=True)
    if "://" in uri or uri.startswith("data:"):
        return False
    if srcdir is None:
        return safe_url(uri)
    base = srcdir if uri.startswith("/") else Path(source).resolve().parent
    target = (base / uri.lstrip("/")).resolve()
    inside = root or srcdir
    return target == inside or inside in target.parents


def _outputs_folder(app) -> None:
    SafePage.outputs = Path(app.outdir).parent.joinpath("jupyter_execute").resolve()


def setup(app):
    app.add_transform(SafePage)
    app.connect("builder-inited", _outputs_folder)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
