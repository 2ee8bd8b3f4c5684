"""MedMNIST v2/v3 2-D data sets, read from their ``.npz`` files without the package.

File names as published on Zenodo: ``{flag}.npz`` (28 px) and ``{flag}_{size}.npz``
(64, 128, 224 px, MedMNIST+), with arrays ``train_images``, ``train_labels``,
``val_images``, ``val_labels``, ``test_images``, ``test_labels``.  Images are uint8
``[N, H, W]`` (gray) or ``[N, H, W, 3]`` (RGB); labels are int ``[N, 14]`` 0/1 for
ChestMNIST (multi-label) and ``[N, 1]`` class indices for the other flags.

Class names follow ``medmnist/info.py`` (``INFO[flag]["label"]``) except two, so that
the MedMNIST versions line up with the full-size loaders: ChestMNIST uses the NIH
spellings of :data:`~fedpl_core.data.loaders.nih.NIH_CLASSES` (same order; MedMNIST writes
``pleural`` for ``Pleural_Thickening``) and DermaMNIST uses the HAM10000 / ISIC
codes (``AKIEC, BCC, BKL, DF, MEL, NV, VASC``, MedMNIST's alphabetical order; reorder
with ``classes=HAM_CLASSES``).

:data:`MEDMNIST_INFO` is a hand copy of the 2-D part of ``medmnist.INFO`` because the
``medmnist`` package is not a dependency (it is only imported for ``download=True``);
so is :data:`PUBLISHED_SIZES`, the published split sizes: a file whose splits hold
other numbers of images gets one warning naming both (:func:`check_split_sizes`).

A run reads the shapes the file's arrays declare from their ``.npy`` headers before it
loads them, and refuses a file whose arrays would not fit in the memory available (or
that declares more bytes than it stores) without decompressing it
(:func:`fedpl_core.runs.data_checks.check_npz_fits`, called by
:func:`fedpl_core.runs.runner.check_data_files`); ``max_images`` and ``classes`` select
images only after the arrays are read.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from ..base import MULTICLASS, MULTILABEL, DataError, DataWarning, ImageDataset, check_memory
from ..cache import DecodeOptions, decode_options, log_resize
from ..files import select_classes, subsample_index
from ..safeopen import not_regular, open_regular
from .nih import NIH_CLASSES

SPLITS = ("train", "val", "test")
SIZES = (28, 64, 128, 224)


@dataclass(frozen=True)
class MedMNISTInfo:
    task: str  # MedMNIST's task string
    class_names: tuple[str, ...]
    channels: int

    @property
    def fedpl_task(self) -> str:
        return MULTILABEL if self.task.startswith("multi-label") else MULTICLASS


_ORGANS = (
    "bladder",
    "femur-left",
    "femur-right",
    "heart",
    "kidney-left",
    "kidney-right",
    "liver",
    "lung-left",
    "lung-right",
    "pancreas",
    "spleen",
)

#: The 2-D flags of MedMNIST (``medmnist/info.py``, v3.0): task, class names, channels.
MEDMNIST_INFO: dict[str, MedMNISTInfo] = {
    "pathmnist": MedMNISTInfo(
        "multi-class",
        (
            "adipose",
            "background",
            "debris",
            "lymphocytes",
            "mucus",
            "smooth muscle",
            "normal colon mucosa",
            "cancer-associated stroma",
            "colorectal adenocarcinoma epithelium",
        ),
        3,
    ),
    "chestmnist": MedMNISTInfo("multi-label, binary-class", tuple(NIH_CLASSES), 1),
    "dermamnist": MedMNISTInfo("multi-class", ("AKIEC", "BCC", "BKL", "DF", "MEL", "NV", "VASC"), 3),
    "octmnist": MedMNISTInfo(
        "multi-class", ("choroidal neovascularization", "diabetic macular edema", "drusen", "normal"), 1
    ),
    "pneumoniamnist": MedMNISTInfo("binary-class", ("normal", "pneumonia"), 1),
    "retinamnist": MedMNISTInfo("ordinal-regression", ("0", "1", "2", "3", "4"), 3),
    "breastmnist": MedMNISTInfo("binary-class", ("malignant", "normal, benign"), 1),
    "bloodmnist": MedMNISTInfo(
        "multi-class",
        (
            "basophil",
            "eosinophil",
            "erythroblast",
            "immature granulocytes(myelocytes, metamyelocytes and promyelocytes)",
            "lymphocyte",
            "monocyte",
            "neutrophil",
            "platelet",
        ),
        3,
    ),
    "tissuemnist": MedMNISTInfo(
        "multi-class",
        (
            "Collecting Duct, Connecting Tubule",
            "Distal Convoluted Tubule",
            "Glomerular endothelial cells",
            "Interstitial endothelial cells",
            "Leukocytes",
            "Podocytes",
            "Proximal Tubule Segments",
            "Thick Ascending Limb",
        ),
        1,
    ),
    "organamnist": MedMNISTInfo("multi-class", _ORGANS, 1),
    "organcmnist": MedMNISTInfo("multi-class", _ORGANS, 1),
    "organsmnist": MedMNISTInfo("multi-class", _ORGANS, 1),
}


#: Published ``(train, val, test)`` sizes of each 2-D flag (``n_samples`` of
#: ``medmnist/info.py``; the same for the 28, 64, 128 and 224 px files).  The Organ{A,C,S}
#: files lost their blank images in v2.2.4, so both their older and their current sizes
#: are published ones.
PUBLISHED_SIZES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "pathmnist": ((89996, 10004, 7180),),
    "chestmnist": ((78468, 11219, 22433),),
    "dermamnist": ((7007, 1003, 2005),),
    "octmnist": ((97477, 10832, 1000),),
    "pneumoniamnist": ((4708, 524, 624),),
    "retinamnist": ((1080, 120, 400),),
    "breastmnist": ((546, 78, 156),),
    "bloodmnist": ((11959, 1712, 3421),),
    "tissuemnist": ((165466, 23640, 47280),),
    "organamnist": ((34561, 6491, 17778), (34581, 6491, 17778)),
    "organcmnist": ((12975, 2392, 8216), (13000, 2392, 8268)),
    "organsmnist": ((13932, 2452, 8827), (13940, 2452, 8829)),
}


def check_split_sizes(flag: str, path: Path, images: dict[str, np.ndarray]) -> None:
    """One :class:`DataWarning` when the splits read from ``path`` (``{split: images}``)
    hold other numbers of images than every published release of ``flag``
    (:data:`PUBLISHED_SIZES`), naming both sizes and how many images of such a split
    repeat another of it: an edited, partial or foreign file gives numbers that cannot
    be compared with published ones.  The repeats are counted only for a file that
    differs."""
    releases = PUBLISHED_SIZES.get(flag, ())
    sizes = {s: len(a) for s, a in images.items()}
    if not releases or any(all(n == r[SPLITS.index(s)] for s, n in sizes.items()) for r in releases):
        return
    ref = releases[0]
    off = [s for s, n in sizes.items() if n != ref[SPLITS.index(s)]] or list(sizes)
    parts = []
    for s in off:
        rep = _repeats(images[s])
        parts.append(
            f"{s} {sizes[s]:,} images, published {ref[SPLITS.index(s)]:,}"
            + (f" ({rep:,} of them repeat another image)" if rep else "")
        )
    warnings.warn(
        f"MedMNIST file {path}: split sizes differ from the published {flag} "
        f"(train {ref[0]:,}, val {ref[1]:,}, test {ref[2]:,}): {'; '.join(parts)}; an edited or partial "
        "copy? Its numbers cannot be compared with published ones",
        DataWarning,
        stacklevel=3,
    )


def _repeats(images: np.ndarray) -> int:
    """How many of ``images`` (``[N, ...]`` uint8) are byte-for-byte repeats of an earlier one."""
    if len(images) < 2:
        return 0
    rows = np.ascontiguousarray(images.reshape(len(images), -1))
    return len(rows) - len(np.unique(rows.view(np.dtype((np.void, rows.shape[1]))).ravel()))


def medmnist_filename(flag: str, size: int = 28) -> str:
    """``chestmnist.npz`` for 28 px, ``chestmnist_64.npz`` for 64 px, ..."""
    return f"{flag}.npz" if size == 28 else f"{flag}_{size}.npz"


def _download(flag: str, size: int, root: Path) -> None:
    try:
        import medmnist  # noqa: F401
        from medmnist.info import INFO
    except ImportError:
        raise DataError(
            f"download=True needs the 'medmnist' package, which is not installed; "
            f"install it, or download {medmnist_filename(flag, size)} from Zenodo "
            f"(https://zenodo.org/records/10519652) into {root}"
        ) from None
    cls = getattr(medmnist, INFO[flag]["python_class"])
    root.mkdir(parents=True, exist_ok=True)
    try:
        cls(split="test", download=True, root=str(root), **({} if size == 28 else {"size": size}))
    except Exception as e:  # the package raises RuntimeError when offline
        raise DataError(
            f"medmnist could not download {medmnist_filename(flag, size)} into {root} "
            f"(offline?): {str(e).strip()[:300]}"
        ) from None


def _resize(images: np.ndarray, image_size: int) -> np.ndarray:
    mode = "L" if images.shape[1] == 1 else "RGB"
    out = np.empty((len(images), images.shape[1], image_size, image_size), np.uint8)
    for i, a in enumerate(images):
        img = Image.fromarray(a[0] if mode == "L" else a.transpose(1, 2, 0), mode)
        r = np.asarray(img.resize((image_size, image_size), Image.Resampling.BILINEAR))
        out[i] = r[None] if mode == "L" else r.transpose(2, 0, 1)
    return out


def _check_npz(path: Path) -> None:
    """A clear :class:`DataError` for an ``.npz`` that cannot be one (numpy would read an
    empty file as EOF and random bytes as a pickle it refuses)."""
    try:
        with open_regular(path, "MedMNIST file") as f:
            head = f.read(4)
    except OSError as e:
        raise DataError(f"cannot read MedMNIST file {path}: {e.strerror or e}") from None
    if not head:
        raise DataError(f"MedMNIST file {path} is empty (0 bytes); download it again")
    if head != b"PK\x03\x04":
        raise DataError(
            f"MedMNIST file {path} is not an .npz archive (no zip signature at its start); download it again"
        )


def _check_label_values(y: np.ndarray, allowed, path: Path, which: list, expected: str) -> None:
    bad = ~np.isin(y, np.asarray(list(allowed)))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        v = y[i, j]
        kind = (
            "NaN" if isinstance(v, float | np.floating) and np.isnan(v) else repr(v.item() if hasattr(v, "item") else v)
        )
        n = int(bad.any(1).sum())
        raise DataError(
            f"MedMNIST file {path}: label {kind} in row {i - which.index(which[i])} of its "
            f"{which[i]}_labels (expected {expected}); {n} row(s) hold such labels"
        )


def load_medmnist(
    root: str | os.PathLike,
    flag: str,
    split: str | None = "train",
    *,
    size: int = 28,
    classes: Sequence[str] | None = None,
    one_class: bool = False,
    max_images: int | None = None,
    seed: int = 0,
    download: bool = False,
    name: str | None = None,
    decode: DecodeOptions | None = None,
    **decode_kw,
) -> ImageDataset:
    """A MedMNIST 2-D data set as an :class:`ImageDataset`.

    Args:
        root: folder holding ``{flag}.npz`` / ``{flag}_{size}.npz``.
        flag: e.g. ``"chestmnist"``, ``"dermamnist"``, ``"pneumoniamnist"`` (see
            :data:`MEDMNIST_INFO`).
        split: ``"train"``, ``"val"``, ``"test"`` or None for all three concatenated
            (``extra["split"]`` tells which).
        size: which file to read: 28 (``{flag}.npz``), 64, 128 or 224.
        classes: keep / reorder classes; for single-label flags the rows of
            unselected classes are dropped.
        one_class: for the binary flags (PneumoniaMNIST, BreastMNIST), return a
            multi-label data set with only the positive class (label 1).
        max_images: random subset of this size (``seed``).
        download: fetch the file with the ``medmnist`` package when absent.
        decode, ``**decode_kw``: :class:`~fedpl_core.data.cache.DecodeOptions` or its
            fields as keywords.  Only ``image_size`` and ``channels`` apply (the
            arrays are read from the ``.npz``, not decoded): ``image_size`` keeps
            ``size`` unless given (as a keyword or in ``decode``); ``channels``
            defaults to the flag's own (gray is repeated to RGB, RGB is converted to
            luminance).

    Multi-class labels ``[N, 1]`` become one-hot rows; ChestMNIST stays multi-hot.
    MedMNIST has no patient ids, so ``groups`` is None.
    """
    decode = decode_options(decode, **({"image_size": None, **decode_kw} if decode is None else decode_kw))
    flag = flag.lower()
    if flag not in MEDMNIST_INFO:
        raise DataError(f"unknown MedMNIST flag {flag!r}; 2-D flags: {sorted(MEDMNIST_INFO)}")
    info = MEDMNIST_INFO[flag]
    if size not in SIZES:
        raise DataError(f"MedMNIST size must be one of {SIZES}, got {size}")
    splits = SPLITS if split is None else (split,)
    if any(s not in SPLITS for s in splits):
        raise DataError(f"MedMNIST split must be one of {SPLITS} or None, got {split!r}")
    root = Path(root)
    path = root / medmnist_filename(flag, size)
    kind = not_regular(path)
    if kind not in (None, "missing"):
        raise DataError(f"MedMNIST file {path} is {kind}, not a regular file")
    if kind == "missing" and download:
        _download(flag, size, root)
    if not path.is_file():
        raise DataError(
            f"MedMNIST file {path.name} not found in {root} (expected {path}); "
            "download it from https://zenodo.org/records/10519652 or pass download=True"
        )
    images, labels, which = [], [], []
    _check_npz(path)
    try:
        with np.load(path) as z:
            for s in splits:
                for key in (f"{s}_images", f"{s}_labels"):
                    if key not in z.files:
                        raise DataError(f"{path.name}: missing array {key!r}; arrays present: {sorted(z.files)}")
                images.append(z[f"{s}_images"])
                labels.append(z[f"{s}_labels"])
                which += [s] * len(images[-1])
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise DataError(
            f"cannot read MedMNIST file {path}: {type(e).__name__}: "
            f"{(str(e).strip().splitlines() or [''])[0]}; download it again"
        ) from None

    empty = [s for s, a in zip(splits, images) if len(a) == 0]
    if empty:
        raise DataError(f"MedMNIST file {path}: split(s) {empty} hold no images")
    check_split_sizes(flag, path, dict(zip(splits, images)))
    x = np.concatenate(images)
    y = np.concatenate(labels)
    if x.ndim == 3:
        x = x[:, None]
    elif x.ndim == 4 and x.shape[-1] in (1, 3):
        x = x.transpose(0, 3, 1, 2)
    else:
        raise DataError(f"{path.name}: images have shape {x.shape}, expected [N, H, W] or [N, H, W, 3]")
    if x.dtype != np.uint8:
        raise DataError(f"{path.name}: images are {x.dtype}, expected uint8")
    if len(y) != len(x):
        raise DataError(f"{path.name}: {len(x)} images but {len(y)} labels")
    y = y.reshape(len(y), -1)
    k = len(info.class_names)
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise DataError(f"MedMNIST file {path}: labels are {y.dtype}, expected integers")
    if info.fedpl_task == MULTILABEL:
        if y.shape[1] != k:
            raise DataError(f"MedMNIST file {path}: multi-label labels must have shape [N, {k}], got {y.shape}")
        _check_label_values(y, (0, 1), path, which, "0 or 1")
        onehot = y.astype(np.float32)
    else:
        if y.shape[1] != 1:
            raise DataError(f"MedMNIST file {path}: labels must be class indices of shape [N, 1], got {y.shape}")
        _check_label_values(y, range(k), path, which, f"a class index in 0..{k - 1}")
        onehot = np.eye(k, dtype=np.float32)[y[:, 0].astype(np.int64)]

    task, names = info.fedpl_task, list(info.class_names)
    if one_class:
        if info.task != "binary-class":
            raise DataError(f"one_class=True is for binary flags, {flag} is {info.task!r}")
        onehot, names, task = onehot[:, 1:], names[1:], MULTILABEL
    onehot, _, names, rows = select_classes(onehot, None, names, classes, task, flag)
    sub = subsample_index(len(rows), max_images, seed)
    keep = rows[sub]
    x, onehot = x[keep], onehot[sub]

    want_c = decode.channels or info.channels
    if want_c == 3 and x.shape[1] == 1:
        x = np.repeat(x, 3, axis=1)
    elif want_c == 1 and x.shape[1] == 3:
        w = np.array([299, 587, 114], np.uint32)  # ITU-R 601-2 luma, as PIL's convert("L")
        x = ((x.astype(np.uint32) * w[None, :, None, None]).sum(1, keepdims=True) // 1000).astype(np.uint8)
    name = name or (flag if size == 28 else f"{flag}_{size}")
    if decode.image_size is not None and decode.image_size != x.shape[-1]:
        check_memory(
            len(x) * x.shape[1] * decode.image_size**2,
            f"{name}: {len(x)} images at {decode.image_size} px",
            "lower image_size",
        )
        log_resize(name, x.shape[-1], x.shape[-2], decode.image_size, path.name)
        x = _resize(x, decode.image_size)
    return ImageDataset(
        images=np.ascontiguousarray(x),
        labels=onehot,
        class_names=names,
        task=task,
        name=name,
        extra={"file": str(path), "split": np.asarray(which, dtype=object)[keep], "medmnist_task": info.task},
    )
