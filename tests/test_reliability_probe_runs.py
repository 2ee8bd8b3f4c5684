"""A run's result checked before it is kept, a checkpoint of impossible values, image files
of one name, compressed tables that unpack to gigabytes, a folder at a lock's name."""

from __future__ import annotations

import gzip
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from fixtures_data import ham_rows, write_ham10000, write_jpg, write_mimic

from fedpl_core.base.locks import try_lock
from fedpl_core.data.base import DataError, DataWarning
from fedpl_core.runs import data_checks
from fedpl_core.runs import runner as runner_mod
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.results import RunResult
from fedpl_core.runs.runner import ImpossibleResultError, check_data_files, check_targets, checked_result, run


# ------------------------------------------------------------------ a checkpoint of impossible values
def _tiny() -> ExperimentConfig:
    cfg = ExperimentConfig(n_train=64, n_test=32, num_clients=2, image_size=28)
    cfg.engine.rounds = 2
    cfg.engine.checkpoint_every = 1
    cfg.engine.progress = False
    return cfg


def _tampered_checkpoint(tmp_path: Path, monkeypatch) -> tuple[ExperimentConfig, Path]:
    """A tiny run whose checkpoint is kept (its removal at the end is skipped), the result
    removed and every history record of the checkpoint given auroc_mean 7.5."""
    cfg = _tiny()
    real_unlink = Path.unlink

    def keep_ckpt(self, missing_ok=False):
        if self.suffix != ".ckpt":
            real_unlink(self, missing_ok=missing_ok)

    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.setattr(Path, "unlink", keep_ckpt)
        run(cfg, results_dir=tmp_path)
    rid = cfg.run_id()
    (tmp_path / f"{rid}.json").unlink()
    ckpt = tmp_path / f"{rid}.ckpt"
    blob = torch.load(ckpt, weights_only=True)
    for rec in blob["history"]:
        rec["auroc_mean"] = 7.5
    blob["selection"]["best"] = None
    torch.save(blob, ckpt)
    return cfg, ckpt


