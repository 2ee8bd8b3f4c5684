"""The notebooks as committed, and the papermill batch path.

nbval executes every notebook in the smoke profile (``pytest --nbval-lax notebooks/``,
part of ``make test``; see ``notebooks/conftest.py``).  Here: the sources are in the form
JupyterLab saves and hold no outputs (the checked cells' references live in
``tests/notebook_outputs/``), their parameters cell is typed and documented for papermill,
a misspelt parameter is refused, each notebook teaches (what you will learn, what this run
shows, three exercises, no issue numbers), and ``python -m fedpl_core reproduce``
(papermill) runs a notebook with injected parameters.
Marked ``notebook``: ``pytest -m "not notebook"`` runs the fast suite alone.
"""

import json
import platform
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REFERENCES = ROOT / "tests" / "notebook_outputs"
IMAGES = {"image/png", "image/jpeg", "image/svg+xml"}
#: A machine's folder in an output: the checkout, a home folder, a temporary folder.
MACHINE_PATH = re.compile(r"(/home/|/tmp/|/work/|/Users/|/root/|/var/folders/|C:\\\\)")
sys.path.insert(0, str(ROOT / "tools"))
import checked_outputs as tool  # noqa: E402

pytest_plugins = ("pytester",)  # test_a_changed_digit_fails_nbval runs nbval in a folder of its own


def _read(nb):
    import nbformat

    return nbformat.read(nb, as_version=4)


def _checked(cell) -> bool:
    return tool.checked(cell)


# ------------------------------------------------------------------ the saved form, no outputs
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_in_the_form_jupyterlab_saves(nb):
    """Opening and saving a notebook in JupyterLab writes ``nbformat.write`` of it with the
    kernel's metadata: the committed text is exactly that, so ``git status`` stays clean."""
    import nbformat

    text = nb.read_text(encoding="utf-8")
    parsed = nbformat.reads(text, as_version=4)
    assert tool.saved_form(parsed) == text, (
        f"{nb.name}: not in the saved form (python tools/checked_outputs.py --format)"
    )
    want = tool.kernel_metadata()
    assert parsed.metadata.get("kernelspec") == want["kernelspec"]
    got = dict(parsed.metadata.get("language_info", {}))
    if got.get("version") != want["language_info"]["version"]:
        pytest.skip(
            f"the notebooks are saved for Python {got.get('version')}; JupyterLab on this Python "
            f"({platform.python_version()}) writes its own version into language_info"
        )
    assert got == want["language_info"]


EXECUTED = sorted((ROOT / "reports").glob("*.ipynb")) + sorted((ROOT / "reports" / "paper").glob("*.ipynb"))


@pytest.mark.parametrize("nb", EXECUTED, ids=[p.relative_to(ROOT / "reports").as_posix() for p in EXECUTED])
def test_an_executed_notebook_is_in_the_form_jupyterlab_saves(nb):
    """Opening and saving an executed notebook of ``reports/`` leaves it as it is: papermill's text
    plus the final newline JupyterLab writes (``reproduce`` adds it)."""
    import nbformat

    text = nb.read_text(encoding="utf-8")
    assert tool.saved_form(nbformat.reads(text, as_version=4)) == text, f"{nb}: not in the form JupyterLab saves"


def test_reproduce_ends_an_executed_notebook_with_the_newline_jupyterlab_writes(tmp_path):
    from fedpl_core.apps.cli import saved_form

    nb = tmp_path / "x.ipynb"
    nb.write_text('{"cells": []}', encoding="utf-8")
    saved_form(nb)
    saved_form(nb)  # once only
    assert nb.read_text(encoding="utf-8") == '{"cells": []}\n'


