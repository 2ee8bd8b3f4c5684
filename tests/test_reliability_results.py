"""Cached results are the run's own and possible, the targets of a run are checked before
it trains, and a full disk is said as such, naming the place.

Before: a cached result edited to ``auroc_mean = 5.0`` / ``map = -3.0`` was reported as
success; a result file of another run (another method, seed or rounds in its config) or
without its ``run_id`` was used as this run's; a folder at ``<run_id>.json`` cost the
whole run (the write failed after training) and one at ``<run_id>.ckpt`` reported a
finished run as failed; on a full disk the error named no path and left an empty
``.lock`` behind.  And every result written since results recorded their numeric
platform was refused when read back (its ``provenance.numeric_platform`` is a mapping),
so the cache never hit.  Each case failed on the code before."""

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import one_error_line, tiny  # noqa: E402

from fedpl_core.base import fileio  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.runner import run
from fedpl_core.runs.schema import read_result
from fedpl_core.runs.study import run_many  # noqa: E402

ENGINE = dict(rounds=2, batch_size=32, progress=False, selection="auroc_mean")  # a best round too


def finished(tmp_path, **kw):
    cfg = tiny(engine=EngineConfig(**{**ENGINE, **kw}))
    res = run(cfg, tmp_path)
    return cfg, res, tmp_path / f"{cfg.run_id()}.json"


def numbers(rec):
    """A record without its timings (a run done again takes other seconds)."""
    return {k: v for k, v in rec.items() if not k.endswith("_time")}


