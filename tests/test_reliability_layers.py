"""The shared layers every entry point reaches: one bounded reader for structured input
(:mod:`fedpl_core.base.config_files`) and one writer (:mod:`fedpl_core.base.fileio`).
The doors that reach them (command line, papermill, Python, the site builder) have tests
of their own; these hold the layers themselves."""

from __future__ import annotations

import os

import pytest

from fedpl_core.base.config_files import (
    VALUE_MAX_CHARS,
    parse_value,
    read_config_file,
    read_structured_file,
)
from fedpl_core.base.fileio import UnsafePath, atomic_write_text, check_inside, safe_dir
from fedpl_core.base.validation import ConfigError

#: A "billion laughs" document: 9 lists of 9 aliases (315 bytes, 9**9 values expanded).
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_value_nested_beyond_any_config_is_one_line(fmt):
    deep = '{"a":' * 1500 + "1" + "}" * 1500
    with pytest.raises(ConfigError) as e:
        parse_value(deep, "--method-kwargs", fmt)
    assert one_line(e).startswith("--method-kwargs: ") and "nested more than 64 levels" in str(e.value)


def test_list_nested_3000_levels_is_one_line():
    with pytest.raises(ConfigError, match=r"^--dataset-kwargs: .*nested more than 64"):
        parse_value("[" * 3000 + "]" * 3000, "--dataset-kwargs")


def test_alias_bomb_in_a_value_is_refused_before_it_expands():
    with pytest.raises(ConfigError) as e:
        parse_value(BOMB, "-p seeds", "yaml")
    assert one_line(e).startswith("-p seeds: ") and "expands to more than" in str(e.value)


def test_value_longer_than_an_option_holds():
    with pytest.raises(ConfigError, match=r"^-p x: the value is 10,001 characters"):
        parse_value("1" * (VALUE_MAX_CHARS + 1), "-p x", "yaml")


def test_bad_json_names_the_option_and_parser():
    with pytest.raises(ConfigError, match=r"^--method-kwargs: not valid JSON \(Expecting"):
        parse_value("{nope", "--method-kwargs")


def test_good_values_pass():
    assert parse_value('{"mu": 0.01, "k": [1, 2]}', "--method-kwargs") == {"mu": 0.01, "k": [1, 2]}
    assert parse_value("[0, 1, 2]", "-p seeds", "yaml") == [0, 1, 2]


def test_device_file_is_named_not_called_missing(tmp_path):
    with pytest.raises(ConfigError, match=r"/dev/zero is not a regular file"):
        read_config_file("/dev/zero")
    with pytest.raises(ConfigError, match=r"^run record /dev/zero is not a regular file"):
        read_structured_file("/dev/zero", "run record")
    with pytest.raises(FileNotFoundError, match="config file not found"):
        read_config_file(tmp_path / "none.yaml")


def test_structured_file_refuses_a_link_and_names_bad_json(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"a": 1}')
    link = tmp_path / "RUN.json"
    link.symlink_to(real)
    with pytest.raises(ConfigError, match="is a symbolic link"):
        read_structured_file(link, "run record")
    real.write_text('{"a": ' * 100 + "1" + "}" * 100)
    with pytest.raises(ConfigError, match=r"^run record .*real.json: .*nested more than 64"):
        read_structured_file(real, "run record")
    real.write_text("{")
    with pytest.raises(ConfigError, match=r"^run record .*real.json is not valid JSON"):
        read_structured_file(real, "run record")


def test_writer_refuses_a_link_at_any_depth_below_root(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "site"
    (root / "html").mkdir(parents=True)
    (root / "html" / "sub").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="sub is a symbolic link"):
        atomic_write_text(root / "html" / "sub" / "page.html", "x", root=root)
    assert list(elsewhere.iterdir()) == []
    # a link at the target itself is replaced by the file, never written through
    (root / "html" / "index.html").symlink_to(victim)
    atomic_write_text(root / "html" / "index.html", "page", root=root)
    assert victim.read_text() == "keep me" and not (root / "html" / "index.html").is_symlink()


def test_writer_refuses_the_root_as_a_link_and_a_target_outside(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePath, match="is a symbolic link"):
        atomic_write_text(tmp_path / "out" / "a.txt", "x", root=tmp_path / "out")
    with pytest.raises(UnsafePath, match="is outside the output folder"):
        atomic_write_text(tmp_path / "real" / ".." / "escaped.txt", "x", root=tmp_path / "real")
    assert not (tmp_path / "escaped.txt").exists()
    with pytest.raises(UnsafePath, match="outside"):
        check_inside(tmp_path / "real", tmp_path / "real" / "../../x")


def test_safe_dir_makes_plain_folders_only(tmp_path):
    made = safe_dir(tmp_path, "a/b/c")
    assert made.is_dir() and not any(p.is_symlink() for p in [tmp_path / "a", tmp_path / "a/b", made])
    os.symlink(tmp_path, tmp_path / "a" / "loop")
    with pytest.raises(UnsafePath):
        safe_dir(tmp_path, "a/loop/d")
    (tmp_path / "f").write_text("")
    with pytest.raises(UnsafePath, match="is a file, not a folder"):
        safe_dir(tmp_path, "f/g")


