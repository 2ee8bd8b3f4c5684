"""Where figures and results go (fedpl_core.base.paths): the same folders whatever the working
directory, and never the committed ``figures/`` in the smoke profile (issue 25, section 1)."""

import hashlib
import tempfile
import time
from pathlib import Path

import pytest

from fedpl_core.base import paths
from fedpl_core.report import tables

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    monkeypatch.delenv("FEDPL_FIGURES", raising=False)
    monkeypatch.delenv("FEDPL_RESULTS", raising=False)
    monkeypatch.setattr(paths, "_profile", None)


def test_a_checkout_uses_its_figures_and_results_whatever_the_working_directory(monkeypatch, tmp_path):
    assert paths.checkout() == ROOT
    for cwd in (ROOT, ROOT / "notebooks", tmp_path):
        monkeypatch.chdir(cwd)
        assert paths.figures_dir() == ROOT / "figures"
        assert tables.figures_dir() == ROOT / "figures"  # the public name delegates
        assert paths.results_dir("03_surgical") == ROOT / "results" / "03_surgical"
        assert paths.results_dir() == ROOT / "results"
        assert paths.figures_dir("cpu") == paths.figures_dir("full") == ROOT / "figures"
        assert paths.figures_dir("gpu") == ROOT / "figures" / "gpu"


def test_the_smoke_profile_writes_under_outputs_smoke(monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")
    assert paths.figures_dir("smoke") == ROOT / "outputs" / "smoke" / "figures"
    assert paths.results_dir("00_introduction", "smoke") == ROOT / "outputs" / "smoke" / "results" / "00_introduction"
    paths.use_profile("smoke")
    assert paths.current_profile() == "smoke"
    assert tables.figures_dir() == ROOT / "outputs" / "smoke" / "figures"
    assert paths.figures_dir("cpu") == ROOT / "figures"  # an explicit profile wins
    paths.use_profile(None)
    assert paths.figures_dir() == ROOT / "figures"
    with pytest.raises(ValueError, match="unknown profile"):
        paths.use_profile("tpu")


def test_the_gpu_profile_writes_into_its_own_gpu_folders(monkeypatch, tmp_path):
    # issue 27: the gpu run's figures are committed beside the cpu run's, never over them
    for cwd in (ROOT, ROOT / "notebooks"):
        monkeypatch.chdir(cwd)
        assert paths.figures_dir("gpu") == ROOT / "figures" / "gpu"
        assert paths.results_dir("04_fedmlp", "gpu") == ROOT / "results" / "gpu" / "04_fedmlp"
    paths.use_profile("gpu")
    assert paths.current_profile() == "gpu"
    assert tables.figures_dir() == ROOT / "figures" / "gpu"
    assert paths.results_dir() == ROOT / "results" / "gpu"
    assert paths.figures_dir("cpu") == ROOT / "figures"  # an explicit profile wins
    assert paths.notebook_outputs("gpu", "01_fedpsl") == str(ROOT / "results" / "gpu" / "01_fedpsl")
    paths.use_profile(None)
    assert paths.figures_dir() == ROOT / "figures"
    monkeypatch.setattr(paths, "PACKAGE_PARENT", tmp_path / "site-packages")  # an installed package
    monkeypatch.chdir(tmp_path)
    assert paths.figures_dir("gpu") == tmp_path / "figures" / "gpu"
    assert paths.results_dir("x", "gpu") == tmp_path / "results" / "gpu" / "x"
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "f"))  # the environment still wins
    assert paths.figures_dir("gpu") == tmp_path / "f"


def test_environment_variables_win_over_checkout_and_profile(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "f"))
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "r"))
    paths.use_profile("smoke")
    assert paths.figures_dir() == tmp_path / "f"
    assert paths.results_dir("02_fedlsm") == tmp_path / "r" / "02_fedlsm"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDPL_FIGURES", "rel")  # a relative value: under the working directory, made absolute
    assert paths.figures_dir() == tmp_path / "rel"


def test_an_installed_package_uses_the_working_directory_and_smoke_a_temporary_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "PACKAGE_PARENT", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    assert paths.checkout() is None
    assert paths.figures_dir() == tmp_path / "figures"
    assert paths.results_dir("x") == tmp_path / "results" / "x"
    smoke = paths.figures_dir("smoke")
    assert smoke.is_relative_to(Path(tempfile.gettempdir())) and smoke.name == "figures"
    assert not smoke.is_relative_to(tmp_path)


def test_notebook_outputs_keeps_a_given_results_dir_and_prints_where_outputs_go(capsys):
    assert paths.notebook_outputs("smoke", "00_introduction") == str(ROOT / "outputs/smoke/results/00_introduction")
    out = capsys.readouterr().out  # no machine path: relative to the checkout
    assert out.strip() == "figures -> outputs/smoke/figures, results -> outputs/smoke/results/00_introduction"
    assert paths.notebook_outputs("cpu", "00_introduction", "my/results") == "my/results"  # as given
    assert f"figures -> figures, results -> {paths.shown(Path('my/results').resolve())}" in capsys.readouterr().out


def test_shown_paths_name_no_machine_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "f"))
    assert paths.shown(tmp_path / "f" / "a.png", "FEDPL_FIGURES") == "$FEDPL_FIGURES/a.png"
    assert paths.shown(ROOT / "figures" / "00_x.png") == "figures/00_x.png"
    assert paths.shown(Path.home() / "data") == "~/data"
    assert paths.shown("/srv/nih") == "/srv/nih"  # a folder of no known place: as the user named it


def test_every_notebook_resolves_its_outputs_through_paths():
    import nbformat

    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = nbformat.read(nb, as_version=4).cells
        i = next(k for k, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        assert "\nresults_dir: Optional[str] = None " in cells[i].source, f"{nb.name}: results_dir defaults to None"
        assert "paths.notebook_outputs(profile, " in cells[i + 1].source, f"{nb.name}: setup cell prints its outputs"


def _snapshot(folder: Path) -> dict:
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.notebook
@pytest.mark.parametrize("cwd", ["root", "notebooks"], ids=["papermill_from_root", "kernel_in_notebooks"])
def test_a_smoke_run_never_touches_the_committed_figures(cwd, tmp_path):
    # no $FEDPL_FIGURES / $FEDPL_RESULTS and no results_dir: the defaults alone must be safe
    import nbformat
    import papermill as pm
    from test_notebooks import WRITES, notebook_head

    # notebook 00's parameters and setup, then a cell that writes a table and a figure as its
    # cells do (the whole notebook runs once in the suite, under nbval)
    nb = notebook_head("00_introduction.ipynb", tmp_path, [WRITES.replace("{stem}", "00_probe")])
    watched = [ROOT / "figures", ROOT / "notebooks" / "figures", ROOT / "notebooks" / "results"]
    before = [_snapshot(w) for w in watched]
    smoke = ROOT / "outputs" / "smoke" / "figures"
    out = tmp_path / "out.ipynb"
    t0 = time.time() - 2
    pm.execute_notebook(
        str(nb),
        str(out),
        parameters={"profile": "smoke"},
        cwd=str(ROOT if cwd == "root" else ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    assert [_snapshot(w) for w in watched] == before, "a smoke run changed figures/ or wrote under notebooks/"
    executed = nbformat.read(out, as_version=4)
    text = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "figures -> outputs/smoke/figures, results -> outputs/smoke/results/00_introduction" in text
    assert (smoke / "00_probe.csv").stat().st_mtime >= t0, "the smoke run wrote its table elsewhere"
    assert (smoke / "00_probe.png").stat().st_mtime >= t0, "the smoke run wrote its figure elsewhere"
