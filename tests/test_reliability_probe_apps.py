"""What a tester's probe of the command line found, each answered now through ``cli.main`` (or the
site builder's ``main``): ``reproduce`` never writes its executed copies over the source notebooks,
an interrupted notebook never replaces a finished one, ``gpu-checks`` never writes through a link,
``sys.exit("text")`` and a bare ``KeyError`` in code are one line each, the folders the notebooks
write into are checked before any notebook runs, the site builder refuses an ``--out`` inside
``--docs``, a pipe among the pages and a notebook named ``index``, and ``report --figure`` takes
only a name it can write."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fedpl_core.apps import cli

sys.path.insert(0, os.path.dirname(__file__))
from test_reliability_cli import one_error_line  # noqa: E402
from test_reliability_cli import run_main as _run_main  # noqa: E402

from fedpl_core.apps import gpu_checks as G

ROOT = Path(cli.__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
SOURCE = ROOT / "notebooks" / "00_introduction.ipynb"


def run_main(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()  # what an earlier step printed is not this command's
    return _run_main(capsys, *(str(a) for a in argv))


class FakePapermill:
    """``papermill.execute_notebook`` without a kernel: it writes a notebook at the output path
    with a plain ``open`` (as papermill does); ``interrupt``: the names of the notebooks during
    which it is interrupted (after writing a partial notebook), with that exception."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.interrupt: dict[str, type[BaseException]] = {}

    def __call__(self, input_path, output_path, parameters=None, **kw):
        self.calls.append({"input": input_path, "output": output_path, "parameters": dict(parameters or {})})
        name = Path(input_path).name
        partial = name in self.interrupt
        nb = {
            "cells": [],
            "metadata": {"executed": "partial" if partial else "new"},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        with open(output_path, "w", encoding="utf-8") as f:
            f.write(json.dumps(nb))
        if partial:
            raise self.interrupt[name]()
        return nb


@pytest.fixture
def fake_papermill(monkeypatch, tmp_path):
    import papermill

    fake = FakePapermill()
    monkeypatch.setattr(papermill, "execute_notebook", fake)
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))  # printed only
    monkeypatch.delenv("FEDPL_RESULTS", raising=False)
    return fake


# ------------------------------------------------------------------ 1. --output is the source notebooks' folder
@pytest.mark.parametrize("how", ["absolute", "relative", "link"])
def test_reproduce_refuses_to_write_into_the_source_notebooks_folder(
    capsys, tmp_path, monkeypatch, fake_papermill, how
):
    before = SOURCE.read_bytes()
    had = sorted(p.name for p in SOURCE.parent.iterdir())
    if how == "absolute":
        output = str(ROOT / "notebooks")
    elif how == "relative":
        monkeypatch.chdir(ROOT)
        output = "notebooks"
    else:
        (tmp_path / "nb").symlink_to(ROOT / "notebooks")
        output = str(tmp_path / "nb")
    rc, out, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", output)
    line = one_error_line(err)
    assert rc == 2 and "folder of the source notebooks" in line and line.startswith(f"fedpl: error: --output {output}")
    assert fake_papermill.calls == []
    assert SOURCE.read_bytes() == before and sorted(p.name for p in SOURCE.parent.iterdir()) == had


# ------------------------------------------------------------------ 2. an interrupted notebook
@pytest.mark.parametrize("signal, code", [(KeyboardInterrupt, 130), (cli.Terminated, 143)])
def test_an_interrupted_notebook_never_replaces_the_finished_one(capsys, tmp_path, fake_papermill, signal, code):
    out_dir = tmp_path / "out"
    rc, _, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", out_dir)
    assert rc == 0, err
    good = (out_dir / "00_introduction.ipynb").read_bytes()
    record = (out_dir / "RUN.json").read_bytes()
    fake_papermill.interrupt["00_introduction.ipynb"] = signal
    rc, _, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", out_dir)
    line = one_error_line(err)
    assert rc == code and ("interrupted" in line or "terminated" in line) and line == err.strip().splitlines()[-1]
    assert (out_dir / "00_introduction.ipynb").read_bytes() == good  # the finished copy stays
    assert (out_dir / "RUN.json").read_bytes() == record  # nothing recorded for the interrupted one
    assert sorted(p.name for p in out_dir.iterdir()) == ["00_introduction.ipynb", "RUN.json"]  # private folder gone


def test_the_notebooks_finished_before_an_interruption_are_recorded_the_interrupted_one_is_not(
    capsys, tmp_path, fake_papermill
):
    out_dir = tmp_path / "out"
    fake_papermill.interrupt["01_fedpsl.ipynb"] = KeyboardInterrupt
    rc, _, err = run_main(capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "01", "--output", out_dir)
    assert rc == 130 and one_error_line(err).startswith("fedpl: error: interrupted")
    rec = json.loads((out_dir / "RUN.json").read_text())
    assert list(rec["notebooks"]) == ["00_introduction"] and rec["notebooks"]["00_introduction"]["status"] == "ok"
    assert sorted(p.name for p in out_dir.iterdir()) == ["00_introduction.ipynb", "RUN.json"]


