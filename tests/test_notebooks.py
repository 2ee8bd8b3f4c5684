"""Execute every notebook headlessly in its smoke profile (papermill).

Marked ``notebook``: ``pytest -m "not notebook"`` runs the fast suite alone.
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_smoke_profile_and_writes_its_figures(nb, tmp_path, monkeypatch):
    import nbformat
    import papermill as pm

    source = nbformat.read(nb, as_version=4)
    tagged = [c for c in source.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name}: needs exactly one cell tagged 'parameters'"
    assert "profile = \"cpu\"" in tagged[0].source, "the parameters cell sets profile = \"cpu\" (the default)"
    figures = tmp_path / "figures"  # never overwrite the committed cpu-profile figures
    monkeypatch.setenv("FEDPL_FIGURES", str(figures))
    out = tmp_path / nb.name
    # papermill raises PapermillExecutionError on the first failing cell
    pm.execute_notebook(str(nb), str(out), parameters={"profile": "smoke", "results_dir": str(tmp_path / "results")},
                        cwd=str(ROOT), progress_bar=False, kernel_name="python3")
    executed = nbformat.read(out, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a code cell did not run"
    prefix = nb.stem.split("_")[0] + "_"
    written = list(figures.glob(prefix + "*"))
    assert any(p.suffix == ".png" for p in written), f"{nb.name} wrote no figure to $FEDPL_FIGURES"
    assert any(p.suffix == ".csv" for p in written), f"{nb.name} wrote no table to $FEDPL_FIGURES"
