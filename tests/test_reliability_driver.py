"""A grid's driver and its workers, as real process trees: the workers of the process
backend end with their driver (killed by ``kill -9``, SIGTERM or Ctrl-C), and Ctrl-C on a
grid of threads stops its runs at the next round boundary, with one line.  Before, the
workers of a killed driver moved to pid 1, finished their runs and then slept for ever,
and a threads grid waited for whole runs, then printed a ``KeyboardInterrupt`` traceback.

Linux only (the process tree is read from ``/proc``)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")

ROOT = Path(__file__).resolve().parent.parent
#: Runs far longer than a test: a driver that waited for them would not end in time.
CONFIG = (
    "dataset: synthetic-cxr\nn_train: 200\nn_test: 60\nimage_size: 28\nnum_clients: 2\n"
    "classes: [Effusion, Pneumothorax]\nmodel_kwargs: {width: 4}\nrounds: 2000\ncheckpoint_every: 1\n"
    "progress: false\n"
)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    """Running (a zombie that only waits to be reaped is gone)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(what, timeout: float, step: float = 0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(step)
    return what()


def _ctrl_c_reaches_python() -> None:
    """In the driver, before it execs: SIGINT back to its default, as in a terminal.  A child
    inherits an *ignored* SIGINT, and Python then installs no ``KeyboardInterrupt`` handler; a
    test runner's worker can run with SIGINT ignored (seen under pytest-xdist), and the driver
    would then ignore the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_grid(tmp_path, backend: str, workers: int = 2) -> subprocess.Popen:
    cfg = tmp_path / "long.yaml"
    cfg.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FEDPL_CACHE": str(tmp_path / "cache")}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fedpl_core",
            "grid",
            str(cfg),
            "--methods",
            "fedavg",
            "fedavg_pl",
            "--backend",
            backend,
            "--workers",
            str(workers),
            "--results-dir",
            str(tmp_path / "r"),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_reaches_python,
    )


def checkpoints(tmp_path) -> list[Path]:
    return sorted((tmp_path / "r").glob("*.ckpt")) if (tmp_path / "r").is_dir() else []


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_process_workers_end_with_their_driver(tmp_path, how):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("two workers need two CPU cores: grid caps --workers to the cores")
    driver = start_grid(tmp_path, "process")
    workers: list[int] = []
    try:
        # both workers are training (each run has checkpointed a round)
        assert wait_for(lambda: len(checkpoints(tmp_path)) == 2, 120), driver.stderr.read() if driver.poll() else ""
        workers = children(driver.pid)
        assert len(workers) == 2
        os.kill(driver.pid, getattr(signal, how))  # the driver only, not its process group
        driver.wait(30)
        assert wait_for(lambda: not any(alive(w) for w in workers), 20), f"workers {workers} outlived their driver"
        err = driver.stderr.read()
        if how != "SIGKILL":  # a handled signal: one line, no traceback, the shell's exit status
            assert driver.returncode == {"SIGTERM": 143, "SIGINT": 130}[how], err
            lines = [ln for ln in err.splitlines() if ln.startswith("fedpl: error:")]
            assert len(lines) == 1 and "the same command resumes" in lines[0] and "Traceback" not in err, err
        assert not list((tmp_path / "r").glob("*.json"))  # nothing finished, nothing claimed to be
    finally:
        for pid in [*workers, driver.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        driver.wait(10)


def test_a_worker_stops_when_its_parent_is_gone(tmp_path):
    """:func:`watch_driver` itself: a child that watches a parent that exits ends within
    the poll interval, even while busy (here: sleeping in a loop)."""
    code = (
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    from fedpl_core.runs.grid import watch_driver\n"
        "    watch_driver(os.getppid(), poll_s=0.1)\n"
        "    print(os.getpid(), flush=True)\n"
        "    while True: time.sleep(0.05)\n"
        "else:\n"
        "    time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        assert alive(child)
        parent.kill()
        parent.wait(10)
        assert wait_for(lambda: not alive(child), 10), "the child outlived its parent"
        assert "the grid's driver (process" in parent.stderr.read()
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_on_a_threads_grid_stops_at_the_next_round_boundary(tmp_path):
    driver = start_grid(tmp_path, "threads")
    try:
        assert wait_for(lambda: len(checkpoints(tmp_path)) == 2, 120), driver.stderr.read() if driver.poll() else ""
        t0 = time.monotonic()
        driver.send_signal(signal.SIGINT)
        driver.wait(60)  # whole runs would take many minutes
        stopped_in = time.monotonic() - t0
        err = driver.stderr.read()
        assert driver.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        errors = [ln for ln in err.splitlines() if ln.startswith("fedpl: error:")]
        assert len(errors) == 1 and errors[0].startswith("fedpl: error: interrupted;"), err
        assert "stopping 2 running run(s) at their next round boundary" in err
        assert stopped_in < 30 and len(checkpoints(tmp_path)) == 2  # their last rounds are kept to resume from
        assert not list((tmp_path / "r").glob("*.json"))
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)
