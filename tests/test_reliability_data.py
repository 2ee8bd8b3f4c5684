"""Real-data files around a run: images far from the size they are resized to, an ``.npz``
larger than the memory, a full disk under a checkpoint, a data folder nested too deep, and
links in the decode cache folder.  The checks live outside the code that computes a run
(:mod:`fedpl_core.runs.data_checks`, called by :func:`fedpl_core.runs.runner.run`), so no
cached result's code fingerprint moves.  Each case failed on the code before it."""

from __future__ import annotations

import io
import json
import os
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import fixtures_data as fx  # noqa: E402

from fedpl_core.data import base as data_base  # noqa: E402
from fedpl_core.data.base import DataError, DataWarning  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs import (
    data_checks,  # noqa: E402
    runner,  # noqa: E402
)
from fedpl_core.runs.experiment_config import ExperimentConfig  # noqa: E402
from fedpl_core.runs.runner import run  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "default_cache"))
    data_checks._CHECKED.clear()


def real_cfg(dataset: str, root: Path, tmp_path: Path, **kw) -> ExperimentConfig:
    return ExperimentConfig(
        dataset=dataset,
        data_root=str(root),
        image_size=kw.pop("image_size", 16),
        num_clients=2,
        partition="iid",
        model_kwargs={"width": 8},
        engine=EngineConfig(rounds=1, batch_size=32, progress=False),
        dataset_kwargs={"cache_dir": str(tmp_path / "cache"), **kw.pop("dataset_kwargs", {})},
        **kw,
    )


def data_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DataWarning)]


# ============================================================================ far sizes
def test_the_far_size_rule():
    assert not data_checks.far_from_size(64, 64, 64)
    assert not data_checks.far_from_size(600, 450, 224)  # HAM10000 at 224 px
    assert not data_checks.far_from_size(16, 16, 64)  # a quarter: still near enough
    assert data_checks.far_from_size(15, 40, 64)  # a side under a quarter
    assert data_checks.far_from_size(1, 1, 64)
    assert data_checks.far_from_size(3, 5000, 64)  # a side over 4 times the other
    assert data_checks.far_from_size(300, 64, 64)


def test_images_far_from_the_size_are_named_once_before_training(tmp_path):
    """Before, a 1x1 and a 3x500 image among 30x30 ones were resized and trained on silently."""
    d = fx.write_tb(tmp_path)
    fx.write_png(d / "Normal" / "Normal-12.png", (1, 1), 9)
    fx.write_png(d / "Normal" / "Normal-13.png", (3, 500), 9)
    cfg = real_cfg("tb", d, tmp_path)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run(cfg, tmp_path / "results")
    far = [m for m in data_warnings(rec) if "far from the 16 px" in m]
    assert len(far) == 1, data_warnings(rec)
    assert "2 of 16 image files" in far[0]
    assert "Normal-12.png (1x1)" in far[0] and "Normal-13.png (3x500)" in far[0]
    with warnings.catch_warnings(record=True) as rec:  # the same data set again in this process
        warnings.simplefilter("always")
        run(cfg, tmp_path / "results2")
    assert not [m for m in data_warnings(rec) if "far from" in m]


def test_images_of_the_right_size_give_no_warning(tmp_path):
    d = fx.write_tb(tmp_path)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run(real_cfg("tb", d, tmp_path), tmp_path / "results")
    assert not [m for m in data_warnings(rec) if "far from" in m]


def test_many_far_images_are_counted_not_all_listed(tmp_path):
    paths = []
    for i in range(5):
        p = tmp_path / f"s{i}.png"
        fx.write_png(p, (2, 2), 9)
        paths.append(str(p))
    with pytest.warns(DataWarning, match=r"5 of 5 image files are far .* and 2 more") as rec:
        assert len(data_checks.warn_far_sizes(paths, 64, "x")) == 5
    assert str(rec[0].message).count("(2x2)") == 3