def test_tables_and_figures_go_through_the_writer_with_their_folder_as_root(tmp_path):
    """A sub-folder of the figures folder that is a link (even to a folder inside it) is never
    written through, by a table or by a figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from fedpl_core.report.plotting import savefig
    from fedpl_core.report.tables import save_table

    (tmp_path / "real").mkdir()
    (tmp_path / "sub").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePath, match="sub is a symbolic link"):
        save_table(pd.DataFrame({"a": [1]}), "sub/t", tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    with pytest.raises(UnsafePath, match="sub is a symbolic link"):
        savefig(fig, "sub/f.png", tmp_path)
    plt.close(fig)
    assert list((tmp_path / "real").iterdir()) == []
    assert set(save_table(pd.DataFrame({"a": [1]}), "made/t", tmp_path)) == {"csv", "md", "tex"}


def test_writer_never_puts_a_file_in_place_of_a_device_pipe_or_folder(tmp_path):
    """``os.replace`` would swap a device node (``--out /dev/full``) for a regular file; the
    writer refuses any target that is not a file or a link.  A pipe stands in for the device
    here, so that a broken writer cannot damage the machine running the test."""
    from fedpl_core.base.fileio import atomic_path, check_writable

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for write in (
        lambda: atomic_write_text(fifo, "x"),
        lambda: atomic_write_text(fifo, "x", root=tmp_path),
        lambda: check_writable(fifo),
        lambda: atomic_path(fifo).__enter__(),
    ):
        with pytest.raises(UnsafePath, match="is not a regular file"):
            write()
        assert not fifo.is_file() and os.path.exists(fifo)
    (tmp_path / "dir").mkdir()
    with pytest.raises(UnsafePath, match="is a folder"):
        atomic_write_text(tmp_path / "dir", "x")


def test_a_notebook_parameter_written_as_text_is_read_within_the_same_bounds():
    """papermill run directly (not through ``reproduce``) hands the notebook its text; the
    parameter check reads it with the same bounds as every other value."""
    from fedpl_core.base.config_files import parse_literal

    assert parse_literal("[0, 1]", "seeds") == [0, 1] and parse_literal("('a', 2)", "x") == ("a", 2)
    with pytest.raises(ConfigError, match=r"^seeds: the value is nested more than 64"):
        parse_literal("[" * 3000 + "]" * 3000, "seeds")
    with pytest.raises(ConfigError, match=r"^seeds: key 'a' is given twice"):
        parse_literal('{"a": 1, "a": 2}', "seeds")
    with pytest.raises(ConfigError, match=r"^seeds: the value is 10,00\d characters"):
        parse_literal("[" + "0," * 5000 + "0]", "seeds")
    with pytest.raises(ConfigError, match=r"^x is nested more than 64"):
        parse_literal("(" + "[" * 100 + "]" * 100 + ",)", "x")


# ------------------------------------------------------------------ the Python doors: run, run_many
def _tiny_cfg(**engine):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_reliability import tiny

    from fedpl_core.fl.engine_config import EngineConfig

    return tiny(engine=EngineConfig(rounds=1, batch_size=32, progress=False, **engine))


def test_python_grid_caps_workers_to_the_cores_and_refuses_a_missing_gpu_once(tmp_path, monkeypatch):
    import torch

    from fedpl_core.base.validation import machine_cores
    from fedpl_core.runs import grid, study

    cfg = _tiny_cfg()
    seen = {}

    def fake_run_grid(cfgs, results_dir, backend, workers, *a, **k):
        seen["workers"] = workers
        raise SystemExit

    monkeypatch.setattr(study, "run_grid", fake_run_grid)
    with pytest.warns(UserWarning, match=rf"workers {machine_cores() + 3} is more than the {machine_cores()} CPU"):
        with pytest.raises(SystemExit):
            study.run_many(cfg, ["fedavg"], [0], tmp_path, progress=False, workers=machine_cores() + 3)
    assert seen["workers"] == machine_cores()
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    gpu = _tiny_cfg(device="cuda")
    calls = []
    monkeypatch.setattr(grid, "check_targets", lambda *a: calls.append(a))
    with pytest.raises(ValueError, match=r"^engine device 'cuda' is not available on this machine"):
        grid.check_runs([gpu, gpu], tmp_path)
    assert calls == []  # refused before any run is looked at


def test_a_run_whose_id_would_leave_the_results_folder_is_refused_before_training(tmp_path):
    from fedpl_core.runs.runner import check_targets

    with pytest.raises(UnsafePath, match="is not a plain file name"):
        check_targets(tmp_path / "res", "../../escaped-s0-0123456789")
    (tmp_path / "res").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "res" / "sub").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath, match="sub is a symbolic link"):
        check_targets(tmp_path / "res" / "sub", "fedavg-s0-0123456789")


def test_an_output_folder_whose_parents_do_not_exist_yet_is_made(tmp_path):
    """A fresh checkout has no ``outputs/smoke/``: the folder a user (or a profile) names is
    made with its parents, as ``mkdir -p`` would; only below it are links refused."""
    root = tmp_path / "outputs" / "smoke" / "figures"
    atomic_write_text(root / "t.csv", "a\n", root=root)
    assert (root / "t.csv").read_text() == "a\n"
    assert safe_dir(tmp_path / "x" / "y", "z").is_dir()