def test_checkpoint_of_impossible_values_is_refused_before_training(tmp_path, monkeypatch):
    cfg, ckpt = _tampered_checkpoint(tmp_path, monkeypatch)
    trained = []
    real_run = runner_mod.build_simulation

    def spy(*a, **k):
        sim = real_run(*a, **k)
        orig = sim.run
        sim.run = lambda *ra, **rk: (trained.append(1), orig(*ra, **rk))[1]
        return sim

    monkeypatch.setattr(runner_mod, "build_simulation", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ImpossibleResultError) as e:
            run(cfg, results_dir=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert cfg.run_id() in msg and str(ckpt) in msg and "auroc_mean is 7.5" in msg and "remove" in msg
    assert not trained  # refused before a round is trained
    assert ckpt.is_file()  # left for the user
    assert not (tmp_path / f"{cfg.run_id()}.json").exists()


def test_result_of_impossible_values_is_not_written(tmp_path, monkeypatch):
    """The last guard: the finished result is checked with the result schema before it is
    written, even where the checkpoint's history was not checked on resuming."""
    cfg, ckpt = _tampered_checkpoint(tmp_path, monkeypatch)
    monkeypatch.setattr(runner_mod, "check_resumed_history", lambda *a: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ImpossibleResultError) as e:
            run(cfg, results_dir=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert "not written" in msg and str(ckpt) in msg and "outside [0, 1]" in msg
    assert not (tmp_path / f"{cfg.run_id()}.json").exists()
    assert ckpt.is_file()


def test_checked_result_without_a_checkpoint_names_the_run():
    cfg = _tiny()
    rec = {"round": 1, "train_loss": 0.5, "auroc_mean": 1.5}
    res = RunResult(
        config=cfg.to_dict(),
        history=[rec, {**rec, "round": 2}],
        final={**rec, "round": 2},
        best={},
        class_names=["a"],
        timings={"total_s": 1.0},
        run_id=cfg.run_id(),
    )
    with pytest.raises(ImpossibleResultError, match=rf"run {cfg.run_id()} made a result .*auroc_mean is 1.5"):
        checked_result(res, cfg.run_id(), cfg, None)


# ------------------------------------------------------------------ image files of one name
def _ham(tmp_path: Path) -> tuple[Path, str, ExperimentConfig]:
    root = write_ham10000(tmp_path / "ham", rows=ham_rows(8))
    first = ham_rows(8)[0][1]
    cfg = ExperimentConfig(dataset="ham10000", data_root=str(root), dataset_kwargs={"use_cache": False})
    return root, first, cfg


def test_two_different_images_of_one_name_are_refused(tmp_path):
    root, first, cfg = _ham(tmp_path)
    write_jpg(root / "A_old" / f"{first}.jpg", (40, 40), (1, 2, 3))
    with pytest.raises(DataError) as e:
        check_data_files(cfg)
    msg = str(e.value)
    assert "\n" not in msg and first in msg and "A_old" in msg and "HAM10000_images_part_1" in msg


def test_same_stem_other_suffix_is_refused(tmp_path):
    root, first, cfg = _ham(tmp_path)
    write_jpg(root / "HAM10000_images_part_1" / f"{first}.jpeg", (40, 40), (1, 2, 3))
    with pytest.raises(DataError, match=f"{first}.jpeg"):
        check_data_files(cfg)


def test_copies_of_one_image_are_named_in_a_warning(tmp_path):
    root, first, cfg = _ham(tmp_path)
    shutil.copy(root / "HAM10000_images_part_1" / f"{first}.jpg", root / "HAM10000_images_part_2" / f"{first}.jpg")
    with pytest.warns(DataWarning, match=f"same bytes.*{first}"):
        check_data_files(cfg)


def test_distinct_names_pass_quietly(tmp_path):
    _, _, cfg = _ham(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_data_files(cfg)


# ------------------------------------------------------------------ compressed tables
def _bomb(path: Path, nbytes: int) -> None:
    """A valid-looking gzip table whose text is ``nbytes`` long (mostly one repeated row)."""
    head = path.read_bytes()
    text = gzip.decompress(head)
    row = text.splitlines()[1] + b"\n"
    with gzip.open(path, "wb") as f:
        f.write(text)
        written = len(text)
        block = row * ((1 << 16) // len(row) + 1)
        while written < nbytes:
            f.write(block)
            written += len(block)


def test_compressed_table_that_unpacks_too_far_is_refused(tmp_path, monkeypatch):
    rel = write_mimic(tmp_path / "m")
    meta = rel / "mimic-cxr-2.0.0-metadata.csv.gz"
    _bomb(meta, 3 << 20)
    cfg = ExperimentConfig(dataset="mimic", data_root=str(tmp_path / "m"), dataset_kwargs={"use_cache": False})
    monkeypatch.setattr(data_checks, "table_bound", lambda: 1 << 20)
    with pytest.raises(DataError) as e:
        check_data_files(cfg)
    msg = str(e.value)
    assert "\n" not in msg and str(meta) in msg and "unpacks to more than" in msg


def test_published_compressed_tables_pass(tmp_path, monkeypatch):
    write_mimic(tmp_path / "m")
    cfg = ExperimentConfig(dataset="mimic", data_root=str(tmp_path / "m"), dataset_kwargs={"use_cache": False})
    monkeypatch.setattr(data_checks, "table_bound", lambda: 1 << 20)
    check_data_files(cfg)


@pytest.mark.parametrize("suffix", [".bz2", ".xz", ".zip"])
def test_other_compressions_are_counted(tmp_path, suffix):
    import bz2
    import lzma
    import zipfile

    text = b"a,b\n" + b"1,2\n" * 300_000  # 1.2 MB
    p = tmp_path / f"t.csv{suffix}"
    if suffix == ".bz2":
        p.write_bytes(bz2.compress(text))
    elif suffix == ".xz":
        p.write_bytes(lzma.compress(text))
    else:
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("t.csv", text)
    assert data_checks.unpacked_size(p, 10 << 20) == len(text)
    assert data_checks.unpacked_size(p, 1 << 20) > 1 << 20
    with pytest.raises(DataError, match="t.csv"):
        data_checks.check_compressed_tables(tmp_path, bound=1 << 20)


# ------------------------------------------------------------------ a folder at a lock's name
def test_folder_at_a_lock_name_is_one_line(tmp_path):
    (tmp_path / "x.lock").mkdir()
    with pytest.raises(IsADirectoryError, match="x.lock is a folder.*move it away"):
        check_targets(tmp_path, "x")
    with pytest.raises(IsADirectoryError, match="x.lock is a folder.*move it away"):
        try_lock(tmp_path / "x.lock")
    assert (tmp_path / "x.lock").is_dir()  # not removed: it may hold someone's files
