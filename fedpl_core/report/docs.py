"""The documentation site: ``make docs`` -> ``outputs/docs/html/index.html``.

Sphinx with MyST-NB and the furo theme, built offline (no CDN, no remote font or script:
MathJax is served from the site).  The pages are ``docs/`` (guides, one page per paper, the
investigations, the API reference generated from the docstrings, the changelog) and the
executed notebooks of the committed run (``reports/``), each a page.  Two pages are
generated when the site is built, from committed files: the findings page (every headline
claim of the four papers, :mod:`fedpl_core.report.findings`) and the state of the results
shown on every page (:func:`site_banner`: the commit and code fingerprint that produced them,
whether today's code differs, and the numeric platform their runs were trained on, with what a
re-run on another means when the machine building the site has another)::

    python -m fedpl_core.report.docs                       # reports/ -> outputs/docs/html/
    python -m fedpl_core.report.docs --notebooks outputs/notebooks --out /tmp/site

Steps: the inputs are checked (one line ``fedpl: error: ...`` and exit status 2 for a missing,
empty or unreadable notebook folder, a notebook that is a link, not a plain file, not JSON or
not a valid notebook, a notebook name that is not plain, a run record that is not a valid one
(:func:`fedpl_core.report.record.read_record`), an ``--out`` that is a file or a link, or whose
``src``, ``html`` or ``warnings.txt`` the builder did not make, an ``--out`` inside ``--docs`` (the
pages would be copied into themselves) or a ``--docs`` inside the ``src`` or ``html`` the build
replaces, a page in ``--docs`` that is neither a file nor a folder (a pipe, a device), a notebook
named like a page the builder makes, ``index``); the sources are staged with
each notebook sanitised (:mod:`fedpl_core.report.sanitize`) and Sphinx builds the pages with
warnings as errors, both in a fresh private folder inside ``--out``; only then do ``<out>/src``
and ``<out>/html`` replace the previous build's.

The builder deletes or replaces nothing it did not make: each folder it makes holds a mark
(:data:`MARK`), ``warnings.txt`` starts with its own first line, and a ``src``, ``html`` or
``warnings.txt`` in ``--out`` without it is refused in one line.  Sphinx writes its pages with a
plain ``open`` (it would follow a link), so it is never let write into a folder that existed before
the build: a link planted anywhere in a previous site is removed with that site, never written
through.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..base.fileio import atomic_write, atomic_write_text, check_inside, safe_dir
from . import record as R
from .findings import HEADLINE_PROFILE
from .sanitize import UnsafeInput, check_name, sanitise_notebook

#: The folder above the package (a checkout): the builder's default folders are inside it.
#:
#: :meta hide-value:
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


#: Folders of ``--docs`` never copied to the site.
SKIPPED = ("_build", "__pycache__", ".ipynb_checkpoints")


def check_pages(docs: Path) -> None:
    """Refuse (one line naming it) anything in ``docs`` that is neither a plain file nor a
    folder (a named pipe, a device, a socket): copying it would block or fail with a list of
    errors.  Links are left out of the site, not followed; :data:`SKIPPED` folders are not read."""
    for here, dirs, files in os.walk(docs):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not os.path.islink(os.path.join(here, d))]
        for name in files:
            p = Path(here) / name
            try:
                mode = os.lstat(p).st_mode
            except OSError:
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise DocsError(
                    f"--docs {docs}: {p.relative_to(docs)} is not a file (a pipe, device or socket); remove it"
                )


def check_apart(out: Path, docs: Path) -> None:
    """Refuse (one line) an ``--out`` that is ``--docs`` or lies inside it, but for a
    :data:`SKIPPED` folder (each build would copy the previous one into itself, deeper each
    time), and a ``--docs`` inside the ``src`` or ``html`` of ``--out`` (the build replaces
    them); the paths are compared resolved."""
    o, d = out.resolve(), docs.resolve()
    if o == d or (o.is_relative_to(d) and o.relative_to(d).parts[0] not in SKIPPED):  # _build is not copied
        raise DocsError(
            f"--out {out} lies inside --docs {docs}: the pages would be copied into themselves; "
            "give an --out outside it"
        )
    for name in MADE:
        if d.is_relative_to(o / name):
            raise DocsError(
                f"--docs {docs} lies inside {out / name}, which the build replaces; give pages of their own"
            )


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


#: The file in each folder the builder makes in ``--out`` (``src``, ``html``): only a folder that
#: holds it is ever replaced or deleted.
MARK = ".fedpl-site"
_MARK_TEXT = "Made by the fedpl documentation builder (python -m fedpl_core.report.docs); replaced on every build.\n"
#: The folders the builder makes in ``--out`` and the file of the last build's Sphinx warnings.
MADE = ("src", "html")
WARNINGS = "warnings.txt"
_WARNINGS_HEAD = "# Sphinx warnings of the last fedpl documentation build\n"


def _is_plain_file(p: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(p).st_mode)
    except OSError:
        return False


def _made_here(folder: Path) -> bool:
    """Whether ``folder`` (a plain folder, not a link) was made by this builder: it holds
    :data:`MARK`, or it is a site built before marks existed (a ``src`` with the generated
    ``_fedpl.json`` and ``conf.py``, an ``html`` with Sphinx's ``.buildinfo`` beside such a ``src``)."""
    if _is_plain_file(folder / MARK):
        return True
    if folder.name == "src":
        return _is_plain_file(folder / "_fedpl.json") and _is_plain_file(folder / "conf.py")
    return _is_plain_file(folder / ".buildinfo") and _made_here(folder.parent / "src")


def _warnings_made_here(p: Path) -> bool:
    if not _is_plain_file(p):
        return False
    with open(p, "rb") as f:
        head = f.read(len(_WARNINGS_HEAD))
    return head in (_WARNINGS_HEAD.encode(), b"") or _made_here(p.parent / "src")


def _check_out(out: Path) -> None:
    """Refuse (one line) an ``--out`` the builder may not write into: a link or a file, or one
    whose ``src``, ``html`` or ``warnings.txt`` is a link, a file where a folder belongs, or
    was not made by this builder (it would be replaced)."""
    if out.is_symlink():
        raise DocsError(f"--out {out} is a link; the site is never written through a link")
    if out.exists() and not out.is_dir():
        raise DocsError(f"--out {out} is a file, not a folder")
    for name in MADE:
        p = out / name
        if not os.path.lexists(p):
            continue
        if p.is_symlink():
            raise DocsError(f"--out {out}: {p} is a link; the site is never written through a link")
        if not p.is_dir():
            raise DocsError(f"--out {out}: {p} is a file, not a folder")
        if not _made_here(p):
            raise DocsError(
                f"--out {out}: {p} was not made by the site builder (it holds no {MARK}) and would be replaced; "
                "give an --out of its own (a new or empty folder)"
            )
    w = out / WARNINGS
    if os.path.lexists(w) and not _warnings_made_here(w):
        raise DocsError(
            f"--out {out}: {w} was not written by the site builder and would be replaced; give an --out of its own"
        )


def _mark(folder: Path, root: Path) -> None:
    atomic_write_text(folder / MARK, _MARK_TEXT, fsync=False, root=root)


def _put_in_place(out: Path, name: str, new: Path, trash: Path) -> None:
    """Move the folder ``new`` to ``out/name``; the previous one (made by the builder, checked
    again now) goes to ``trash`` first, to be deleted with the private folder (links in it are
    removed, never followed)."""
    old = out / name
    if os.path.lexists(old):
        _check_out(out)
        os.rename(old, trash / name)
    os.rename(new, old)


def _titled(nb, stem: str) -> None:
    """Give a notebook without a heading in its first markdown cell a title (its name)."""
    import nbformat

    first = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.strip()), None)
    if first is None or not first.source.lstrip().startswith("# "):
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"# {stem}"))


