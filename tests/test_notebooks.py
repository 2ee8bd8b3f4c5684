"""Execute every notebook headlessly with its quick parameters (papermill)."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.notebook
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_quick(nb, tmp_path):
    import nbformat
    import papermill as pm

    source = nbformat.read(nb, as_version=4)
    tagged = [c for c in source.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name}: needs exactly one cell tagged 'parameters'"
    assert "quick" in tagged[0].source
    out = tmp_path / nb.name
    pm.execute_notebook(str(nb), str(out), parameters={"quick": True, "results_dir": str(tmp_path / "results")},
                        cwd=str(ROOT), progress_bar=False, kernel_name="python3")
    executed = nbformat.read(out, as_version=4)
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