def test_saved_form_check_can_fail():
    """The check sees what JupyterLab would change: a kernel's metadata, a stored output,
    another indentation."""
    import nbformat

    nb = _read(NOTEBOOKS[0])
    text = tool.saved_form(nb)
    assert tool.saved_form(nbformat.reads(text, as_version=4)) == text
    assert tool.saved_form(nb) != json.dumps(nb, indent=2) + "\n"
    old = dict(nb.metadata, kernelspec={"display_name": "Python 3", "language": "python", "name": "python3"})
    assert tool.clean(nb.copy()).metadata != old


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_holds_no_outputs_and_its_checked_cells_have_current_references(nb):
    code = [c for c in _read(nb).cells if c.cell_type == "code"]
    for i, c in enumerate(code):
        assert not c.get("outputs"), f"{nb.name} code cell {i}: outputs are stored (a learner would meet them)"
        assert c.get("execution_count") is None, f"{nb.name} code cell {i}: an execution count is stored"
    marked = {c.id: c.source for c in code if _checked(c)}
    assert marked, f"{nb.name}: no cell tagged {tool.TAG} (nbval would check no output)"
    refs = json.loads((REFERENCES / f"{nb.stem}.json").read_text(encoding="utf-8"))
    assert set(refs) == set(marked), f"{nb.name}: references of other cells (make checked-outputs)"
    for cid, src in marked.items():
        assert refs[cid]["source"] == src, f"{nb.name} cell {cid} changed since its reference (make checked-outputs)"
        outs = refs[cid]["outputs"]
        assert outs, f"{nb.name} cell {cid}: an empty reference"
        for o in outs:
            assert o["output_type"] != "error", f"{nb.name} cell {cid}: a stored error"
            assert not IMAGES & set(o.get("data", {})), f"{nb.name} cell {cid}: a stored image"


def test_references_show_no_machine_path():
    for path in sorted(REFERENCES.glob("*.json")):
        assert not MACHINE_PATH.search(path.read_text(encoding="utf-8")), f"{path.name} shows a machine path"


def test_a_changed_digit_fails_nbval(pytester):
    """The reference outside the notebook is what nbval compares: the conftest puts it into
    the cell; a digit changed in it fails the run, the right one passes."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    (pytester.path / "notebooks").mkdir()
    (pytester.path / "tests" / "notebook_outputs").mkdir(parents=True)
    for name in ("conftest.py", "nbval_sanitize.cfg"):
        (pytester.path / "notebooks" / name).write_text((ROOT / "notebooks" / name).read_text())
    cell = new_code_cell("print(round(2 / 3, 4), 'seeds', [0])", metadata={"tags": [tool.TAG]})
    nb = tool.clean(new_notebook(cells=[cell]))
    nbformat.write(nb, pytester.path / "notebooks" / "00_tiny.ipynb")

    def run_with(text):
        ref = {cell.id: {"source": cell.source, "outputs": [{"name": "stdout", "output_type": "stream", "text": text}]}}
        tool.write_references("00_tiny", ref, pytester.path / "tests" / "notebook_outputs")
        return pytester.runpytest_subprocess(
            "--nbval-lax", "-p", "no:cacheprovider", "notebooks/00_tiny.ipynb", "-k", "Cell", "-o", "addopts="
        )

    run_with("0.6667 seeds [0]\n").assert_outcomes(passed=1)
    run_with("0.6668 seeds [0]\n").assert_outcomes(failed=1)


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


# ------------------------------------------------------------------ parameters
def _parameters_cell(nb):
    tagged = [c for c in _read(nb).cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{nb.name}: needs exactly one cell tagged 'parameters'"
    return tagged[0]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameters_cell_reads_fedpl_profile_with_cpu_as_default(nb, monkeypatch):
    cell = _parameters_cell(nb)
    for env, want in ((None, "cpu"), ("smoke", "smoke")):
        if env is None:
            monkeypatch.delenv("FEDPL_PROFILE", raising=False)
        else:
            monkeypatch.setenv("FEDPL_PROFILE", env)
        scope: dict = {}
        exec(cell.source, scope)  # the cell only imports and assigns values
        assert scope["profile"] == want
    # papermill reads every parameter of the cell (a line it cannot parse is logged as
    # "Unable to parse line" and its parameter passed as "unknown")
    import papermill as pm

    assigned = {k for k in scope.get("__annotations__", {})}
    assert assigned and set(pm.inspect_notebook(str(nb))) == assigned
    assert {k for k in scope if not k.startswith("__") and k not in ("os", "Optional")} == assigned


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_papermill_help_shows_a_type_and_a_help_line_for_every_parameter(nb):
    """``papermill --help-notebook`` reads the annotation and the comment of each line: no
    "Unknown type", no parameter without help, every line within the cell's width."""
    import papermill as pm

    params = pm.inspect_notebook(str(nb))
    for name, p in params.items():
        assert p["inferred_type_name"] not in ("None", ""), f"{nb.name}: {name} has no type"
        assert len(p["help"]) > 10, f"{nb.name}: {name} has no help"
    assert "nbval" not in params["profile"]["help"] and "conftest" not in _parameters_cell(nb).source
    assert max(len(line) for line in _parameters_cell(nb).source.splitlines()) <= 90


