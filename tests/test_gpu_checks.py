"""``python -m fedpl_core gpu-checks`` (issue 34): the checks of a GPU machine in named steps, in
the issue's order, each in its own process under its own time limit, its log and result in
one folder; a failed step does not stop the others, a step that would not fit the budget is
skipped and says so, a summary table at the end, and running again continues.  The driver is
tested here with stand-in steps (this module's functions, run in the steps' processes); the
real steps' CPU rehearsal is ``gpu-checks --device cpu`` (tools/offline_rehearsal.sh runs two)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fedpl_core.apps import gpu_checks as G
from fedpl_core.apps.cli import main

TESTS = Path(__file__).resolve().parent


def test_the_steps_are_the_issues_in_its_order():
    assert [s.name for s in G.STEPS] == ["environment", "gpu-tests", "step-times", "smoke", "throughput", "grids"]
    assert all(0 < s.min_s <= s.limit_s for s in G.STEPS)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--device", "cpu", "--steps", "smoke", "tests"], "unknown step 'tests'"),
        (["--device", "cpu", "--budget", "5"], "argument --budget: takes a finite number of seconds, more than 10"),
        (["--device", "tpu"], "--device must be cuda, cuda:N or cpu"),
        (["--device", "cpu", "--parallel", "0"], "argument --parallel: takes a whole number >= 1"),
    ],
)
def test_bad_options_end_in_one_line_before_any_step(args, says, tmp_path, capsys):
    assert main(["gpu-checks", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedpl: error: ") and says in err and err.count("\n") == 1
    assert not list((tmp_path / "o").glob("*-*"))  # no step ran


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_refused_with_the_rehearsal_named(tmp_path, capsys):
    assert main(["gpu-checks", "--out", str(tmp_path / "o")]) == 2
    assert "torch sees no CUDA GPU here; --device cpu rehearses" in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["gpu-checks", "--device", "cpu", "--out", str(tmp_path / "f")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


# ---------------------------------------------------------------- stand-in steps (run in the steps' processes)
def fine(ctx):
    n = int((ctx.folder / "runs").read_text()) + 1 if (ctx.folder / "runs").exists() else 1
    ctx.write("runs", str(n))
    print("fine ran", flush=True)
    return True, f"run {n}"


def broken(ctx):
    raise RuntimeError("no such kernel")


def hangs(ctx):
    # a grandchild in a session of its own (as a Jupyter kernel): ended with the step
    p = subprocess.Popen(["sleep", "600"], start_new_session=True)
    ctx.write("grandchild", str(p.pid))
    time.sleep(600)
    return True, "never"


def stops_its_command(ctx):
    rc = G._run(["sleep", "600"], ctx)  # stopped 5 s before the step's deadline
    return rc == 124, f"exit status {rc}"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_the_driver_records_each_step_survives_failures_skips_and_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(
        G,
        "STEPS",
        (
            G.Step("fine", 60, 1, "a step that works", fine),
            G.Step("broken", 60, 1, "a step that raises", broken),
            G.Step("hangs", 8, 1, "a step past its limit", hangs),
            G.Step("inner", 9, 1, "a command stopped before the step's limit", stops_its_command),
            G.Step("late", 60, 1000, "a step that does not fit the budget", fine),
        ),
    )
    out = tmp_path / "checks"
    rc = main(["gpu-checks", "--device", "cpu", "--out", str(out), "--budget", "900"])
    assert rc == 1  # not every step is ok
    res = {s.name: G.read_result(out, s) for s in G.STEPS}
    assert {k: r["status"] for k, r in res.items()} == {
        "fine": "ok",
        "broken": "failed",
        "hangs": "timeout",
        "inner": "ok",
        "late": "skipped",
    }
    assert res["broken"]["note"] == "RuntimeError: no such kernel"
    assert "stopped after 8 s" in res["hangs"]["note"] and res["hangs"]["seconds"] < 30
    assert res["inner"]["note"] == "exit status 124"
    assert "the step needs 1000 s: run again" in res["late"]["note"]
    assert "fine ran" in (out / "01-fine" / "log.txt").read_text()
    assert not _alive(int((out / "03-hangs" / "grandchild").read_text()))
    table = (out / "summary.md").read_text()
    for name, status in (("fine", "ok"), ("broken", "failed"), ("hangs", "timeout"), ("late", "skipped")):
        assert f"| {name} | {status} |" in table
    assert table.splitlines()[-5:] == capsys.readouterr().out.split("\n\n")[-2].splitlines()[-5:]
    assert json.loads((out / "summary.json").read_text())["steps"][0]["step"] == "fine"

    # again: the finished steps are not run again, the others are; --redo runs a finished one
    monkeypatch.setattr(G, "STEPS", G.STEPS[:2])
    main(["gpu-checks", "--device", "cpu", "--out", str(out)])
    assert (out / "01-fine" / "runs").read_text() == "1"
    assert "fine         done earlier" in capsys.readouterr().out
    assert G.read_result(out, G.STEPS[1])["status"] == "failed"
    main(["gpu-checks", "--device", "cpu", "--out", str(out), "--redo", "fine", "--steps", "fine"])
    assert (out / "01-fine" / "runs").read_text() == "1"  # a fresh folder: the count starts again
    assert G.read_result(out, G.STEPS[0])["note"] == "run 1"


def test_time_backbone_measures_a_training_step_and_an_evaluation():
    r = G.time_backbone("cnn", 32, 2, "cpu", n_eval=4, steps=(1, 1))
    assert r["model"] == "cnn" and (r["image_size"], r["batch_size"]) == (32, 2)
    assert r["train_step_s"] > 0 and r["train_step_synced_s"] > 0 and r["eval512_s"] > 0
    assert r["amp"] is False and r["peak_mib"] is None  # bf16 autocast and peak memory on CUDA only


def test_the_smoke_step_stops_its_notebooks_at_its_deadline_and_ends_their_processes(tmp_path, monkeypatch):
    """A notebook still running at the step's deadline is stopped, with what it started (its
    kernel runs in a session of its own), and the step says which."""
    mark = f"{tmp_path}#test"
    monkeypatch.setenv(G.MARK, mark)  # as the driver marks a step's process (this process's /proc environ is not)
    ctx = G.Context(tmp_path, "cpu", True, ["00"], 1, time.time() + 12)
    ok, note = G.smoke(ctx)
    assert not ok and "stopped at the step's limit" in note and note.startswith("0 of 1 notebooks ran")
    time.sleep(0.5)
    assert G._reap(mark) == []  # nothing of the step is left running


def test_the_grids_steps_benchmark_runs_the_serial_backend_without_workers():
    """The ``grids`` step's benchmark in its tiny form: the serial backend runs one run at a
    time, so ``--workers`` goes only to the other backends (``run_many`` refuses workers > 1
    on the serial backend; the step failed on every device before), and the threads give the
    serial numbers."""
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    p = subprocess.run(
        [
            sys.executable,
            str(TESTS.parent / "benchmarks" / "grid_throughput.py"),
            "--backends",
            "serial",
            "threads",
            "--workers",
            "2",
            "--runs",
            "2",
            "--rounds",
            "1",
            "--n-train",
            "200",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "threads    / serial throughput" in p.stdout and "numbers identical" in p.stdout
