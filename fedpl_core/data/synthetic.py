"""Built-in synthetic data: chest-X-ray-like multi-label images and skin-lesion-like
multi-class images, fast enough to run every experiment of fedpl on a laptop.

Generative model of :func:`make_cxr`
------------------------------------
1. **Patients.**  Images belong to synthetic patients (``groups``, ~3 images each, as in
   NIH ChestX-ray14).  A patient fixes the anatomy (lung width and height, heart size,
   body width, tissue density) and half of the "sickness" factor below.
2. **Labels** (:func:`sample_labels`, a Gaussian copula / multivariate probit).  Every
   finding ``c`` of the registry gets a latent
   ``z_c = sqrt(r) S + sqrt((1 - r) g_c) G_group(c) + sqrt((1 - r)(1 - g_c)) e_c`` with a
   shared sickness ``S``, one factor per co-occurrence group (cardiac, airspace,
   pleural, nodular, chronic) and noise ``e_c``, all standard normal, so ``z_c`` is
   standard normal and ``y_c = [z_c > Phi^-1(1 - p_c)]`` has marginal prevalence exactly
   ``p_c``.  ``r = 0.3 * correlation`` and ``g = 0.4 * correlation``; the default
   ``correlation=0.5`` reproduces NIH's label-count distribution (about 54 % of images
   with no finding, 28 % with one, 11 % with two); ``correlation=0`` gives independent
   findings.  Every factor has its own random stream, so a class gets the same labels
   whatever other classes are requested.
3. **Anatomy.**  A frontal chest in a canonical frame (x, y in [-1, 1], y downwards):
   body ellipse, two dark lung fields with ribs, a bright mediastinum, spine and heart,
   smooth anatomical noise (lung markings), seen through a small random pose (rotation
   ~3 degrees, shift ~3 %, scale ~3 %).
4. **Findings.**  Each positive finding is drawn by the renderer its :class:`Finding`
   names (``shape``) in its anatomical zone (``location``, see :data:`ZONES`), with its
   ``size``, ``texture`` and signed intensity ``strength`` (opacity > 0, lucency < 0),
   times a per-image severity in [0.6, 1.4] and the global ``strength`` knob.  Only the
   requested classes are drawn.
5. **Acquisition.**  Pixel noise, then the hospital's :class:`DomainStyle` (blur,
   contrast, brightness, gamma, extra noise, zoom), then uint8 quantisation.

Random streams are keyed by ``(seed, purpose, chunk)``; the anatomy and noise of an
image never depend on its labels, so rendering the same labels twice, or the same image
with and without a finding (:func:`finding_atlas`), changes only the finding's pixels.

:func:`make_skin` draws single-label colour images of the seven ISIC 2018 classes with
HAM10000's class priors: a skin background (tone, texture, hairs, dermoscope vignette)
with a lesion whose colour, size, border irregularity and texture depend on its class.

:func:`make_ich` draws multi-label axial head CT slices in the brain window over the five
RSNA intracranial hemorrhage subtypes (:data:`ICH_CLASSES`), FedMLP's built-in ICH-like
setting: scalp, skull, grey / white matter, sulci and ventricles, and each subtype where
and as it shows on CT (epidural lens, subdural crescent, blood in the sulci, a clot, a
ventricular fluid level).  Labels follow a Gaussian copula at the RSNA stage 2 rates x 4
with epidural raised to 5 % (:data:`ICH_PREVALENCE`; ``prevalence="rsna"`` for the real
rates), so a few hundred training slices carry positives of every subtype.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from .base import MULTICLASS, MULTILABEL, DataError, ImageDataset

NIH14 = [
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
CHEXPERT_EXTRA = [
    "Enlarged Cardiomediastinum",
    "Lung Opacity",
    "Lung Lesion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
]
FEDMLP_CXR8 = [
    "Infiltration",
    "Effusion",
    "Atelectasis",
    "Nodule",
    "Mass",
    "Pneumothorax",
    "Consolidation",
    "Pleural_Thickening",
]
FEDPSL6 = ["Infiltration", "Effusion", "Atelectasis", "Nodule", "Consolidation", "Pneumothorax"]
FEDPSL8 = FEDPSL6 + ["Tuberculosis", "COVID-19"]
SKIN_CLASSES = ["MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC"]
HAM10000_PRIORS = {
    "MEL": 1113 / 10015,
    "NV": 6705 / 10015,
    "BCC": 514 / 10015,
    "AKIEC": 327 / 10015,
    "BKL": 1099 / 10015,
    "DF": 115 / 10015,
    "VASC": 142 / 10015,
}
# CheXpert training-set positive rates (Irvin et al. 2019), to draw a CheXpert-like source.
CHEXPERT_PREVALENCE = {
    "Enlarged Cardiomediastinum": 0.040,
    "Cardiomegaly": 0.103,
    "Lung Opacity": 0.413,
    "Lung Lesion": 0.031,
    "Edema": 0.218,
    "Consolidation": 0.058,
    "Pneumonia": 0.020,
    "Atelectasis": 0.131,
    "Pneumothorax": 0.077,
    "Effusion": 0.337,
    "Pleural Other": 0.011,
    "Fracture": 0.032,
    "Support Devices": 0.472,
}


@dataclass(frozen=True)
class Zone:
    """Where a finding may sit.  ``frame="lung"``: ``u`` runs medial (-1) to lateral
    (+1) and ``v`` top (-1) to bottom (+1) in units of the lung's semi-axes, ``sides`` is
    ``"either"`` (one random lung) or ``"both"``; ``frame="body"``: ``u``, ``v`` are
    canonical x, y."""

    frame: str
    u: tuple[float, float]
    v: tuple[float, float]
    sides: str = "either"


ZONES = {
    "lung": Zone("lung", (-0.6, 0.6), (-0.6, 0.6)),
    "lung_upper": Zone("lung", (-0.4, 0.6), (-0.75, -0.2)),
    "lung_lower": Zone("lung", (-0.4, 0.6), (0.15, 0.7)),
    "lung_base": Zone("lung", (-1.0, 1.0), (0.3, 1.0)),
    "apex_lateral": Zone("lung", (-0.2, 1.0), (-1.0, 0.35)),
    "pleura_upper": Zone("lung", (0.5, 1.05), (-0.9, 0.1)),
    "pleura_lower": Zone("lung", (0.5, 1.05), (0.1, 0.9)),
    "chest_wall": Zone("lung", (0.8, 1.0), (-0.5, 0.5)),
    "perihilar": Zone("lung", (-1.0, 0.2), (-0.35, 0.55), "both"),
    "lungs_all": Zone("lung", (-1.0, 1.0), (-1.0, 1.0), "both"),
    "peripheral_lower": Zone("lung", (0.2, 1.0), (-0.1, 0.95), "both"),
    "upper_lobes": Zone("lung", (-0.5, 0.8), (-0.95, -0.2), "both"),
    "heart": Zone("body", (-0.35, 0.6), (0.0, 0.65)),
    "mediastinum": Zone("body", (-0.28, 0.28), (-0.8, 0.15)),
    "retrocardiac": Zone("body", (-0.1, 0.25), (0.4, 0.6)),
    "neck_to_chest": Zone("body", (-0.3, 0.3), (-1.0, 0.35)),
}


@dataclass(frozen=True)
class Finding:
    """One finding's label statistics and visual signature.

    ``shape`` picks the renderer: ``blob`` (an ellipse of radius ``size`` and elongation
    ``aspect`` with edge softness ``edge``), ``meniscus`` (fluid in the lung base),
    ``rim`` (lucent lung rim with a pleural line), ``band`` (thickened pleura along the
    lung border), ``diffuse`` (the zone of the lungs filled with ``texture``),
    ``cardiac`` / ``mediastinal`` (an enlarged silhouette), ``line`` (a tube).
    ``texture`` modulates the mask: ``smooth``, ``patchy`` (blotchy), ``reticular`` (a
    fine net), ``cavitary`` (blotches with lucent holes), ``bubble`` (air inside).
    ``strength`` is the intensity change on a [0, 1] scale at ``strength=1`` (the
    difficulty knob: signal against the ~0.025 pixel and ~0.04 anatomical noise).
    ``group`` names the co-occurrence factor the finding loads on (None: sickness only).
    """

    name: str
    prevalence: float
    location: str
    shape: str
    texture: str = "smooth"
    size: float = 0.2
    strength: float = 0.15
    aspect: float = 1.0
    edge: float = 0.5
    group: str | None = None
    description: str = ""


# Prevalences: NIH ChestX-ray14 rates for its 14 findings, CheXpert's for the six it adds,
# 2 % for Tuberculosis and COVID-19 (their FedPSL clients are separate sources: pass e.g.
# ``prevalence={"Tuberculosis": 0.5}, domain=TB_DOMAIN``).  Strengths were tuned with
# benchmarks/synthetic_learnability.py: large / diffuse findings are easy, small ones hard.
_F = Finding
FINDINGS: dict[str, Finding] = {
    f.name: f
    for f in [
        _F(
            "Atelectasis",
            0.103,
            "lung_lower",
            "blob",
            "smooth",
            0.11,
            0.14,
            3.0,
            0.5,
            "airspace",
            "plate-like basal band",
        ),
        _F(
            "Cardiomegaly",
            0.025,
            "heart",
            "cardiac",
            "smooth",
            0.25,
            0.24,
            group="cardiac",
            description="enlarged heart",
        ),
        _F(
            "Effusion",
            0.119,
            "lung_base",
            "meniscus",
            "smooth",
            0.5,
            0.16,
            group="cardiac",
            description="basal fluid meniscus",
        ),
        _F(
            "Infiltration",
            0.177,
            "lung",
            "blob",
            "patchy",
            0.26,
            0.13,
            1.3,
            1.0,
            "airspace",
            "ill-defined patchy opacity",
        ),
        _F("Mass", 0.052, "lung", "blob", "smooth", 0.17, 0.19, 1.1, 0.2, "nodular", "large well-defined opacity"),
        _F("Nodule", 0.056, "lung", "blob", "smooth", 0.075, 0.21, 1.0, 0.25, "nodular", "small round opacity"),
        _F(
            "Pneumonia",
            0.013,
            "lung_lower",
            "blob",
            "patchy",
            0.22,
            0.13,
            1.2,
            0.9,
            "airspace",
            "patchy lower-zone opacity",
        ),
        _F(
            "Pneumothorax",
            0.047,
            "apex_lateral",
            "rim",
            "smooth",
            0.30,
            -0.16,
            group="pleural",
            description="lucent rim, pleural line",
        ),
        _F(
            "Consolidation",
            0.042,
            "lung_lower",
            "blob",
            "smooth",
            0.21,
            0.18,
            1.2,
            0.45,
            "airspace",
            "dense homogeneous opacity",
        ),
        _F(
            "Edema",
            0.021,
            "perihilar",
            "diffuse",
            "patchy",
            0.5,
            0.16,
            group="cardiac",
            description="bilateral perihilar haze",
        ),
        _F(
            "Emphysema",
            0.022,
            "lungs_all",
            "diffuse",
            "smooth",
            0.5,
            -0.10,
            group="chronic",
            description="hyperlucent lungs",
        ),
        _F(
            "Fibrosis",
            0.015,
            "peripheral_lower",
            "diffuse",
            "reticular",
            0.5,
            0.07,
            group="chronic",
            description="peripheral reticulation",
        ),
        _F(
            "Pleural_Thickening",
            0.030,
            "pleura_upper",
            "band",
            "smooth",
            0.10,
            0.18,
            group="pleural",
            description="apical pleural cap",
        ),
        _F("Hernia", 0.002, "retrocardiac", "blob", "bubble", 0.11, 0.18, 1.2, 0.3, None, "retrocardiac mass with air"),
        _F(
            "Enlarged Cardiomediastinum",
            0.040,
            "mediastinum",
            "mediastinal",
            "smooth",
            0.6,
            0.16,
            group="cardiac",
            description="widened upper mediastinum",
        ),
        _F(
            "Lung Opacity", 0.413, "lung", "blob", "patchy", 0.30, 0.13, 1.3, 1.0, "airspace", "any parenchymal opacity"
        ),
        _F("Lung Lesion", 0.031, "lung", "blob", "smooth", 0.11, 0.20, 1.0, 0.25, "nodular", "focal lesion"),
        _F(
            "Pleural Other",
            0.011,
            "pleura_lower",
            "band",
            "patchy",
            0.10,
            0.18,
            group="pleural",
            description="pleural plaques",
        ),
        _F("Fracture", 0.032, "chest_wall", "blob", "smooth", 0.06, 0.25, 2.0, 0.2, None, "rib callus"),
        _F("Support Devices", 0.472, "neck_to_chest", "line", "smooth", 0.025, 0.35, description="tube or line"),
        _F(
            "Tuberculosis",
            0.02,
            "upper_lobes",
            "diffuse",
            "cavitary",
            0.5,
            0.17,
            description="upper-lobe cavitating opacity",
        ),
        _F(
            "COVID-19",
            0.02,
            "peripheral_lower",
            "diffuse",
            "patchy",
            0.5,
            0.14,
            group="airspace",
            description="bilateral peripheral ground glass",
        ),
    ]
}
del _F


@dataclass(frozen=True)
class DomainStyle:
    """A hospital / scanner style: ``gamma`` (I -> I**gamma), ``contrast`` and
    ``brightness`` (around 0.5), ``blur`` (Gaussian sigma in pixels of a 32-px image),
    ``noise`` (extra pixel noise sd), ``zoom`` (field of view), ``tint`` (RGB gains,
    colour images only)."""

    name: str = "reference"
    gamma: float = 1.0
    contrast: float = 1.0
    brightness: float = 0.0
    blur: float = 0.0
    noise: float = 0.0
    zoom: float = 1.0
    tint: tuple[float, float, float] = (1.0, 1.0, 1.0)


DOMAINS: list[DomainStyle] = [
    DomainStyle("reference"),
    DomainStyle("soft-bright", 0.8, 0.85, 0.05, 0.4, 0.01, 1.0, (1.05, 1.0, 0.95)),
    DomainStyle("hard-dark", 1.3, 1.2, -0.05, 0.0, 0.0, 1.02, (0.95, 0.97, 1.05)),
    DomainStyle("portable-blurry", 1.0, 0.9, 0.0, 0.9, 0.02, 0.92, (1.0, 0.95, 0.95)),
    DomainStyle("low-dose-noisy", 1.1, 1.0, 0.0, 0.0, 0.06, 1.0),
    DomainStyle("washed-out", 0.9, 0.7, 0.1, 0.3, 0.01, 1.05, (1.08, 1.02, 0.92)),
    DomainStyle("high-gamma", 1.6, 1.1, 0.05, 0.2, 0.015, 0.97, (0.92, 0.98, 1.08)),
    DomainStyle("sharp-contrast", 1.0, 1.35, -0.02, 0.0, 0.03, 1.0),
    DomainStyle("tb-source", 1.4, 1.25, -0.06, 0.6, 0.025, 0.9),
    DomainStyle("covid-source", 0.75, 0.8, 0.08, 0.8, 0.04, 1.08),
]
TB_DOMAIN, COVID_DOMAIN = 8, 9


# ----------------------------------------------------------------- helpers
def _rng(seed: int, *keys) -> np.random.Generator:
    """Independent stream for (seed, keys...); string keys are hashed stably."""
    ent = [int(seed)] + [zlib.crc32(k.encode()) if isinstance(k, str) else int(k) for k in keys]
    return np.random.default_rng(ent)


def _check(n: int, image_size: int, seed: int) -> None:
    if int(n) != n or n < 0:
        raise DataError(f"n must be a non-negative integer, got {n!r}")
    if int(image_size) != image_size or not 28 <= image_size <= 224:
        raise DataError(f"image_size must be an integer in 28..224, got {image_size!r}")
    if int(seed) != seed or seed < 0:
        raise DataError(f"seed must be a non-negative integer, got {seed!r}")


def _check_classes(classes: Sequence[str] | None) -> list[str]:
    if classes is None:
        return list(NIH14)
    if isinstance(classes, str):
        classes = [classes]
    classes = list(classes)
    unknown = [c for c in classes if c not in FINDINGS]
    if unknown:
        raise DataError(f"unknown synthetic finding(s) {unknown}; known findings: {list(FINDINGS)}")
    if not classes or len(set(classes)) != len(classes):
        raise DataError(f"classes must be a non-empty list without duplicates, got {classes}")
    return classes


def _domain_styles(n: int, domain, domains) -> tuple[np.ndarray, list[DomainStyle]]:
    """Per-sample domain ids and the style table they index (-1 = a custom style)."""
    if domains is not None:
        d = np.asarray(domains)
        if (
            d.shape != (n,)
            or not np.issubdtype(d.dtype, np.integer)
            or (len(d) and (d.min() < 0 or d.max() >= len(DOMAINS)))
        ):
            raise DataError(f"domains must be {n} integers in 0..{len(DOMAINS) - 1}")
        return d.astype(np.int64), DOMAINS
    if domain is None:
        domain = 0
    if isinstance(domain, DomainStyle):
        if domain in DOMAINS:
            return np.full(n, DOMAINS.index(domain), np.int64), DOMAINS
        return np.full(n, -1, np.int64), DOMAINS + [domain]  # index -1 -> the custom style
    if int(domain) != domain or not 0 <= domain < len(DOMAINS):
        raise DataError(f"domain must be a DomainStyle or an index in 0..{len(DOMAINS) - 1}, got {domain!r}")
    return np.full(n, int(domain), np.int64), DOMAINS


_INTERP: dict = {}


def _interp(s: int, g: int) -> np.ndarray:
    """[s, g] bilinear up-sampling matrix from a g-point grid to s pixels."""
    if (s, g) not in _INTERP:
        pos = np.clip((np.arange(s) + 0.5) / s * (g - 1), 0, g - 1)
        lo = np.minimum(pos.astype(int), g - 2)
        a = np.zeros((s, g), np.float32)
        a[np.arange(s), lo] = 1 - (pos - lo)
        a[np.arange(s), lo + 1] = pos - lo
        _INTERP[(s, g)] = a
    return _INTERP[(s, g)]


def _noise(rng, m: int, s: int, g: int) -> np.ndarray:
    """[m, s, s] smooth Gaussian-ish noise with correlation length ~2/g."""
    a = _interp(s, g)
    return a @ rng.standard_normal((m, g, g), dtype=np.float32) @ a.T


def _ramp(t, w):
    """Soft step 0 -> 1 around t = 0 over width w."""
    return np.clip(t / w + 0.5, 0.0, 1.0)


def _ellipse(x, y, cx, cy, ax, ay, w):
    d = np.sqrt(((x - cx) / ax) ** 2 + ((y - cy) / ay) ** 2)
    return _ramp(1.0 - d, w), d


def _col(v):
    """Per-sample values [m] -> [m, 1, 1] for broadcasting over pixels."""
    return np.asarray(v, np.float32)[:, None, None]


def _grid(rng, m, s, rot_sd, shift_sd, scale_sd, zoom):
    """Canonical coordinates X, Y [m, s, s] of each pixel after a random pose."""
    u = (np.arange(s, dtype=np.float32) + 0.5) / s * 2 - 1
    th = _col(rng.normal(0, rot_sd, m))
    tx, ty = _col(rng.normal(0, shift_sd, m)), _col(rng.normal(0, shift_sd, m))
    sc = _col(np.clip(1 + rng.normal(0, scale_sd, m), 0.85, 1.15)) * _col(zoom)
    du, dv = u[None, None, :] - tx, u[None, :, None] - ty
    c, s_ = np.cos(th), np.sin(th)
    return (c * du + s_ * dv) / sc, (-s_ * du + c * dv) / sc


def _style(img, styles, dom, rng):
    """Apply each sample's DomainStyle to float images [m, C, s, s] in [0, 1]."""
    s = img.shape[-1]
    for d in np.unique(dom):
        st, k = styles[d], np.nonzero(dom == d)[0]
        x = img[k]
        if st.blur > 0:
            sig = st.blur * s / 32
            i = np.arange(s, dtype=np.float32)
            b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / sig) ** 2)
            b /= b.sum(1, keepdims=True)
            x = b @ x @ b.T
        x = np.clip((x - 0.5) * st.contrast + 0.5 + st.brightness, 0, 1) ** st.gamma
        if x.shape[1] == 3:
            x = x * np.asarray(st.tint, np.float32)[None, :, None, None]
        if st.noise > 0:
            x = x + rng.normal(0, st.noise, x.shape).astype(np.float32)
        img[k] = x
    return np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)


