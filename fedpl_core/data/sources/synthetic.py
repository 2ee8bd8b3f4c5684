"""The built-in data sources: ``synthetic-cxr`` / ``synthetic-skin`` / ``synthetic-ich``, drawn by
:mod:`fedpl_core.data.synthetic` (``n_train`` / ``n_test`` images of ``image_size`` px from
``data_seed``; ``external_domain`` adds an external test set of another hospital style)."""

from __future__ import annotations

import numpy as np

from ..base import DataError, check_memory
from .base import DataBundle, register_source


@register_source("synthetic-cxr", task="multilabel")
@register_source("synthetic-skin", task="multiclass")
@register_source("synthetic-ich", task="multilabel")
def _synthetic(name: str, data_root, classes, image_size, n_train, n_test, data_seed, **kw) -> DataBundle:
    from .. import synthetic as S

    make = {"synthetic-cxr": S.make_cxr, "synthetic-skin": S.make_skin, "synthetic-ich": S.make_ich}[name]
    external = kw.pop("external_domain", None)
    train_domains = kw.pop("train_domains", None)
    channels = kw.get("channels", 3 if name == "synthetic-skin" else 1)
    n_img = n_train + n_test * (2 if external is not None else 1)
    # the uint8 images, a quarter more for the chunks being drawn, ids, domains and labels
    check_memory(
        n_img * (1.25 * channels * image_size**2 + 64 + 8 * len(classes or range(14))),
        f"{name}: {n_train} training and {n_test} test images at {image_size} px",
        "lower n_train / n_test / image_size",
    )
    keep = None
    if name == "synthetic-skin":  # one class per image: the classes asked for are the only ones drawn
        ckw = {}
        if classes is not None:
            from ..files import check_classes

            keep = check_classes(classes, S.SKIN_CLASSES, name)
            priors = dict(kw.pop("priors", None) or S.HAM10000_PRIORS)
            other = [c for c, p in priors.items() if c not in keep and p]
            if other and "priors" in kw:
                raise DataError(f"{name}: dataset_kwargs priors name {other}, which classes={keep} leaves out")
            ckw["priors"] = {c: priors.get(c, 0.0) for c in keep}
    else:
        ckw = {"classes": classes}
    ckw.update(kw)
    tr_kw = dict(ckw)
    if train_domains is not None:
        tr_kw["domains"] = np.resize(np.asarray(train_domains), n_train)
    train = make(n_train, image_size=image_size, seed=data_seed, **tr_kw)
    test = make(n_test, image_size=image_size, seed=data_seed + 10_000, **ckw)
    extra = {}
    if external is not None:
        extra["external"] = make(n_test, image_size=image_size, seed=data_seed + 20_000, **dict(ckw, domain=external))
    if keep is not None:
        train, test = train.select_classes(keep), test.select_classes(keep)
        extra = {k: v.select_classes(keep) for k, v in extra.items()}
    return DataBundle(train, test, extra)
