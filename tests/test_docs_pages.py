"""The documentation pages (``docs/``) and the method docstrings they render say nothing a reader
cannot use: no issue number, no machine path, no benchmark command for a script that does not
exist, and every measured number on the investigations and benchmarks pages beside the commit it
was recorded at.  (Building the site, with its links and autodoc targets, is the site test's job.)"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))
ISSUE = re.compile(r"\bissues?\s*#?\d+|\(#\d+\)", re.I)
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|Users|root|mnt)/")


def test_there_are_pages():
    assert {"usage.md", "methods.md", "partitions.md", "investigations.md", "benchmarks.md"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_names_no_issue_number_and_no_machine_path(page):
    text = page.read_text()
    assert not ISSUE.findall(text), ISSUE.findall(text)
    assert not MACHINE_PATH.findall(text), MACHINE_PATH.findall(text)


def test_the_method_docstrings_name_no_issue_number():
    """The paper pages render the method modules' docstrings."""
    found = []
    for path in sorted((ROOT / "fedpl_core" / "methods").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node) or ""
                found += [f"{path.name}: {m}" for m in ISSUE.findall(doc) + MACHINE_PATH.findall(doc)]
    assert not found, found


def test_every_benchmark_command_on_the_pages_exists():
    commands = {m for page in PAGES for m in re.findall(r"benchmarks/(\w+)\.py", page.read_text())}
    assert commands, "the pages quote benchmark commands"
    missing = sorted(c for c in commands if not (ROOT / "benchmarks" / f"{c}.py").is_file())
    assert not missing, missing


@pytest.mark.parametrize("name", ["investigations.md", "benchmarks.md"])
def test_every_commit_a_page_cites_is_named_by_seven_hex_digits(name):
    """Measured numbers are quoted with "recorded at commit <hash>"; each hash is a short
    commit id (a reader can `git show` it), and the page cites at least one."""
    text = (ROOT / "docs" / name).read_text()
    cited = re.findall(r"\bat commit (\S+?)[,;:).\s]", text)
    assert cited
    assert all(re.fullmatch(r"[0-9a-f]{7}", c) for c in cited), cited


def test_the_methods_catalogue_is_generated_from_the_registry():
    """docs/methods.md's list of every registered method is the block the registry generates
    (kept in the page so that it reads on GitHub too); the rest of the page is written by hand."""
    from fedpl_core.methods import catalog

    page = ROOT / catalog.DOCS_PAGE
    text = page.read_text()
    assert text.count(catalog.DOCS_BEGIN) == 1 and text.count(catalog.DOCS_END) == 1
    assert catalog.docs_page(text) == text, f"{catalog.DOCS_PAGE}'s catalogue is not current: run `{catalog.COMMAND}`"
