"""Grid backends of ``run_many`` (:mod:`fedpl_core.runs.grid`): serial, process, threads and Ray give the
same numbers; a failing run is retried once, then reported after the other runs are
written; two processes on one results folder never do the same run; the ``grid`` command.
The Ray tests (marked ``ray``) start a local Ray with 2 CPUs and skip without Ray."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fedpl_core.data.sources import load_bundle
from fedpl_core.data.sources.base import register_source
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs import grid as G
from fedpl_core.runs import runner as R
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.results import atomic_write_json
from fedpl_core.runs.runner import run
from fedpl_core.runs.study import run_many

ray_mark = pytest.mark.ray  # local Ray, 2 CPUs; skipped where the ray extra is not installed

TINY = dict(
    dataset="synthetic-cxr",
    classes=["Cardiomegaly", "Effusion", "Pneumothorax"],
    image_size=28,
    n_train=240,
    n_test=120,
    num_clients=3,
    model_kwargs={"width": 8},
)
# FedProx with mu = 0 is FedAvg; two classes of method, so no grid loads data in the driver
METHODS = ["fedavg", ("prox0", {"method": "fedprox", "method_kwargs": {"mu": 0.0}})]


def tiny(**kw):
    kw.setdefault("engine", EngineConfig(rounds=1, batch_size=32, progress=False))
    return ExperimentConfig(**{**TINY, **kw})


@register_source("flaky-cxr")
def _flaky(name, data_root, classes, image_size, n_train, n_test, data_seed, marker, fail="once"):
    """synthetic-cxr's data, but the first load (``fail="once"``) or every load
    (``"always"``) raises; every attempt is logged to ``<marker>.log``."""
    m = Path(marker)
    with open(m.with_suffix(".log"), "a") as f:
        f.write(f"{os.getpid()}\n")
    if fail == "always" or not m.exists():
        m.touch()
        raise RuntimeError(f"flaky source failed ({m.name})")
    return load_bundle("synthetic-cxr", data_root, classes, image_size, n_train, n_test, data_seed, progress=False)


@register_source("counted-cxr")
def _counted(name, data_root, classes, image_size, n_train, n_test, data_seed, log, k):
    """synthetic-cxr's data; each load (one per executed run: ``k`` differs per run) is
    logged; the first one starts the other process's grid (``<log>.go``)."""
    with open(log, "a") as f:
        f.write(f"{k} {os.getpid()}\n")
    Path(log).with_suffix(".go").touch()
    time.sleep(0.3)  # runs overlap between the two processes
    return load_bundle("synthetic-cxr", data_root, classes, image_size, n_train, n_test, data_seed, progress=False)


def flaky(marker, fail="once"):
    return {"dataset": "flaky-cxr", "dataset_kwargs": {"marker": str(marker), "fail": fail}}


def finals(df, setting=None):
    d = df[df.which == "final"]
    if setting is not None:
        d = d[d.setting == setting]
    return d.set_index(["label", "seed"])["auroc_mean"].sort_index()


@pytest.fixture(scope="module")
def serial():
    """The serial numbers (1 torch thread, as conftest sets) of METHODS x seeds 0, 1."""
    return finals(run_many(tiny(), METHODS, [0, 1], progress=False, backend="serial"))


def test_default_backend_and_bad_arguments():
    assert G.check_args(None, 1, 1) == "serial" and G.check_args(None, 2, 1) == "process"
    assert G.check_args("ray", 1, 0) == "ray"
    for args, needle in [
        (("gpu", 1, 1), "unknown backend 'gpu'"),
        ((None, 0, 1), "workers"),
        ((None, 2, -1), "retries"),
        ((None, True, 1), "workers"),
    ]:
        with pytest.raises(ValueError, match=needle):
            G.check_args(*args)


def test_process_backend_gives_the_serial_numbers_and_retries_a_failed_run(serial, tmp_path):
    """2 spawned workers; the 'flaky' runs (FedAvg) fail on their first data load in a
    worker, are retried, and give the numbers of the same data loaded directly."""
    methods = METHODS + [("flaky", {"method": "fedavg", **flaky(tmp_path / "m")})]
    with pytest.warns(RuntimeWarning, match=r"failed \(RuntimeError: flaky source failed.*retrying \(1 of 1\)"):
        df = run_many(tiny(), methods, [0, 1], tmp_path, progress=False, backend="process", workers=2)
    got = finals(df)
    assert got.drop("flaky").tolist() == serial.tolist()
    assert got["flaky"].tolist() == serial["fedavg"].tolist()
    assert len(list(tmp_path.glob("*.json"))) == 6 and not list(tmp_path.glob("*.lock"))
    attempts = (tmp_path / "m.log").read_text().split()
    assert len(attempts) >= 2 and str(os.getpid()) not in attempts  # loaded (and failed) in the workers