def test_execute_into_publishes_a_failed_notebook_but_not_an_interrupted_one(tmp_path):
    target = tmp_path / "00_a.ipynb"
    target.write_text("previous")

    def writes_then(exc):
        def execute(path):
            path.write_text("partial")
            raise exc

        return execute

    for exc in (KeyboardInterrupt(), SystemExit(3)):
        with pytest.raises(type(exc)):
            cli.execute_into(Path("00_a.ipynb"), tmp_path, writes_then(exc))
        assert target.read_text() == "previous" and [p.name for p in tmp_path.iterdir()] == ["00_a.ipynb"]
    with pytest.raises(RuntimeError):  # a failing cell: the notebook shows it
        cli.execute_into(Path("00_a.ipynb"), tmp_path, writes_then(RuntimeError("a cell failed")))
    assert target.read_text() == "partial" and [p.name for p in tmp_path.iterdir()] == ["00_a.ipynb"]


# ------------------------------------------------------------------ 5. the folders the notebooks write into
@pytest.mark.parametrize("where", ["-p results_dir", "FEDPL_RESULTS", "FEDPL_FIGURES"])
def test_a_results_or_figures_folder_that_is_a_file_is_refused_before_any_notebook(
    capsys, tmp_path, monkeypatch, fake_papermill, where
):
    f = tmp_path / "a_file"
    f.write_text("x")
    extra = []
    if where == "-p results_dir":
        extra = ["-p", "results_dir", str(f)]
    else:
        monkeypatch.setenv(where, str(f))
    rc, _, err = run_main(
        capsys, "reproduce", "--profile", "smoke", "--notebooks", "00", "--output", tmp_path / "out", *extra
    )
    line = one_error_line(err)
    shown = where if where.startswith("-p") else f"${where}"
    assert rc == 2 and line.startswith(f"fedpl: error: {shown} {f} is a file, not a folder"), line
    assert fake_papermill.calls == [] and not (tmp_path / "out").exists()


# ------------------------------------------------------------------ 4, 6. exits and errors raised in code
def test_sys_exit_with_text_in_code_is_one_line_not_a_crash(capsys, monkeypatch):
    def bye(a):
        sys.exit("plugin says bye")

    monkeypatch.setattr(cli, "cmd_methods", bye)
    rc, _, err = run_main(capsys, "methods")
    assert rc == 2 and one_error_line(err) == "fedpl: error: plugin says bye"
    monkeypatch.setattr(cli, "cmd_methods", lambda a: sys.exit(3))
    assert run_main(capsys, "methods")[0] == 3
    monkeypatch.setattr(cli, "cmd_methods", lambda a: sys.exit())
    assert run_main(capsys, "methods")[0] == 0
    e = SystemExit("bye")
    assert cli.exit_status(e) == 2 and capsys.readouterr().err == "fedpl: error: bye\n"


def test_a_bare_key_error_in_code_names_its_type_a_message_does_not(capsys, monkeypatch):
    from fedpl_core.base.validation import ConfigError

    def missing(a):
        return {}["mine"]

    monkeypatch.setattr(cli, "cmd_methods", missing)
    rc, _, err = run_main(capsys, "methods")
    assert rc == 2 and one_error_line(err) == "fedpl: error: KeyError: 'mine'"

    def config(a):
        raise ConfigError("rounds must be >= 1, got 0")

    monkeypatch.setattr(cli, "cmd_methods", config)
    assert one_error_line(run_main(capsys, "methods")[2]) == "fedpl: error: rounds must be >= 1, got 0"


# ------------------------------------------------------------------ 3, 8. gpu-checks
def fine(ctx):
    ctx.write("runs", "1")
    return True, "ran"


