"""Shared results folders (issue 24, failures 4 and 5; weak spots "cached results" and
"duplicate grid entries"): stale locks do not hang a run, planted links are never
written through, cached results are type-checked, a grid refuses repeated entries.
Each case failed on the code before it was hardened."""

import json
import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import FLAGS, cli, one_error_line, tiny  # noqa: E402

from fedpl_core.base import fileio  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.results import atomic_write_json
from fedpl_core.runs.runner import clean_stale_files, run
from fedpl_core.runs.schema import read_result
from fedpl_core.runs.study import run_many  # noqa: E402


def cli_config(*args):
    from fedpl_core.apps.cli import build_parser, config_from_args

    return config_from_args(build_parser().parse_args(["run", *FLAGS, *args]))


# ------------------------------------------------------------------ 4. stale locks
def test_cli_run_behind_a_live_lock_names_its_holder_and_goes_on_once_it_is_killed(tmp_path):
    """A run held by a live process is waited for, saying which run and who holds it;
    once the holder is killed (no clean-up of its own), the lock is free at once."""
    import threading

    from test_locks import hold, stop

    rd = tmp_path / "rd"
    rd.mkdir()
    rid = cli_config("--rounds", "1").run_id()
    lock = rd / f"{rid}.lock"
    holder = hold(lock)
    p = subprocess.Popen(
        [sys.executable, "-m", "fedpl_core", "run", *FLAGS, "--rounds", "1", "--results-dir", str(rd)],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(p.stderr), daemon=True)
    reader.start()
    try:
        t0 = time.monotonic()
        while not any("waiting for run" in ln for ln in err) and time.monotonic() - t0 < 120 and p.poll() is None:
            time.sleep(0.1)
        assert p.poll() is None and not (rd / f"{rid}.json").exists()  # not done while held
        stop(holder, kill=True)
        left = time.monotonic()
        p.wait(timeout=240)
        took = time.monotonic() - left
    finally:
        for q in (p, holder):
            if q.poll() is None:
                q.kill()
                q.wait()
    reader.join(timeout=10)
    text = "".join(err)
    assert p.returncode == 0, text
    assert (
        f"waiting for run {rid}: its lock {lock} is held by host {socket.gethostname()} pid {holder.pid}, " in text
    ), text
    assert took < 60, took
    assert (rd / f"{rid}.json").is_file() and not lock.exists()


def test_the_issues_planted_lock_of_pid_1_does_not_block(tmp_path):
    """The issue's exact case, ``echo "$(hostname) 1 0" > rd/<run_id>.lock`` (pid 1 is alive
    in every container), hung ``run`` silently forever: a file nobody holds a lock on
    blocks nothing, whatever it says."""
    rd = tmp_path / "rd"
    rd.mkdir()
    rid = cli_config("--rounds", "1").run_id()
    (rd / f"{rid}.lock").write_text(f"{socket.gethostname()} 1 0\n")
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "fedpl_core", "run", *FLAGS, "--rounds", "1", "--results-dir", str(rd)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "waiting" not in p.stderr, p.stderr
    assert time.monotonic() - t0 < 60 and (rd / f"{rid}.json").is_file() and not (rd / f"{rid}.lock").exists()


def test_bad_lock_age_setting_is_one_line(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "fedpl_core", "run", *FLAGS, "--rounds", "1", "--results-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, fileio.STALE_ENV: "soon"},
    )
    one_error_line(p, "FEDPL_LOCK_STALE_S must be a number of seconds, got 'soon'")


# ------------------------------------------------------------------ 5. planted links
def _outside(tmp_path, n):
    out = tmp_path / "outside"
    out.mkdir(exist_ok=True)
    files = []
    for i in range(n):
        f = out / f"victim{i}.txt"
        f.write_text(f"precious {i}\n")
        files.append(f)
    return files