# ------------------------------------------------------------------ teaching
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_teaches(nb):
    """What you will learn and the paper's tables it follows at the top; a section "What
    this run shows" computed in a code cell; three exercises, each naming what to change;
    no issue number anywhere."""
    cells = _read(nb).cells
    md = [c.source for c in cells if c.cell_type == "markdown"]
    assert "What you will learn" in md[0] and re.search(r"It follows|follows the paper", md[0]), nb.name
    heads = [
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## What this run shows")
    ]
    assert len(heads) == 1, nb.name
    shows = cells[heads[0] + 1]
    assert shows.cell_type == "code" and re.search(r"what_this_run_shows\(|findings\(", shows.source), nb.name
    last = cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Exercises"), nb.name
    items = re.findall(r"^\d\. \*\*", last.source, flags=re.M)
    assert len(items) == 3, f"{nb.name}: {len(items)} exercises"
    for item in re.split(r"^\d\. ", last.source, flags=re.M)[1:]:
        assert "`" in item and "?" in item, f"{nb.name}: an exercise names no setting or asks nothing: {item[:80]}"
    text = "\n".join(c.source for c in cells)
    assert not re.search(r"[Ii]ssue \d+", text), f"{nb.name} names an issue number"
    assert "0.748" not in text


# ------------------------------------------------------------------ papermill
def notebook_head(nb_name: str, tmp_path: Path, probe: Sequence[str] = ()) -> Path:
    """The notebook up to its setup cell (the one after ``parameters``): what reads the
    parameters; then the ``probe`` cells, if any.  Each notebook runs to its end once in the
    suite, under nbval; a test of what its parameters and its setup do runs this head."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / nb_name, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    nb.cells = nb.cells[: i + 2] + [nbformat.v4.new_code_cell(src) for src in probe]
    out = tmp_path / nb_name
    nbformat.write(nb, out)
    return out


#: A cell writing a table and a figure the way a notebook's cells do (``show`` / ``save_table``,
#: ``savefig`` into the folder the setup cell chose).
WRITES = """import matplotlib.pyplot as plt
import pandas as pd
from fedpl_core.report.plotting import savefig
from fedpl_core.report.tables import save_table
save_table(pd.DataFrame({"a": [1.0]}), "{stem}")
fig, ax = plt.subplots()
ax.plot([0, 1])
_ = savefig(fig, "{stem}")
"""


@pytest.mark.notebook
def test_a_misspelt_papermill_parameter_is_refused_in_one_line(tmp_path, monkeypatch):
    """``-p round 2`` (for ``rounds``): papermill only warns and would run the notebook to the
    end on the profile's rounds; the setup cell refuses it, naming it and the parameters."""
    import subprocess

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "results"))
    nb = notebook_head("00_introduction.ipynb", tmp_path)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(nb),
            str(tmp_path / "o.ipynb"),
            "-p",
            "profile",
            "smoke",
            "-p",
            "round",
            "2",
            "--cwd",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0
    executed = _read(tmp_path / "o.ipynb")
    errors = [
        o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", []) if o["output_type"] == "error"
    ]
    assert len(errors) == 1 and errors[0]["ename"] == "NotebookParameterError"
    (line,) = errors[0]["traceback"]
    assert line.startswith("fedpl: error: unknown parameter 'round'") and "rounds" in line and "seeds" in line
    # the right name passes
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(nb),
            str(tmp_path / "o2.ipynb"),
            "-p",
            "profile",
            "smoke",
            "-p",
            "rounds",
            "2",
            "--cwd",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-2000:]