# ============================================================================ MedMNIST bound
def _npz_declaring(path: Path, shape: tuple[int, ...]) -> None:
    """An ``.npz`` whose ``train_images`` header declares ``shape`` but holds 100 bytes."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "|u1", "fortran_order": False, "shape": shape})
    arrays = {"train_labels": np.zeros((3, 1), np.uint8), "test_images": np.zeros((2, 28, 28), np.uint8)}
    arrays["test_labels"] = np.zeros((2, 1), np.uint8)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("train_images.npy", head.getvalue() + b"\0" * 100)
        for k, a in arrays.items():
            buf = io.BytesIO()
            np.save(buf, a)
            z.writestr(f"{k}.npy", buf.getvalue())


def test_a_medmnist_file_larger_than_the_memory_is_refused_before_reading(tmp_path, monkeypatch):
    """Before, the arrays were decompressed first, and a MemoryError then advised settings
    (n_train, n_test) that do not apply to MedMNIST."""
    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist")
    monkeypatch.setattr(data_base, "available_memory", lambda: 1000)

    def never(*a, **k):
        raise AssertionError("the file was read")

    monkeypatch.setattr(np, "load", never)
    cfg = real_cfg("medmnist:pneumoniamnist", tmp_path / "mm", tmp_path, image_size=28)
    with pytest.raises(DataError) as e:
        run(cfg, tmp_path / "results")
    msg = str(e.value)
    assert msg.startswith(f"MedMNIST file {tmp_path / 'mm' / 'pneumoniamnist.npz'}: its arrays declare")
    assert "train_images [6, 28, 28]" in msg and "more than the 1 KB of memory available" in msg
    assert "download pneumoniamnist.npz again" in msg and "4,708 training" in msg
    assert "n_train" not in msg and "\n" not in msg


def test_the_advice_names_a_smaller_medmnist_file(tmp_path, monkeypatch):
    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist", size=64, n=(2, 1, 2))
    monkeypatch.setattr(data_base, "available_memory", lambda: 1000)
    cfg = real_cfg("medmnist:pneumoniamnist", tmp_path / "mm", tmp_path, image_size=28, dataset_kwargs={"size": 64})
    with pytest.raises(DataError, match=r"read a smaller one \(dataset_kwargs size 28\)"):
        run(cfg, tmp_path / "results")


def test_a_medmnist_file_declaring_more_than_it_stores_is_refused(tmp_path, monkeypatch):
    """A header declaring 8,000,000 images over 100 bytes of data: before, numpy allocated
    the declared array and then failed reading it."""
    (tmp_path / "mm").mkdir()
    _npz_declaring(tmp_path / "mm" / "pneumoniamnist.npz", (8_000_000, 28, 28))
    cfg = real_cfg("medmnist:pneumoniamnist", tmp_path / "mm", tmp_path, image_size=28)
    with pytest.raises(DataError, match=r"train_images declares shape \[8000000, 28, 28\] \(6.27 GB\) but"):
        run(cfg, tmp_path / "results")


def test_the_cli_says_the_medmnist_bound_in_one_line(tmp_path, monkeypatch, capsys):
    from fedpl_core.apps.cli import main

    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist")
    monkeypatch.setattr(data_base, "available_memory", lambda: 1000)
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "results"))
    args = ["run", "--dataset", "medmnist:pneumoniamnist", "--data-root", str(tmp_path / "mm")]
    rc = main([*args, "--image-size", "28", "--rounds", "1", "--num-clients", "2", "--progress", "false"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("fedpl: error:")]
    assert rc == 2 and len(err) == 1 and "MedMNIST file" in err[0] and "memory available" in err[0]


def test_a_published_size_file_within_memory_loads(tmp_path):
    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist")
    res = run(real_cfg("medmnist:pneumoniamnist", tmp_path / "mm", tmp_path, image_size=28), tmp_path / "results")
    assert res is not None and res.history


# ============================================================================ checkpoint, full disk
TORCH_FULL = (
    "[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file data/0: file write failed"
)


def _ckpt_cfg() -> ExperimentConfig:
    return ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Cardiomegaly", "Effusion"],
        image_size=28,
        n_train=60,
        n_test=30,
        num_clients=2,
        model_kwargs={"width": 4},
        engine=EngineConfig(rounds=1, batch_size=32, progress=False, checkpoint_every=1),
    )


def _torch_save_fails(*a, **k):
    raise RuntimeError(TORCH_FULL)


def test_a_full_disk_under_a_checkpoint_is_named(tmp_path, monkeypatch):
    """Before, torch's "[enforce fail at inline_container.cc:672]" came out as it was."""
    monkeypatch.setattr(torch, "save", _torch_save_fails)
    monkeypatch.setattr(runner, "_free_bytes", lambda folder: 0)
    cfg = _ckpt_cfg()
    with pytest.raises(OSError) as e:
        run(cfg, tmp_path)
    assert str(e.value) == f"no space left in {tmp_path} to write {cfg.run_id()}.ckpt; free some space there"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_torch_write_failure_with_room_left_stands_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "save", _torch_save_fails)
    monkeypatch.setattr(runner, "_free_bytes", lambda folder: 10**12)
    with pytest.raises(RuntimeError, match="inline_container"):
        run(_ckpt_cfg(), tmp_path)


def test_the_cli_says_a_full_disk_under_a_checkpoint_in_one_line(tmp_path, monkeypatch, capsys):
    from fedpl_core.apps.cli import main

    monkeypatch.setattr(torch, "save", _torch_save_fails)
    monkeypatch.setattr(runner, "_free_bytes", lambda folder: 0)
    args = ["run", "--dataset", "synthetic-cxr", "--classes", "Cardiomegaly,Effusion", "--image-size", "28"]
    args += ["--n-train", "60", "--n-test", "30", "--num-clients", "2", "--rounds", "1", "--progress", "false"]
    rc = main([*args, "--checkpoint-every", "1", "--results-dir", str(tmp_path)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("fedpl: error:")]
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"fedpl: error: no space left in {tmp_path}") and ".ckpt" in err[0]


