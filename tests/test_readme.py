"""The numbers the README repeats agree with what produced them.

* Every decimal number in a findings table of "What the cpu profile shows" is a number of
  that notebook's committed run: an output of its executed copy in ``reports/``, a table it
  wrote (``figures/<NN>_*``) or a benchmark table it quotes (``figures/bench_*``), rounded to
  the README's decimals (also as points, x 100, or as a fraction, / 100).  The runs print
  thousands of numbers, so one edited number slips through about three times in four; a
  re-run that changes the results changes dozens of them, and some will match nothing.
* The test count the README states is the number of tests pytest collects in ``tests/``.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")


def findings_tables() -> dict[str, list[str]]:
    """Notebook number -> the rows of its findings table in "What the cpu profile shows"."""
    start = README.index("### What the cpu profile shows")
    section = README[start:README.index("\n## ", start)]
    blocks = re.split(r"\n\*\*(\d\d) ", section)
    tables = {}
    for nn, body in zip(blocks[1::2], blocks[2::2]):
        rows = [line for line in body.splitlines()
                if line.startswith("| ") and not line.startswith(("| finding", "|---"))]
        if rows:
            tables[nn] = rows
    return tables


def run_numbers(nn: str) -> list[float]:
    """Every number in the outputs of ``reports/<nn>_*.ipynb`` and the tables it can quote."""
    texts = []
    for nb in ROOT.glob(f"reports/{nn}_*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            for out in cell.get("outputs", []):
                parts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items() if k.startswith("text/")]
                texts += ["".join(p) if isinstance(p, list) else p for p in parts]
    for pattern in (f"{nn}_*", "bench_*"):
        texts += [p.read_text() for p in ROOT.glob(f"figures/{pattern}") if p.suffix in (".md", ".csv")]
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE]-?\d+)?", "\n".join(texts))]


def quoted(value: str, numbers: list[float]) -> bool:
    x = float(value)
    decimals = len(value.split(".")[1])
    return any(round(y * s, decimals) == x for y in numbers for s in (1.0, 100.0, 0.01))


TABLES = findings_tables()


def test_the_findings_section_has_a_table_per_notebook():
    assert {"00", "01", "02", "03", "04"} <= set(TABLES)


@pytest.mark.parametrize("nn", sorted(TABLES))
def test_every_number_of_a_findings_table_is_a_number_of_the_committed_run(nn):
    numbers = run_numbers(nn)
    assert numbers, f"reports/{nn}_*.ipynb has no outputs: run make reproduce"
    stale = [(v, row[:60]) for row in TABLES[nn] for v in NUMBER.findall(row)
             if not quoted(v.lstrip("-"), numbers) and not quoted(v, numbers)]
    assert not stale, f"README numbers of notebook {nn} found in no output of its run: {stale}"


def test_quoted_matches_rounding_and_scale_only():
    assert quoted("0.0009", [0.00087]) and quoted("67.3", [0.6731]) and quoted("0.673", [67.3])
    assert not quoted("0.0009", [0.0012]) and not quoted("5.4", [5.46])


def test_readme_states_the_number_of_tests_pytest_collects():
    stated = re.search(r"`make test` runs `pytest` over `tests/` \((\d[\d,]*) tests", README)
    assert stated, "the Tests section states how many tests tests/ holds"
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
    collected = re.search(r"(\d+) tests? collected", out)
    assert collected, out[-500:]
    assert int(stated.group(1).replace(",", "")) == int(collected.group(1))
