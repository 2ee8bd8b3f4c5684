"""Tests of the built-in synthetic data sets (fedpl_core.data.synthetic)."""

from __future__ import annotations

import numpy as np
import pytest

from fedpl_core.data import synthetic as syn
from fedpl_core.data.base import MULTICLASS, MULTILABEL, DataError
from fedpl_core.data.synthetic import (
    CHEXPERT_EXTRA,
    DOMAINS,
    FEDMLP_CXR8,
    FEDPSL6,
    FINDINGS,
    HAM10000_PRIORS,
    NIH14,
    SKIN_CLASSES,
    DomainStyle,
    finding_atlas,
    make_balanced_test,
    make_cxr,
    make_skin,
    region_mask,
    render_cxr,
    sample_labels,
)

NIH_PREVALENCE = {
    "Infiltration": 0.177,
    "Effusion": 0.119,
    "Atelectasis": 0.103,
    "Nodule": 0.056,
    "Mass": 0.052,
    "Pneumothorax": 0.047,
    "Consolidation": 0.042,
    "Pleural_Thickening": 0.030,
    "Cardiomegaly": 0.025,
    "Emphysema": 0.022,
    "Edema": 0.021,
    "Fibrosis": 0.015,
    "Pneumonia": 0.013,
    "Hernia": 0.002,
}


def test_registry_names():
    assert NIH14 == [
        "Atelectasis",
        "Cardiomegaly",
        "Effusion",
        "Infiltration",
        "Mass",
        "Nodule",
        "Pneumonia",
        "Pneumothorax",
        "Consolidation",
        "Edema",
        "Emphysema",
        "Fibrosis",
        "Pleural_Thickening",
        "Hernia",
    ]
    assert CHEXPERT_EXTRA == [
        "Enlarged Cardiomediastinum",
        "Lung Opacity",
        "Lung Lesion",
        "Pleural Other",
        "Fracture",
        "Support Devices",
    ]
    assert FEDMLP_CXR8 == [
        "Infiltration",
        "Effusion",
        "Atelectasis",
        "Nodule",
        "Mass",
        "Pneumothorax",
        "Consolidation",
        "Pleural_Thickening",
    ]
    assert FEDPSL6 == ["Infiltration", "Effusion", "Atelectasis", "Nodule", "Consolidation", "Pneumothorax"]
    for c in NIH14 + CHEXPERT_EXTRA + ["Tuberculosis", "COVID-19"]:
        assert FINDINGS[c].name == c and FINDINGS[c].location in syn.ZONES
    for c, p in NIH_PREVALENCE.items():
        assert FINDINGS[c].prevalence == pytest.approx(p, abs=0.0015)
    assert SKIN_CLASSES == ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]


def test_deterministic_from_seed():
    a, b, c = make_cxr(40, seed=3), make_cxr(40, seed=3), make_cxr(40, seed=4)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert np.array_equal(a.groups, b.groups)
    assert not np.array_equal(a.images, c.images)
    s1, s2, s3 = make_skin(30, seed=3), make_skin(30, seed=3), make_skin(30, seed=4)
    assert np.array_equal(s1.images, s2.images) and np.array_equal(s1.labels, s2.labels)
    assert not np.array_equal(s1.images, s3.images)


@pytest.mark.parametrize("size,n", [(28, 20), (32, 20), (64, 10), (224, 3)])
def test_shapes_and_dtypes(size, n):
    d = make_cxr(n, image_size=size, seed=1)
    assert d.images.shape == (n, 1, size, size) and d.images.dtype == np.uint8
    assert d.labels.shape == (n, 14) and d.labels.dtype == np.float32
    assert d.class_names == NIH14 and d.task == MULTILABEL
    assert len(d.groups) == n and len(d.domains) == n
    assert set(np.unique(d.labels)) <= {0.0, 1.0}
    assert d.images.std() > 10  # not a blank image
    s = make_skin(n, image_size=size, seed=1)
    assert s.images.shape == (n, 3, size, size) and s.images.dtype == np.uint8
    assert s.labels.shape == (n, 7) and s.task == MULTICLASS
    g = make_skin(n, image_size=size, seed=1, channels=1)
    assert g.images.shape == (n, 1, size, size)


def test_image_size_out_of_range():
    for bad in (27, 225, 0):
        with pytest.raises(DataError, match="28..224"):
            make_cxr(4, image_size=bad)
        with pytest.raises(DataError, match="28..224"):
            make_skin(4, image_size=bad)