def redone(cfg, tmp_path):
    """Run ``cfg`` again: its result and the warnings that said the file was not used."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = run(cfg, tmp_path)
    return res, [str(w.message) for w in rec if "result file" in str(w.message)]


def test_a_fresh_result_is_read_back_from_the_cache(tmp_path):
    cfg, first, out = finished(tmp_path)
    prov = json.loads(out.read_text())["provenance"]
    assert isinstance(prov["numeric_platform"], str) and prov["torch_threads"] >= 1  # recorded since platforms count
    again, said = redone(cfg, tmp_path)
    assert not said and again.timings == first.timings  # read, not run again


def _edit_final(d, **values):
    d["final"].update(values)
    return d


def _edit_last(d, **values):
    """The last record changed, and ``final`` and ``best`` with it where they are it."""
    for rec in [d["history"][-1], d["final"], *([d["best"]] if d["best"] == d["history"][-1] else [])]:
        rec.update(values)
    return d


EDITS = {
    "auroc_5": (lambda d: _edit_final(d, auroc_mean=5.0, map=-3.0), "final.auroc_mean is 5.0, outside [0, 1]"),
    "map_negative": (lambda d: _edit_final(d, map=-3.0), "final.map is -3.0, outside [0, 1]"),
    "per_class": (
        lambda d: d["history"][0]["auroc_per_class"].__setitem__(0, 1.5) or d,
        "history[0].auroc_per_class[0] is 1.5, outside [0, 1]",
    ),
    "negative_time": (lambda d: d["history"][1].__setitem__("train_time", -4.0) or d, "train_time is -4.0, below 0"),
    "round_zero": (lambda d: d["history"][0].__setitem__("round", 0) or d, "history[0].round is 0"),
    "final_not_history": (
        lambda d: _edit_final(d, auroc_mean=0.99),
        "final (round 2) is not the history's last evaluated record",
    ),
    "best_not_history": (lambda d: d["best"].__setitem__("auroc_mean", 0.99) or d, "is not a record of the history"),
    "no_run_id": (lambda d: d.pop("run_id") and d, "it names no run_id (this run is "),
    "round_999": (lambda d: _edit_last(d, round=999), "history[1].round is 999, after the run's last round (2)"),
    "per_class_9": (
        lambda d: _edit_last(d, auroc_per_class=[0.5] * 9),
        "history[1].auroc_per_class holds 9 values for 3 classes",
    ),
}


@pytest.mark.parametrize("case", list(EDITS))
def test_an_impossible_cached_result_is_redone_with_one_warning(tmp_path, case):
    cfg, first, out = finished(tmp_path)
    edit, needle = EDITS[case]
    out.write_text(json.dumps(edit(json.loads(out.read_text()))))
    res, said = redone(cfg, tmp_path)
    assert len(said) == 1 and str(out) in said[0] and needle in said[0], said
    assert numbers(res.final) == numbers(first.final) and 0 <= res.final["auroc_mean"] <= 1  # its own numbers
    assert read_result(out, cfg.to_dict()).final == res.final  # and written again


@pytest.mark.parametrize(
    "other, needle",
    [
        (dict(method="fedprox"), 'method "fedprox" (this run: "fedavg")'),
        (dict(seed=1), "seed 1 (this run: 0)"),
        (dict(rounds=1), "engine.rounds 1 (this run: 2)"),
    ],
)
def test_a_result_of_another_run_is_not_used_as_this_runs(tmp_path, other, needle):
    """Another run's file under this run's name, its run id rewritten to match."""
    cfg, first, out = finished(tmp_path)
    foreign = cfg.replace(**other)
    run(foreign, tmp_path / "other")
    d = json.loads((tmp_path / "other" / f"{foreign.run_id()}.json").read_text())
    d["run_id"] = cfg.run_id()
    out.write_text(json.dumps(d))
    res, said = redone(cfg, tmp_path)
    assert len(said) == 1 and "its config is another run's: " in said[0] and needle in said[0], said
    assert res.config == first.config and numbers(res.final) == numbers(first.final)


def test_a_grid_redoes_a_foreign_result_too(tmp_path):
    cfg, first, out = finished(tmp_path)
    d = json.loads(out.read_text())
    d["config"]["seed"] = 7
    out.write_text(json.dumps(d))
    with pytest.warns(UserWarning, match="its config is another run's: seed 7"):
        df = run_many(cfg, [cfg.method], [cfg.seed], tmp_path, progress=False)
    assert df[df.which == "final"].auroc_mean.tolist() == [first.final["auroc_mean"]]


# ------------------------------------------------------------------ targets checked before training
def _no_training(monkeypatch):
    from fedpl_core.runs import runner

    monkeypatch.setattr(runner, "build_simulation", lambda *a, **k: pytest.fail("the run trained"))


@pytest.mark.parametrize("suffix, what", [(".json", "result"), (".ckpt", "checkpoint")])
def test_a_folder_at_a_target_is_found_before_training(tmp_path, monkeypatch, suffix, what):
    cfg = tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False, checkpoint_every=1))
    folder = tmp_path / f"{cfg.run_id()}{suffix}"
    (folder / "inside").mkdir(parents=True)
    _no_training(monkeypatch)
    with pytest.raises(IsADirectoryError, match=f"is a folder, where run {cfg.run_id()}'s {what} file goes"):
        run(cfg, tmp_path)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        run_many(cfg, [cfg.method], [cfg.seed], tmp_path, progress=False, backend="process", workers=2)
    assert (folder / "inside").is_dir()


def test_the_command_line_names_a_folder_at_the_result_in_one_line(tmp_path):
    from test_reliability import FLAGS
    from test_reliability_files import cli_config

    rid = cli_config("--rounds", "1").run_id()
    (tmp_path / "r" / f"{rid}.json").mkdir(parents=True)
    p = subprocess.run(
        [sys.executable, "-m", "fedpl_core", "run", *FLAGS, "--rounds", "1", "--results-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    one_error_line(p, f"{rid}.json is a folder, where run {rid}'s result file goes")
    assert "round" not in p.stdout


# ------------------------------------------------------------------ a full disk
def test_a_lock_on_a_full_disk_is_named_and_not_left_behind(tmp_path, monkeypatch):
    from fedpl_core.base import locks

    def full(*a):
        raise OSError(errno.ENOSPC, "No space left on device")

    cfg = tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False))
    lock = tmp_path / f"{cfg.run_id()}.lock"
    _no_training(monkeypatch)
    monkeypatch.setattr(locks.os, "pwrite", full)
    with pytest.raises(OSError, match=f"cannot write the run lock {lock}: no space left on the device") as e:
        run(cfg, tmp_path)
    assert e.value.errno == errno.ENOSPC and not lock.exists()


def test_a_full_disk_is_found_before_training_and_named(tmp_path, monkeypatch):
    def full(*a):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "posix_fallocate", full, raising=False)
    with pytest.raises(OSError, match=f"no space left in {tmp_path} to write r.json; free some space there"):
        fileio.check_writable(tmp_path / "r.json")
    assert not list(tmp_path.iterdir())


def test_a_write_that_runs_out_of_space_names_the_folder_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(OSError, match=f"no space left in {tmp_path} to write r.json") as e:
        with fileio.atomic_write(target) as f:
            f.write("new")
            raise OSError(errno.ENOSPC, "No space left on device")  # as a write to a full disk raises
    assert e.value.errno == errno.ENOSPC and target.read_text() == "old" and os.listdir(tmp_path) == ["r.json"]


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs filled to the last byte (needs the right to mount: root)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here")
    try:
        fd = os.open(mnt / "fill", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # ENOSPC: full
            pass
        finally:
            os.close(fd)
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_a_run_on_a_really_full_disk_says_where(full_disk):
    from test_reliability import FLAGS

    for flags, needle in (
        (["--results-dir", str(full_disk / "r")], f"cannot write the run lock {full_disk / 'r'}/"),
        (["--out", str(full_disk / "o.json")], f"no space left in {full_disk} to write o.json"),
    ):
        p = subprocess.run(
            [sys.executable, "-m", "fedpl_core", "run", *FLAGS, "--rounds", "1", *flags], capture_output=True, text=True
        )
        one_error_line(p, needle)
    assert sorted(p.name for p in full_disk.rglob("*") if p.is_file()) == ["fill"]
    assert Path(full_disk / "r").is_dir()
