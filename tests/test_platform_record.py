"""The run record names the numeric platforms that trained its runs, and a reader on another
platform is told what that means (fedpl_core.report.record, fedpl_core.runs.provenance).

* a grid notes the platforms its *results* report (each run's own, with its thread count), not
  the platform of the process that drives it, in the log ``reproduce`` sets;
* ``write_record`` keeps them (``training_platforms``: per notebook, per invocation, and their
  union at the top) apart from the executing process's (``driver_platform``);
* ``platform_note`` compares a record's platforms with the reader's without the thread count,
  and says nothing when they are the same machine; the site's banner and ``reproduce`` show it.
"""

import json
import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from fedpl_core.report import docs as D  # noqa: E402
from fedpl_core.report import record as R  # noqa: E402
from fedpl_core.runs import provenance as P  # noqa: E402

X1 = "torch 2.14.1+cu130, x86_64 AVX512 (simd 0544177b), 1 thread(s)"
X2 = "torch 2.14.1+cu130, x86_64 AVX512 (simd 0544177b), 2 thread(s)"
Y1 = "torch 2.14.1+cu130, x86_64 AVX2 (simd 4c9593b3), 1 thread(s)"
Z1 = "torch 0.0, riscv64 RVV (simd 00000000), 1 thread(s)"  # no machine that runs these tests
NOTE_END = "the last digits move, and a verdict should not."


def record_on(*platforms: str, legacy: str | None = None) -> dict:
    """A valid record whose runs report ``platforms`` (or, ``legacy``, an older record that
    names only the executing process's platform)."""
    rec = {"code": {"fedpl_core/x.py": "0" * 16}, "code_fingerprint": "1" * 16, "profile": "cpu"}
    if platforms:
        rec["training_platforms"] = list(platforms)
    if legacy:
        rec["numeric_platform"] = legacy
    return R.check_record(rec)


# ------------------------------------------------------------------ comparing platforms
def test_a_platform_key_splits_into_its_machine_and_its_threads():
    assert P.platform_base(X2) == P.platform_base(X1) == "torch 2.14.1+cu130, x86_64 AVX512 (simd 0544177b)"
    assert (P.platform_threads(X1), P.platform_threads(X2), P.platform_threads("torch 2, arm64")) == (1, 2, None)
    assert P.platform_base(P.numeric_platform()["key"]) != P.numeric_platform()["key"]  # the live key has its threads


def test_a_record_made_on_another_platform_is_told_so():
    note = R.platform_note(record_on(X1), current=Y1)
    assert note is not None and note.endswith(NOTE_END)
    assert P.platform_base(X1) + ", 1 thread(s) a run" in note  # where the runs trained, with their threads
    assert P.platform_base(Y1) in note and "1 thread(s)" not in note.split("numeric platform")[-1]


def test_the_same_platform_is_told_nothing_whatever_the_threads():
    assert R.platform_note(record_on(X1), current=X1) is None
    assert R.platform_note(record_on(X1), current=X2) is None  # the driver's threads are not the runs'
    here = P.numeric_platform()["key"]  # the default: this process's
    assert R.platform_note(record_on(here)) is None and R.platform_note(record_on(Z1)).endswith(NOTE_END)


def test_runs_on_two_platforms_are_told_even_on_one_of_them():
    note = R.platform_note(record_on(X1, Y1), current=X1)
    assert note is not None and P.platform_base(X1) in note and P.platform_base(Y1) in note


def test_an_older_record_is_compared_by_its_executing_platform():
    rec = record_on(legacy=X2)  # written before the runs' own platforms were recorded
    assert R.training_platforms(rec) == ([X2], False)
    assert R.platform_note(rec, current=X1) is None
    note = R.platform_note(rec, current=Y1)
    assert note is not None and "were made on" in note and "2 thread(s)" not in note  # not the runs' threads
    assert "was not recorded" in R.trained_on(rec)


def test_no_record_or_no_platform_is_told_nothing():
    assert R.platform_note(None, current=Y1) is None
    assert R.platform_note(record_on(), current=Y1) is None and R.trained_on(record_on()) is None


@pytest.mark.parametrize("bad", [["a\nb"], ["\x1b[31m"], "one", [""], ["x" * 201], [X1] * 65])
def test_a_record_with_a_platform_of_the_wrong_form_is_refused(bad):
    with pytest.raises(R.RecordError, match="training_platforms"):
        R.check_record({"code": {"fedpl_core/x.py": "0" * 16}, "code_fingerprint": "1" * 16, "training_platforms": bad})


# ------------------------------------------------------------------ the banner
def test_the_banner_names_the_training_platform_and_the_note_on_another():
    rec = record_on(X1)
    same = D.site_banner(rec, current=X2)
    assert same.startswith(R.describe(rec)) and same.endswith(f"Trained on {P.platform_base(X1)}, 1 thread(s) a run.")
    other = D.site_banner(rec, current=Y1)
    assert other.startswith(R.describe(rec)) and other.endswith(NOTE_END)
    assert "the machine that built this site has numeric platform" in other
    assert D.site_banner(None) == R.describe(None)


# ------------------------------------------------------------------ the log and the record
def test_the_log_keeps_each_platform_once_and_only_while_reproduce_runs():
    assert P.PLATFORM_LOG_ENV not in os.environ
    with R.platform_log() as log:
        assert os.environ[P.PLATFORM_LOG_ENV] == str(log)
        P.note_platforms([{"numeric_platform": Y1}, {"numeric_platform": X1}, None, {"numeric_platform": 3}])
        P.note_platforms([{"numeric_platform": X1}, {"numeric_platform": "two\nlines"}])
        assert log.read_text().splitlines() == sorted([X1, Y1]) == R.logged_platforms()
    assert P.PLATFORM_LOG_ENV not in os.environ and not log.exists()
    P.note_platforms([{"numeric_platform": X1}])  # no log: nothing, no error


