"""Declarative registry of the real data sets: name -> how to load its train and test splits.

``load_split(name, root, ...)`` returns ``(train, test)`` ImageDatasets.  Each entry
says which loader reads the files as the publisher ships them and where the test split
comes from (an official split, or a seeded patient / lesion-wise split).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .base import DataError, ImageDataset
from .splits import group_split


@dataclass(frozen=True)
class DataSetInfo:
    name: str
    description: str
    loader: str  # "module:function"
    split: str  # "official" (loader split= arguments) or "group" (seeded group-wise split)
    train_split: str | None = None
    test_split: str | None = None
    test_fraction: float = 0.2

    def load_fn(self) -> Callable[..., ImageDataset]:
        import importlib

        mod, fn = self.loader.split(":")
        return getattr(importlib.import_module(f"fedpl_core.data.{mod}"), fn)


DATASETS: dict[str, DataSetInfo] = {d.name: d for d in [
    DataSetInfo("nih", "NIH ChestX-ray14 (Data_Entry_2017*.csv, images_*/images/)", "nih:load_nih", "group"),
    DataSetInfo("nih-official", "NIH ChestX-ray14 with train_val_list.txt / test_list.txt", "nih:load_nih",
                "official", "train_val", "test"),
    DataSetInfo("chexpert", "CheXpert (train.csv / valid.csv)", "csv_loader:load_chexpert", "official",
                "train", "valid"),
    DataSetInfo("mimic", "MIMIC-CXR-JPG (chexpert + metadata + split CSVs)", "csv_loader:load_mimic_cxr",
                "official", "train", "test"),
    DataSetInfo("ham10000", "HAM10000 / ISIC 2018 Task 3, split by lesion_id 7:1:2 as FedLSM",
                "ham10000:load_ham10000", "group", test_fraction=0.2),
    DataSetInfo("tb", "Tuberculosis Chest X-ray Database (Normal/, Tuberculosis/)", "tb_covid:load_tb", "group"),
    DataSetInfo("covid", "COVID-19 Radiography Database (COVID/images, Normal/images)", "tb_covid:load_covid",
                "group"),
]}


def load_split(name: str, root: str | None, classes=None, image_size: int = 224, seed: int = 0,
               **kwargs: Any) -> tuple[ImageDataset, ImageDataset]:
    """Train and test splits of a registered data set (``medmnist:<flag>`` for MedMNIST)."""
    if root is None:
        raise DataError(f"data set {name!r} needs --data-root (the folder as its publisher ships it)")
    if not Path(root).exists():
        raise FileNotFoundError(f"data root does not exist: {root}")
    if name.startswith("medmnist:"):
        from .medmnist import load_medmnist

        flag = name.split(":", 1)[1]
        common = dict(classes=classes, image_size=image_size, seed=seed, **kwargs)
        return load_medmnist(root, flag, "train", **common), load_medmnist(root, flag, "test", **common)
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; available: synthetic-cxr, synthetic-skin, "
                         f"{', '.join(DATASETS)}, medmnist:<flag>")
    info = DATASETS[name]
    fn = info.load_fn()
    common = dict(classes=classes, image_size=image_size, seed=seed, **kwargs) if "tb" not in name and "covid" not in name \
        else dict(image_size=image_size, seed=seed, **kwargs)
    if info.split == "official":
        return fn(root, split=info.train_split, **common), fn(root, split=info.test_split, **common)
    ds = fn(root, **common)  # HAM10000: the training release (10,015 images), split by lesion
    tr, te = group_split(ds.groups, (1 - info.test_fraction, info.test_fraction), seed, n=len(ds))
    return ds.subset(tr), ds.subset(te)