@pytest.fixture
def stand_in_steps(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(G, "STEPS", (G.Step("fine", 60, 1, "a step that works", fine),))


def test_gpu_checks_refuses_an_out_that_is_a_link(capsys, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    rc, _, err = run_main(capsys, "gpu-checks", "--device", "cpu", "--out", tmp_path / "link")
    assert rc == 2 and "is a link" in one_error_line(err)
    assert list(target.iterdir()) == []


def test_gpu_checks_never_writes_through_a_link_planted_below_out(capsys, tmp_path, stand_in_steps):
    out, elsewhere = tmp_path / "checks", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "victim").write_text("VICTIM")
    # a link at a file the driver writes is replaced, never written through
    (out / "summary.md").symlink_to(elsewhere / "victim")
    rc, _, err = run_main(capsys, "gpu-checks", "--device", "cpu", "--out", out)
    assert rc == 0, err
    assert (elsewhere / "victim").read_text() == "VICTIM" and not (out / "summary.md").is_symlink()
    # a link at a step's folder is refused, before the step runs
    step = out / "01-fine"
    step.rename(tmp_path / "kept")
    step.symlink_to(elsewhere)
    rc, _, err = run_main(capsys, "gpu-checks", "--device", "cpu", "--out", out, "--redo", "fine")
    assert rc == 2 and "01-fine" in one_error_line(err)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["victim"]
    # a link left inside a kept step's folder is refused (its programs write with a plain open)
    step.unlink()
    (tmp_path / "kept").rename(step)
    (step / "result.json").write_text(json.dumps({"status": "failed", "device": "cpu", "tiny": True}))  # kept
    (step / "log.txt").unlink()
    (step / "log.txt").symlink_to(elsewhere / "victim")
    rc, _, err = run_main(capsys, "gpu-checks", "--device", "cpu", "--out", out)
    line = one_error_line(err)
    assert rc == 2 and "log.txt is a symbolic link" in line and "--redo fine" in line
    assert (elsewhere / "victim").read_text() == "VICTIM"


def test_gpu_checks_refuses_a_redo_of_a_step_not_run(capsys, tmp_path):
    rc, _, err = run_main(
        capsys, "gpu-checks", "--device", "cpu", "--out", tmp_path / "o", "--redo", "smoke", "--steps", "environment"
    )
    assert rc == 2 and "--redo smoke: the step is not among --steps environment" in one_error_line(err)
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").glob("*-*"))


def test_open_log_replaces_a_link_and_refuses_a_pipe(tmp_path):
    (tmp_path / "victim").write_text("VICTIM")
    (tmp_path / "a.log").symlink_to(tmp_path / "victim")
    with G.open_log(tmp_path / "a.log") as f:
        f.write(b"log")
    assert (tmp_path / "victim").read_text() == "VICTIM" and (tmp_path / "a.log").read_bytes() == b"log"
    os.mkfifo(tmp_path / "p.log")
    with pytest.raises(OSError, match="not a regular file"):
        G.open_log(tmp_path / "p.log", append=True)


# ------------------------------------------------------------------ 9. report --figure
@pytest.mark.parametrize(
    "figure, says",
    [
        ("a\nb.png", "holds a character that does not print"),
        ("heat.txt", "matplotlib writes no 'txt' files"),
        ("x" * 300 + ".png", "bytes long; at most"),
        ("x" * 240, "bytes long; at most"),  # + .png, and its temporary twin
    ],
)
def test_report_refuses_a_figure_name_it_cannot_write_before_printing(capsys, tmp_path, monkeypatch, figure, says):
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    rc, out, err = run_main(capsys, "report", "--figure", figure)
    assert rc == 2 and says in one_error_line(err) and out == ""
    assert not (tmp_path / "figures").exists() or list((tmp_path / "figures").iterdir()) == []


def test_report_figure_names_that_are_fine_pass_the_check():
    for name in ("heat.png", "heat.PDF", "heat", "sub/heat.svg", "x" * 200 + ".png"):
        cli.check_figure_name(name)


# ------------------------------------------------------------------ 7. the site builder
def _executed(folder: Path, name: str = "00_a.ipynb") -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("1")
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    nb.cells = [nbformat.v4.new_markdown_cell("# A"), cell]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


def docs_main(capsys, *argv) -> tuple[int, str]:
    from fedpl_core.report.docs import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_docs_refuses_an_out_inside_docs_and_docs_inside_the_site(capsys, tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    _executed(nbs)
    for out in (tiny_docs / "site", tiny_docs):
        code, err = docs_main(capsys, "--notebooks", nbs, "--out", out, "--docs", tiny_docs)
        assert code == 2 and "lies inside --docs" in one_error_line(err)
        assert not (tiny_docs / "site").exists()
    pages = tmp_path / "site" / "src" / "pages"
    pages.mkdir(parents=True)
    (pages / "index.md").write_text("# Front\n")
    code, err = docs_main(capsys, "--notebooks", nbs, "--out", tmp_path / "site", "--docs", pages)
    assert code == 2 and "which the build replaces" in one_error_line(err)


def test_docs_refuses_a_pipe_among_the_pages_naming_it(capsys, tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    _executed(nbs)
    (tiny_docs / "guides").mkdir()
    os.mkfifo(tiny_docs / "guides" / "pipe.md")
    code, err = docs_main(capsys, "--notebooks", nbs, "--out", tmp_path / "site", "--docs", tiny_docs)
    line = one_error_line(err)
    assert code == 2 and "guides/pipe.md is not a file" in line and "Error(" not in line
    assert not (tmp_path / "site").exists()


def test_docs_refuses_a_notebook_named_like_the_generated_index_up_front(capsys, tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    _executed(nbs)
    _executed(nbs, "index.ipynb")
    code, err = docs_main(capsys, "--notebooks", nbs, "--out", tmp_path / "site", "--docs", tiny_docs)
    assert code == 2 and "'index.ipynb' is taken by a page the site makes itself" in one_error_line(err)
    assert not (tmp_path / "site").exists()