# ============================================================================ deep folders
def _nest(folder: Path, levels: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = os.fspath(folder)
    for _ in range(levels):
        p = os.path.join(p, "a")
        os.mkdir(p)
    return Path(p)


def _unnest(folder: Path, levels: int) -> None:
    """Remove the chain bottom up (shutil.rmtree recurses, and would fail on it)."""
    p = os.fspath(folder) + "/a" * levels
    for _ in range(levels):
        os.rmdir(p)
        p = os.path.dirname(p)


def test_a_data_folder_nested_too_deep_is_one_line_naming_it(tmp_path):
    """Before: "maximum recursion depth exceeded", naming no folder."""
    d = fx.write_ham10000(tmp_path / "ham")
    _nest(d / "extra", 1100)
    try:
        with pytest.raises(DataError) as e:
            run(real_cfg("ham10000", d, tmp_path), tmp_path / "results")
        msg = str(e.value)
        assert msg.startswith(f"data folder {d} holds folders nested more than 256 levels deep ({d / 'extra'}/a/a/")
        assert "/.../a/a)" in msg and len(msg) < 400 and "\n" not in msg
    finally:
        _unnest(d / "extra", 1100)


def test_the_deep_folder_search_is_bounded_and_loop_free(tmp_path):
    _nest(tmp_path / "x", 5)
    (tmp_path / "x" / "a" / "up").symlink_to(tmp_path / "x")  # a link back up: visited once
    assert data_checks.too_deep_folder(tmp_path, 10) is None
    found = data_checks.too_deep_folder(tmp_path, 3)
    assert found is not None and found[1] == 4
    assert data_checks.deep_folder_error(tmp_path / "missing") is None


# ============================================================================ cache links
def test_a_link_in_the_cache_folder_is_refused_not_followed(tmp_path):
    """Before, a link planted in the decode cache folder was read through."""
    d = fx.write_tb(tmp_path)
    (tmp_path / "cache").mkdir()
    elsewhere = tmp_path / "elsewhere.npy"
    np.save(elsewhere, np.zeros((14, 1, 16, 16), np.uint8))
    (tmp_path / "cache" / "tb-14-16px-1c-0123.npy").symlink_to(elsewhere)
    with pytest.raises(DataError, match=r"decode cache folder .* holds 1 symbolic link .*refused, not followed"):
        run(real_cfg("tb", d, tmp_path), tmp_path / "results")
    assert data_checks.cache_links(tmp_path / "missing") == []


def test_rsna_cache_links_are_not_followed(tmp_path):
    pytest.importorskip("pydicom")
    from test_rsna_ich import SLICES, write_rsna

    from fedpl_core.data.loaders.rsna_ich import load_rsna_ich

    root = write_rsna(tmp_path / "rsna")
    kw = {"cache_dir": tmp_path / "cache", "progress": False, "image_size": 4}
    load_rsna_ich(root, groups="patient", **kw)
    (heads,) = (tmp_path / "cache").glob("*.headers.json")
    planted = json.loads(heads.read_text())
    planted["PatientID"] = ["planted"] * len(planted["PatientID"])
    (tmp_path / "planted.json").write_text(json.dumps(planted))
    heads.unlink()
    heads.symlink_to(tmp_path / "planted.json")
    ds = load_rsna_ich(root, groups="patient", **kw)
    assert "planted" not in set(ds.groups) and list(ds.groups) == [s[1] for s in SLICES]
    assert not heads.is_symlink()  # written again as a file of its own
    (arr,) = (tmp_path / "cache").glob("*.npy")
    np.save(tmp_path / "planted.npy", np.full(np.load(arr).shape, 7, np.uint8))
    arr.unlink()
    arr.symlink_to(tmp_path / "planted.npy")
    with pytest.warns(DataWarning, match="is a symbolic link, not a regular file; decoding without the cache"):
        again = load_rsna_ich(root, groups="patient", **kw)
    assert not (again.images == 7).all()


# ============================================================================ weights files
@pytest.mark.parametrize("kind", ["device", "folder", "dangling link"])
def test_a_weights_path_that_is_no_regular_file_is_said_as_such(tmp_path, kind):
    """The model's own check says "weights file not found" for /dev/zero; this one, for the
    command line to call before the config is built, says what it is."""
    from fedpl_core.base.validation import ConfigError

    if kind == "device":
        wp = "/dev/zero"
    elif kind == "folder":
        wp = str(tmp_path)
    else:
        wp = str(tmp_path / "w.pt")
        os.symlink(tmp_path / "gone.pt", wp)
    with pytest.raises(ConfigError, match=rf"model_kwargs weights_path: {wp} is .*not a regular file"):
        data_checks.check_weights_path({"weights_path": wp})
    data_checks.check_weights_path({"weights_path": str(tmp_path / "missing.pt")})  # left to the model's check
    data_checks.check_weights_path({})
