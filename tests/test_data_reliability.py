"""Real data that cannot hang, crash or mislead: the decode cache on a full disk, files
that are not regular files, NaN images, repeated label rows, linked image folders, one
image in two splits, too few test positives, MedMNIST files of unpublished sizes."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
import fixtures_data as fx  # noqa: E402

from fedpl_core.base.fileio import host_tag  # noqa: E402
from fedpl_core.data import catalog as registry
from fedpl_core.data.base import DataError, DataWarning  # noqa: E402
from fedpl_core.data.cache import CacheSpaceError, decode_image, write_cache_array  # noqa: E402
from fedpl_core.data.dataset_splits import warn_few_positives  # noqa: E402
from fedpl_core.data.loaders.csv_loader import load_chexpert, load_csv  # noqa: E402
from fedpl_core.data.loaders.ham10000 import load_ham10000  # noqa: E402
from fedpl_core.data.loaders.medmnist import load_medmnist  # noqa: E402
from fedpl_core.data.loaders.nih import load_nih  # noqa: E402
from fedpl_core.data.loaders.tb_covid import load_tb  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "default_cache"))


@pytest.fixture
def kw(tmp_path):
    return {"cache_dir": tmp_path / "cache", "image_size": 16, "progress": False}


def messages(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DataWarning)]


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ============================================================================ full disk
def test_cache_without_room_is_one_clear_error_and_leaves_nothing(tmp_path, kw, monkeypatch):
    """posix_fallocate's ENOSPC (a full disk) becomes one CacheSpaceError naming the
    folder before anything is written through the memory map (which would be SIGBUS);
    no temporary stays, and the same folder serves the next load once there is room."""
    d = fx.write_tb(tmp_path)

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(CacheSpaceError, match=f"^no space left in {kw['cache_dir']} for the decode cache") as e:
        load_tb(d, **kw)
    assert e.value.errno == errno.ENOSPC and "\n" not in str(e.value) and "Errno" not in str(e.value)
    assert os.listdir(kw["cache_dir"]) == []
    monkeypatch.undo()
    ds = load_tb(d, **kw)
    assert len(ds) == 14 and [p.suffix for p in Path(kw["cache_dir"]).iterdir()] == [".npy"]


def test_no_fallocate_compares_the_free_space(tmp_path, monkeypatch):
    """Where posix_fallocate is not supported the free space is compared with the size."""

    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    class Tiny:
        f_bavail, f_frsize = 1, 4096

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    monkeypatch.setattr(os, "statvfs", lambda p: Tiny())
    with pytest.raises(CacheSpaceError, match="no space left in .*4.1 KB free"):
        write_cache_array(tmp_path / "a.npy", (10, 1, 32, 32), lambda out: None)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    assert write_cache_array(tmp_path / "a.npy", (2, 1, 4, 4), lambda out: out.fill(3) or "ok") == "ok"
    a = np.load(tmp_path / "a.npy")
    assert a.shape == (2, 1, 4, 4) and (a == 3).all()


def test_the_cli_says_no_space_in_one_line(tmp_path, monkeypatch, capsys):
    from fedpl_core.apps.cli import main

    d = fx.write_tb(tmp_path)
    monkeypatch.setenv("FEDPL_CACHE", str(tmp_path / "full"))
    monkeypatch.setenv("FEDPL_RESULTS", str(tmp_path / "results"))
    monkeypatch.setattr(os, "posix_fallocate", lambda *a: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    rc = main(
        [
            "run",
            "--dataset",
            "tb",
            "--data-root",
            str(d),
            "--image-size",
            "16",
            "--rounds",
            "1",
            "--num-clients",
            "2",
            "--partition",
            "iid",
            "--progress",
            "false",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith(f"fedpl: error: no space left in {tmp_path / 'full'}")


def test_a_dead_process_temporary_is_removed_by_the_next_load(tmp_path, kw):
    d = fx.write_tb(tmp_path)
    folder = Path(kw["cache_dir"])
    folder.mkdir()
    left = folder / f".tb-14-16px-1c-0123.npy.{dead_pid()}@{host_tag()}.x1y2z3.tmp"
    left.write_bytes(b"\0" * 100)
    mine = folder / f".tb-14-16px-1c-0123.npy.{os.getpid()}@{host_tag()}.a1b2c3.tmp"  # a live writer's
    mine.write_bytes(b"\0")
    load_tb(d, **kw)
    assert not left.exists() and mine.exists()


def test_a_real_full_tmpfs_is_no_bus_error(tmp_path):
    """The probe's case: the cache on a tiny tmpfs (root only; skipped elsewhere). Before,
    the process died of SIGBUS (exit -7 here) and left its temporary behind."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        fx.write_tb(tmp_path / "tb", n_normal=40, n_tb=20)
        (mnt / "fill").write_bytes(b"\0" * (256 * 1024 - 8192))
        code = (
            "import sys; from fedpl_core.data.loaders.tb_covid import load_tb\n"
            "try:\n    load_tb(sys.argv[1], image_size=64, progress=False)\n"
            "except OSError as e:\n    print(e); sys.exit(2)\n"
        )
        env = {**os.environ, "FEDPL_CACHE": str(mnt / "cache"), "PYTHONPATH": str(ROOT)}
        r = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "tb")], env=env, capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2, (r.returncode, r.stderr[-500:])
        assert r.stdout.startswith(f"no space left in {mnt / 'cache'}")
        assert os.listdir(mnt / "cache") == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ============================================================================ not regular files
