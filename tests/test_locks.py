"""Run locks (fedpl_core.base.locks, filelock): a run held by a live process is not done twice
(``run`` waits naming the holder, ``run_many`` skips it and comes back), and a lock of a
dead process never blocks (the issue's planted ``<run_id>.lock`` of pid 1:
test_reliability_files.py)."""

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import tiny  # noqa: E402

from fedpl_core.base.locks import holder, run_lock, try_lock  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.runner import run
from fedpl_core.runs.study import run_many  # noqa: E402

HOLD = """
import os, sys, time
from fedpl_core.base.locks import try_lock
lock = try_lock(sys.argv[1])
print("held" if lock else "busy", flush=True)
if len(sys.argv) > 2:  # let go once this file appears (exit 3 if it never does)
    t0 = time.monotonic()
    while not os.path.exists(sys.argv[2]):
        if time.monotonic() - t0 > 90:
            sys.exit(3)
        time.sleep(0.05)
else:  # let go when the test closes stdin
    sys.stdin.read()
lock.release()
"""


def hold(path, until=None):
    """A process holding the lock at ``path`` (asserted), until ``until`` exists or its
    stdin is closed."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), *([str(until)] if until else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "held"
    return p


def stop(p, kill=False):
    if kill:
        p.send_signal(signal.SIGKILL)
    elif p.stdin and not p.stdin.closed:
        p.stdin.close()
    return p.wait(timeout=120)


def fast():
    return tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False))


def test_a_held_lock_is_refused_names_its_holder_and_is_free_once_let_go(tmp_path):
    path = tmp_path / "r.lock"
    p = hold(path)
    try:
        assert try_lock(path) is None
        t0 = time.monotonic()
        assert try_lock(path, timeout=0.5) is None and time.monotonic() - t0 >= 0.45  # waited, still held
        assert holder(path).startswith(f"host {socket.gethostname()} pid {p.pid}, for ")
    finally:
        assert stop(p) == 0
    assert not path.exists()  # the holder removed its file as it let go
    with run_lock(path) as lock:
        assert lock.path == path and holder(path).startswith(f"host {socket.gethostname()} pid {os.getpid()}, ")
    assert not path.exists()
    assert holder(path) == "a process that has just let it go"


def test_a_killed_holders_lock_is_free_at_once(tmp_path):
    path = tmp_path / "r.lock"
    p = hold(path)
    stop(p, kill=True)
    assert path.read_text().split()[:2] == [socket.gethostname(), str(p.pid)]  # its file stays behind
    t0 = time.monotonic()
    lock = try_lock(path)
    assert lock is not None and time.monotonic() - t0 < 1
    assert path.read_text().split()[1] == str(os.getpid())  # the dead holder's text replaced
    lock.release()
    assert not path.exists()


def test_release_removes_only_the_file_it_locked(tmp_path):
    path = tmp_path / "r.lock"
    lock = try_lock(path)
    other = tmp_path / "other"
    other.write_text("elsewhere 7 0\n")
    os.replace(other, path)  # the name now holds another file
    lock.release()
    assert path.read_text() == "elsewhere 7 0\n"
    lock.release()  # a second release does nothing


def test_run_waits_for_a_live_holder_naming_it_then_runs(tmp_path, caplog):
    cfg = fast()
    path = tmp_path / f"{cfg.run_id()}.lock"
    p = hold(path)
    box: list = []
    try:
        with caplog.at_level(logging.INFO, logger="fedpl"):
            assert run(cfg, tmp_path, wait=False) is None  # held: not done twice, left for later
            assert f"run {cfg.run_id()} is held by host {socket.gethostname()} pid {p.pid}, " in caplog.text
            waiter = threading.Thread(target=lambda: box.append(run(cfg, tmp_path)), daemon=True)
            waiter.start()
            t0 = time.monotonic()
            while "waiting for run" not in caplog.text and time.monotonic() - t0 < 60:
                time.sleep(0.05)
            assert (
                f"waiting for run {cfg.run_id()}: its lock {path} is held by host {socket.gethostname()} "
                f"pid {p.pid}, " in caplog.text
            )
            time.sleep(0.5)
            assert waiter.is_alive() and not box  # still waiting while the holder lives
            stop(p, kill=True)
            waiter.join(timeout=120)
    finally:
        if p.poll() is None:
            stop(p, kill=True)
    assert box and box[0] is not None and not path.exists()


def test_run_many_skips_a_held_run_and_comes_back_to_it(tmp_path, caplog):
    """The holder of seed 1 lets go only once seed 0's result exists: a grid that waited
    for seed 1 first would never finish (the holder gives up after 90 s, exit 3)."""
    base = fast()
    held, other = base.replace(seed=1), base.replace(seed=0)
    p = hold(tmp_path / f"{held.run_id()}.lock", until=tmp_path / f"{other.run_id()}.json")
    try:
        with caplog.at_level(logging.INFO, logger="fedpl"):
            df = run_many(base, ["fedavg"], [1, 0], tmp_path, progress=False, backend="serial")
    finally:
        rc = stop(p) if p.poll() is None else p.returncode
    assert rc == 0
    assert sorted(df[df.which == "final"].seed) == [0, 1]
    assert f"run {held.run_id()} is held by host {socket.gethostname()} pid {p.pid}, " in caplog.text
    assert not list(Path(tmp_path).glob("*.lock"))


def test_doctests():
    import doctest

    from fedpl_core.base import locks

    res = doctest.testmod(locks)
    assert res.attempted and not res.failed
