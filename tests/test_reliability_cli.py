"""The command line answers bad input in one line, before any work: ``--*-kwargs`` values nested
thousands of levels deep, ``reproduce -p`` values that expand to millions of values, plugins that
cannot be imported or that take a name they may not have, a link planted where ``reproduce``
writes an executed notebook, options out of range.  Every test goes through ``cli.main``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fedpl_core.apps import cli
from fedpl_core.base.validation import machine_cores

ROOT = Path(cli.__file__).resolve().parents[2]


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("fedpl: error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
    return errors[0]


# ------------------------------------------------------------------ --*-kwargs flags
def _nested_dicts(n: int) -> str:
    return '{"a":' * n + "1" + "}" * n


def _nested_lists(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["run", "--method-kwargs", _nested_dicts(5000)], "--method-kwargs"),
        (["run", "--dataset-kwargs", _nested_lists(3000)], "--dataset-kwargs"),
        (["run", "--model-kwargs", _nested_lists(100)], "--model-kwargs"),
        (
            ["grid", "config.yaml", "--methods", "fedavg", "--partition-kwargs", _nested_lists(3000)],
            "--partition-kwargs",
        ),
        (["grid", "config.yaml", "--methods", "fedavg", "--split-kwargs", _nested_dicts(1500)], "--split-kwargs"),
    ],
)
def test_a_kwargs_flag_nested_too_deep_is_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = run_main(capsys, *argv)
    line = one_error_line(err)
    assert rc == 2 and out == "" and line.startswith(f"fedpl: error: argument {flag}: ")
    assert len(line) < 300, line  # the value itself is not echoed


def test_a_kwargs_flag_with_a_key_twice_or_bad_json_names_the_flag(capsys):
    rc, _, err = run_main(capsys, "run", "--model-kwargs", '{"a": 1, "a": 2}')
    assert rc == 2 and "argument --model-kwargs: key 'a' is given twice" in one_error_line(err)
    rc, _, err = run_main(capsys, "run", "--method-kwargs", '{"a":')
    assert rc == 2 and "argument --method-kwargs: not valid JSON" in one_error_line(err)


# ------------------------------------------------------------------ reproduce
class FakePapermill:
    """``papermill.execute_notebook`` without a kernel: it writes a notebook to the output path
    it is given with a plain ``open`` (as papermill does), so the path handling is what runs."""

    def __init__(self, fail: bool = False):
        self.calls: list[dict] = []
        self.fail = fail

    def __call__(self, input_path, output_path, parameters=None, **kw):
        self.calls.append({"input": input_path, "output": output_path, "parameters": dict(parameters or {})})
        nb = {"cells": [], "metadata": {"executed": True}, "nbformat": 4, "nbformat_minor": 5}
        with open(output_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(nb))
        if self.fail:
            raise RuntimeError("a cell failed")
        return nb


@pytest.fixture
def fake_papermill(monkeypatch):
    import papermill

    fake = FakePapermill()
    monkeypatch.setattr(papermill, "execute_notebook", fake)
    monkeypatch.setenv("FEDPL_FIGURES", "/nonexistent-figures")  # printed only
    return fake


def test_reproduce_refuses_a_yaml_alias_bomb_in_a_parameter_before_any_notebook_runs(capsys, tmp_path, fake_papermill):
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_reliability_layers import BOMB
    finally:
        sys.path.remove(str(ROOT / "tests"))
    for name in ("seeds", "dataset_kwargs"):
        rc, out, err = run_main(
            capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path), "-p", name, BOMB
        )
        assert rc == 2 and one_error_line(err).startswith(f"fedpl: error: -p {name}: ")
    assert fake_papermill.calls == []


def test_reproduce_writes_over_a_planted_link_never_through_it(capsys, tmp_path, fake_papermill):
    out_dir, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out_dir.mkdir()
    elsewhere.mkdir()
    victim = elsewhere / "victim"
    victim.write_text("VICTIM")
    (out_dir / "00_introduction.ipynb").symlink_to(victim)
    rc, out, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(out_dir))
    assert rc == 0, err
    assert victim.read_text() == "VICTIM"
    target = out_dir / "00_introduction.ipynb"
    assert not target.is_symlink() and json.loads(target.read_text())["metadata"] == {"executed": True}
    # papermill wrote into a private folder inside the output folder, removed after
    (call,) = fake_papermill.calls
    assert Path(call["output"]).parent.parent == out_dir.resolve() and not Path(call["output"]).parent.exists()
    assert sorted(p.name for p in out_dir.iterdir()) == ["00_introduction.ipynb", "RUN.json"]


def test_reproduce_keeps_a_failed_notebook_and_removes_its_private_folder(capsys, tmp_path, fake_papermill):
    fake_papermill.fail = True
    rc, out, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path))
    assert rc == 1 and "FAILED" in out
    assert json.loads((tmp_path / "00_introduction.ipynb").read_text())["metadata"] == {"executed": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00_introduction.ipynb", "RUN.json"]


def test_reproduce_notebooks_needs_a_value_and_names_the_notebooks_there_are(capsys, tmp_path, fake_papermill):
    rc, _, err = run_main(capsys, "reproduce", "--notebooks", "--output", str(tmp_path))
    assert rc == 2 and "--notebooks: expected at least one argument" in one_error_line(err)
    rc, _, err = run_main(capsys, "reproduce", "--notebooks", "99", "--output", str(tmp_path))
    assert rc == 2 and "no notebook matches '99'" in one_error_line(err) and "00_introduction.ipynb" in err
    assert fake_papermill.calls == []


def test_reproduce_paper_runs_the_four_papers_notebooks_and_refuses_another(capsys, tmp_path, fake_papermill):
    rc, _, err = run_main(capsys, "reproduce", "--profile", "paper", "--notebooks", "00", "--output", str(tmp_path))
    assert rc == 2 and "notebook 00_introduction has no 'paper' profile" in one_error_line(err)
    assert fake_papermill.calls == []
    rc, _, _ = run_main(capsys, "reproduce", "--profile", "paper", "--output", str(tmp_path))
    ran = [Path(c["input"]).stem for c in fake_papermill.calls]
    assert rc == 0 and [n[:3] for n in ran] == ["01_", "02_", "03_", "04_"], ran
    assert {c["parameters"]["profile"] for c in fake_papermill.calls} == {"paper"}


@pytest.mark.parametrize(
    "name, value, says",
    [
        ("rounds", "0", "-p rounds must be >= 1"),
        ("seeds", "[a]", "-p seeds"),
        ("profile", "cpu", "-p profile: give the profile with --profile"),
        ("first_order", "true", "notebook 00_introduction.ipynb has no parameter 'first_order'"),
        ("device", "cuda:x", "-p device must be auto, cpu, cuda, cuda:N or mps"),
    ],
)
def test_reproduce_checks_parameters_before_any_notebook_runs(capsys, tmp_path, fake_papermill, name, value, says):
    rc, _, err = run_main(
        capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path), "-p", name, value
    )
    assert rc == 2 and says in one_error_line(err)
    assert fake_papermill.calls == []


def reproduce_00(capsys, out, *more: str) -> tuple[int, str, str]:
    """``reproduce`` of notebook 00 in the smoke profile into ``out``, with ``more`` options."""
    return run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(out), *more)


def test_reproduce_refuses_a_cuda_device_this_machine_lacks(capsys, tmp_path, fake_papermill):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    rc, _, err = reproduce_00(capsys, tmp_path, "-p", "device", "cuda")
    assert rc == 2 and "-p device 'cuda' is not available on this machine" in one_error_line(err)
    assert fake_papermill.calls == []


def test_reproduce_caps_workers_to_the_cores_with_a_warning(capsys, tmp_path, fake_papermill):
    cores = machine_cores()
    says = f"-p workers 100000 is more than the {cores} CPU core[(]s[)] of this machine; using {cores}"
    with pytest.warns(UserWarning, match=says):
        rc, _, err = reproduce_00(capsys, tmp_path, "-p", "workers", "100000")
    assert rc == 0, err
    assert fake_papermill.calls[0]["parameters"]["workers"] == cores


# ------------------------------------------------------------------ grid --workers, report --figure
def test_grid_workers_beyond_the_cores_warn_and_are_capped(capsys, monkeypatch, tmp_path):
    from fedpl_core.runs import study

    seen = []

    def stop(cfg, methods, seeds, **kw):
        seen.append(kw["workers"])
        raise ValueError("stopped here by the test")

    monkeypatch.setattr(study, "run_many", stop)
    config = tmp_path / "c.yaml"
    config.write_text("dataset: synthetic-cxr\nn_train: 40\nn_test: 20\nimage_size: 28\nnum_clients: 2\n")
    cores = machine_cores()
    with pytest.warns(UserWarning, match=f"--workers 100000 is more than the {cores} CPU core[(]s[)] of this machine"):
        rc, _, err = run_main(capsys, "grid", str(config), "--methods", "fedavg", "--workers", "100000")
    assert rc == 2 and seen == [cores] and "stopped here by the test" in err


def test_report_checks_its_figure_before_printing_anything(capsys, tmp_path):
    (tmp_path / "a-file").write_text("x")
    rc, out, err = run_main(
        capsys,
        "report",
        "--dataset",
        "synthetic-cxr",
        "--classes",
        "Effusion,Nodule",
        "--n-train",
        "40",
        "--n-test",
        "20",
        "--image-size",
        "28",
        "--num-clients",
        "2",
        "--figure",
        str(tmp_path / "a-file" / "heatmap.png"),
    )
    assert rc == 2 and out == ""
    assert "--figure" in one_error_line(err) and "is a file, not a folder" in err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_report_refuses_a_read_only_figure_folder_before_printing(capsys, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc, out, err = run_main(
            capsys, "report", "--n-train", "40", "--n-test", "20", "--image-size", "28", "--figure", str(ro / "x.png")
        )
    finally:
        ro.chmod(0o755)
    assert rc == 2 and out == "" and "--figure" in one_error_line(err)


# ------------------------------------------------------------------ plugins
def _python(args, cwd, env=None):
    e = {k: v for k, v in os.environ.items() if k != "FEDPL_PLUGINS"}
    e.update(PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "argv", [["run", "--method", "fedavg"], ["grid", "c.yaml", "--methods", "fedavg"], ["methods"]]
)
@pytest.mark.parametrize(
    "plugin, says", [("nonexistent_plugin_mod", "no module named"), ("../x", "is not a module name")]
)
def test_a_plugin_of_the_environment_that_cannot_be_imported_is_one_line_from_every_command(
    capsys, monkeypatch, argv, plugin, says
):
    monkeypatch.setenv("FEDPL_PLUGINS", plugin)
    rc, out, err = run_main(capsys, *argv)
    line = one_error_line(err)
    assert rc == 2 and out == "" and f"plugin {plugin!r}" in line and says in line


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """``plugin(source)``: a fresh module of that source, importable, and its name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FEDPL_PLUGINS", "")

    def make(source: str) -> str:
        name = f"plug_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(source)
        return name

    return make