def make_odd(path: Path, kind: str) -> None:
    """A FIFO, socket, folder or link to nothing at ``path`` (replacing a file there)."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling link":
        path.symlink_to(path.parent / "no-such-file.png")
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(path.parent)  # a relative name: AF_UNIX paths are limited to 108 bytes
        try:
            s.bind(path.name)
        finally:
            os.chdir(cwd)
        s.close()
    elif kind == "device":
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    else:
        raise ValueError(kind)


class FifoWriter:
    """Opens the FIFO's write end in a daemon thread: code that (wrongly) opens the FIFO
    for reading then meets end-of-file and fails instead of hanging the test suite; code
    that never opens it leaves the writer waiting until :meth:`close` releases it."""

    def __init__(self, path: Path):
        self.path = path
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def _write(self) -> None:
        os.close(os.open(self.path, os.O_WRONLY))

    def close(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)  # a reader: the writer's open returns
        self.thread.join(5)
        os.close(fd)


KINDS = ["fifo", "folder", "dangling link", "socket"] + (["device"] if os.geteuid() == 0 else [])
KIND_WORDS = {
    "fifo": "FIFO",
    "folder": "a folder",
    "dangling link": "link to a missing file",
    "socket": "a socket",
    "device": "character device",
}


@pytest.mark.parametrize("kind", KINDS)
def test_tb_skips_and_names_an_entry_that_is_not_a_regular_file(tmp_path, kw, kind):
    d = fx.write_tb(tmp_path)
    odd = d / "Normal" / "Normal-999.png"
    make_odd(odd, kind)
    writer = FifoWriter(odd) if kind == "fifo" else None
    try:
        with pytest.warns(DataWarning) as record:
            ds = load_tb(d, **kw)
    finally:
        if writer:
            writer.close()
    assert len(ds) == 14 and str(odd) not in ds.extra["paths"]
    msg = [m for m in messages(record) if "Normal-999.png" in m]
    assert len(msg) == 1 and KIND_WORDS[kind] in msg[0] and "skipped 1 entry" in msg[0]


def test_nih_skips_a_fifo_named_like_a_listed_image(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    fifo = root / "images_002" / "images" / "00000006_000.png"
    make_odd(fifo, "fifo")
    writer = FifoWriter(fifo)
    try:
        with pytest.warns(DataWarning, match="00000006_000.png .a FIFO"):
            with pytest.raises(DataError, match="'00000006_000.png'.*not found"):
                load_nih(root, **kw)
        with pytest.warns(DataWarning, match="FIFO"):
            ds = load_nih(root, skip_missing=True, **kw)
    finally:
        writer.close()
    assert len(ds) == 7 and ds.extra["skipped_missing"] == 1


def test_tables_and_arrays_that_are_fifos_are_refused_not_read(tmp_path, kw):
    fifo = tmp_path / "labels.csv"
    make_odd(fifo, "fifo")
    writer = FifoWriter(fifo)
    try:
        with pytest.raises(DataError, match="labels.csv is a FIFO"):
            load_csv(fifo, tmp_path, "file", ["a"], **kw)
    finally:
        writer.close()
    root = fx.write_nih(tmp_path / "nih")
    make_odd(root / "Data_Entry_2017.csv", "fifo")
    with pytest.raises(DataError, match="Data_Entry_2017.csv is a FIFO .named pipe., not a regular file"):
        load_nih(root, **kw)
    mm = tmp_path / "mm"
    mm.mkdir()
    make_odd(mm / "pneumoniamnist.npz", "fifo")
    with pytest.raises(DataError, match="pneumoniamnist.npz is a FIFO"):
        load_medmnist(mm, "pneumoniamnist")


def test_a_table_listing_a_fifo_names_it(tmp_path, kw):
    ds_dir = fx.write_chexpert(tmp_path)
    fifo = tmp_path / fx.CHEXPERT_TRAIN_ROWS[0].split(",")[0]
    make_odd(fifo, "fifo")
    writer = FifoWriter(fifo)
    try:
        with pytest.raises(DataError, match="view1_frontal.jpg is a FIFO .named pipe., not a regular file"):
            load_chexpert(ds_dir, **kw)
        with pytest.warns(DataWarning, match="skipped 1 listed image file"):
            ds = load_chexpert(ds_dir, skip_missing=True, **kw)
    finally:
        writer.close()
    assert str(fifo) not in ds.extra["paths"]


def test_decode_image_opens_only_regular_files(tmp_path):
    fifo = tmp_path / "x.png"
    make_odd(fifo, "fifo")
    writer = FifoWriter(fifo)
    try:
        with pytest.raises(DataError, match="is a FIFO"):
            decode_image(fifo, 16, 1)
    finally:
        writer.close()


# ============================================================================ NaN images
def write_float_tiff(path: Path, values: np.ndarray) -> None:
    """A float32 TIFF under an image name: PIL reads it by its content (mode F)."""
    Image.fromarray(values.astype(np.float32), "F").save(path, format="TIFF")


@pytest.mark.parametrize("use_cache", [True, False])
def test_images_with_nan_pixels_are_refused_naming_each(tmp_path, kw, use_cache):
    d = fx.write_tb(tmp_path)
    all_nan = np.full((30, 30), np.nan)
    part = np.arange(900.0).reshape(30, 30)
    part[3, 4] = np.nan
    write_float_tiff(d / "Normal" / "Normal-4.png", all_nan)
    write_float_tiff(d / "Tuberculosis" / "Tuberculosis-2.png", part)
    with pytest.raises(DataError, match=r"^2 of 14 image files hold NaN or infinite pixel values") as e:
        load_tb(d, use_cache=use_cache, **kw)
    assert "Normal-4.png" in str(e.value) and "Tuberculosis-2.png" in str(e.value) and "\n" not in str(e.value)
    if use_cache:
        assert os.listdir(kw["cache_dir"]) == []  # neither the array nor its temporary


def test_a_finite_float_image_still_loads(tmp_path, kw):
    d = fx.write_tb(tmp_path)
    write_float_tiff(d / "Normal" / "Normal-4.png", np.linspace(-1, 1, 900).reshape(30, 30))
    write_float_tiff(d / "Normal" / "Normal-5.png", np.full((30, 30), np.inf))
    with pytest.raises(DataError, match="Normal-5.png"):
        load_tb(d, **kw)
    write_float_tiff(d / "Normal" / "Normal-5.png", np.zeros((30, 30)))
    ds = load_tb(d, **kw)
    i = list(ds.extra["paths"]).index(str(d / "Normal" / "Normal-4.png"))
    assert ds.images[i].min() < 10 and ds.images[i].max() > 245  # min-max scaled (then resized)


# ============================================================================ repeated rows
def test_nih_repeated_image_index_is_kept_once(tmp_path, kw):
    rows = fx.NIH_ROWS + [fx.NIH_ROWS[1]]
    root = fx.write_nih(tmp_path / "nih", rows=rows)
    with pytest.warns(
        DataWarning,
        match=r"lists 1 image more than once .1 repeated row, e.g. '00000001_001.png' "
        r"2 times.",
    ):
        ds = load_nih(root, **kw)
    assert len(ds) == 8 and len(set(ds.extra["image_index"])) == 8
    conflicting = fx.NIH_ROWS + [("00000001_001.png", "Hernia", 1, 1, 58, "M", "PA", (36, 30))]
    root2 = fx.write_nih(tmp_path / "nih2", rows=conflicting)
    with pytest.raises(
        DataError,
        match="'00000001_001.png' more than once with different labels "
        r"\(Cardiomegaly\|Emphysema and Hernia\)",
    ):
        load_nih(root2, **kw)


def test_ham10000_repeated_image_id_never_lands_in_two_splits(tmp_path, kw):
    rows = fx.ham_rows(60, seed=3)
    dup = ("HAM_9999999",) + rows[5][1:]  # the same image under another lesion id
    root = fx.write_ham10000(tmp_path / "ham", rows=rows + [dup])
    with pytest.warns(DataWarning, match=f"lists 1 image more than once .*'{rows[5][1]}'"):
        ds = load_ham10000(root, **kw)
    assert len(ds) == len(rows) and len(set(ds.extra["image_id"])) == len(rows)
    for seed in range(5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            parts = registry.load_split("ham10000", str(root), seed=seed, **kw)
        ids = [set(p.extra["image_id"]) for p in parts]
        assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
        assert sum(len(i) for i in ids) == len(rows)


def test_isic_ground_truth_repeated_image_is_kept_once(tmp_path, kw):
    rows = fx.HAM_ROWS + [fx.HAM_ROWS[2]]
    root = fx.write_ham10000(tmp_path / "isic", metadata=False, isic=True, rows=rows)
    with pytest.warns(DataWarning, match="ISIC2018_Task3_Training_GroundTruth.csv lists 1 image more than once"):
        ds = load_ham10000(root, source="isic", **kw)
    assert len(ds) == len(fx.HAM_ROWS)


def test_chexpert_repeated_path_is_kept_once(tmp_path, kw):
    ds_dir = fx.write_chexpert(tmp_path, train_rows=fx.CHEXPERT_TRAIN_ROWS + [fx.CHEXPERT_TRAIN_ROWS[4]])
    with pytest.warns(DataWarning, match="train.csv lists 1 image more than once"):
        ds = load_chexpert(ds_dir, frontal_only=False, **kw)
    assert len(ds) == len(fx.CHEXPERT_TRAIN_ROWS) == len(set(ds.extra["paths"]))


def test_official_lists_naming_an_image_twice_keep_it_out_of_training(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    listed = [r[0] for r in fx.NIH_ROWS if r[0] not in fx.NIH_TEST_LIST] + [fx.NIH_TEST_LIST[0]]
    fx.write_text(root / "train_val_list.txt", "\n".join(listed) + "\n")
    with pytest.warns(DataWarning, match=f"1 image of the training split is also in the test .*{fx.NIH_TEST_LIST[0]}"):
        train, _, test = registry.load_split("nih-official", str(root), **kw)
    assert fx.NIH_TEST_LIST[0] not in set(train.extra["image_index"])
    assert fx.NIH_TEST_LIST[0] in set(test.extra["image_index"]) and len(train) == 5


# ============================================================================ linked folders
def test_a_linked_image_folder_is_followed_once(tmp_path, kw):
    root = fx.write_nih(tmp_path / "nih")
    other_disk = tmp_path / "elsewhere"
    shutil.move(root / "images_002", other_disk)
    (root / "images_002").symlink_to(other_disk, target_is_directory=True)
    (root / "images_001" / "loop").symlink_to(root, target_is_directory=True)  # a link back up
    ds = load_nih(root, **kw)
    assert len(ds) == 8
    assert str(root / "images_002" / "images" / "00000006_000.png") in ds.extra["paths"]


def test_a_linked_ham_image_folder_is_followed(tmp_path, kw):
    root = fx.write_ham10000(tmp_path / "ham")
    shutil.move(root / "HAM10000_images_part_2", tmp_path / "disk2")
    (root / "HAM10000_images_part_2").symlink_to(tmp_path / "disk2", target_is_directory=True)
    assert len(load_ham10000(root, **kw)) == len(fx.HAM_ROWS)


# ============================================================================ test positives
def test_a_real_test_split_with_few_positives_is_named_once(tmp_path):
    from fedpl_core.data.sources import load_bundle

    d = fx.write_tb(tmp_path)
    with pytest.warns(DataWarning) as record:
        b = load_bundle("tb", str(d), image_size=16, dataset_kwargs={"cache_dir": str(tmp_path / "c")}, progress=False)
    few = [m for m in messages(record) if "AUROC means little" in m]
    n = int(b.test.labels.sum())
    assert few == [
        f"tb-test: the test split ({len(b.test)} images) has fewer than 10 positives of 1 class "
        f"(Tuberculosis {n}); its AUROC means little"
    ]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        load_bundle("tb", str(d), image_size=16, dataset_kwargs={"cache_dir": str(tmp_path / "c")}, progress=False)
    assert not [w for w in again if "AUROC" in str(w.message)]  # once per bundle


def test_few_positives_counts_known_labels_only(tmp_path):
    from fedpl_core.data.base import ImageDataset

    labels = np.zeros((40, 3), np.float32)
    labels[:12, 0] = 1
    labels[:9, 1] = 1
    labels[:30, 2] = 1
    mask = np.ones_like(labels, bool)
    mask[:25, 2] = False  # 5 known positives
    ds = ImageDataset(np.zeros((40, 1, 4, 4), np.uint8), labels, ["a", "b", "c"], label_mask=mask, name="t")
    with pytest.warns(DataWarning, match=r"2 classes \(b 9, c 5\); their AUROC means little"):
        assert warn_few_positives(ds) == {"b": 9, "c": 5}


def test_generated_data_gets_no_few_positives_warning():
    from fedpl_core.data.sources import load_bundle

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        load_bundle("synthetic-cxr", None, ["Hernia"], 28, n_train=30, n_test=20, data_seed=123)
    assert not [w for w in record if "AUROC" in str(w.message)]


# ============================================================================ MedMNIST sizes
def test_medmnist_split_sizes_other_than_published_are_named(tmp_path):
    arrays = fx.write_medmnist(tmp_path, "pneumoniamnist", n=(6, 2, 3))
    arrays["train_images"][4] = arrays["train_images"][1]  # a repeat
    np.savez(tmp_path / "pneumoniamnist.npz", **arrays)
    with pytest.warns(
        DataWarning,
        match=r"split sizes differ from the published pneumoniamnist \(train 4,708, "
        r"val 524, test 624\): train 6 images, published 4,708 \(1 of them repeat",
    ):
        load_medmnist(tmp_path, "pneumoniamnist")


def test_medmnist_published_sizes_load_without_a_word(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in zip(("train", "val", "test"), (4708, 524, 624)):
        arrays[f"{split}_images"] = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        arrays[f"{split}_labels"] = rng.integers(0, 2, (n, 1)).astype(np.uint8)
    np.savez(tmp_path / "pneumoniamnist.npz", **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        assert len(load_medmnist(tmp_path, "pneumoniamnist", split=None)) == 5856
