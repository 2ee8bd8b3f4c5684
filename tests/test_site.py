"""The static report (`make report`, fedpl_core.report.site): built from executed notebooks,
every link of the index resolves, and the README's findings sections are in it."""
import re
from pathlib import Path

import nbformat
import pytest

from fedpl_core.report.site import build_site, readme_sections

README = """# fedpl
## Quick start
two commands
### What the cpu profile shows (committed run)
![curves](figures/00_curves.png)

| finding | this run |
|---|---|
| Oracle above FedAvg | yes |
#### a sub-heading stays in
detail
### Something else
not shown
## Why the papers' methods fell below their baselines (issue 23)
the defects
## Last
"""


def test_readme_sections_take_each_section_to_the_next_heading_of_its_level():
    md = readme_sections(README)
    assert md.startswith("### What the cpu profile shows") and "#### a sub-heading stays in" in md
    assert "Something else" not in md and "two commands" not in md
    assert md.rstrip().endswith("the defects")


def _executed(path: Path, title: str) -> None:
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("print(41 + 1)")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\ntext"), code]
    nbformat.write(nb, path)


def test_site_links_every_executed_notebook_and_figure(tmp_path):
    nbs, figs = tmp_path / "reports", tmp_path / "figures"
    nbs.mkdir()
    figs.mkdir()
    _executed(nbs / "00_intro.ipynb", "00 · Introduction")
    _executed(nbs / "01_paper.ipynb", "A paper")  # a title without its number gets it
    stripped = nbformat.v4.new_notebook()
    stripped.cells = [nbformat.v4.new_code_cell("1")]
    nbformat.write(stripped, nbs / "99_not_run.ipynb")  # no outputs: not a page
    (figs / "00_curves.png").write_bytes(b"\x89PNG\r\n")
    (figs / "00_table.md").write_text("| a |\n|---|\n| 1 |\n")
    (tmp_path / "README.md").write_text(README)
    index = build_site(nbs, tmp_path / "site", figs, tmp_path / "README.md")
    text = index.read_text()
    assert '<a href="00_intro.html">00 · Introduction</a>' in text and "99_not_run" not in text
    assert '<a href="01_paper.html">01 · A paper</a>' in text
    assert "<table" in text and "Oracle above FedAvg" in text and "not shown" not in text
    assert "42" in (tmp_path / "site" / "00_intro.html").read_text()
    for ref in re.findall(r'(?:href|src)="([^"#:]+)"', text):
        assert (index.parent / ref).is_file(), ref


def test_site_without_executed_notebooks_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no executed notebook in"):
        build_site(tmp_path, tmp_path / "site", tmp_path / "figures", tmp_path / "README.md")
