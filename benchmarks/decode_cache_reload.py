"""Reload of a HAM10000-sized data set from the decode cache, cold, with and without mmap.

Builds a fixture in the HAM10000 layout (``HAM10000_metadata.csv`` with 10,015 rows,
``HAM10000_images_part_{1,2}/ISIC_*.jpg``; every JPEG is a copy of one tiny file) and
writes the decode-cache entry that ``load_ham10000`` would write for it: a synthesised
uint8 array ``[10015, 3, 224, 224]`` (1.5 GB), not 10k decoded JPEGs.  Then, for each
case, evicts the cache file from the page cache (``posix_fadvise(DONTNEED)``, which an
unprivileged user may do; ``mincore`` checks how much of it is still resident) and
times:

* ``load_ham10000(..., mmap=False)``: the array is read into memory;
* ``load_ham10000(..., mmap=True)``: the array is mapped; pages are read on touch;
* ``mmap=True`` + a pass over every image (what a first training epoch costs);
* ``registry.load_split("ham10000", ...)`` with and without mmap: the 7:1:2 lesion
  split, whose ``ImageDataset.subset`` (fancy indexing) copies the parts into memory,
  so mmap does not help there.

Run: ``python benchmarks/decode_cache_reload.py [--n 10015] [--size 224] [--repeat 3]
[--dir DIR]`` (DIR on the disk to measure, not tmpfs; default a temporary folder,
removed afterwards unless ``--keep``).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import io
import mmap
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from fedpl_core.data import cache
from fedpl_core.data import catalog as registry
from fedpl_core.data.loaders.ham10000 import load_ham10000

DX = ["akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"]


def write_fixture(root: Path, n: int, seed: int = 0) -> list[str]:
    """HAM10000 metadata + ``n`` JPEG copies; lesions of 1 to 3 images (about 1.35 each)."""
    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 120, 90)).save(buf, "JPEG")
    jpg = buf.getvalue()
    rng = np.random.default_rng(seed)
    lines, ids, lesion = ["lesion_id,image_id,dx,dx_type,age,sex,localization"], [], 0
    while len(ids) < n:
        for _ in range(min(int(rng.choice([1, 1, 1, 2, 3])), n - len(ids))):
            i = f"ISIC_{len(ids):07d}"
            lines.append(f"HAM_{lesion:07d},{i},{DX[lesion % 7]},histo,50.0,male,back")
            ids.append(i)
        lesion += 1
    (root / "HAM10000_metadata.csv").write_text("\n".join(lines) + "\n")
    for k, i in enumerate(ids):
        d = root / ("HAM10000_images_part_1" if k < 5000 else "HAM10000_images_part_2")
        d.mkdir(exist_ok=True)
        (d / f"{i}.jpg").write_bytes(jpg)
    return [
        str(root / ("HAM10000_images_part_1" if k < 5000 else "HAM10000_images_part_2") / f"{i}.jpg")
        for k, i in enumerate(ids)
    ]


def write_cache_entry(paths: list[str], root: Path, cache_dir: Path, size: int) -> Path:
    """The ``.npy`` ``load_ham10000`` reads for these files, filled with a synthetic pattern."""
    target = cache.cache_path_for(paths, size, 3, cache_dir, root=root, name="ham10000")
    target.parent.mkdir(parents=True, exist_ok=True)
    out = np.lib.format.open_memmap(target, mode="w+", dtype=np.uint8, shape=(len(paths), 3, size, size))
    ramp = (np.arange(3 * size * size, dtype=np.uint32) % 251).astype(np.uint8).reshape(3, size, size)
    for i in range(0, len(paths), 256):
        j = min(i + 256, len(paths))
        out[i:j] = ramp[None] + (np.arange(i, j) % 256).astype(np.uint8)[:, None, None, None]
    out.flush()
    del out
    with open(target, "rb+") as f:
        os.fsync(f.fileno())  # dirty pages cannot be evicted
    return target


def evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident_fraction(path: Path) -> float:
    """Share of the file's pages in the page cache (``mincore``); NaN where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return float("nan")
    size = os.path.getsize(path)
    page = os.sysconf("SC_PAGE_SIZE")
    vec = np.zeros((size + page - 1) // page, np.uint8)
    with open(path, "rb") as f:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, f.fileno(), 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return float("nan")
        try:
            if libc.mincore(addr, size, vec.ctypes.data) != 0:
                return float("nan")
        finally:
            libc.munmap(addr, size)
    return float((vec & 1).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10015)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="fedpl-cache-bench-", dir=a.dir))
    root, cache_dir = base / "HAM10000", base / "cache"
    root.mkdir()
    try:
        t = time.perf_counter()
        paths = write_fixture(root, a.n)
        target = write_cache_entry(paths, root, cache_dir, a.size)
        print(
            f"fixture: {a.n} images, cache file {target.stat().st_size / 1e9:.2f} GB "
            f"({time.perf_counter() - t:.1f} s to build) in {base}"
        )
        mtime = target.stat().st_mtime_ns
        opts = dict(image_size=a.size, cache_dir=cache_dir, progress=False)

        def plain():
            return load_ham10000(root, mmap=False, **opts).images

        def mapped():
            return load_ham10000(root, mmap=True, **opts).images

        def mapped_touch():
            x = load_ham10000(root, mmap=True, **opts).images
            for i in range(0, len(x), 512):
                x[i : i + 512].max()  # reads every page
            return x

        def split(mmap: bool):
            return lambda: registry.load_split("ham10000", str(root), mmap=mmap, **opts).train.images

        def raw_np_load():
            return np.load(target)

        cases = [
            ("np.load of the .npy alone (no mmap)", raw_np_load),
            ("load_ham10000 mmap=False", plain),
            ("load_ham10000 mmap=True", mapped),
            ("load_ham10000 mmap=True + touch every image", mapped_touch),
            ("registry.load_split('ham10000') mmap=False", split(False)),
            ("registry.load_split('ham10000') mmap=True", split(True)),
        ]
        print(f"{'case':48s} {'resident before':>15s} {'median s':>9s} {'min s':>7s}  array type")
        for label, fn in cases:
            times, res, kind = [], [], ""
            for _ in range(a.repeat):
                evict(target)
                res.append(resident_fraction(target))
                t = time.perf_counter()
                x = fn()
                times.append(time.perf_counter() - t)
                kind = type(x).__name__
                del x
            print(f"{label:48s} {max(res):15.1%} {statistics.median(times):9.3f} {min(times):7.3f}  {kind}")
        assert target.stat().st_mtime_ns == mtime and len(list(cache_dir.glob("*.npy"))) == 1, (
            "the loader did not hit the fixture's cache entry"
        )
    finally:
        if a.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