def _chunks(n, s, channels=1):
    step = max(1, (1 << 20) // (channels * s * s))
    return [(a, min(n, a + step)) for a in range(0, n, step)]


def _patients(n: int, rng) -> np.ndarray:
    """Synthetic patient ids, ~3 images per patient (geometric counts, shuffled)."""
    counts = rng.geometric(1 / 3, size=n)
    ids = np.repeat(np.arange(n), counts)[:n]
    return rng.permutation(ids)


# ----------------------------------------------------------------- labels
def sample_labels(
    n: int,
    classes: Sequence[str] | None = None,
    seed: int = 0,
    prevalence: dict[str, float] | None = None,
    correlation: float = 0.5,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Draw float32 multi-hot labels ``[n, K]`` from the Gaussian copula of the module
    docstring.  Images with the same ``groups`` id (patient) share half of the sickness
    factor.  Marginals equal the registry prevalences, overridden by ``prevalence``."""
    classes = _check_classes(classes)
    _check(n, 28, seed)
    if not 0 <= correlation <= 2:
        raise DataError(f"correlation must be in [0, 2], got {correlation}")
    prev = {c: f.prevalence for c, f in FINDINGS.items()}
    for c, p in (prevalence or {}).items():
        if c not in FINDINGS:
            raise DataError(f"prevalence given for unknown finding {c!r}; known findings: {list(FINDINGS)}")
        if not 0 < p < 1:
            raise DataError(f"prevalence of {c!r} must be in (0, 1), got {p}")
        prev[c] = float(p)
    # one stream per factor and per finding: a class's labels depend only on the seed,
    # its own name and group, whatever else is requested or added to the registry
    sick = _rng(seed, "labels", "sickness").standard_normal(n)
    if groups is not None:
        _, inv = np.unique(np.asarray(groups), return_inverse=True)
        patient = _rng(seed, "labels", "patients").standard_normal(int(inv.max()) + 1 if n else 0)
        sick = np.sqrt(0.5) * patient[inv] + np.sqrt(0.5) * sick
    r = 0.3 * correlation
    out = np.zeros((n, len(classes)), np.float32)
    for j, c in enumerate(classes):
        f = FINDINGS[c]
        g = 0.4 * correlation if f.group else 0.0
        z = np.sqrt(r) * sick + np.sqrt((1 - r) * (1 - g)) * _rng(seed, "labels", "finding", c).standard_normal(n)
        if f.group:
            z += np.sqrt((1 - r) * g) * _rng(seed, "labels", "group", f.group).standard_normal(n)
        out[:, j] = z > ndtri(1 - prev[c])
    return out


# ----------------------------------------------------------------- chest X-rays
def _anatomy(X, Y, P, rng):
    """Chest intensities [m, s, s] in [0, 1] and the geometry findings are placed in."""
    m, s = X.shape[0], X.shape[-1]
    lw, lh, hs, bw, dens = (_col(P[:, k]) for k in range(5))
    geo = {
        "cy": -0.08 + 0 * lw,
        "ay": 0.62 * lh,
        "cx0": -0.40 * lw,
        "cx1": 0.41 * lw,
        "ax0": 0.30 * lw,
        "ax1": 0.28 * lw,
        "hx": 0.12 + 0 * hs,
        "hy": 0.33 + 0 * hs,
        "hax": 0.33 * hs,
        "hay": 0.25 * hs,
    }
    body, _ = _ellipse(X, Y, 0, 0.15, 0.95 * bw, 1.3, 0.1)
    for k in (0, 1):
        geo[f"lung{k}"] = _ellipse(X, Y, geo[f"cx{k}"], geo["cy"], geo[f"ax{k}"], geo["ay"], 0.12)[0]
    heart, _ = _ellipse(X, Y, geo["hx"], geo["hy"], geo["hax"], geo["hay"], 0.15)
    medi = _ramp(0.11 - np.abs(X), 0.04) * _ramp(0.35 - Y, 0.1)
    spine = _ramp(0.05 - np.abs(X), 0.03)
    clav = (
        _ramp(0.035 - np.abs(Y + 0.78 - 0.3 * np.abs(X)), 0.03)
        * _ramp(0.7 - np.abs(X), 0.05)
        * _ramp(np.abs(X) - 0.08, 0.05)
    )
    lung = np.maximum(geo["lung0"], geo["lung1"])
    ribs = 0.5 + 0.5 * np.cos(2 * np.pi * 5.0 * (Y + 0.35 * X * X))
    img = 0.06 + (dens - 0.06) * body
    img += lung * (-0.30 + 0.05 * ribs + 0.03 * _noise(rng, m, s, 10))
    img += 0.20 * heart * (1 - 0.5 * medi) + 0.12 * medi + 0.08 * spine * body + 0.12 * clav
    img += 0.035 * _noise(rng, m, s, 6) * body
    return img, geo


def _side_params(geo, side):
    """Centre x, semi-axis and lateral sign [m, 1, 1] of lung ``side`` (0 = image left)."""
    sd = _col(side).astype(bool)
    return (
        np.where(sd, geo["cx1"], geo["cx0"]),
        np.where(sd, geo["ax1"], geo["ax0"]),
        np.where(sd, 1.0, -1.0).astype(np.float32),
        sd,
    )


def _side_frame(X, Y, geo, side):
    """Lung-frame coordinates U (lateral +), V (down +) and the lung mask of ``side``."""
    cx, ax, sgn, sd = _side_params(geo, side)
    return sgn * (X - cx) / ax, (Y - geo["cy"]) / geo["ay"], np.where(sd, geo["lung1"], geo["lung0"])


def _sides(zone, m, rng):
    if zone.sides == "both":
        return [np.zeros(m, int), np.ones(m, int)]
    return [rng.integers(0, 2, m)]


def _texture(f, X, Y, rng, d=None):
    """Texture factor multiplying the finding's mask ([m, s, s], ~1 on average)."""
    t, m, s = f.texture, X.shape[0], X.shape[-1]
    if t == "patchy":
        return np.clip(0.7 + 0.7 * _noise(rng, m, s, 9), 0.1, 1.6)
    if t == "reticular":
        a = _col(rng.uniform(0, np.pi, m))
        p1, p2 = X * np.cos(a) + Y * np.sin(a), -X * np.sin(a) + Y * np.cos(a)
        net = np.maximum(np.cos(np.pi * p1 / 0.11) ** 8, np.cos(np.pi * p2 / 0.11) ** 8)
        return 0.25 + 1.5 * net
    if t == "cavitary":
        return np.clip(0.5 + 1.2 * _noise(rng, m, s, 7), -0.8, 1.8)
    if t == "bubble":
        return 1.0 - 1.6 * _ramp(0.5 - d, 0.15)
    return 1.0


def _render_finding(f: Finding, X, Y, geo, rng) -> np.ndarray:
    """Signed intensity change [m, s, s] of finding ``f`` at unit strength and severity."""
    m, s = X.shape[0], X.shape[-1]
    z = ZONES[f.location]
    px = 2.0 / s
    if f.shape == "blob":
        u, v = rng.uniform(*z.u, m), rng.uniform(*z.v, m)
        if z.frame == "lung":
            cx, ax, sgn, _ = _side_params(geo, rng.integers(0, 2, m))
            cx, cy = cx + sgn * _col(u) * ax, geo["cy"] + _col(v) * geo["ay"]
        else:
            cx, cy = _col(u), _col(v)
        r = _col(f.size * rng.uniform(0.75, 1.25, m))
        th = _col(rng.normal(0, 0.3, m) if f.aspect > 1.5 else rng.uniform(0, np.pi, m))
        dx, dy = X - cx, Y - cy
        p, q = np.cos(th) * dx + np.sin(th) * dy, -np.sin(th) * dx + np.cos(th) * dy
        d = np.sqrt((p / (r * f.aspect)) ** 2 + (q / r) ** 2)
        return _ramp(1 - d, np.maximum(f.edge, 1.5 * px / r)) * _texture(f, X, Y, rng, d)
    if f.shape == "cardiac":
        hx, hy, hax, hay = geo["hx"], geo["hy"], geo["hax"], geo["hay"]
        k = 1 + f.size * _col(rng.uniform(0.7, 1.3, m))
        big, _ = _ellipse(
            X, Y, hx + 0.6 * (k - 1) * hax, hy + 0.3 * (k - 1) * hay, hax * k, hay * (1 + 0.6 * (k - 1)), 0.1
        )
        return np.clip(big - _ellipse(X, Y, hx, hy, hax, hay, 0.15)[0], 0, 1)
    if f.shape == "mediastinal":
        w = 0.11 * (1 + f.size * _col(rng.uniform(0.7, 1.3, m)))
        band = _ramp(0.15 - Y, 0.1) * _ramp(Y + 0.8, 0.1)
        return np.clip(_ramp(w - np.abs(X), 0.04) - _ramp(0.11 - np.abs(X), 0.04), 0, 1) * band
    if f.shape == "line":
        x0, x1 = _col(rng.uniform(*z.u, m)), _col(rng.uniform(-0.15, 0.15, m))
        y1 = _col(rng.uniform(0.0, z.v[1], m))
        t = np.clip((Y + 1.1) / (y1 + 1.1), 0, 1)
        w = max(f.size, 0.75 * px)
        return _ramp(w - np.abs(X - (x0 + (x1 - x0) * t * t)), px) * _ramp(y1 - Y, px)
    out = np.zeros_like(X)
    for side in _sides(z, m, rng):
        U, V, lung = _side_frame(X, Y, geo, side)
        box = _ramp(np.minimum(U - z.u[0], z.u[1] - U), 0.3) * _ramp(np.minimum(V - z.v[0], z.v[1] - V), 0.3)
        if f.shape == "meniscus":
            level = _col(1 - f.size * rng.uniform(0.7, 1.3, m))
            out += _ramp(V - level + 0.4 * U, 0.15) * lung
        elif f.shape == "rim":
            rr = np.sqrt(U * U + V * V)
            inner = _col(1 - f.size * rng.uniform(0.7, 1.3, m))
            line = np.exp(-(((rr - inner) * geo["ay"] / max(0.03, px)) ** 2))
            out += lung * box * (_ramp(rr - inner, 0.05) - 0.7 * line)
        elif f.shape == "band":
            rr = np.sqrt(U * U + V * V)
            w = f.size / 0.3 * _col(rng.uniform(0.7, 1.3, m))
            out += _ramp(w - np.abs(rr - 1 + 0.3 * w), 0.1) * box * _texture(f, X, Y, rng)
        else:  # diffuse: a smooth elliptical profile over the zone
            (u0, u1), (v0, v1) = z.u, z.v
            prof, _ = _ellipse(U, V, (u0 + u1) / 2, (v0 + v1) / 2, (u1 - u0) / 2, (v1 - v0) / 2, 0.6)
            out += lung * prof * _texture(f, X, Y, rng)
    return out


def render_cxr(
    labels: np.ndarray,
    classes: Sequence[str] | None = None,
    image_size: int = 32,
    seed: int = 0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    strength: float = 1.0,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Render uint8 images ``[n, 1, s, s]`` showing the findings ``labels`` [n, K] marks.

    The anatomy, pose and noise depend only on ``seed``, ``groups`` and the position of
    the image, never on the labels."""
    classes = _check_classes(classes)
    labels = np.asarray(labels)
    n, s = len(labels), int(image_size)
    _check(n, s, seed)
    if labels.shape != (n, len(classes)):
        raise DataError(f"labels have shape {labels.shape}, expected ({n}, {len(classes)})")
    dom, styles = _domain_styles(n, domain, domains)
    groups = np.arange(n) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    prng = _rng(seed, "patients")
    npat = int(groups.max()) + 1 if n else 0
    P = np.column_stack([1 + 0.05 * prng.standard_normal((npat, 4)), 0.52 + 0.03 * prng.standard_normal(npat)])
    P = P.astype(np.float32)
    out = np.empty((n, 1, s, s), np.uint8)
    for k, (a, b) in enumerate(_chunks(n, s)):
        rng = _rng(seed, "anatomy", k)
        zoom = np.array([styles[d].zoom for d in dom[a:b]])
        X, Y = _grid(rng, b - a, s, 0.05, 0.03, 0.03, zoom)
        img, geo = _anatomy(X, Y, P[groups[a:b]], rng)
        for j, c in enumerate(classes):
            pos = np.nonzero(labels[a:b, j] > 0)[0]
            if len(pos) == 0 or strength == 0:
                continue
            f, frng = FINDINGS[c], _rng(seed, "finding", c, k)
            sub = {key: v[pos] for key, v in geo.items()}
            sev = _col(frng.uniform(0.6, 1.4, len(pos))) * (f.strength * strength)
            img[pos] += sev * _render_finding(f, X[pos], Y[pos], sub, frng)
        img += rng.normal(0, 0.025, img.shape).astype(np.float32)
        out[a:b] = _style(img[:, None], styles, dom[a:b], rng)
    return out


def make_cxr(
    n: int,
    classes: Sequence[str] | None = None,
    image_size: int = 32,
    seed: int = 0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    prevalence: dict[str, float] | None = None,
    strength: float = 1.0,
    correlation: float = 0.5,
    name: str = "synthetic-cxr",
) -> ImageDataset:
    """``n`` synthetic chest X-rays with multi-hot labels over ``classes`` (default the
    14 NIH findings); see the module docstring for the generative model.

    Args:
        domain: the hospital style of every image (index into :data:`DOMAINS` or a
            :class:`DomainStyle`); ``domains``: per-image indices, overriding it.
        prevalence: per-class marginal prevalences overriding the registry's.
        strength: multiplies every finding's signal (0 = labels invisible).
        correlation: co-occurrence strength (0 = independent, 0.5 = NIH-like, <= 2).
    """
    _check(n, image_size, seed)
    classes = _check_classes(classes)
    groups = _patients(n, _rng(seed, "groups"))
    labels = sample_labels(n, classes, seed, prevalence, correlation, groups)
    images = render_cxr(labels, classes, image_size, seed, domain, domains, strength, groups)
    dom, styles = _domain_styles(n, domain, domains)
    return ImageDataset(
        images,
        labels,
        classes,
        MULTILABEL,
        groups=groups,
        domains=dom,
        name=name,
        extra={
            "generator": "synthetic.make_cxr",
            "seed": seed,
            "strength": strength,
            "correlation": correlation,
            "domain_styles": styles,
        },
    )


def make_balanced_test(
    classes: Sequence[str] | None = None,
    per_class_pos: int = 300,
    per_class_neg: int = 300,
    image_size: int = 32,
    seed: int = 0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    prevalence: dict[str, float] | None = None,
    strength: float = 1.0,
    correlation: float = 0.5,
    name: str = "synthetic-cxr-balanced",
) -> ImageDataset:
    """FedPSL's test set: for each class, in order, a block of ``per_class_pos`` images
    positive and ``per_class_neg`` images negative for it, drawn by rejection from the
    label model (other labels as they come).  All labels are known; ``extra["blocks"]``
    maps each class to the indices of its block (for per-class AUROC on exactly that
    block).  ``domains`` (if given) has one entry per returned image."""
    classes = _check_classes(classes)
    _check(0, image_size, seed)
    bseed = zlib.crc32(f"balanced-test-{seed}".encode())  # streams apart from make_cxr(seed=...)
    blocks, pool_round = {}, 0
    need = {c: (per_class_pos, per_class_neg) for c in classes}
    prev = min((prevalence or {}).get(c, FINDINGS[c].prevalence) for c in classes)
    while any(sum(v) for v in need.values()):
        m = int(min(4_000_000, max(10_000, 2 * per_class_pos / prev)))
        pool = sample_labels(m, classes, bseed + pool_round, prevalence, correlation)
        for j, c in enumerate(classes):
            npos, nneg = need[c]
            pos = np.nonzero(pool[:, j] == 1)[0][:npos]
            neg = np.nonzero(pool[:, j] == 0)[0][:nneg]
            blocks.setdefault(c, []).append((pool[pos], pool[neg]))
            need[c] = (npos - len(pos), nneg - len(neg))
            pool = np.delete(pool, np.concatenate([pos, neg]), axis=0)
        pool_round += 1
        if pool_round > 200:
            raise DataError(f"could not draw {per_class_pos} positives for every class of {classes}")
    labels, index, start = [], {}, 0
    for c in classes:
        rows = np.concatenate([p for p, _ in blocks[c]] + [q for _, q in blocks[c]])
        labels.append(rows)
        index[c] = np.arange(start, start + len(rows))
        start += len(rows)
    labels = np.concatenate(labels)
    n = len(labels)
    images = render_cxr(labels, classes, image_size, bseed, domain, domains, strength)
    dom, styles = _domain_styles(n, domain, domains)
    return ImageDataset(
        images,
        labels,
        classes,
        MULTILABEL,
        groups=np.arange(n),
        domains=dom,
        name=name,
        extra={"generator": "synthetic.make_balanced_test", "blocks": index, "seed": seed, "domain_styles": styles},
    )


def region_mask(finding: str, image_size: int = 32, margin: float = 0.1) -> np.ndarray:
    """Bool ``[s, s]`` mask of where ``finding`` can appear on the reference anatomy
    (zone box grown by the finding's extent and ``margin`` for pose and size jitter)."""
    f = FINDINGS[_check_classes([finding])[0]]
    z, s = ZONES[f.location], int(image_size)
    u = (np.arange(s) + 0.5) / s * 2 - 1
    X, Y = np.meshgrid(u, u)
    grow = margin + {"blob": f.size * max(f.aspect, 1), "cardiac": 0.15}.get(f.shape, 0.0)
    if z.frame == "body":
        return (X > z.u[0] - grow) & (X < z.u[1] + grow) & (Y > z.v[0] - grow) & (Y < z.v[1] + grow)
    out = np.zeros((s, s), bool)
    for cx, ax, sgn in ((-0.40, 0.30, -1), (0.41, 0.28, 1)):
        lo, hi = sorted((cx + sgn * z.u[0] * ax, cx + sgn * min(z.u[1], 1.0) * ax))
        out |= (
            (X > lo - grow) & (X < hi + grow) & (Y > -0.08 + 0.62 * z.v[0] - grow) & (Y < -0.08 + 0.62 * z.v[1] + grow)
        )
    return out


def finding_atlas(
    image_size: int = 64, seed: int = 0, strength: float = 1.0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For every registry finding, the same chest without and with it: ``name -> (img0,
    img1)``, uint8 ``[s, s]`` images (for the teaching notebook's plots)."""
    out = {}
    for c in FINDINGS:
        lab = np.zeros((1, 1), np.float32)
        img0 = render_cxr(lab, [c], image_size, seed, strength=strength)[0, 0]
        img1 = render_cxr(lab + 1, [c], image_size, seed, strength=strength)[0, 0]
        out[c] = (img0, img1)
    return out


# ----------------------------------------------------------------- skin lesions
# class -> (lesion colour RGB, radius, border irregularity, edge softness, texture)
SKIN_LOOK = {
    "MEL": ((0.38, 0.25, 0.18), 0.42, 0.13, 0.05, "multicolour"),
    "NV": ((0.50, 0.33, 0.22), 0.36, 0.05, 0.06, "network"),
    "BCC": ((0.72, 0.50, 0.46), 0.32, 0.10, 0.10, "vessels"),
    "AKIEC": ((0.68, 0.44, 0.37), 0.35, 0.11, 0.14, "scale"),
    "BKL": ((0.57, 0.42, 0.29), 0.40, 0.08, 0.04, "cerebriform"),
    "DF": ((0.57, 0.41, 0.31), 0.28, 0.05, 0.10, "scar"),
    "VASC": ((0.60, 0.24, 0.29), 0.27, 0.06, 0.04, "lacunae"),
}
_GENERIC = ((0.55, 0.38, 0.28), 0.36, 0.08, 0.07)
_SKIN_MIX = {  # texture -> (second colour, noise grid, threshold, gain)
    "multicolour": ((0.40, 0.43, 0.55), 6, 0.0, 1.2),
    "network": ((0.38, 0.24, 0.16), 14, 0.3, 1.0),
    "vessels": ((0.65, 0.12, 0.18), 7, None, 1.0),
    "scale": ((0.93, 0.89, 0.85), 14, 0.3, 1.5),
    "cerebriform": ((0.75, 0.62, 0.45), 10, 0.0, 1.2),
    "scar": ((0.91, 0.85, 0.80), 0, None, 1.0),
    "lacunae": ((0.33, 0.07, 0.22), 12, 0.2, 1.5),
}


def _skin_chunk(cls, L, s, rng, strength):
    """Float RGB images [m, 3, s, s] of lesions with per-lesion parameters ``L``."""
    m = len(cls)
    X, Y = _grid(rng, m, s, np.pi, 0.08, 0.08, np.ones(m))
    img = L["tone"][:, :, None, None] * (1 + 0.04 * _noise(rng, m, s, 8))[:, None]
    img[:, 0] += 0.03 * _noise(rng, m, s, 5)
    for _ in range(3):  # hairs: class-independent distractors
        on = _col(rng.random(m) < 0.15)
        a, px, py, k = (_col(rng.uniform(lo, hi, m)) for lo, hi in ((0, np.pi), (-0.8, 0.8), (-0.8, 0.8), (-0.5, 0.5)))
        along, across = np.cos(a) * (X - px) + np.sin(a) * (Y - py), -np.sin(a) * (X - px) + np.cos(a) * (Y - py)
        img *= 1 - 0.6 * on[:, None] * _ramp(max(0.015, 1.0 / s) - np.abs(across + k * along**2), 1.0 / s)[:, None]
    dx, dy = X - _col(L["cx"]), Y - _col(L["cy"])
    rho, th = np.sqrt(dx * dx + dy * dy), np.arctan2(dy, dx)
    R = _col(L["radius"]) * (
        1 + sum(_col(L["harm"][:, i, 0]) * np.cos((i + 2) * th + _col(L["harm"][:, i, 1])) for i in range(3))
    )
    M = _ramp(1 - rho / R, _col(L["edge"]))[:, None]
    col = L["colour"][:, :, None, None] * (1 + 0.08 * _noise(rng, m, s, 6))[:, None]
    for c, (second, g, thr, gain) in _SKIN_MIX.items():
        k = np.nonzero(SKIN_CLASSES_TEXTURE[cls] == c)[0]
        if len(k) == 0:
            continue
        if c == "scar":
            w = _ramp(0.45 - rho[k] / R[k], 0.25)
        elif c == "vessels":  # zero crossings of a smooth field look like branching vessels
            w = _ramp(0.12 - np.abs(_noise(rng, len(k), s, g)), 0.1)
        else:
            w = np.clip(gain * (_noise(rng, len(k), s, g) - thr), 0, 1)
        w = (strength * _col(rng.uniform(0.2, 0.8, len(k))) * w)[:, None]
        col[k] = col[k] * (1 - w) + np.asarray(second, np.float32)[None, :, None, None] * w
    img = img * (1 - M) + col * M
    vig = _col(rng.random(m) < 0.4) * _ramp(np.sqrt(X * X + Y * Y) - _col(rng.uniform(0.95, 1.2, m)), 0.1)
    img *= (1 - 0.9 * vig)[:, None]
    return img + rng.normal(0, 0.02, img.shape).astype(np.float32)


SKIN_CLASSES_TEXTURE = np.array([SKIN_LOOK[c][4] for c in SKIN_CLASSES])


def make_skin(
    n: int,
    priors: dict[str, float] | None = None,
    image_size: int = 32,
    seed: int = 0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    channels: int = 3,
    strength: float = 1.0,
    name: str = "synthetic-skin",
) -> ImageDataset:
    """``n`` single-label dermoscopy-like images over :data:`SKIN_CLASSES` (ISIC 2018
    order), one-hot labels, task ``"multiclass"``.

    Lesions (``groups``, ~1.35 images each as in HAM10000) draw their class from
    ``priors`` (default :data:`HAM10000_PRIORS`; classes left out get prior 0; the rest
    is normalised), then a skin tone and the class's look (:data:`SKIN_LOOK`: colour,
    size, border irregularity, edge, texture) with random jitter; ``strength`` moves
    every class's look away from a generic brown lesion (0 = classes indistinguishable
    except by chance).  Each image adds pose, hairs, dermoscope vignette and noise.
    ``channels=1`` gives grey-level images.
    """
    _check(n, image_size, seed)
    if channels not in (1, 3):
        raise DataError(f"channels must be 1 or 3, got {channels}")
    pri = dict(HAM10000_PRIORS) if priors is None else dict(priors)
    unknown = [c for c in pri if c not in SKIN_CLASSES]
    if unknown:
        raise DataError(f"unknown skin class(es) {unknown}; known classes: {SKIN_CLASSES}")
    p = np.array([float(pri.get(c, 0.0)) for c in SKIN_CLASSES])
    if (p < 0).any() or p.sum() <= 0:
        raise DataError(f"priors must be non-negative with a positive sum, got {pri}")
    p /= p.sum()
    rng = _rng(seed, "skin-lesions")
    lesion = np.repeat(np.arange(n), rng.geometric(1 / 1.35, size=n))[:n]
    nl = int(lesion.max()) + 1 if n else 0
    lcls = rng.choice(len(SKIN_CLASSES), size=nl, p=p)
    look = [SKIN_LOOK[c] for c in SKIN_CLASSES]
    gen = np.array(_GENERIC[0] + _GENERIC[1:], np.float32)
    par = np.array([c[0] + c[1:4] for c in look], np.float32)
    par = gen + strength * (par - gen)
    t = rng.beta(2, 3, nl)[:, None]
    L = {
        "colour": np.clip(par[lcls, :3] * rng.normal(1, 0.15, (nl, 1)) + rng.normal(0, 0.02, (nl, 3)), 0.02, 1),
        "radius": par[lcls, 3] * rng.uniform(0.7, 1.3, nl),
        "edge": par[lcls, 5],
        "harm": np.stack(
            [par[lcls, 4][:, None] * rng.standard_normal((nl, 3)), rng.uniform(0, 2 * np.pi, (nl, 3))], -1
        ),
        "tone": ((1 - t) * np.array([0.93, 0.76, 0.66]) + t * np.array([0.60, 0.42, 0.32])).astype(np.float32),
    }
    perm = rng.permutation(n)
    lesion = lesion[perm]
    L = {k: v[lesion].astype(np.float32) for k, v in L.items()}
    cls = lcls[lesion]
    dom, styles = _domain_styles(n, domain, domains)
    s = int(image_size)
    out = np.empty((n, channels, s, s), np.uint8)
    for k, (a, b) in enumerate(_chunks(n, s, 3)):
        crng = _rng(seed, "skin", k)
        Lc = {key: v[a:b] for key, v in L.items()}
        Lc["cx"], Lc["cy"] = crng.normal(0, 0.08, b - a), crng.normal(0, 0.08, b - a)
        img = _skin_chunk(cls[a:b], Lc, s, crng, strength)
        if channels == 1:
            img = (img * np.array([0.299, 0.587, 0.114], np.float32)[None, :, None, None]).sum(1, keepdims=True)
        out[a:b] = _style(img, styles, dom[a:b], crng)
    labels = np.zeros((n, len(SKIN_CLASSES)), np.float32)
    labels[np.arange(n), cls] = 1
    return ImageDataset(
        out,
        labels,
        SKIN_CLASSES,
        MULTICLASS,
        groups=lesion,
        domains=dom,
        name=name,
        extra={
            "generator": "synthetic.make_skin",
            "seed": seed,
            "priors": dict(zip(SKIN_CLASSES, p)),
            "domain_styles": styles,
        },
    )


# ----------------------------------------------------------------- head CT (ICH)
#: The five RSNA intracranial hemorrhage subtypes (the Kaggle CSV's order, ``any`` dropped).
ICH_CLASSES = ["epidural", "intraparenchymal", "intraventricular", "subarachnoid", "subdural"]
#: Slice-level positive rates of the RSNA ICH stage 2 training set (752,803 slices).
RSNA_ICH_PREVALENCE = {
    "epidural": 0.0042,
    "intraparenchymal": 0.0480,
    "intraventricular": 0.0348,
    "subarachnoid": 0.0474,
    "subdural": 0.0627,
}
#: The built-in ICH-like data multiply every RSNA rate by ``ICH_BOOST`` and raise any rate
#: still below ``ICH_MIN_PREVALENCE`` to it (only epidural: 0.42 % -> 5 %, x12), so that a
#: few hundred training images hold positives of every class (rarest 5 %, subdural 25 %).
ICH_BOOST = 4.0
ICH_MIN_PREVALENCE = 0.05
ICH_PREVALENCE = {c: round(max(ICH_MIN_PREVALENCE, ICH_BOOST * p), 4) for c, p in RSNA_ICH_PREVALENCE.items()}
#: Intensity of acute blood (~65 HU) in the brain window (0..80 HU -> 0..1).
ICH_BLOOD = 0.82


def _check_ich_classes(classes: Sequence[str] | None) -> list[str]:
    if classes is None:
        return list(ICH_CLASSES)
    classes = [classes] if isinstance(classes, str) else list(classes)
    unknown = [c for c in classes if c not in ICH_CLASSES]
    if unknown:
        raise DataError(f"unknown hemorrhage subtype(s) {unknown}; known subtypes: {ICH_CLASSES}")
    if not classes or len(set(classes)) != len(classes):
        raise DataError(f"classes must be a non-empty list without duplicates, got {classes}")
    return classes


def _ich_prevalence(prevalence) -> dict[str, float]:
    if isinstance(prevalence, str):
        if prevalence != "rsna":
            raise DataError(f"prevalence must be a dict, None (boosted) or 'rsna', got {prevalence!r}")
        return dict(RSNA_ICH_PREVALENCE)
    prev = dict(ICH_PREVALENCE)
    for c, p in (prevalence or {}).items():
        if c not in ICH_CLASSES:
            raise DataError(f"prevalence given for unknown subtype {c!r}; known subtypes: {ICH_CLASSES}")
        if not 0 < p < 1:
            raise DataError(f"prevalence of {c!r} must be in (0, 1), got {p}")
        prev[c] = float(p)
    return prev


def sample_ich_labels(
    n: int,
    classes: Sequence[str] | None = None,
    seed: int = 0,
    prevalence: dict[str, float] | str | None = None,
    correlation: float = 0.5,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Float32 multi-hot ``[n, K]`` hemorrhage labels from a Gaussian copula: subtype ``c``
    is positive when ``z_c = sqrt(rho) S + sqrt(1 - rho) e_c`` exceeds
    ``Phi^-1(1 - p_c)``, so its marginal rate is exactly ``p_c``; ``rho = correlation``
    (in [0, 1)) makes subtypes co-occur as in RSNA, where a bleeding slice often shows
    several.  Slices of one study (``groups``) share half of the bleeding factor ``S``.
    ``prevalence``: None (:data:`ICH_PREVALENCE`, the boosted rates), ``"rsna"``
    (:data:`RSNA_ICH_PREVALENCE`) or a dict overriding the boosted rates.  One random
    stream per subtype: a subtype's labels do not depend on the other classes asked for."""
    classes = _check_ich_classes(classes)
    _check(n, 28, seed)
    if not 0 <= correlation < 1:
        raise DataError(f"correlation must be in [0, 1), got {correlation}")
    prev = _ich_prevalence(prevalence)
    bleed = _rng(seed, "ich-labels", "bleeding").standard_normal(n)
    if groups is not None:
        _, inv = np.unique(np.asarray(groups), return_inverse=True)
        study = _rng(seed, "ich-labels", "studies").standard_normal(int(inv.max()) + 1 if n else 0)
        bleed = np.sqrt(0.5) * study[inv] + np.sqrt(0.5) * bleed
    out = np.zeros((n, len(classes)), np.float32)
    for j, c in enumerate(classes):
        z = np.sqrt(correlation) * bleed + np.sqrt(1 - correlation) * _rng(seed, "ich-labels", c).standard_normal(n)
        out[:, j] = z > ndtri(1 - prev[c])
    return out


def _head(X, Y, P, rng):
    """Axial head CT slice [m, s, s] in the brain window, and the geometry bleeds use.

    Canonical frame: x right, y down = posterior.  Scalp (soft tissue, 0.35), skull
    (bone, saturated at 1), brain (grey / white matter texture around 0.45, a brighter
    cortical ribbon), CSF (0.1) in the sulci near the surface, the interhemispheric
    fissure and two lateral ventricles whose size varies by study and slice."""
    m, s = X.shape[0], X.shape[-1]
    hw, hh, vs = (_col(P[:, k]) for k in range(3))
    vs = vs * _col(rng.uniform(0.8, 1.2, m))  # slice level: larger or smaller ventricles
    ax, ay, t = 0.70 * hw, 0.86 * hh, 0.075
    bx, by = ax - t, ay - t  # inner table
    e = 2.5 / s  # edge width, ~1 pixel in normalised radius
    r = np.sqrt((X / bx) ** 2 + (Y / by) ** 2)
    head = _ramp(1 - np.sqrt((X / (ax + 0.06)) ** 2 + (Y / (ay + 0.06)) ** 2), e)
    skull = _ramp(1 - np.sqrt((X / ax) ** 2 + (Y / ay) ** 2), e)
    brain = _ramp(1 - r, e)
    tissue = 0.42 + 0.04 * _noise(rng, m, s, 8) + 0.07 * _ramp(r - 0.82, 0.15)
    sulcal = _noise(rng, m, s, 10)
    band = _ramp(r - 0.72, 0.12)
    sulci = _ramp(0.12 - np.abs(sulcal), 0.08) * band
    fissure = _ramp(1.2 / s - np.abs(X), 1.5 / s) * _ramp(np.abs(Y) - 0.5 * by, 0.1)
    vy, vlen = _col(-0.03 + 0.02 * rng.standard_normal(m)), 0.22 * vs
    vent = np.zeros_like(X)
    for sgn in (-1.0, 1.0):
        a = sgn * 0.3  # frontal horns diverge
        dx, dy = X - sgn * 0.11 * vs, Y - vy
        p, q = np.cos(a) * dx + np.sin(a) * dy, -np.sin(a) * dx + np.cos(a) * dy
        vent = np.maximum(vent, _ramp(1 - np.sqrt((p / (0.05 * vs + 0.5 / s)) ** 2 + (q / vlen) ** 2), 0.35))
    csf = np.clip(np.maximum(np.maximum(sulci, fissure), vent), 0, 1)
    tissue = tissue * (1 - csf) + 0.10 * csf
    img = 0.35 * head * (1 - skull) + skull * (1 - brain) + tissue * brain
    geo = {
        "r": r,
        "th": np.arctan2(Y / by, X / bx),
        "brain": brain,
        "band": band,
        "sulcal": sulcal,
        "fissure": fissure,
        "vent": vent,
        "vy": vy,
        "vlen": vlen,
        "bx": bx,
        "by": by,
        "e": e,
    }
    return img, geo


def _bleed(c: str, X, Y, geo, rng) -> np.ndarray:
    """Where subtype ``c`` puts blood ([m, s, s] in [0, 1]): epidural a biconvex lens
    against the inner table (short, thick), subdural a thin crescent along it (long),
    subarachnoid blood filling the sulci of a sector and the fissure, intraparenchymal
    an oval clot in the brain, intraventricular blood layering in the dependent
    (posterior) part of the lateral ventricles."""
    m = X.shape[0]
    r, e, brain = geo["r"], geo["e"], geo["brain"]
    phi = _col(rng.uniform(-np.pi, np.pi, m))
    dth = np.arctan2(np.sin(geo["th"] - phi), np.cos(geo["th"] - phi))
    if c in ("epidural", "subdural"):
        if c == "epidural":
            span, depth = _col(rng.uniform(0.4, 0.6, m)), _col(rng.uniform(0.16, 0.25, m))
            d = depth * np.clip(1 - (dth / span) ** 2, 0, None)  # parabolic: convex towards the brain
        else:
            span, depth = _col(rng.uniform(0.8, 1.3, m)), _col(rng.uniform(0.08, 0.12, m))
            d = depth * np.clip(1 - np.abs(dth / span) ** 3, 0, None)  # flat: follows the skull
        return _ramp(r - (1 - d), e) * _ramp(d - 0.02, 0.02) * brain
    if c == "subarachnoid":
        sector = _ramp(np.cos(dth) - _col(np.cos(rng.uniform(0.7, 1.4, m))), 0.2)
        sulci = _ramp(0.3 - np.abs(geo["sulcal"]), 0.1) * geo["band"] * sector
        return np.clip(np.maximum(sulci, geo["fissure"] * _col(rng.random(m) < 0.5)), 0, 1) * brain
    if c == "intraparenchymal":
        rad = _col(rng.uniform(0.2, 0.6, m))
        cx, cy = rad * geo["bx"] * np.cos(phi), rad * geo["by"] * np.sin(phi)
        size, asp, rot = (
            _col(rng.uniform(0.07, 0.14, m)),
            _col(rng.uniform(1.0, 1.6, m)),
            _col(rng.uniform(0, np.pi, m)),
        )
        dx, dy = X - cx, Y - cy
        p, q = np.cos(rot) * dx + np.sin(rot) * dy, -np.sin(rot) * dx + np.cos(rot) * dy
        return _ramp(1 - np.sqrt((p / (size * asp)) ** 2 + (q / size) ** 2), 0.35) * brain
    if c == "intraventricular":
        level = geo["vy"] + geo["vlen"] * _col(rng.uniform(-0.3, 0.5, m))
        return geo["vent"] * _ramp(Y - level, 0.06)
    raise DataError(f"unknown hemorrhage subtype {c!r}")


def render_ich(
    labels: np.ndarray,
    classes: Sequence[str] | None = None,
    image_size: int = 32,
    seed: int = 0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    strength: float = 1.0,
    groups: np.ndarray | None = None,
    channels: int = 1,
) -> np.ndarray:
    """Render uint8 head CT slices ``[n, channels, s, s]`` showing the hemorrhages ``labels``
    [n, K] marks.  As :func:`render_cxr`, the anatomy, pose and noise depend only on
    ``seed``, ``groups`` (the study: head shape, ventricle size) and the image's
    position, never on the labels.  Blood moves a pixel towards :data:`ICH_BLOOD` by
    ``strength`` x a per-slice severity in [0.7, 1.3] (0 = labels invisible)."""
    classes = _check_ich_classes(classes)
    labels = np.asarray(labels)
    n, s = len(labels), int(image_size)
    _check(n, s, seed)
    if channels not in (1, 3):
        raise DataError(f"channels must be 1 or 3, got {channels}")
    if labels.shape != (n, len(classes)):
        raise DataError(f"labels have shape {labels.shape}, expected ({n}, {len(classes)})")
    dom, styles = _domain_styles(n, domain, domains)
    groups = np.arange(n) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    prng = _rng(seed, "ich-studies")
    nst = int(groups.max()) + 1 if n else 0
    P = np.column_stack([1 + 0.05 * prng.standard_normal((nst, 2)), np.exp(0.2 * prng.standard_normal(nst))])
    P = P.astype(np.float32)
    out = np.empty((n, channels, s, s), np.uint8)
    for k, (a, b) in enumerate(_chunks(n, s)):
        rng = _rng(seed, "ich-anatomy", k)
        zoom = np.array([styles[d].zoom for d in dom[a:b]])
        X, Y = _grid(rng, b - a, s, 0.10, 0.03, 0.03, zoom)
        img, geo = _head(X, Y, P[groups[a:b]], rng)
        for j, c in enumerate(classes):
            pos = np.nonzero(labels[a:b, j] > 0)[0]
            if len(pos) == 0 or strength == 0:
                continue
            frng = _rng(seed, "ich-finding", c, k)
            sub = {
                key: (v[pos] if isinstance(v, np.ndarray) and v.shape[:1] == (b - a,) else v) for key, v in geo.items()
            }
            sev = _col(frng.uniform(0.7, 1.3, len(pos))) * strength
            img[pos] += sev * _bleed(c, X[pos], Y[pos], sub, frng) * (ICH_BLOOD - img[pos])
        img += rng.normal(0, 0.03, img.shape).astype(np.float32)
        out[a:b] = np.repeat(_style(img[:, None], styles, dom[a:b], rng), channels, axis=1)
    return out


def make_ich(
    n: int,
    image_size: int = 32,
    seed: int = 0,
    classes: Sequence[str] | None = None,
    prevalence: dict[str, float] | str | None = None,
    correlation: float = 0.5,
    strength: float = 1.0,
    domain: int | DomainStyle | None = 0,
    domains: np.ndarray | None = None,
    channels: int = 1,
    name: str = "synthetic-ich",
) -> ImageDataset:
    """``n`` synthetic axial head CT slices (brain window) with multi-hot labels over the
    five RSNA hemorrhage subtypes (:data:`ICH_CLASSES`, or ``classes`` of them): the
    built-in ICH-like data of FedMLP's default run.

    Slices come in studies (``groups``, ~3 slices each) sharing head shape, ventricle
    size and half of the bleeding factor.  Labels: :func:`sample_ich_labels` at the
    boosted RSNA rates :data:`ICH_PREVALENCE` (RSNA x 4, epidural raised to 5 %; pass
    ``prevalence="rsna"`` for the real rates); images: :func:`render_ich`, each subtype
    drawn where and as it appears on CT (a lens, a crescent, blood in the sulci, a clot,
    a fluid level in the ventricles), then pixel noise and the ``domain`` style.
    ``channels=3`` repeats the grey image."""
    _check(n, image_size, seed)
    classes = _check_ich_classes(classes)
    groups = _patients(n, _rng(seed, "ich-groups"))
    labels = sample_ich_labels(n, classes, seed, prevalence, correlation, groups)
    images = render_ich(labels, classes, image_size, seed, domain, domains, strength, groups, channels)
    dom, styles = _domain_styles(n, domain, domains)
    return ImageDataset(
        images,
        labels,
        classes,
        MULTILABEL,
        groups=groups,
        domains=dom,
        name=name,
        extra={
            "generator": "synthetic.make_ich",
            "seed": seed,
            "strength": strength,
            "correlation": correlation,
            "prevalence": _ich_prevalence(prevalence),
            "domain_styles": styles,
        },
    )
