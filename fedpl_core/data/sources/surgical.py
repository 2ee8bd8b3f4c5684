"""The ``surgical-ablation`` and ``surgical-noniid`` data sources: Surgical Aggregation's
federations (Kulkarni et al., ML4H 2024), on the built-in synthetic chest X-rays or, with
``data_root``, on NIH ChestX-ray14 + CheXpert + MIMIC-CXR-JPG.

* ``surgical-ablation``: the NIH-like pool (train), its held-out test set and an external
  set of another domain, restricted to the pool's classes;
* ``surgical-noniid``: the NIH + CheXpert union (one client per source), each source's
  test set and the external set; ``heterogeneous=False`` restricts every set to the 7
  shared classes.

Synthetic images are drawn with all 20 findings of the union, each source with its own
prevalences and hospital style, and then labelled with the source's classes only
(:func:`_synthetic`), so "missing = negative" produces genuine false negatives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import synthetic as S
from ..base import ImageDataset, concat_datasets
from .base import DataBundle, register_source

#: NIH's 14 findings and CheXpert's 13 (CheXpert's column order), synthetic names.
NIH_CLASSES = list(S.NIH14)
CHEXPERT_CLASSES = list(S.CHEXPERT_PREVALENCE)
UNION_CLASSES = NIH_CLASSES + [c for c in CHEXPERT_CLASSES if c not in NIH_CLASSES]
#: Synthetic domains (hospital styles): NIH-like, CheXpert-like, external (MIMIC's role),
#: and the public images used to calibrate BatchNorm statistics (no client's domain).
DOMAINS = {"NIH": 0, "CheXpert": 2, "external": 3, "public": 7}
#: Paper names of the NIH findings spelled differently in CheXpert / MIMIC (CXR-LT).
NIH_TO_PAPER = {"Effusion": "Pleural Effusion", "Pleural_Thickening": "Pleural Thickening"}


def _prevalence(classes: Sequence[str], floor: float | None, base: dict | None = None) -> dict | None:
    base = base or {}
    if floor is None:
        return base or None
    return {c: max(base.get(c, S.FINDINGS[c].prevalence), floor) for c in classes}


def _synthetic(
    n: int,
    labelled: Sequence[str],
    seed: int,
    source: str,
    image_size: int,
    floor: float | None,
    strength: float,
    name: str,
) -> ImageDataset:
    """Synthetic stand-ins.  Every image is drawn with all 20 findings of the union (each
    source with its own prevalences and hospital style) and then labelled with its
    source's classes only, as in reality: NIH images do show support devices, NIH just
    does not annotate them.  So "missing = negative" produces genuine false negatives."""
    base = dict(S.CHEXPERT_PREVALENCE) if source == "CheXpert" else None
    ds = S.make_cxr(
        n,
        classes=UNION_CLASSES,
        image_size=image_size,
        seed=seed,
        domain=DOMAINS[source],
        prevalence=_prevalence(UNION_CLASSES, floor, base),
        strength=strength,
        name=name,
    )
    return ds.select_classes(list(labelled))


def _public(n_public: int, data_seed: int, image_size: int, floor: float | None, strength: float) -> np.ndarray | None:
    if n_public <= 0:
        return None
    return _synthetic(
        n_public, UNION_CLASSES, 100 * data_seed + 16, "public", image_size, floor, strength, "public"
    ).images


def _rename(ds: ImageDataset, mapping: dict[str, str]) -> ImageDataset:
    return dataclasses.replace(ds, class_names=[mapping.get(c, c) for c in ds.class_names])


@lru_cache(maxsize=1)
def real_data(
    data_root: str,
    image_size: int,
    seed: int,
    max_images: int | None = None,
    n_public: int = 0,
    *,
    nih: str = "nih",
    chexpert: str = "chexpert",
    mimic: str = "mimic-cxr-jpg",
    mimic_lt_csv: str | None = None,
    cache_dir: str | None = None,
) -> dict[str, Any]:
    """NIH ChestX-ray14 + CheXpert + MIMIC-CXR-JPG (cached: both data sources read it once).

    ``data_root/<nih>``, ``data_root/<chexpert>``, ``data_root/<mimic>`` (each falls back
    to ``data_root`` itself when absent).  NIH's ``Effusion`` / ``Pleural_Thickening``
    take the CheXpert / CXR-LT spellings (``Pleural Effusion`` / ``Pleural Thickening``):
    7 shared classes, 20 in the union, as the paper.  CheXpert: frontal images only,
    uncertain labels as negatives, its 13 findings ("No Finding" dropped).  NIH and
    CheXpert are split 80 / 20 by patient into training (the client; the engine holds out
    ``client_val_fraction`` = 1/8 of it for validation, 70/10/20 overall) and test.
    MIMIC-CXR-JPG (frontal, CheXpert labeler, uncertain = negative) is the external set;
    its labels cover the 13 CheXpert classes only, so the NIH-only findings are evaluated
    externally only when a CXR-LT label table is given (``mimic_lt_csv``: a CSV with a
    ``path`` column relative to the MIMIC folder, ``subject_id`` and one 0/1 column per
    class, the paper's 20 names).  ``n_public`` random MIMIC images are taken out of the
    external set to calibrate the initial BatchNorm statistics (never a client's data).
    Returns ``{"NIH": (train, test), "CheXpert": (train, test), "external": ds,
    "public": images or None}``.
    """
    from ..dataset_splits import split_dataset
    from ..loaders.csv_loader import CHEXPERT_CLASSES as CHEXPERT_COLUMNS
    from ..loaders.csv_loader import load_chexpert, load_csv, load_mimic_cxr
    from ..loaders.nih import load_nih

    root = Path(data_root)
    sub = lambda name: root / name if (root / name).exists() else root  # noqa: E731
    io = {"image_size": image_size, "channels": 1, "cache_dir": cache_dir, "seed": seed}
    chex_classes = [c for c in CHEXPERT_COLUMNS if c != "No Finding"]
    nih_ds = _rename(load_nih(sub(nih), max_images=max_images, **io), NIH_TO_PAPER)
    chx_ds = load_chexpert(
        sub(chexpert), "train", classes=chex_classes, uncertain="zeros", frontal_only=True, max_images=max_images, **io
    )
    nih_tr, nih_te = split_dataset(nih_ds, (0.8, 0.2), seed=seed)
    chx_tr, chx_te = split_dataset(chx_ds, (0.8, 0.2), seed=seed)
    nih_tr.name, nih_te.name, chx_tr.name, chx_te.name = "NIH", "NIH-test", "CheXpert", "CheXpert-test"
    if mimic_lt_csv:
        union = nih_tr.class_names + [c for c in chx_tr.class_names if c not in nih_tr.class_names]
        ext = load_csv(mimic_lt_csv, sub(mimic), "path", union, group_column="subject_id", name="external", **io)
    else:
        ext = load_mimic_cxr(
            sub(mimic), None, classes=chex_classes, uncertain="zeros", views=("PA", "AP"), name="external", **io
        )
    public = None
    if n_public > 0:
        pick = np.random.default_rng(seed).permutation(len(ext))
        public, ext = ext.images[pick[:n_public]], ext.subset(np.sort(pick[n_public:]))
    return {"NIH": (nih_tr, nih_te), "CheXpert": (chx_tr, chx_te), "external": ext, "public": public}


def _in(ds: ImageDataset, classes: Sequence[str]) -> ImageDataset:
    """``ds`` restricted to the given classes that it has (in the given order)."""
    keep = [c for c in classes if c in ds.class_names]
    return ds if keep == list(ds.class_names) else ds.select_classes(keep)


@register_source("surgical-ablation", fixed_classes=True, task="multilabel")
def ablation_source(
    name: str,
    data_root,
    classes,
    image_size,
    n_train,
    n_test,
    data_seed,
    n_external: int = 300,
    n_public: int = 0,
    prevalence_floor: float | None = 0.1,
    strength: float = 1.0,
    max_images: int | None = None,
    **real_kwargs: Any,
) -> DataBundle:
    """The ablation's data: the NIH-like pool (train), its held-out test set and an
    external set of another domain (``extra["external"]``), restricted to the pool's
    classes; synthetic (data seeds ``100 * data_seed + 1, 2, 3``, public ``+ 16``) or,
    with ``data_root``, NIH / NIH test / MIMIC (``n_*`` and ``prevalence_floor`` do not
    apply; ``classes`` never does)."""
    if data_root:
        d = real_data(data_root, image_size, data_seed, max_images, n_public, **real_kwargs)
        (train, test), ext, public = d["NIH"], d["external"], d["public"]
    else:
        s, f = data_seed, prevalence_floor
        train = _synthetic(n_train, NIH_CLASSES, 100 * s + 1, "NIH", image_size, f, strength, "NIH")
        test = _synthetic(n_test, NIH_CLASSES, 100 * s + 2, "NIH", image_size, f, strength, "NIH-test")
        ext = _synthetic(n_external, NIH_CLASSES, 100 * s + 3, "external", image_size, f, strength, "external")
        public = _public(n_public, s, image_size, f, strength)
    keep = list(train.class_names)
    return DataBundle(train, _in(test, keep), {"external": _in(ext, keep)}, public)


@register_source("surgical-noniid", fixed_classes=True, task="multilabel")
def noniid_source(
    name: str,
    data_root,
    classes,
    image_size,
    n_train,
    n_test,
    data_seed,
    heterogeneous: bool = True,
    n_nih: int = 400,
    n_chexpert: int = 600,
    n_external: int = 300,
    n_public: int = 0,
    prevalence_floor: float | None = 0.1,
    strength: float = 1.0,
    max_images: int | None = None,
    **real_kwargs: Any,
) -> DataBundle:
    """The non-IID data: train = the NIH + CheXpert union (``extra["sources"]``: one
    client per source with ``by_source``), no test set, extra = each source's test set
    (``n_test`` images, its own classes) and the external set.  ``heterogeneous=False``:
    every set restricted to the 7 shared classes.  Synthetic (data seeds ``100 *
    data_seed + 11 ... 15``, public ``+ 16``; ``n_train`` does not apply: ``n_nih`` and
    ``n_chexpert`` are the sources' sizes) or, with ``data_root``, NIH / CheXpert / MIMIC."""
    if data_root:
        d = real_data(data_root, image_size, data_seed, max_images, n_public, **real_kwargs)
        (nih_tr, nih_te), (chx_tr, chx_te), ext, public = d["NIH"], d["CheXpert"], d["external"], d["public"]
    else:
        s, f, size = data_seed, prevalence_floor, image_size
        nih_tr = _synthetic(n_nih, NIH_CLASSES, 100 * s + 11, "NIH", size, f, strength, "NIH")
        nih_te = _synthetic(n_test, NIH_CLASSES, 100 * s + 12, "NIH", size, f, strength, "NIH-test")
        chx_tr = _synthetic(n_chexpert, CHEXPERT_CLASSES, 100 * s + 13, "CheXpert", size, f, strength, "CheXpert")
        chx_te = _synthetic(n_test, CHEXPERT_CLASSES, 100 * s + 14, "CheXpert", size, f, strength, "CheXpert-test")
        ext = _synthetic(n_external, UNION_CLASSES, 100 * s + 15, "external", size, f, strength, "external")
        public = _public(n_public, s, size, f, strength)
    if not heterogeneous:
        shared = [c for c in nih_tr.class_names if c in chx_tr.class_names]
        nih_tr, nih_te, chx_tr, chx_te = (ds.select_classes(shared) for ds in (nih_tr, nih_te, chx_tr, chx_te))
    nih_tr, chx_tr = dataclasses.replace(nih_tr, name="NIH"), dataclasses.replace(chx_tr, name="CheXpert")
    union = concat_datasets([nih_tr, chx_tr], name="NIH+CheXpert")
    return DataBundle(union, None, {"NIH": nih_te, "CheXpert": chx_te, "external": _in(ext, union.class_names)}, public)


__all__ = [
    "NIH_CLASSES",
    "CHEXPERT_CLASSES",
    "UNION_CLASSES",
    "DOMAINS",
    "NIH_TO_PAPER",
    "real_data",
    "ablation_source",
    "noniid_source",
]