def test_links_planted_at_temporary_and_final_names_are_never_written_through(tmp_path):
    """With links planted at the old predictable temporary names ``.<name>.<pid>.tmp``
    and at the targets, ``run --out shared_out/run.json --results-dir shared`` truncated
    one outside file, overwrote another and left the result as a link to a file outside."""
    from fedpl_core.apps.cli import main

    shared, shared_out = tmp_path / "shared", tmp_path / "shared_out"
    shared.mkdir()
    shared_out.mkdir()
    args = ["--rounds", "2", "--checkpoint-every", "1"]
    rid = cli_config(*args).run_id()
    pid = os.getpid()
    names = [
        shared / f".{rid}.json.{pid}.tmp",
        shared / f".{rid}.ckpt.{pid}.tmp",
        shared / f".{rid}.lock.{pid}.tmp",
        shared / f".{rid}.lock.stale.{pid}.tmp",
        shared_out / f".run.json.{pid}.tmp",
        shared / f"{rid}.json",
        shared / f"{rid}.ckpt",
        shared_out / "run.json",
    ]
    victims = _outside(tmp_path, len(names))
    for link, victim in zip(names, victims):
        link.symlink_to(victim)
    before = {v: (v.read_text(), v.stat().st_mtime_ns) for v in victims}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", *FLAGS, *args, "--out", str(shared_out / "run.json"), "--results-dir", str(shared)]) == 0
    assert {v: (v.read_text(), v.stat().st_mtime_ns) for v in victims} == before  # nothing outside touched
    for target in (shared / f"{rid}.json", shared_out / "run.json"):
        assert target.is_file() and not target.is_symlink()
        assert json.loads(target.read_text())["run_id"] == rid
        assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()  # readable by the folder's other users
    assert not (shared / f"{rid}.ckpt").exists() and not (shared / f"{rid}.lock").exists()
    assert not [p for p in list(shared.glob(".*.tmp")) + list(shared_out.glob(".*.tmp")) if not p.is_symlink()]


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_atomic_writes_never_write_through_links_at_temporary_or_target_names(tmp_path):
    from fedpl_core.fl.checkpoint import atomic_torch_save, read_checkpoint

    pid = os.getpid()
    links = [tmp_path / "r.json", tmp_path / "c.ckpt", tmp_path / f".r.json.{pid}.tmp", tmp_path / f".c.ckpt.{pid}.tmp"]
    victims = _outside(tmp_path, len(links))
    for link, victim in zip(links, victims):
        link.symlink_to(victim)
    atomic_write_json({"a": 1}, tmp_path / "r.json")
    atomic_torch_save({"round": 1}, tmp_path / "c.ckpt")
    assert [v.read_bytes() for v in victims] == [f"precious {i}\n".encode() for i in range(len(victims))]
    assert not (tmp_path / "r.json").is_symlink() and json.loads((tmp_path / "r.json").read_text()) == {"a": 1}
    assert not (tmp_path / "c.ckpt").is_symlink() and read_checkpoint(tmp_path / "c.ckpt") == {"round": 1}
    assert all(p.is_symlink() for p in tmp_path.glob(".*tmp"))  # only the planted links: nothing of ours left