def test_threads_backend_gives_the_serial_numbers(serial, monkeypatch, tmp_path):
    """2 threads of this process.  The model build is slowed so that two runs' builds
    overlap: each still draws its own seed's initial weights (the lock in runs.build; without
    it, a thread seeds torch's generator while the other draws from it), and every number is
    the serial one."""
    from fedpl_core.runs import build as BD

    real = BD.build_model

    def slow(*a, **k):
        time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(BD, "build_model", slow)
    df = run_many(tiny(), METHODS, [0, 1], tmp_path, progress=False, backend="threads", workers=2)
    assert finals(df).tolist() == serial.tolist()
    assert len(list(tmp_path.glob("*.json"))) == 4 and not list(tmp_path.glob("*.lock"))


def test_cost_starts_the_longest_runs_first_and_changes_no_number(serial, monkeypatch, tmp_path):
    """With ``cost`` the runs still to do start in descending cost, ties in the grid's order (the
    cached one is not run again); the rows keep the grid's order and the serial numbers."""
    started = []
    real = G._run_one

    def record(cfg, *a, **k):
        started.append((cfg.method, cfg.seed))
        return real(cfg, *a, **k)

    monkeypatch.setattr(G, "_run_one", record)
    run_many(tiny(), ["fedavg"], [0], tmp_path, progress=False)  # cached: not started again below
    started.clear()
    cost = {"fedavg": 1.0, "fedprox": 2.0}
    df = run_many(tiny(), METHODS, [0, 1], tmp_path, progress=False, cost=lambda cfg: cost[cfg.method])
    assert started == [("fedprox", 0), ("fedprox", 1), ("fedavg", 1)]
    assert finals(df).tolist() == serial.tolist()
    assert df[df.which == "final"][["label", "seed"]].values.tolist() == [
        ["fedavg", 0], ["fedavg", 1], ["prox0", 0], ["prox0", 1]
    ]  # fmt: skip


def test_failed_run_is_retried_once_then_reported_after_the_others(tmp_path):
    settings = {"broken": flaky(tmp_path / "b", "always"), "ok": {}, "flaky": flaky(tmp_path / "f")}
    broken_id = tiny(**settings["broken"]).run_id()
    with pytest.warns(RuntimeWarning, match="retrying"):
        with pytest.raises(G.GridError) as e:
            run_many(tiny(), ["fedavg"], [0], tmp_path, settings=settings, progress=False, backend="serial")
    # one error, naming the failed run and its exception, raised after every other run was written
    assert [rid for rid, _ in e.value.failures] == [broken_id]
    assert f"{broken_id} (RuntimeError: flaky source failed (b))" in str(e.value)
    assert "after 2 attempt(s)" in str(e.value)
    assert len((tmp_path / "b.log").read_text().split()) == 2  # tried, retried once, no more
    assert len((tmp_path / "f.log").read_text().split()) == 2  # failed once, then succeeded
    done = {json.loads(p.read_text())["config"]["dataset"] for p in tmp_path.glob("*.json")}
    assert done == {"synthetic-cxr", "flaky-cxr"} and not (tmp_path / f"{broken_id}.json").exists()
    # resume: the finished runs are loaded, only the broken one is tried again (and fails)
    with pytest.raises(G.GridError, match="after 1 attempt"):
        run_many(tiny(), ["fedavg"], [0], tmp_path, settings=settings, progress=False, retries=0)
    assert len((tmp_path / "b.log").read_text().split()) == 3 and len((tmp_path / "f.log").read_text().split()) == 2


LOCK_SCRIPT = """
import sys, time, torch
sys.path.insert(0, {tests!r})
torch.set_num_threads(1)
import json, test_grid as T
from pathlib import Path
from fedpl_core.runs.study import run_many
go = Path({go!r})
go.with_suffix(".ready").touch()
while not go.exists():
    time.sleep(0.01)
df = run_many(T.tiny(), ["fedavg"], [0], {rd!r}, settings=T.counted_settings({log!r}), progress=False,
                backend="serial")
Path({out!r}).write_text(json.dumps(dict(zip(df.setting, df.auroc_mean))))
"""


def counted_settings(log, n=4):
    return {f"s{k}": {"dataset": "counted-cxr", "dataset_kwargs": {"log": str(log), "k": k}} for k in range(n)}


