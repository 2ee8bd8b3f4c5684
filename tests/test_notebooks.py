"""The notebooks as committed, and the papermill batch path.

nbval executes every notebook in the smoke profile (``pytest --nbval-lax notebooks/``,
part of ``make test``; see ``notebooks/conftest.py``).  Here: the sources keep outputs out
(except the cells nbval compares), their parameters cell works for nbval and papermill, and
``python -m fedpl_core reproduce`` (papermill) runs a notebook with injected parameters.
Marked ``notebook``: ``pytest -m "not notebook"`` runs the fast suite alone.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MARK = "# NBVAL_CHECK_OUTPUT"
IMAGES = {"image/png", "image/jpeg", "image/svg+xml"}


def _read(nb):
    import nbformat

    return nbformat.read(nb, as_version=4)


def _checked(cell) -> bool:
    return any(line.strip() == MARK for line in cell.source.splitlines())


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_sources_hold_no_outputs_but_the_checked_cells(nb):
    code = [c for c in _read(nb).cells if c.cell_type == "code"]
    assert any(_checked(c) for c in code), f"{nb.name}: no cell marked {MARK} (nbval would check no output)"
    for i, c in enumerate(code):
        if not _checked(c):
            assert not c.get("outputs"), f"{nb.name} code cell {i}: outputs are stored (strip them; reports/ holds them)"
            assert c.get("execution_count") is None, f"{nb.name} code cell {i}: an execution count is stored"
            continue
        # nbval skips the comparison of a cell without an execution count ("unrun")
        assert c.get("outputs") and c.get("execution_count"), \
            f"{nb.name} code cell {i} is marked {MARK} but stores no executed output (make checked-outputs)"
        for o in c["outputs"]:
            assert o["output_type"] != "error", f"{nb.name} code cell {i}: a stored error"
            assert not IMAGES & set(o.get("data", {})), f"{nb.name} code cell {i}: a stored image"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameters_cell_reads_fedpl_profile_with_cpu_as_default(nb, monkeypatch):
    tagged = [c for c in _read(nb).cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name}: needs exactly one cell tagged 'parameters'"
    for env, want in ((None, "cpu"), ("smoke", "smoke")):
        if env is None:
            monkeypatch.delenv("FEDPL_PROFILE", raising=False)
        else:
            monkeypatch.setenv("FEDPL_PROFILE", env)
        scope: dict = {}
        exec(tagged[0].source, scope)  # the cell only assigns values
        assert scope["profile"] == want
    # papermill reads every parameter of the cell (a line it cannot parse is logged as
    # "Unable to parse line" and its parameter passed as "unknown")
    import papermill as pm

    assigned = {k for k, v in scope.items() if not k.startswith("__") and not isinstance(v, type(pm))}
    assert set(pm.inspect_notebook(str(nb))) == assigned


def test_sanitize_file_replaces_paths_timings_and_padding_only():
    text = (ROOT / "notebooks" / "nbval_sanitize.cfg").read_text()
    pats = re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.M)  # nbval's own reading
    s = "figures -> /tmp/fedpl-nbval-1/figures, results -> /home/u/fedpl/results/00; (x/255 - 0.5); 0.748; 12.5 s"
    for regex, rep in pats:
        s = re.sub(regex, rep, s)
    assert s == "figures -> PATH, results -> PATH; (x/255 - 0.5); 0.748; T s"
    # a table's column padding follows the width of a path in it: runs of spaces compare equal
    a, b = "profile      smoke\nresults_dir  /tmp/a", "profile    smoke\nresults_dir  /home/user/b"
    for regex, rep in pats:
        a, b = re.sub(regex, rep, a), re.sub(regex, rep, b)
    assert a == b == "profile ~ smoke\nresults_dir ~ PATH"


@pytest.mark.notebook
def test_reproduce_runs_a_notebook_with_papermill_parameters(tmp_path, monkeypatch, capsys):
    from fedpl_core.cli import main

    figures = tmp_path / "figures"  # never overwrite the committed cpu-profile figures
    monkeypatch.setenv("FEDPL_FIGURES", str(figures))
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("FEDPL_PROFILE", raising=False)
    assert main(["reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path / "run")]) == 0
    executed = _read(tmp_path / "run" / "00_introduction.ipynb")
    injected = [c for c in executed.cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(injected) == 1 and 'profile = "smoke"' in injected[0].source
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a code cell did not run"
    setup = "".join(o.get("text", "") for o in code[2]["outputs"])
    assert f"figures -> {figures}" in setup and "profile smoke:" in setup
    written = {p.suffix for p in figures.glob("00_*")}
    assert {".png", ".csv"} <= written
    assert "00_introduction.ipynb" in capsys.readouterr().out
