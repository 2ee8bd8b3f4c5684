"""Declarative registry of the real data sets: name -> how to load its splits.

``load_split(name, root, ...)`` returns :class:`DataSplits` ``(train, val, test)``.
Each entry says which loader reads the files as the publisher ships them and where
the splits come from: the publisher's official train / test lists (``val`` is None),
or a seeded patient- / lesion-wise split of one release by ``fractions`` (``val`` is
None for two fractions).  No image is in two parts: one that official lists name in
both the training and the test part is dropped from the training part, with a warning
(:func:`~fedpl_core.data.dataset_splits.drop_shared`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from .base import DataError, ImageDataset
from .cache import DECODE_FIELDS, DecodeOptions, decode_options
from .dataset_splits import drop_shared, split_dataset

log = logging.getLogger("fedpl.data")


class DataSplits(NamedTuple):
    """The parts of a registered data set; ``val`` is None where it has none."""

    train: ImageDataset
    val: ImageDataset | None
    test: ImageDataset


@dataclass(frozen=True)
class DataSetInfo:
    name: str
    description: str
    loader: str  # "module:function"
    split: str  # "official" (loader split= arguments) or "group" (seeded group-wise split)
    train_split: str | None = None
    test_split: str | None = None
    #: "group" splits: (train, test) or (train, val, test) fractions.
    fractions: tuple[float, ...] = (0.8, 0.2)
    #: fixed keyword arguments of the loader (e.g. which published form to read).
    loader_kwargs: dict = field(default_factory=dict)
    #: False for one-class loaders that take no ``classes`` argument.
    takes_classes: bool = True
    #: the class of a one-class loader (``takes_classes=False``).
    one_class: str | None = None

    def load_fn(self) -> Callable[..., ImageDataset]:
        import importlib

        mod, fn = self.loader.split(":")
        return getattr(importlib.import_module(f"fedpl_core.data.loaders.{mod}"), fn)


FEDLSM_FRACTIONS = (0.7, 0.1, 0.2)

DATASETS: dict[str, DataSetInfo] = {
    d.name: d
    for d in [
        DataSetInfo(
            "nih",
            "NIH ChestX-ray14 (Data_Entry_2017*.csv, images_*/images/), split by patient 8:2",
            "nih:load_nih",
            "group",
        ),
        DataSetInfo(
            "nih-official",
            "NIH ChestX-ray14 with train_val_list.txt / test_list.txt",
            "nih:load_nih",
            "official",
            "train_val",
            "test",
        ),
        DataSetInfo(
            "chexpert", "CheXpert (train.csv / valid.csv)", "csv_loader:load_chexpert", "official", "train", "valid"
        ),
        DataSetInfo(
            "mimic",
            "MIMIC-CXR-JPG (chexpert + metadata + split CSVs)",
            "csv_loader:load_mimic_cxr",
            "official",
            "train",
            "test",
        ),
        DataSetInfo(
            "ham10000",
            "HAM10000 (HAM10000_metadata.csv, or the ISIC 2018 Task 3 training files), "
            "split by lesion_id 7:1:2 as FedLSM",
            "ham10000:load_ham10000",
            "group",
            fractions=FEDLSM_FRACTIONS,
        ),
        DataSetInfo(
            "isic2018",
            "ISIC 2018 Task 3 training release (ISIC2018_Task3_Training_GroundTruth.csv, "
            "_Input/, lesion ids from _LesionGroupings.csv where shipped), split by lesion 7:1:2 as "
            "FedLSM",
            "ham10000:load_ham10000",
            "group",
            fractions=FEDLSM_FRACTIONS,
            loader_kwargs={"source": "isic"},
        ),
        DataSetInfo(
            "rsna_ich",
            "RSNA Intracranial Hemorrhage (stage_2_train.csv, stage_2_train/ID_*.dcm), brain window "
            "40/80 HU, the five subtypes, split by DICOM PatientID 8:2",
            "rsna_ich:load_rsna_ich",
            "group",
            loader_kwargs={"groups": "patient"},
        ),
        DataSetInfo(
            "tb",
            "Tuberculosis Chest X-ray Database (Normal/, Tuberculosis/), split by image 8:2",
            "tb_covid:load_tb",
            "group",
            takes_classes=False,
            one_class="Tuberculosis",
        ),
        DataSetInfo(
            "covid",
            "COVID-19 Radiography Database (COVID/images, Normal/images), split by image 8:2",
            "tb_covid:load_covid",
            "group",
            takes_classes=False,
            one_class="COVID-19",
        ),
    ]
}


def load_split(
    name: str, root: str | None, classes=None, seed: int = 0, *, decode: DecodeOptions | None = None, **kwargs: Any
) -> DataSplits:
    """Train, validation and test parts of a registered data set (``medmnist:<flag>``
    for MedMNIST: its official train / test arrays).

    ``kwargs`` holds loader arguments and :class:`~fedpl_core.data.cache.DecodeOptions`
    fields (``image_size=64, mmap=True``), which replace those of ``decode``.
    ``seed`` seeds both the loader's ``max_images`` subset and the group split.
    """
    if root is None:
        raise DataError(f"data set {name!r} needs --data-root (the folder as its publisher ships it)")
    if not Path(root).exists():
        raise FileNotFoundError(f"data root does not exist: {root}")
    dkw = {k: kwargs.pop(k) for k in list(kwargs) if k in DECODE_FIELDS}
    if name.startswith("medmnist:"):
        from .loaders.medmnist import load_medmnist

        flag = name.split(":", 1)[1]
        # the registry's default size is 224 px for MedMNIST too (load_medmnist alone keeps the file's)
        opts = decode_options(decode, **dkw)
        common = dict(classes=classes, seed=seed, decode=opts, **kwargs)
        return DataSplits(
            load_medmnist(root, flag, "train", **common), None, load_medmnist(root, flag, "test", **common)
        )
    if name not in DATASETS:
        raise ValueError(
            f"unknown data set {name!r}; available: synthetic-cxr, synthetic-skin, synthetic-ich, "
            f"{', '.join(DATASETS)}, medmnist:<flag>"
        )
    info = DATASETS[name]
    fn = info.load_fn()
    common = dict(info.loader_kwargs, seed=seed, decode=decode_options(decode, **dkw), **kwargs)
    if info.takes_classes:
        common["classes"] = classes
    elif classes is not None and list(classes) != [info.one_class]:
        raise DataError(
            f"{name} has the one class {info.one_class!r}; classes={list(classes)} cannot be selected "
            "(leave classes out)"
        )
    if info.split == "official":
        train, test = fn(root, split=info.train_split, **common), fn(root, split=info.test_split, **common)
        return DataSplits(drop_shared(train, [test], name), None, test)
    ds = fn(root, **common)  # HAM10000 / ISIC 2018: the training release (10,015 images)
    parts = split_dataset(ds, info.fractions, seed)
    train = drop_shared(parts[0], parts[1:], name)  # loaders keep each image once: a guard
    return DataSplits(train, parts[1], parts[2]) if len(parts) == 3 else DataSplits(train, None, parts[1])