def test_two_processes_on_one_results_dir_do_each_run_once(tmp_path):
    """A serial run_many in another process and a process-backend run_many here, at the
    same time on one folder (the other starts when the first run here does, in the same
    order): every run is executed exactly once, both do some and get every result."""
    rd, log, out = tmp_path / "r", tmp_path / "runs.log", tmp_path / "other.json"
    go = log.with_suffix(".go")  # touched when the first run here starts
    script = LOCK_SCRIPT.format(tests=str(Path(__file__).parent), go=str(go), rd=str(rd), log=str(log), out=str(out))
    other = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    try:
        while not go.with_suffix(".ready").exists() and other.poll() is None:
            time.sleep(0.05)  # the other process has imported everything and waits for `go`
        here = run_many(
            tiny(), ["fedavg"], [0], rd, settings=counted_settings(log), progress=False, backend="process", workers=2
        )
    finally:
        err = other.communicate(timeout=120)[1]
    assert other.returncode == 0, err
    runs = [ln.split() for ln in log.read_text().splitlines()]
    ks = sorted(int(k) for k, _ in runs)
    assert ks == list(range(4)), runs  # each run executed once, by one process
    assert len({pid for _, pid in runs}) >= 2  # both grids did some of the work
    assert len(list(rd.glob("*.json"))) == 4 and not list(rd.glob("*.lock")) and not list(rd.glob(".*tmp"))
    files = {
        json.loads(f.read_text())["config"]["dataset_kwargs"]["k"]: json.loads(f.read_text())["final"]["auroc_mean"]
        for f in rd.glob("*.json")
    }
    assert (
        dict(zip(here.setting, here.auroc_mean))
        == json.loads(out.read_text())
        == {f"s{k}": v for k, v in files.items()}
    )


CLAIM_SCRIPT = """
import sys, time
from pathlib import Path
from fedpl_core.base.locks import try_lock
d, n = Path(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
while not (d / "go").exists():
    pass
locks = {i: try_lock(d / f"r{i}.lock") for i in range(n)}  # kept: a lock let go of is released
print(" ".join(str(i) for i, lock in locks.items() if lock is not None), flush=True)
sys.stdin.read()  # hold every lock won until both processes have tried them all
"""


def test_run_locks_are_exclusive_under_a_race(tmp_path):
    """Two processes take the same 400 locks at the same moment and keep what they won:
    each lock goes to exactly one."""
    n = 400
    ps = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM_SCRIPT, str(tmp_path), str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        assert [p.stdout.readline().strip() for p in ps] == ["ready", "ready"]
        (tmp_path / "go").touch()
        got = [set(map(int, p.stdout.readline().split())) for p in ps]
    finally:
        for p in ps:
            p.stdin.close()
            p.wait(timeout=60)
    assert not got[0] & got[1] and got[0] | got[1] == set(range(n))
    assert not list(tmp_path.glob(".*tmp"))


def test_a_run_finished_by_another_process_just_before_the_lock_is_not_redone(tmp_path, monkeypatch):
    cfg = tiny()
    done = run(cfg)
    real_try_lock = R.try_lock

    def other_process_finishes_first(path, timeout=0):
        atomic_write_json(done.to_json(), tmp_path / f"{cfg.run_id()}.json")
        return real_try_lock(path, timeout)

    def boom(*a, **k):
        raise AssertionError("a finished run must not be done again")

    monkeypatch.setattr(R, "try_lock", other_process_finishes_first)
    monkeypatch.setattr(R, "_execute", boom)
    assert run(cfg, tmp_path).final == done.final and not list(tmp_path.glob("*.lock"))