def test_stale_temporary_files_with_the_new_names(tmp_path):
    """Only this package's temporaries of a gone process (this host) or untouched for
    the age limit (another host) are removed; links and other files stay."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = fileio.host_tag()
    gone = tmp_path / f".r.json.{dead.pid}@{host}.abc123_x.tmp"
    live = tmp_path / f".r.json.{os.getpid()}@{host}.def456xy.tmp"
    far_fresh = tmp_path / f".r.json.{dead.pid}@otherhost.ghi789zz.tmp"
    far_old = tmp_path / f".r.json.{dead.pid}@otherhost.jkl012ww.tmp"
    other = tmp_path / f".notes.{dead.pid}.tmp.bak"
    link = tmp_path / f".r.ckpt.{dead.pid}@{host}.mno345vv.tmp"
    for f in (gone, live, far_fresh, far_old, other):
        f.write_text("x")
    os.utime(far_old, (time.time() - 3600, time.time() - 3600))
    victim = _outside(tmp_path, 1)[0]
    link.symlink_to(victim)
    assert clean_stale_files(tmp_path) == sorted([gone, far_old])
    assert live.exists() and far_fresh.exists() and other.exists() and link.is_symlink()
    assert victim.read_text() == "precious 0\n"
    # the package's own temporary names are recognised by the cleaner
    tmp, f = fileio.make_temp(tmp_path / "r.json")
    f.close()
    assert fileio.parse_temp_name(tmp.name) == (os.getpid(), host)


# ------------------------------------------------------------------ cached results are checked
def _valid_result(tmp_path):
    cfg = tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False))
    run(cfg, tmp_path)
    return cfg, tmp_path / f"{cfg.run_id()}.json"


CORRUPTIONS = {
    "final_string": (lambda d, t: json.dumps({**d, "final": "abc"}), "final is a str"),
    "nan_literal": (
        lambda d, t: t.replace(f'"auroc_mean": {d["final"]["auroc_mean"]!r}', '"auroc_mean": NaN'),
        "holds NaN",
    ),
    "infinity": (
        lambda d, t: t.replace(f'"auroc_mean": {d["final"]["auroc_mean"]!r}', '"auroc_mean": 1e999'),
        "is inf",
    ),
    "metric_string": (
        lambda d, t: t.replace(f'"auroc_mean": {d["final"]["auroc_mean"]!r}', '"auroc_mean": "high"'),
        "auroc_mean is 'high', not a number",
    ),
    "history_dict": (lambda d, t: json.dumps({**d, "history": {"0": 1}}), "history is not a non-empty list"),
    "history_item": (lambda d, t: json.dumps({**d, "history": [1, 2]}), "history[0] is a int"),
    "class_names": (lambda d, t: json.dumps({**d, "class_names": [1, 2, 3]}), "class_names is not a list of names"),
    "config_list": (lambda d, t: json.dumps({**d, "config": []}), "config is a list"),
    "timings": (lambda d, t: json.dumps({**d, "timings": {"total_s": "fast"}}), "timings is not a mapping"),
    "run_id": (lambda d, t: json.dumps({**d, "run_id": "fedavg-s0-0000000000"}), "run_id 'fedavg-s0-0000000000'"),
    "array": (lambda d, t: "[1, 2]", "holds a list"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_cached_result_of_wrong_types_is_redone_with_a_warning(tmp_path, case):
    cfg, out = _valid_result(tmp_path)
    text = out.read_text()
    edit, needle = CORRUPTIONS[case]
    bad = edit(json.loads(text), text)
    assert bad != text
    out.write_text(bad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = run(cfg, tmp_path)
    said = [str(x.message) for x in w if "corrupt result file" in str(x.message)]
    assert len(said) == 1 and str(out) in said[0] and needle in said[0], said
    assert isinstance(res.final["auroc_mean"], float) and res.final["auroc_mean"] == res.final["auroc_mean"]
    assert read_result(out).final == res.final  # written again, valid


def test_grid_redoes_a_cached_result_of_wrong_type(tmp_path):
    """``run_many`` loaded ``"final": "abc"`` from the cache and failed in ``result_rows``."""
    cfg, out = _valid_result(tmp_path)
    d = json.loads(out.read_text())
    out.write_text(json.dumps({**d, "final": "abc"}))
    with pytest.warns(UserWarning, match="corrupt result file .*final is a str"):
        df = run_many(cfg, [cfg.method], [cfg.seed], tmp_path, progress=False)
    assert len(df[df.which == "final"]) == 1 and df.auroc_mean.notna().all()


def test_a_link_at_the_result_name_is_not_read_through(tmp_path):
    cfg, out = _valid_result(tmp_path)
    victim = tmp_path / "outside.json"
    out.rename(victim)
    out.symlink_to(victim)
    kept = victim.read_text()
    with pytest.warns(UserWarning, match="symbolic link"):
        run(cfg, tmp_path)
    assert not out.is_symlink() and out.is_file() and victim.read_text() == kept


def test_a_link_at_the_lock_name_is_not_followed(tmp_path):
    """A link planted at ``<run_id>.lock`` was read through (its target's first words
    taken as host and pid: held for ever); it is no lock, and is replaced."""
    cfg = tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False))
    victim = _outside(tmp_path, 1)[0]
    victim.write_text("elsewhere 4242 0\n")
    (tmp_path / f"{cfg.run_id()}.lock").symlink_to(victim)
    assert run(cfg, tmp_path, wait=False) is not None
    assert victim.read_text() == "elsewhere 4242 0\n" and not os.path.lexists(tmp_path / f"{cfg.run_id()}.lock")


# ------------------------------------------------------------------ duplicate grid entries
@pytest.mark.parametrize(
    "methods, seeds, needle",
    [
        (["fedavg"], [0, 0], "seed 0 is listed twice"),
        (["fedavg", "fedavg"], [0], "method 'fedavg' is listed twice"),
        (["fedavg", ("fedavg", {"method": "fedprox"})], [0], "method 'fedavg' is listed twice"),
    ],
)
def test_grid_refuses_repeated_seeds_and_methods(tmp_path, methods, seeds, needle):
    with pytest.raises(ValueError, match=needle):
        run_many(tiny(), methods, seeds, tmp_path, progress=False)
    assert not list(tmp_path.iterdir())  # before any work


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--seeds", "0", "0"], "seed 0 is listed twice"),
        (["--methods", "fedavg", "fedavg"], "method 'fedavg' is listed twice"),
    ],
)
def test_cli_grid_refuses_repeated_entries_in_one_line(tmp_path, extra, needle):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: synthetic-cxr\nclasses: [Cardiomegaly, Effusion, Pneumothorax]\nimage_size: 28\n"
        "n_train: 240\nn_test: 120\nnum_clients: 3\nmodel_kwargs: {width: 8}\nrounds: 1\n"
        "batch_size: 32\nprogress: false\n"
    )
    argv = ["grid", str(cfg), "--backend", "serial", "--results-dir", str(tmp_path / "r")]
    argv += extra if extra[0] == "--methods" else ["--methods", "fedavg", *extra]
    p = cli(*argv)
    one_error_line(p, needle)
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())


def test_a_link_at_the_checkpoint_name_is_refused_not_followed(tmp_path):
    """A link planted at ``<run_id>.ckpt`` (to /dev/zero, or to a real checkpoint elsewhere)
    is refused with a CheckpointError, which the runner reports and starts afresh."""
    from fedpl_core.fl.checkpoint import CheckpointError, atomic_torch_save, read_checkpoint

    real = tmp_path / "elsewhere.ckpt"
    atomic_torch_save({"round": 1}, real)
    for target in (real, Path("/dev/zero")):
        link = tmp_path / "run.ckpt"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        with pytest.raises(CheckpointError, match="not a regular file"):
            read_checkpoint(link)
    assert read_checkpoint(real) == {"round": 1}


def test_atomic_path_for_path_writers_replaces_a_link_and_leaves_nothing_on_error(tmp_path):
    """The decode caches write a memmap by file name through fileio.atomic_path: a link
    planted at the target is replaced (the file it points to is untouched), and an error in
    the block leaves the old target and no temporary file."""
    import numpy as np

    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"keep")
    target = tmp_path / "cache" / "images.npy"
    target.parent.mkdir()
    target.symlink_to(outside)
    with fileio.atomic_path(target) as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(2, 3))
        out[:] = 7
        out.flush()
        del out
    assert not target.is_symlink() and outside.read_bytes() == b"keep"
    assert np.load(target).sum() == 42
    with pytest.raises(RuntimeError):
        with fileio.atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("decode failed")
    assert np.load(target).sum() == 42 and sorted(p.name for p in target.parent.iterdir()) == ["images.npy"]