@pytest.mark.notebook
def test_reproduce_runs_a_notebook_with_papermill_parameters(tmp_path, monkeypatch, capsys):
    """``reproduce --notebooks 00`` injects the parameters, runs every cell and writes into
    ``$FEDPL_FIGURES``; the notebook it runs is notebook 00's head (parameters and setup) and a
    cell that writes a table and a figure as the notebook's cells do."""
    from fedpl_core.apps import cli

    figures = tmp_path / "figures"  # never overwrite the committed cpu-profile figures
    monkeypatch.setenv("FEDPL_FIGURES", str(figures))
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "results"))
    monkeypatch.delenv("FEDPL_PROFILE", raising=False)
    (tmp_path / "nb").mkdir()
    head = notebook_head("00_introduction.ipynb", tmp_path / "nb", [WRITES.replace("{stem}", "00_probe")])
    monkeypatch.setattr(cli, "discover_notebooks", lambda names=None, profile=None: [head] if names == ["00"] else [])
    assert cli.main(["reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path / "run")]) == 0
    executed = _read(tmp_path / "run" / "00_introduction.ipynb")
    injected = [c for c in executed.cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(injected) == 1 and 'profile = "smoke"' in injected[0].source
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a code cell did not run"
    setup = "".join(o.get("text", "") for o in code[2]["outputs"])
    assert "figures -> $FEDPL_FIGURES" in setup and "profile smoke:" in setup
    written = {p.suffix for p in figures.glob("00_probe*")}
    assert {".png", ".csv"} <= written
    assert "00_introduction.ipynb" in capsys.readouterr().out
    shown = json.dumps(
        [
            o
            for c in code
            for o in c.get("outputs", [])
            if o["output_type"] != "stream" or "Warning" not in o.get("text", "")
        ]
    )
    assert str(tmp_path) not in shown and str(ROOT) not in shown, "an output shows a machine path"


# ------------------------------------------------------------------ real data from a notebook
def _partial_nih(root: Path, n: int = 240, missing_every: int = 2, seed: int = 0) -> Path:
    """An NIH ChestX-ray14 folder in the published layout (``Data_Entry_2017.csv``, ``images_00N/images``,
    the split lists) holding only part of the images it lists: every ``missing_every``-th is absent."""
    import numpy as np
    from fixtures_data import write_nih, write_text  # tests/ is on sys.path

    from fedpl_core.data import synthetic as S

    rng = np.random.default_rng(seed)
    rows, skip = [], []
    for i in range(n):
        found = [c for c in S.FEDMLP_CXR8 if rng.random() < 0.3]
        name = f"{i + 1:08d}_000.png"
        rows.append((name, "|".join(found) or "No Finding", 0, i + 1, 40 + i % 40, "MF"[i % 2], "PA", (32, 32)))
        if i % missing_every == 1:
            skip.append(name)
    write_nih(root, rows=rows, skip_images=tuple(skip), split_files=False)
    names = [r[0] for r in rows]
    write_text(root / "train_val_list.txt", "\n".join(names[: 3 * n // 4]) + "\n")
    write_text(root / "test_list.txt", "\n".join(names[3 * n // 4 :]) + "\n")
    return root


@pytest.mark.notebook
def test_notebook_04_reads_a_partial_nih_download_with_skip_missing_from_a_parameter(tmp_path, monkeypatch):
    """``data_roots={"CXR": <NIH folder holding part of the images>}`` with
    ``dataset_kwargs={"CXR": {"skip_missing": true}}`` reach notebook 04's CXR runs on the real
    loader, which train and are tabled (the head of the notebook and its Table 2 cell, with one
    method); a misspelt option or a key of no folder is refused in the setup cell."""
    import papermill as pm

    nih = _partial_nih(tmp_path / "nih")
    for k, v in {
        "FEDPL_FIGURES": tmp_path / "figures",
        "FEDPL_RESULTS": tmp_path / "results",
        "FEDPL_CACHE": tmp_path / "cache",
    }.items():
        monkeypatch.setenv(k, str(v))
    params = {
        "profile": "smoke",
        "data_roots": json.dumps({"CXR": str(nih)}),
        "dataset_kwargs": json.dumps({"CXR": {"skip_missing": True}}),
    }
    table2 = (
        "res2 = run_many(base['CXR'], study.methods(S)[:1], seeds, results_dir,"
        " settings=study.level_settings(S, 'CXR'), progress=False)\n"
        "show(study.results_table(res2), '04_table2_cxr', 'Table 2, CXR', FIG)"
    )
    (tmp_path / "nb").mkdir()
    probe = notebook_head("04_fedmlp.ipynb", tmp_path / "nb", [table2])
    pm.execute_notebook(
        str(probe),
        str(tmp_path / "o.ipynb"),
        parameters=params,
        cwd=str(ROOT),
        progress_bar=False,
        kernel_name="python3",
    )
    results = [json.loads(p.read_text()) for p in (tmp_path / "results" / "04_fedmlp").glob("*.json")]
    cxr = [r["config"] for r in results if r["config"]["dataset"] == "nih"]
    assert cxr and all(c["dataset_kwargs"] == {"skip_missing": True} and c["data_root"] == str(nih) for c in cxr)
    assert (tmp_path / "figures" / "04_table2_cxr.csv").is_file()

    head = notebook_head("04_fedmlp.ipynb", tmp_path)  # the options are checked in the setup cell
    with pytest.raises(pm.PapermillExecutionError, match="the nih loader has no option 'skip_mising'"):
        pm.execute_notebook(
            str(head),
            str(tmp_path / "o2.ipynb"),
            progress_bar=False,
            kernel_name="python3",
            parameters=dict(params, dataset_kwargs='{"CXR": {"skip_mising": true}}'),
        )
    with pytest.raises(pm.PapermillExecutionError, match="dataset_kwargs\\['ICH'\\] names no folder of data_roots"):
        pm.execute_notebook(
            str(head),
            str(tmp_path / "o3.ipynb"),
            progress_bar=False,
            kernel_name="python3",
            parameters=dict(params, dataset_kwargs='{"ICH": {"skip_missing": true}}'),
        )


def test_dataset_kwargs_reach_the_config_of_a_real_data_folder_only(tmp_path):
    from fedpl_core.base.validation import ConfigError
    from fedpl_core.studies import fedlsm, fedmlp

    st = fedmlp.settings("smoke", data_roots={"CXR": str(tmp_path)}, dataset_kwargs='{"CXR": {"skip_missing": true}}')
    assert st.config("CXR").dataset_kwargs == {"skip_missing": True}
    assert st.config("ICH").dataset_kwargs == {}  # the built-in data take none
    st = fedlsm.settings("smoke", data_roots={"Task 2": str(tmp_path)}, dataset_kwargs={"Task 2": {"max_images": 50}})
    assert st.config("Task 2").dataset_kwargs == {"max_images": 50} and st.config("Task 1").dataset_kwargs == {}
    with pytest.raises(ConfigError, match="dataset_kwargs\\['Task 1'\\] names no folder of data_roots"):
        fedlsm.settings("smoke", data_roots={"Task 2": str(tmp_path)}, dataset_kwargs={"Task 1": {"max_images": 5}})
    with pytest.raises(ConfigError, match="must be a mapping"):
        fedmlp.settings("smoke", data_roots={"CXR": str(tmp_path)}, dataset_kwargs="[1, 2]")