def test_cli_grid_serial_prints_mean_and_std_per_method(tmp_path, capsys):
    from fedpl_core.apps.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: synthetic-cxr\nclasses: [Cardiomegaly, Effusion, Pneumothorax]\nimage_size: 28\n"
        "n_train: 240\nn_test: 120\nnum_clients: 3\nmodel_kwargs: {width: 8}\nrounds: 1\n"
        "batch_size: 32\nprogress: false\n"
    )
    rd = tmp_path / "r"
    assert (
        main(
            [
                "grid",
                str(cfg),
                "--methods",
                "fedavg",
                "fedprox",
                "--seeds",
                "0",
                "1",
                "--backend",
                "serial",
                "--results-dir",
                str(rd),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    res = [json.loads(f.read_text()) for f in rd.glob("*.json")]
    assert len(res) == 4
    for m in ("fedavg", "fedprox"):
        v = [r["final"]["auroc_mean"] for r in res if r["config"]["method"] == m]
        line = next(ln for ln in out.splitlines() if ln.split()[0] == m)
        assert f"{np.mean(v):.4f} ± {np.std(v, ddof=1):.4f}" in line and line.split()[-1] == "2", out
    assert "4 runs (serial backend" in out
    for args, needle in [
        (
            ["--backend", "gpu"],
            "fedpl: error: argument --backend: invalid choice: 'gpu' (choose from "
            "'serial', 'process', 'threads', 'ray')",
        ),
        (["--workers", "0"], "fedpl: error: workers must be an integer >= 1, got 0"),
        (["--seeds", "-1"], "fedpl: error: "),
        (["--methods", "fedmagic"], "fedpl: error: unknown method 'fedmagic'"),
    ]:
        argv = ["grid", str(cfg), "--methods", "fedavg", *args]
        assert main(argv) == 2
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and err[0].startswith(needle), err
    # the module entry point: same command, one line, exit 2
    p = subprocess.run(
        [sys.executable, "-m", "fedpl_core", "grid", str(tmp_path / "none.yaml"), "--methods", "fedavg"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and p.stderr.strip() == f"fedpl: error: config file not found: {tmp_path / 'none.yaml'}"


def test_ray_missing_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"pip install -e \.\[ray\]"):
        run_many(tiny(), ["fedavg"], [0], tmp_path, progress=False, backend="ray")


def test_ray_task_asks_for_a_gpu_from_the_run_device():
    assert G.needs_gpu("cuda", 0) and G.needs_gpu("cuda:1", 0) and G.needs_gpu("auto", 2)
    assert not G.needs_gpu("auto", 0) and not G.needs_gpu("cpu", 4)


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    yield ray
    ray.shutdown()


@ray_mark
def test_ray_backend_gives_the_serial_numbers_and_reports_a_failed_run(serial, local_ray, tmp_path):
    """run_many starts a local Ray with 2 CPUs; the numbers are the serial ones, the files
    the same; a run that always fails is retried once, then named in one GridError after
    the other runs were written."""
    methods = METHODS + [("broken", {"method": "fedavg", **flaky(tmp_path / "b", "always")})]
    with pytest.raises(G.GridError) as e, pytest.warns(RuntimeWarning, match="retrying"):
        run_many(tiny(), methods, [0, 1], tmp_path, progress=False, backend="ray", workers=2)
    assert local_ray.is_initialized() and local_ray.cluster_resources()["CPU"] == 2
    assert len(e.value.failures) == 2 and "RuntimeError: flaky source failed (b)" in str(e.value)
    assert len((tmp_path / "b.log").read_text().split()) == 4  # 2 runs, each tried twice
    assert len(list(tmp_path.glob("*.json"))) == 4
    # the Ray tasks wrote the results: loaded from the files, no Ray task needed
    df = run_many(tiny(), METHODS, [0, 1], tmp_path, progress=False, backend="ray", workers=2)
    assert finals(df).tolist() == serial.tolist()


def test_process_workers_outlive_a_grid(tmp_path):
    """The next grid reuses the live worker processes (no new spawn, no new torch import);
    a new pool replaces it only after ``shutdown_pools``."""
    log = tmp_path / "loads.log"
    cfg = lambda k: tiny(dataset="counted-cxr", dataset_kwargs={"log": str(log), "k": k})  # noqa: E731
    G.shutdown_pools()
    run_many(cfg(0), ["fedavg"], [0, 1], tmp_path / "a", workers=2, progress=False)
    (pool,) = G._POOLS.values()
    workers = {str(pid) for pid in pool._processes}
    run_many(cfg(1), ["fedavg"], [0, 1], tmp_path / "b", workers=2, progress=False)
    assert list(G._POOLS.values()) == [pool] and {str(pid) for pid in pool._processes} == workers
    loads = [line.split() for line in log.read_text().splitlines()]
    assert {k for k, _ in loads} == {"0", "1"} and {pid for _, pid in loads} <= workers
    G.shutdown_pools()
    assert not G._POOLS
    run_many(cfg(2), ["fedavg"], [0], tmp_path / "c", workers=2, progress=False)
    (fresh,) = G._POOLS.values()
    assert fresh is not pool and not {str(pid) for pid in fresh._processes} & workers


def test_start_method_spawns_once_cuda_is_initialised(monkeypatch):
    """Forking a process whose CUDA is initialised breaks the child: then the workers spawn."""
    import sys

    import torch

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert G.start_method() == "spawn"
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert G.start_method() == ("fork" if sys.platform.startswith("linux") else "spawn")
