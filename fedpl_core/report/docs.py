"""The documentation site: ``make docs`` -> ``outputs/docs/html/index.html``.

Sphinx with MyST-NB and the furo theme, built offline (no CDN, no remote font or script:
MathJax is served from the site).  The pages are ``docs/`` (guides, one page per paper, the
investigations, the API reference generated from the docstrings, the changelog) and the
executed notebooks of the committed run (``reports/``), each a page.  Two pages are
generated when the site is built, from committed files: the findings page (every headline
claim of the four papers, :mod:`fedpl_core.report.findings`) and the state of the results
shown on every page (:func:`fedpl_core.report.record.describe`: the commit and code
fingerprint that produced them, and whether today's code differs)::

    python -m fedpl_core.report.docs                       # reports/ -> outputs/docs/html/
    python -m fedpl_core.report.docs --notebooks outputs/notebooks --out /tmp/site

Steps: the inputs are checked (one line ``fedpl: error: ...`` and exit status 2 for a missing,
empty or unreadable notebook folder, a notebook that is a link, not a plain file, not JSON or
not a valid notebook, a notebook name that is not plain, an ``--out`` that is a file or a
link); the sources are staged in ``<out>/src`` with each notebook sanitised
(:mod:`fedpl_core.report.sanitize`); Sphinx builds ``<out>/html`` with warnings as errors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import record as R
from .sanitize import UnsafeInput, check_name, sanitise_notebook

ROOT = Path(__file__).resolve().parents[2]


class DocsError(ValueError):
    """Bad input to the site builder (one line)."""


def _plain_folder(path: Path, what: str) -> Path:
    if path.is_symlink():
        raise DocsError(f"{what} {path} is a link; give the folder itself")
    if not path.exists():
        raise DocsError(f"{what} {path} does not exist")
    if not path.is_dir():
        raise DocsError(f"{what} {path} is a file, not a folder")
    return path


def executed_notebooks(folder: str | Path) -> list[Path]:
    """The executed notebooks of ``folder``, checked: each a plain file (not a link, not a
    folder) with a plain name, valid JSON, valid against the notebook schema, with outputs."""
    import nbformat

    folder = _plain_folder(Path(folder), "--notebooks")
    found = sorted(folder.glob("*.ipynb"))
    if not found:
        raise DocsError(f"--notebooks {folder} holds no notebook (run `make reproduce` first)")
    out = []
    for p in found:
        if p.is_symlink():
            raise DocsError(f"notebook {p.name} is a link; the site reads plain files only")
        if not p.is_file():
            raise DocsError(f"notebook {p.name} is not a file")
        try:
            check_name(p.name)
        except UnsafeInput as e:
            raise DocsError(str(e)) from None
        try:
            nb = nbformat.read(p, as_version=4)
            nbformat.validate(nb)
        except (ValueError, nbformat.ValidationError, UnicodeDecodeError) as e:
            kind = "not JSON" if isinstance(e, json.JSONDecodeError) else "not a valid notebook"
            msg = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
            raise DocsError(f"notebook {p.name} is {kind}: {msg}") from None
        if any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
            out.append(p)
    if not out:
        raise DocsError(
            f"--notebooks {folder}: none of its {len(found)} notebook(s) has been executed (run `make reproduce` first)"
        )
    return out


def _check_out(out: Path) -> None:
    for p in (out, out / "src", out / "html"):
        if p.is_symlink():
            raise DocsError(f"--out {out}: {p} is a link; the site is never written through a link")
        if p.exists() and not p.is_dir():
            raise DocsError(f"--out {out}: {p} is a file, not a folder")


def _titled(nb, stem: str) -> None:
    """Give a notebook without a heading in its first markdown cell a title (its name)."""
    import nbformat

    first = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.strip()), None)
    if first is None or not first.source.lstrip().startswith("# "):
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"# {stem}"))


def stage(docs: Path, notebooks: list[Path], figures: Path | None, src: Path, banner: str) -> dict[str, int]:
    """Copy the pages to ``src``, the notebooks sanitised into ``src/notebooks/``, the
    generated pages beside them; returns what sanitising removed, by kind."""
    import nbformat

    from .findings import findings_page

    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(
        docs, src, ignore=shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints"), symlinks=True
    )
    for p in src.rglob("*"):
        if p.is_symlink():  # a page that is a link is not published
            p.unlink()
    removed: dict[str, int] = {}
    (src / "notebooks").mkdir(exist_ok=True)
    for p in notebooks:
        nb = nbformat.read(p, as_version=4)
        for k, v in sanitise_notebook(nb).items():
            removed[k] = removed.get(k, 0) + v
        _titled(nb, p.stem)
        nb.metadata.setdefault("language_info", {"name": "python"})  # the code cells' lexer
        nbformat.write(nb, src / "notebooks" / p.name)
    toc = "\n".join(p.stem for p in notebooks)
    (src / "notebooks" / "index.md").write_text(
        "# The executed notebooks\n\nThe notebooks of the committed run, executed from an empty results folder, "
        "with every output. Each one teaches one paper on the built-in data; the sources, without outputs, are "
        "in the repository's `notebooks/` folder.\n\n```{toctree}\n:maxdepth: 1\n\n" + toc + "\n```\n",
        encoding="utf-8",
    )
    (src / "findings.md").write_text(findings_page(figures), encoding="utf-8")
    (src / "_fedpl.json").write_text(
        json.dumps({"banner": banner, "notebooks": [p.stem for p in notebooks]}), encoding="utf-8"
    )
    return removed


def build_docs(
    notebooks: str | Path = ROOT / "reports",
    out: str | Path = ROOT / "outputs" / "docs",
    docs: str | Path = ROOT / "docs",
    figures: str | Path = ROOT / "figures",
    strict: bool = True,
    quiet: bool = True,
) -> Path:
    """Check, stage and build the site; return ``<out>/html/index.html``.  ``strict``: a
    Sphinx warning (a broken link or reference, a page in no table of contents, removed
    unsafe content) fails the build with :class:`DocsError` naming the first one."""
    from sphinx.cmd.build import build_main

    out, docs, figures = Path(out), _plain_folder(Path(docs), "--docs"), Path(figures)
    nbs = executed_notebooks(notebooks)
    _check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    banner = R.describe(R.read_record(notebooks))
    removed = stage(docs, nbs, figures if figures.is_dir() else None, out / "src", banner)
    if removed:
        print(
            "removed from the notebooks before publishing: " + ", ".join(f"{v} {k}" for k, v in removed.items()),
            file=sys.stderr,
        )
    warnings = out / "warnings.txt"
    args = ["-b", "html", "-d", str(out / "doctrees"), "-w", str(warnings), "-j", "1", "-E"]
    args += (["-W", "--keep-going"] if strict else []) + (["-q"] if quiet else [])
    code = build_main(args + [str(out / "src"), str(out / "html")])
    if code != 0:
        lines = (
            [ln for ln in warnings.read_text(encoding="utf-8").splitlines() if ln.strip()] if warnings.is_file() else []
        )
        first = lines[0] if lines else "see the output above"
        raise DocsError(f"the site did not build ({len(lines)} warning(s); first: {first}); all in {warnings}")
    return out / "html" / "index.html"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedpl_core.report.docs", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--notebooks", default=str(ROOT / "reports"), help="folder of executed notebooks (default: reports)"
    )
    ap.add_argument(
        "--out",
        default=str(ROOT / "outputs" / "docs"),
        help="site folder (default: outputs/docs; the pages land in <out>/html)",
    )
    ap.add_argument("--docs", default=str(ROOT / "docs"), help="folder of the pages (default: docs)")
    ap.add_argument("--figures", default=str(ROOT / "figures"), help="figures and tables the findings page reads")
    ap.add_argument("--no-strict", action="store_true", help="keep going on Sphinx warnings")
    a = ap.parse_args(argv)
    try:
        index = build_docs(a.notebooks, a.out, a.docs, a.figures, strict=not a.no_strict)
    except (DocsError, OSError) as e:
        print(f"fedpl: error: {e}", file=sys.stderr)
        return 2
    print(f"site -> {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