def test_unknown_class_names():
    with pytest.raises(DataError, match="Foo"):
        make_cxr(4, ["Atelectasis", "Foo"])
    with pytest.raises(DataError, match="Pleural Thickening"):
        sample_labels(4, ["Pleural Thickening"])
    with pytest.raises(DataError, match="Bar"):
        make_cxr(4, prevalence={"Bar": 0.1})
    with pytest.raises(DataError, match="XYZ"):
        make_skin(4, priors={"XYZ": 1.0})


def test_prevalences_match_targets():
    n = 40_000
    y = sample_labels(n, NIH14, seed=0)
    for j, c in enumerate(NIH14):
        p = NIH_PREVALENCE[c]
        assert abs(y[:, j].mean() - p) < 4.5 * np.sqrt(p * (1 - p) / n) + 0.001, c
    # overrides, and the rendered data set's labels come from the same model
    y2 = sample_labels(20_000, ["Hernia", "Nodule"], seed=1, prevalence={"Hernia": 0.3})
    assert abs(y2[:, 0].mean() - 0.3) < 0.015 and abs(y2[:, 1].mean() - 0.056) < 0.008
    # with patients sharing half of the sickness factor (clustered draws, same marginals)
    groups = syn._patients(n, np.random.default_rng(0))
    assert 2.5 < n / len(np.unique(groups)) < 3.5
    yg = sample_labels(n, NIH14, seed=0, groups=groups)
    for j, c in enumerate(NIH14):
        p = NIH_PREVALENCE[c]
        assert abs(yg[:, j].mean() - p) < 6 * np.sqrt(p * (1 - p) / n) + 0.001, c
    d = make_cxr(1000, image_size=28, seed=2)
    assert np.array_equal(d.labels, sample_labels(1000, NIH14, seed=2, groups=d.groups))


def test_labels_do_not_depend_on_other_classes():
    a = sample_labels(5000, ["Nodule", "Mass"], seed=7)
    b = sample_labels(5000, ["Effusion", "Mass", "Hernia", "Nodule"], seed=7)
    assert np.array_equal(a[:, 0], b[:, 3]) and np.array_equal(a[:, 1], b[:, 1])


def test_about_half_no_finding_and_multi_label_counts():
    y = sample_labels(40_000, NIH14, seed=0)
    k = y.sum(1)
    assert 0.50 < (k == 0).mean() < 0.58  # NIH: 53.8 %
    assert 0.22 < (k == 1).mean() < 0.32  # NIH: 27.6 %
    assert (k >= 3).mean() > 0.03


def _phi(y):
    c = np.corrcoef(y.T)
    return c[np.triu_indices(len(c), 1)]


def test_findings_co_occur():
    y = sample_labels(40_000, NIH14, seed=0)
    phi = _phi(y)
    assert phi.mean() > 0.04 and (phi > 0).mean() > 0.9
    i, j = NIH14.index("Cardiomegaly"), NIH14.index("Effusion")
    assert y[y[:, i] == 1, j].mean() > 1.8 * y[:, j].mean()  # cardiac group
    y0 = sample_labels(40_000, NIH14, seed=0, correlation=0.0)
    assert abs(_phi(y0).mean()) < 0.01 and _phi(y0).mean() < phi.mean() / 4
    y1 = sample_labels(40_000, NIH14, seed=0, correlation=1.0)
    assert _phi(y1).mean() > phi.mean() * 1.5


def test_multiclass_skin_priors():
    d = make_skin(4000, image_size=28, seed=0)
    assert np.array_equal(d.labels.sum(1), np.ones(len(d)))
    freq = d.labels.mean(0)
    for j, c in enumerate(SKIN_CLASSES):
        p = HAM10000_PRIORS[c]
        assert abs(freq[j] - p) < 6 * np.sqrt(p * (1 - p) / 4000) + 0.002, c
    e = make_skin(600, image_size=28, seed=0, priors={"MEL": 1, "DF": 3})
    assert e.labels[:, [1, 2, 3, 4, 6]].sum() == 0
    assert 0.65 < e.labels[:, 5].mean() < 0.85
    # images of different classes look different (mean colour of the lesion centre)
    centre = d.images[:, :, 10:18, 10:18].mean((2, 3))
    mel, nv, vasc = (centre[d.labels[:, SKIN_CLASSES.index(c)] == 1].mean(0) for c in ("MEL", "NV", "VASC"))
    assert np.abs(mel - nv).max() > 10 and np.abs(vasc - nv).max() > 10