def test_the_log_is_never_written_through_a_link(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("VICTIM\n")
    (tmp_path / "log").symlink_to(victim)
    monkeypatch.setenv(P.PLATFORM_LOG_ENV, str(tmp_path / "log"))
    with pytest.warns(RuntimeWarning, match="not noted"):
        P.note_platforms([{"numeric_platform": X1}])
    assert victim.read_text() == "VICTIM\n"
    with pytest.warns(RuntimeWarning, match="not recorded"):
        assert R.logged_platforms() == []


def test_the_record_keeps_the_runs_platforms_apart_from_the_driver(tmp_path, monkeypatch):
    log = tmp_path / "platforms.txt"
    monkeypatch.setenv(P.PLATFORM_LOG_ENV, str(log))
    log.write_text(f"{Y1}\n")
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {})])
    log.write_text(f"{X1}\n")
    R.write_record(tmp_path, "cpu", [("01_b", 1.0, "ok", {})])
    rec = R.read_record(tmp_path)
    assert rec["driver_platform"] == P.numeric_platform()["key"] and "numeric_platform" not in rec
    assert rec["notebooks"]["00_a"]["training_platforms"] == [Y1] and rec["notebooks"]["01_b"][
        "training_platforms"
    ] == [X1]
    assert [i["training_platforms"] for i in rec["invocations"]] == [[Y1], [X1]]
    assert rec["training_platforms"] == sorted([X1, Y1])  # the notebooks' union
    monkeypatch.delenv(P.PLATFORM_LOG_ENV)
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {})])  # 00_a again, its runs' platforms not known
    rec = R.read_record(tmp_path)
    assert "training_platforms" not in rec["notebooks"]["00_a"] and rec["training_platforms"] == [X1]


def test_a_grid_notes_the_platform_its_results_report_not_its_own(tmp_path, monkeypatch):
    """A cached result made elsewhere (its provenance names another platform; not part of its
    fingerprint, so still valid) is noted as that platform; a run trained here as this one, with
    the thread count it trained with."""
    from test_reliability_methods import config

    from fedpl_core.runs.grid import run_grid
    from fedpl_core.runs.provenance import stale_reason

    cfg = config("fedavg")
    log = tmp_path / "platforms.txt"
    monkeypatch.setenv(P.PLATFORM_LOG_ENV, str(log))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (res,) = run_grid([cfg], tmp_path / "results", progress=False)
    here = P.numeric_platform()["key"]
    assert res.provenance["numeric_platform"] == here and P.platform_threads(here) == 1  # tests/conftest.py: 1
    assert log.read_text().splitlines() == [here]

    path = tmp_path / "results" / f"{cfg.run_id()}.json"
    d = json.loads(path.read_text())
    d["provenance"]["numeric_platform"] = Y1  # as if trained on another machine
    path.write_text(json.dumps(d))
    assert stale_reason(d["provenance"], cfg) is None  # the platform is no part of the fingerprint
    log.unlink()
    (res,) = run_grid([cfg], tmp_path / "results", progress=False)  # from the cache: nothing trained
    assert res.provenance["numeric_platform"] == Y1 and log.read_text().splitlines() == [Y1]


# ------------------------------------------------------------------ reproduce
@pytest.fixture
def reproduce(monkeypatch, capsys, tmp_path):
    """``reproduce`` of notebook 00 into ``tmp_path/out`` with a kernel whose grid reports
    ``platform``, against a committed record ``committed``: ``(exit status, stdout, record)``."""
    import papermill

    from fedpl_core.apps import cli

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))

    def call(platform: str, committed: dict | None):
        def kernel(input_path, output_path, parameters=None, **kw):
            P.note_platforms([{"numeric_platform": platform}])  # what a notebook's run_many does
            nb = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
            Path(output_path).write_text(json.dumps(nb))
            return nb

        monkeypatch.setattr(papermill, "execute_notebook", kernel)
        monkeypatch.setattr(R, "committed_record", lambda profile, root=R.ROOT: committed)
        capsys.readouterr()
        rc = cli.main(["reproduce", "--profile", "smoke", "--notebooks", "00", "--output", str(tmp_path / "out")])
        out = capsys.readouterr().out
        assert P.PLATFORM_LOG_ENV not in os.environ  # restored after the run
        return rc, out, R.read_record(tmp_path / "out")

    return call


def test_reproduce_records_the_kernels_platforms_and_tells_a_reader_on_another(reproduce):
    here = P.numeric_platform()["key"]
    rc, out, rec = reproduce(Y1, record_on(Z1))  # runs reported Y1; the committed run trained on Z1
    assert rc == 0 and rec["training_platforms"] == [Y1] and rec["driver_platform"] == here
    note = next(line for line in out.splitlines() if line.startswith("note: "))
    assert note.endswith(NOTE_END) and P.platform_base(Z1) in note and P.platform_base(here) in note
    rc, out, rec = reproduce(here, record_on(here.replace(", 1 thread(s)", ", 4 thread(s)")))
    assert rc == 0 and "note: " not in out and rec["training_platforms"] == [here]  # the same machine
    rc, out, _ = reproduce(here, None)  # no committed record of this profile
    assert rc == 0 and "note: " not in out