def stage(
    docs: Path,
    notebooks: list[Path],
    figures: Path | None,
    src: Path,
    banner: str,
    root: Path | None = None,
    paper_notebooks: Sequence[Path] = (),
) -> dict[str, int]:
    """Copy the pages to the new folder ``src`` (links left out), the notebooks sanitised into
    ``src/notebooks/`` (the paper profile's, ``paper_notebooks``, into ``src/notebooks/paper/``),
    the generated pages beside them, each written atomically inside ``root`` (default ``src``'s
    folder: :func:`fedpl_core.base.fileio.atomic_write`, no link on the way); returns what
    sanitising removed, by kind."""
    import nbformat

    from .findings import findings_page

    root = src.parent if root is None else root
    check_inside(root, src / "x")
    if os.path.lexists(src):
        raise DocsError(f"{src} exists; the sources are staged into a new folder")

    def plain_pages(folder: str, names: list[str]) -> set[str]:
        skip = set(shutil.ignore_patterns(*SKIPPED)(folder, names))
        return skip | {n for n in names if os.path.islink(os.path.join(folder, n))}  # a link is not published

    check_pages(docs)
    shutil.copytree(docs, src, ignore=plain_pages, symlinks=True)
    _mark(src, root)
    removed: dict[str, int] = {}
    safe_dir(root, (src / "notebooks").relative_to(root))
    if paper_notebooks:
        safe_dir(root, (src / "notebooks" / "paper").relative_to(root))
    for folder, group in ((src / "notebooks", notebooks), (src / "notebooks" / "paper", paper_notebooks)):
        for p in group:
            nb = nbformat.read(p, as_version=4)
            for k, v in sanitise_notebook(nb).items():
                removed[k] = removed.get(k, 0) + v
            _titled(nb, p.stem)
            nb.metadata.setdefault("language_info", {"name": "python"})  # the code cells' lexer
            with atomic_write(folder / p.name, fsync=False, root=root) as f:
                nbformat.write(nb, f)
    toc = "\n".join([*(p.stem for p in notebooks), *(["paper/index"] if paper_notebooks else [])])
    atomic_write_text(
        src / "notebooks" / "index.md",
        "# The executed notebooks\n\nThe notebooks of the committed run, executed from an empty results folder, "
        "with every output, in the cpu profile (the quick teaching run); the paper profile's, in each paper's "
        "own schedule, follow. The sources, without outputs, are in the repository's `notebooks/` folder."
        "\n\n```{toctree}\n:maxdepth: 1\n\n" + toc + "\n```\n",
        fsync=False,
        root=root,
    )
    if paper_notebooks:
        atomic_write_text(
            src / "notebooks" / "paper" / "index.md",
            "# The paper profile's notebooks\n\nThe four papers' notebooks in the paper profile: each paper's own "
            "training schedule on the small model, with seeds chosen for power, running the runs of its headline "
            "claims (the [notebooks page](../../notebooks.md#the-paper-profile) says what each cuts). Their tables "
            "of claims are the [findings](../../findings.md)' headline.\n\n```{toctree}\n:maxdepth: 1\n\n"
            + "\n".join(p.stem for p in paper_notebooks)
            + "\n```\n",
            fsync=False,
            root=root,
        )
    atomic_write_text(src / "findings.md", findings_page(figures), fsync=False, root=root)
    atomic_write_text(
        src / "_fedpl.json",
        json.dumps({"banner": banner, "notebooks": [p.stem for p in notebooks]}),
        fsync=False,
        root=root,
    )
    return removed