def test_domain_styles_change_statistics():
    base = make_cxr(64, image_size=32, seed=5, domain=0).images.astype(float)

    def stats(x):
        grad = np.abs(np.diff(x, axis=-1)).mean()
        return np.array([x.mean(), x.std(), grad])

    s0 = stats(base)
    for k in range(1, len(DOMAINS)):
        sk = stats(make_cxr(64, image_size=32, seed=5, domain=k).images.astype(float))
        rel = np.abs(sk - s0) / s0
        assert rel.max() > 0.08, (k, DOMAINS[k].name, rel)
    custom = make_cxr(16, seed=5, domain=DomainStyle("flat", contrast=0.3))
    assert custom.images.astype(float).std() < 0.5 * base[:16].std()
    assert (custom.domains == -1).all()


def test_per_sample_domains():
    doms = np.array([2, 3, 0, 4, 0, 1] * 5)
    mixed = make_cxr(30, seed=2, domains=doms)
    assert np.array_equal(mixed.domains, doms)
    # anatomy, labels and pose do not depend on the domain: a sample of a noise-free
    # style is identical to the same sample of a data set drawn in that style alone
    for d in (0, 2):
        alone = make_cxr(30, seed=2, domain=d)
        k = doms == d
        assert np.array_equal(mixed.images[k], alone.images[k]), d
        assert not np.array_equal(mixed.images[~k], alone.images[~k])
    noisy = doms == 4
    ref = make_cxr(30, seed=2, domain=0).images.astype(float)
    assert (mixed.images[noisy] - ref[noisy]).std() > 8 > (mixed.images[doms == 0] - ref[doms == 0]).std()
    with pytest.raises(DataError):
        make_cxr(30, domains=np.full(30, len(DOMAINS)))


@pytest.mark.parametrize("name", list(FINDINGS))
def test_each_finding_changes_its_own_region(name):
    k = 48
    z = np.zeros((k, 1), np.float32)
    without = render_cxr(z, [name], 32, seed=11).astype(float)
    with_ = render_cxr(z + 1, [name], 32, seed=11).astype(float)
    diff = np.abs(with_ - without).mean(0)[0]
    assert diff.sum() > 150  # the finding is visible
    mask = region_mask(name, 32)
    assert diff[mask].sum() / diff.sum() > 0.9
    assert diff[mask].mean() > 10 * diff[~mask].mean()


def test_region_masks_discriminate():
    z = np.zeros((32, 1), np.float32)
    for a, b in [
        ("Hernia", "Pleural_Thickening"),
        ("Pleural_Thickening", "Hernia"),
        ("Enlarged Cardiomediastinum", "Effusion"),
        ("Effusion", "Pleural_Thickening"),
    ]:
        diff = np.abs(render_cxr(z + 1, [a], 32, seed=1).astype(float) - render_cxr(z, [a], 32, seed=1)).mean(0)[0]
        assert diff[region_mask(b, 32)].sum() / diff.sum() < 0.5, (a, b)


def test_strength_scales_signal():
    y = np.ones((16, 3), np.float32)
    cls = ["Mass", "Effusion", "Cardiomegaly"]
    ref = render_cxr(np.zeros_like(y), cls, 32, seed=0).astype(float)
    d0 = np.abs(render_cxr(y, cls, 32, seed=0, strength=0.0) - ref).mean()
    d1 = np.abs(render_cxr(y, cls, 32, seed=0, strength=1.0) - ref).mean()
    d2 = np.abs(render_cxr(y, cls, 32, seed=0, strength=2.0) - ref).mean()
    assert d0 == 0 and 1.6 * d1 < d2


def test_balanced_test_set():
    d = make_balanced_test(["Nodule", "Hernia", "Effusion"], per_class_pos=30, per_class_neg=20, seed=0)
    assert len(d) == 150 and d.images.shape == (150, 1, 32, 32)
    for j, c in enumerate(d.class_names):
        block = d.extra["blocks"][c]
        assert len(block) == 50 and d.labels[block, j].sum() == 30
        assert d.labels[:, j].sum() >= 30
    assert len(np.unique(d.groups)) == len(d)


def test_finding_atlas():
    atlas = finding_atlas(image_size=32, seed=0)
    assert set(atlas) == set(FINDINGS)
    base = atlas["Nodule"][0]
    for name, (img0, img1) in atlas.items():
        assert img0.shape == img1.shape == (32, 32) and img0.dtype == np.uint8
        assert np.array_equal(img0, base)  # the same chest for every finding
        assert np.abs(img1.astype(int) - img0).sum() > 0, name
