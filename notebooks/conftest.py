"""nbval runs the notebooks: ``pytest notebooks/`` (``make test`` includes it) runs them with
``--nbval-lax`` (set here when nbval is installed; without it each notebook skips, saying why).

* Each notebook's kernel starts in ``notebooks/`` (as JupyterLab's does) with
  ``FEDPL_PROFILE=smoke`` unless the caller set a profile (``FEDPL_PROFILE=cpu pytest
  --nbval-lax notebooks/`` checks the cpu profile), and with ``FEDPL_FIGURES`` /
  ``FEDPL_RESULTS`` pointing into one fresh temporary folder for the session (unless set),
  so a test run never writes into the committed ``figures/`` and never reuses a cached run.
  The variables are set for the kernel's start only; the tests in ``tests/`` see the
  environment as it was.
* Cells tagged ``nbval-check-output`` (cell metadata, which nbval reads) are compared with their reference output,
  the smoke profile's, kept out of the notebooks in ``tests/notebook_outputs/<notebook>.json``
  (refreshed by ``make checked-outputs``) so that a learner who opens a notebook meets no
  output of a test run; the references are put into nbval's cells here, at collection, after
  the substitutions of ``nbval_sanitize.cfg`` (absolute paths, timings).  Every other cell
  must only run without an error (``--nbval-lax``).
* After a notebook's last cell one more item, ``<notebook>::wrote figures and tables``,
  checks that the notebook wrote a PNG and a CSV with its number as prefix.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

_SESSION_DIR: Path | None = None
#: Where the reference outputs of the checked cells live: ``<notebook stem>.json`` holds
#: ``{cell id: {"source": ..., "outputs": [...]}}`` (``tools/checked_outputs.py`` writes it).
REFERENCES = Path(__file__).resolve().parent.parent / "tests" / "notebook_outputs"
#: The cell tag nbval reads as "check this cell's output".
TAG = "nbval-check-output"


def _kernel_env() -> dict[str, str]:
    global _SESSION_DIR
    if _SESSION_DIR is None:
        _SESSION_DIR = Path(tempfile.mkdtemp(prefix="fedpl-nbval-"))
    return {
        "FEDPL_PROFILE": "smoke",
        "FEDPL_FIGURES": str(_SESSION_DIR / "figures"),
        "FEDPL_RESULTS": str(_SESSION_DIR / "results"),
    }


def figures_folder() -> Path:
    return Path(os.environ.get("FEDPL_FIGURES") or _kernel_env()["FEDPL_FIGURES"])


def _is_nbval(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """Start the notebook's kernel (nbval does it in the first cell's setup) with the
    smoke profile and the session's output folders; restore the environment after."""
    if not _is_nbval(item):
        yield
        return
    saved = {k: os.environ.get(k) for k in _kernel_env()}
    for k, v in _kernel_env().items():
        if not os.environ.get(k):  # what the caller set wins
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class WroteOutputs(pytest.Item):
    """The notebook wrote at least one figure (PNG) and one table (CSV) named after it."""

    def __init__(self, *, notebook: Path, figures: Path, **kw):
        super().__init__(**kw)
        self.notebook, self.figures = notebook, figures

    def runtest(self) -> None:
        prefix = self.notebook.stem.split("_")[0] + "_"
        written = {p.suffix for p in self.figures.glob(prefix + "*")}
        missing = {".png", ".csv"} - written
        if missing:
            raise AssertionError(
                f"{self.notebook.name} wrote no {' and no '.join(sorted(missing))} file "
                f"named {prefix}* into {self.figures}"
            )

    def reportinfo(self):
        return self.path, None, f"{self.notebook.name}: wrote figures and tables"


def references(notebook: Path) -> dict:
    """The reference outputs of ``notebook``'s checked cells, by cell id (``{}`` without a file)."""
    path = REFERENCES / f"{Path(notebook).stem}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _give_reference(item, refs: dict) -> None:
    """Put the reference output of a checked cell into nbval's copy of it (nbval compares a
    cell with an execution count and outputs; without a reference the cell is only run)."""
    cell = item.cell
    if TAG not in cell.get("metadata", {}).get("tags", []):
        return
    ref = refs.get(cell.get("id"))
    if ref is None or ref.get("source") != cell.source:  # only run it; tests/test_notebooks.py fails on this
        return
    import nbformat

    cell.outputs = [nbformat.from_dict(o) for o in ref["outputs"]]
    cell.execution_count = 1


def pytest_collection_modifyitems(session, config, items):
    """Give the checked cells their reference outputs, mark the cells ``notebook`` and append
    a :class:`WroteOutputs` item after the last cell of each notebook."""
    refs: dict = {}
    for item in items:
        if _is_nbval(item):
            nb = Path(str(item.parent.path))
            if nb not in refs:
                refs[nb] = references(nb)
            _give_reference(item, refs[nb])
    out, last = [], {}
    for i, item in enumerate(items):
        if _is_nbval(item):
            last[item.parent] = i
    for i, item in enumerate(items):
        out.append(item)
        if not _is_nbval(item):
            continue
        item.add_marker(pytest.mark.notebook)  # pytest -m "not notebook": the fast suite alone
        if last.get(item.parent) == i:
            nb = Path(str(item.parent.path))
            check = WroteOutputs.from_parent(
                item.parent, name="wrote figures and tables", notebook=nb, figures=figures_folder()
            )
            check.add_marker(pytest.mark.notebook)
            out.append(check)
    items[:] = out


class NbvalMissing(pytest.Item):
    """Stands for a notebook where nbval is not installed: skipped, saying why."""

    def runtest(self) -> None:
        pytest.skip("nbval is not installed (pip install -e .[test]): the notebook is not executed")

    def reportinfo(self):
        return self.path, None, f"{self.path.name}: needs nbval"


class NotebookWithoutNbval(pytest.File):
    def collect(self):
        yield NbvalMissing.from_parent(self, name="needs nbval")


def pytest_collect_file(file_path, parent):
    """Without nbval, each notebook is one item that skips with the reason (with nbval,
    nbval collects its cells)."""
    if file_path.suffix == ".ipynb" and not parent.config.pluginmanager.hasplugin("nbval"):
        return NotebookWithoutNbval.from_parent(parent, path=file_path)
    return None


def pytest_configure(config):
    """``--nbval-lax`` unless the command line asks for ``--nbval`` (pyproject's ``addopts`` cannot
    name it: pytest refuses an option of a plugin that is not installed); this folder's
    sanitize file, and the kernel of the running Python (the venv's), unless the command
    line names others."""
    opt = config.option
    if config.pluginmanager.hasplugin("nbval") and not (opt.nbval or opt.nbval_lax):
        opt.nbval_lax = True
    if getattr(opt, "nbval_sanitize_with", "absent") is None:
        opt.nbval_sanitize_with = str(Path(__file__).with_name("nbval_sanitize.cfg"))
    if hasattr(opt, "nbval_current_env") and not getattr(opt, "nbval_kernel_name", None):
        opt.nbval_current_env = True