def test_a_plugin_that_raises_at_import_is_named(capsys, plugin):
    name = plugin("raise ValueError('boom')\n")
    rc, _, err = run_main(capsys, "--plugin", name, "methods")
    assert rc == 2 and one_error_line(err) == f"fedpl: error: plugin {name!r} failed while importing: ValueError: boom"


METHOD = """
from fedpl_core.methods import register
from fedpl_core.methods.fedavg import FedAvg


@register
class Mine(FedAvg):
    '''A plugin's method.'''

    name = {name!r}
"""

SOURCE = """
from fedpl_core.data.sources import register_source


@register_source({name!r})
def mine(*args, **kw):
    raise AssertionError("never built")
"""


@pytest.mark.parametrize("taken", ["synthetic-cxr", "nih"])
def test_a_plugin_cannot_replace_a_data_source_of_the_package(capsys, plugin, taken):
    from fedpl_core.data.sources import SOURCES

    before = dict(SOURCES)
    name = plugin(SOURCE.format(name=taken))
    rc, _, err = run_main(capsys, "--plugin", name, "methods")
    line = one_error_line(err)
    assert rc == 2 and f"plugin {name!r} registers data source {taken!r}" in line and "give it another name" in line
    assert SOURCES == before


def test_a_plugin_cannot_take_the_name_of_a_method_of_the_package_even_imported_first(tmp_path):
    """In a fresh process the plugin is imported before the package's methods: it is still the
    one refused, by name."""
    (tmp_path / "takes_moon.py").write_text(METHOD.format(name="moon"))
    out = _python(["-m", "fedpl_core", "--plugin", "takes_moon", "methods"], cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    line = one_error_line(out.stderr)
    assert "plugin 'takes_moon'" in line and "'moon' is taken by fedpl_core.methods.moon.MOON" in line
    assert "takes_moon.Mine cannot be registered" in line


@pytest.mark.parametrize("kind, template", [("method", METHOD), ("data source", SOURCE)])
@pytest.mark.parametrize("bad", ["../../escaped", "UPPER", "a/b", "..", ".hidden"])
def test_a_plugin_name_that_cannot_be_a_file_name_is_refused(capsys, plugin, kind, template, bad):
    from fedpl_core.data.sources import SOURCES
    from fedpl_core.methods import METHODS

    name = plugin(template.format(name=bad))
    rc, _, err = run_main(capsys, "--plugin", name, "methods")
    line = one_error_line(err)
    assert rc == 2 and f"plugin {name!r}" in line and f"{kind} name {bad!r} cannot be registered" in line
    assert bad not in METHODS and bad not in SOURCES


def test_a_plugin_with_good_names_still_loads(capsys, plugin):
    from fedpl_core.data.sources import SOURCES
    from fedpl_core.methods import METHODS

    name = plugin(METHOD.format(name="plugin_fedavg_r5") + SOURCE.format(name="plugin-source-r5"))
    try:
        rc, out, err = run_main(capsys, "--plugin", name, "methods")
        assert rc == 0, err
        assert "plugin_fedavg_r5" in out.split("Other methods", 1)[1]
    finally:
        METHODS.pop("plugin_fedavg_r5", None)
        SOURCES.pop("plugin-source-r5", None)


@pytest.mark.notebook
def test_reproduce_with_papermill_replaces_a_planted_link(capsys, tmp_path, monkeypatch):
    """The same with papermill and a kernel: a two-cell notebook run into a folder where its
    name is a link to a file elsewhere."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('profile = "cpu"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print('ran', profile)"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src = tmp_path / "nb" / "00_tiny.ipynb"
    src.parent.mkdir()
    nbformat.write(nb, src)
    monkeypatch.setattr(cli, "discover_notebooks", lambda names=None, profile=None: [src])
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    out_dir, victim = tmp_path / "out", tmp_path / "victim.txt"
    out_dir.mkdir()
    victim.write_text("VICTIM")
    (out_dir / "00_tiny.ipynb").symlink_to(victim)
    rc, out, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(out_dir))
    assert rc == 0, out + err
    assert victim.read_text() == "VICTIM" and not (out_dir / "00_tiny.ipynb").is_symlink()
    executed = nbformat.read(out_dir / "00_tiny.ipynb", as_version=4)
    assert "ran smoke" in "".join(o.get("text", "") for c in executed.cells for o in c.get("outputs", []))
    assert sorted(p.name for p in out_dir.iterdir()) == ["00_tiny.ipynb", "RUN.json"]
