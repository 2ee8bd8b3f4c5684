"""What a user reads speaks of their own machine, never of how this package was built: no talk of
the machines, sessions, tools or limits the package was developed with, no issue number and no
machine path, in the README, the install files, the documentation pages, the notebooks' text and
the command line's help.

The pages' issue numbers and machine paths are test_docs_pages.py's check; this file adds the
process phrases there and all three checks everywhere else."""

import argparse
import json
import re
from pathlib import Path

import pytest
from test_docs_pages import ISSUE, MACHINE_PATH, PAGES

ROOT = Path(__file__).resolve().parent.parent

#: Phrases that speak of how the package was developed rather than of the reader's machine.
PROCESS = re.compile(
    r"""
      \bthis\ project\b                                   # "on this project's 2-core machine"
    | \bthe\ project'?s?\ (?:own|\d+-core|machines?|environment|CPU|GPU)\b
    | \bproject\ machines?\b
    | \bthis\ session\b | \bour\ CI\b | \bthe\ device\ tool\b
    | \$OUT\b                                             # a tool's output folder
    | \b600-(?:second|s)\b
    | \b(?:rehearsed|measured|tested|timed)\ here\b        # "here": the developers' machine
    | \bthis\ CPU\b | \bthe\ shared\ machine\b
    | \blocal\ mirror\ of\ the\ package\ index\b
    """,
    re.IGNORECASE | re.VERBOSE,
)


def findings(text: str, patterns=(PROCESS, ISSUE, MACHINE_PATH)) -> list[str]:
    return [m.group(0) for p in patterns for m in p.finditer(text)]


def test_the_phrases_are_found():
    bad = (
        "Measured on this project's 2-core machine; install from local disk on the project machines. "
        "It hands back files in $OUT within a 600-second limit (issue 41, /work/main/x). "
        "The install was rehearsed here; on this CPU a step costs more."
    )
    assert len(findings(bad)) == 8, findings(bad)
    ok = (
        "On a 2-core CPU a step costs more. Run `OUT=folder bash tools/gpu_node.sh` on your GPU machine; "
        "the project's milestones are in the changelog."
    )
    assert findings(ok) == []


def test_the_readme_speaks_to_the_user():
    text = (ROOT / "README.md").read_text()
    assert findings(text) == []


@pytest.mark.parametrize("name", ["requirements.txt", "constraints.txt"])
def test_the_install_files_speak_to_the_user(name):
    lines = (ROOT / name).read_text().splitlines()
    comments = "\n".join(line for line in lines if line.lstrip().startswith("#"))
    assert findings(comments) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_speaks_to_the_user(page):
    assert findings(page.read_text(), (PROCESS,)) == []


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebooks_text_speaks_to_the_user(nb):
    cells = json.loads(nb.read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert findings(text) == []


def parsers(parser: argparse.ArgumentParser, name: str = "fedpl"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from parsers(p, f"{name} {sub}")


def test_the_command_lines_help_speaks_to_the_user(monkeypatch):
    """``python -m fedpl_core --help`` and each command's; the help names the figures folder it
    would use, here a neutral one."""
    from fedpl_core.apps import cli

    monkeypatch.setenv("FEDPL_FIGURES", "/srv/fedpl/figures")
    helps = dict((name, p.format_help()) for name, p in parsers(cli.build_parser()))
    assert {"fedpl", "fedpl run", "fedpl reproduce", "fedpl gpu-checks"} <= set(helps)
    found = {name: findings(text) for name, text in helps.items() if findings(text)}
    assert found == {}
