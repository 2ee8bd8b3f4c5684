"""The README is a front page, and what it says is what the code and the committed run say.

* Its findings block is the one the committed headline tables generate
  (``python -m fedpl_core.report.findings`` rewrites it from ``figures/*_headline.csv``).
* It is short (200 lines at most), names no issue number and no machine path, and every local
  link resolves.
* Its Python snippet runs, as printed.
* The minutes it gives ``make reproduce`` are the committed run's (``reports/RUN.json``); the
  number of methods it states is the registry's (``python -m fedpl_core.methods.catalog --write``
  rewrites it); the test count it states is a lower bound of what pytest collects in ``tests/``
  (a new method adds tests without a README edit).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fedpl_core.report.findings import README_END, README_START, readme_block

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_findings_block_is_generated_from_the_committed_headline_tables():
    block = README.split(README_START, 1)[1].split(README_END, 1)[0].strip()
    assert block == readme_block(ROOT / "figures").strip(), (
        "run `python -m fedpl_core.report.findings` after the notebooks"
    )
    assert "| paper | claim | data | paper profile | verdict | cpu profile |" in block


def test_the_committed_findings_page_is_the_generated_one():
    from fedpl_core.report.findings import findings_page

    assert (ROOT / "docs" / "findings.md").read_text() == findings_page(ROOT / "figures", site=False), (
        "run `python -m fedpl_core.report.findings` after the notebooks"
    )


def test_the_readme_is_a_front_page():
    lines = README.splitlines()
    assert len(lines) <= 200, f"{len(lines)} lines: move the detail into docs/"
    assert not re.search(r"\b[Ii]ssues? #?\d+", README)
    assert not re.search(r"(?<![\w.])/(work|tmp|root|home)/", README)
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [u for u in links if not re.match(r"^[a-z]+:", u)]
    assert local and not [u for u in local if not (ROOT / u).exists()]


def test_the_python_snippet_runs_as_printed(tmp_path, monkeypatch):
    code = README.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert 0.0 <= ns["res"].final["auroc_mean"] <= 1.0
    assert set(ns["df"]["label"]) == {"fedavg", "fedavg_pl"} and (tmp_path / "results" / "demo").is_dir()


def test_the_reproduce_time_is_the_committed_runs():
    rec = json.loads((ROOT / "reports" / "RUN.json").read_text())
    every = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    runs = [
        i
        for i in rec["invocations"]
        if i["profile"] == "cpu" and not i["parameters"] and sorted(i["notebooks"]) == every
    ]  # what `make reproduce` runs
    minutes = round(
        runs[0]["seconds"] / 60
    )  # the first: tools/rerun_committed.sh starts the record from an empty cache
    stated = re.search(r"cpu profile, ~(\d+) min on 2 cores", README)
    assert stated and int(stated.group(1)) == minutes


def test_the_number_of_methods_is_the_registrys():
    from fedpl_core.methods import catalog

    assert README.count(catalog.README_BEGIN) == 1 and README.count(catalog.README_END) == 1
    assert catalog.readme(README) == README, f"the README's method count is not current: run `{catalog.COMMAND}`"
    n = len(catalog.index()["methods"])
    assert f"**{n} methods**" in README.split(catalog.README_BEGIN, 1)[1].split(catalog.README_END, 1)[0]


@pytest.mark.slow
def test_readme_states_a_lower_bound_of_the_tests_pytest_collects():
    """The README states "more than N tests": true as long as no tests are removed, so a new
    method (and the tests it adds to every parametrized check) needs no README edit."""
    tests_section = README.split("## Tests", 1)[-1]
    stated = re.search(r"`pytest` over `tests/` \(more than (\d[\d,]*) tests", tests_section)
    assert stated, "the Tests section states a lower bound of the tests tests/ holds"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    collected = re.search(r"(\d+) tests? collected", out)
    assert collected, out[-500:]
    assert int(stated.group(1).replace(",", "")) < int(collected.group(1))