def site_banner(record: dict | None, current: str | None = None) -> str:
    """The text at the top of every page: which code produced the results and whether today's
    differs (:func:`fedpl_core.report.record.describe`), then the numeric platform their runs
    were trained on, or, when the machine building the site has another
    (:func:`fedpl_core.report.record.platform_note`; ``current``: its platform's key, default this
    process's), what that means for a re-run."""
    text = R.describe(record)
    platform = R.platform_note(record, current, where="the machine that built this site") or R.trained_on(record)
    return f"{text} {platform}" if platform else text


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
    check_apart(out, docs)
    check_pages(docs)
    nbs = executed_notebooks(notebooks)
    paper = Path(notebooks) / HEADLINE_PROFILE
    paper_nbs = executed_notebooks(paper) if paper.is_dir() and any(paper.glob("*.ipynb")) else []
    try:
        banner = site_banner(R.read_record(notebooks))
    except ValueError as e:  # R.RecordError: the record is there but not a valid one
        raise DocsError(str(e)) from None
    _check_out(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_out(out)  # made now, or there already: still not a link
    work = Path(tempfile.mkdtemp(prefix=".fedpl-build-", dir=out))  # private: nothing planted in it
    try:
        removed = stage(
            docs, nbs, figures if figures.is_dir() else None, work / "src", banner, root=work, paper_notebooks=paper_nbs
        )
        if removed:
            print(
                "removed from the notebooks before publishing: " + ", ".join(f"{v} {k}" for k, v in removed.items()),
                file=sys.stderr,
            )
        warned = work / WARNINGS
        args = ["-b", "html", "-d", str(work / "doctrees"), "-w", str(warned), "-j", "1", "-E"]
        args += (["-W", "--keep-going"] if strict else []) + (["-q"] if quiet else [])
        code = build_main(args + [str(work / "src"), str(work / "html")])
        text = warned.read_text(encoding="utf-8") if warned.is_file() else ""
        lines = [ln for ln in text.replace(str(work), str(out)).splitlines() if ln.strip()]  # as placed below
        warnings = out / WARNINGS
        _check_out(out)
        atomic_write_text(warnings, _WARNINGS_HEAD + "".join(ln + "\n" for ln in lines), fsync=False, root=out)
        trash = safe_dir(work, "previous")
        _put_in_place(out, "src", work / "src", trash)  # on a failed build too: the warnings name its pages
        if code != 0:
            first = lines[0] if lines else "see the output above"
            raise DocsError(f"the site did not build ({len(lines)} warning(s); first: {first}); all in {warnings}")
        _mark(work / "html", work)
        _put_in_place(out, "html", work / "html", trash)
    finally:
        shutil.rmtree(work, ignore_errors=True)
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
    # Other libraries' messages (not Sphinx's: its warnings have their own handler) at WARNING and
    # above, as Python shows them unconfigured.  Set before Sphinx loads the theme: accessible-pygments,
    # which the theme's code styles bring in, calls logging.basicConfig(level=INFO) when it is imported
    # (a no-op once the root logger has a handler), and matplotlib would then print an INFO line
    # ("generated new fontManager") whenever it builds its font cache.
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s", stream=sys.stderr)
    try:
        index = build_docs(a.notebooks, a.out, a.docs, a.figures, strict=not a.no_strict)
    except (ValueError, OSError) as e:  # DocsError, a ConfigError of a file read back: one line each
        print(f"fedpl: error: {e}", file=sys.stderr)
        return 2
    print(f"site -> {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
