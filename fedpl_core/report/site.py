"""A static HTML report of the executed notebooks: ``make report``.

The notebooks in ``notebooks/`` are sources without outputs; the executed copies of the
committed cpu-profile run live in ``reports/`` (GitHub renders them as they are), written by
``make reproduce``.  This turns them into a site a reader can browse without running
anything: one HTML page per notebook (nbconvert's ``lab`` template, figures embedded) and
an ``index.html`` with the README's findings sections and a link to every committed figure
and table::

    python -m fedpl_core.report.site                         # reports/ -> outputs/site/ (make report)
    python -m fedpl_core.report.site --notebooks outputs/notebooks --out /tmp/site

Open ``outputs/site/index.html`` in a browser.
"""
from __future__ import annotations

import argparse
import html
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: fedpl_core/report/site.py
#: README sections (``## ...`` / ``### ...`` headings) the index page shows, in this order
SECTIONS = ("What the cpu profile shows", "Why the papers' methods fell below their baselines")


def readme_sections(text: str, titles=SECTIONS) -> str:
    """The Markdown of the README sections whose heading starts with one of ``titles``, each
    up to the next heading of the same or a higher level."""
    lines = text.splitlines()
    heads = [(i, len(m.group(1)), m.group(2)) for i, ln in enumerate(lines)
             if (m := re.match(r"^(#{2,4}) (.+)$", ln))]
    out = []
    for title in titles:
        for k, (i, level, name) in enumerate(heads):
            if name.startswith(title):
                end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
                out.append("\n".join(lines[i:end]))
                break
    return "\n\n".join(out)


def _page(title: str, body: str) -> str:
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}"
            "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:3px 6px;"
            "vertical-align:top}img{max-width:100%}code{background:#f4f4f4}</style></head>"
            f"<body>\n{body}\n</body></html>\n")


def build_site(notebooks: str | Path = ROOT / "reports", out: str | Path = ROOT / "outputs" / "site",
               figures: str | Path = ROOT / "figures", readme: str | Path = ROOT / "README.md") -> Path:
    """Write the site into ``out`` and return its ``index.html``.  Every ``*.ipynb`` of
    ``notebooks`` becomes ``<name>.html``; ``figures`` is copied to ``out/figures`` (the
    README's image links point there); a notebook folder without executed notebooks is an
    error naming it."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.filters import markdown2html

    notebooks, out, figures = Path(notebooks), Path(out), Path(figures)
    nbs = sorted(notebooks.glob("*.ipynb"))
    executed = [p for p in nbs if any(c.get("outputs") for c in nbformat.read(p, as_version=4).cells
                                      if c.cell_type == "code")]
    if not executed:
        raise FileNotFoundError(f"no executed notebook in {notebooks} (run `make reproduce` first)")
    out.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter(template_name="lab")
    pages = []
    for p in executed:
        body, _ = exporter.from_notebook_node(nbformat.read(p, as_version=4))
        (out / f"{p.stem}.html").write_text(body, encoding="utf-8")
        first = next((c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown"), p.stem)
        title = first.splitlines()[0].lstrip("# ").strip()
        number = p.stem.split("_")[0]
        if number.isdigit() and not title.startswith(number):  # every entry led by its notebook's number
            title = f"{number} · {title}"
        pages.append((p.stem, title))
    if figures.is_dir():
        shutil.copytree(figures, out / "figures", dirs_exist_ok=True)
    parts = ["<h1>fedpl: federated learning with partial labels, the committed cpu-profile run</h1>",
             "<p>Executed notebooks (built-in data, 3 seeds, 2 CPU cores):</p><ul>"]
    parts += [f'<li><a href="{html.escape(stem)}.html">{html.escape(title)}</a></li>' for stem, title in pages]
    parts.append("</ul>")
    if Path(readme).is_file():
        parts.append(markdown2html(readme_sections(Path(readme).read_text(encoding="utf-8"))))
    if figures.is_dir():
        files = sorted(f for f in figures.iterdir() if f.suffix in (".png", ".md", ".csv"))
        parts.append("<h2>Every figure and table</h2><ul>")
        parts += [f'<li><a href="figures/{html.escape(f.name)}">{html.escape(f.name)}</a></li>' for f in files]
        parts.append("</ul>")
    index = out / "index.html"
    index.write_text(_page("fedpl report", "\n".join(parts)), encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedpl_core.report.site", description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", default=str(ROOT / "reports"), help="folder of executed notebooks")
    ap.add_argument("--out", default=str(ROOT / "outputs" / "site"), help="site folder")
    a = ap.parse_args(argv)
    index = build_site(a.notebooks, a.out)
    print(f"report -> {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
