"""Augmented views of a preprocessed batch, for semi-supervised and consistency methods.

FixMatch-style methods (FedLSM, FedMLP, FixMatch and their federated variants) feed a
*weak* view to a teacher and a *strong* view to the student; MixUp mixes two batches.
Every function works on a preprocessed float batch ``[B, C, H, W]`` (normalised, e.g. from
``ctx.make_batch(pos, train=False)``), draws its randomness from the given
``torch.Generator`` (one stream per (seed, round, client) in the engine, so views are
reproducible) and returns a new tensor.

* :func:`weak_view`: random horizontal flip + random translation by up to 1/8 of the
  size (zero padding) - FixMatch's weak augmentation (Sohn et al. 2020, Sec. 2.3).
* :func:`strong_view`: the weak view, then ``num_ops`` operations drawn uniformly per
  sample from a RandAugment-style list (Cubuk et al. 2020), each at ``magnitude`` on
  RandAugment's 0-30 scale, then Cutout of a square of half the image side (DeVries &
  Taylor 2017, as FixMatch's strong view).  **[choice]** The operations act on normalised
  tensors: photometric ones (brightness, contrast, sharpness, solarize, posterize,
  equalize-like autocontrast) are defined relative to each image's own mean / range,
  geometric ones (rotate, shear, translate) by ``torch.nn.functional.grid_sample`` with
  zero fill; this keeps a strong view meaningful for grey and colour images alike and
  fully vectorised (one op per sample per slot, no Python loop over samples).
* :func:`mixup`: ``lam * a + (1 - lam) * b`` for inputs and targets (Zhang et al. 2018);
  :func:`sample_lambda` draws ``lam ~ Beta(alpha, alpha)`` from a generator.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .preprocess import augment_batch

OPS = (
    "identity",
    "autocontrast",
    "brightness",
    "contrast",
    "sharpness",
    "solarize",
    "posterize",
    "rotate",
    "shear_x",
    "shear_y",
    "translate_x",
    "translate_y",
)


def weak_view(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random horizontal flip and random translation (up to 1/8 of the size)."""
    return augment_batch(x.clone(), "flip_shift", generator)


def _affine(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _apply(x: torch.Tensor, op: torch.Tensor, sign: torch.Tensor, m: float) -> torch.Tensor:
    """Apply op ``op[i]`` (index into :data:`OPS`) to sample i at magnitude ``m`` in [0, 1]."""
    b = x.shape[0]
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    lo = x.amin(dim=(1, 2, 3), keepdim=True)
    hi = x.amax(dim=(1, 2, 3), keepdim=True)
    span = (hi - lo).clamp_min(1e-6)
    s = sign.view(b, 1, 1, 1)
    f = 1.0 + 0.9 * m * s  # factor in [0.1, 1.9] (RandAugment's enhance range)
    blur = F.avg_pool2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), 3, stride=1)
    levels = 2 ** max(1, 8 - int(round(4 * m)))  # posterize: 8 -> 4 bits
    unit = (x - lo) / span
    cand = {
        "identity": x,
        "autocontrast": (x - lo) / span * 4.0 - 2.0,  # stretch to the fixed normalisation's range
        "brightness": x + (f - 1.0) * span * 0.5,
        "contrast": (x - mean) * f + mean,
        "sharpness": blur + (x - blur) * f,
        "solarize": torch.where(unit > 1.0 - 0.5 * m, lo + hi - x, x),
        "posterize": lo + torch.floor(unit * levels).clamp_max(levels - 1) / (levels - 1) * span,
    }
    out = x.clone()
    for i, name in enumerate(OPS):
        sel = op == i
        if not bool(sel.any()):
            continue
        if name in cand:
            out[sel] = cand[name][sel]
            continue
        n = int(sel.sum())
        theta = torch.zeros(n, 2, 3, device=x.device, dtype=x.dtype)
        theta[:, 0, 0] = theta[:, 1, 1] = 1.0
        sg = sign[sel].to(x.dtype)
        if name == "rotate":
            a = math.radians(30.0 * m) * sg
            theta[:, 0, 0], theta[:, 0, 1] = torch.cos(a), -torch.sin(a)
            theta[:, 1, 0], theta[:, 1, 1] = torch.sin(a), torch.cos(a)
        elif name == "shear_x":
            theta[:, 0, 1] = 0.3 * m * sg
        elif name == "shear_y":
            theta[:, 1, 0] = 0.3 * m * sg
        elif name == "translate_x":
            theta[:, 0, 2] = 2 * 0.3 * m * sg  # up to 30% of the width (grid units span 2)
        else:
            theta[:, 1, 2] = 2 * 0.3 * m * sg
        out[sel] = _affine(x[sel], theta)
    return out


def cutout(x: torch.Tensor, generator: torch.Generator | None = None, size: float = 0.5) -> torch.Tensor:
    """Zero a square of side ``size * H`` at a random centre of each image (clipped at
    the border); zero is the data set mean under the package's normalisations."""
    b, _, h, w = x.shape
    side = max(1, int(round(size * h)))
    cy = torch.randint(0, h, (b,), generator=generator).to(x.device)
    cx = torch.randint(0, w, (b,), generator=generator).to(x.device)
    rows = torch.arange(h, device=x.device).view(1, h, 1)
    cols = torch.arange(w, device=x.device).view(1, 1, w)
    inside = ((rows - cy.view(b, 1, 1)).abs() <= side // 2) & ((cols - cx.view(b, 1, 1)).abs() <= side // 2)
    return x.masked_fill(inside.unsqueeze(1), 0.0)


def strong_view(
    x: torch.Tensor,
    generator: torch.Generator | None = None,
    num_ops: int = 2,
    magnitude: float = 10,
    cutout_size: float = 0.5,
) -> torch.Tensor:
    """Weak view, ``num_ops`` RandAugment-style operations per sample, then Cutout."""
    if not 0 <= magnitude <= 30:
        raise ValueError(f"magnitude must be on RandAugment's 0-30 scale, got {magnitude}")
    out = weak_view(x, generator)
    m = float(magnitude) / 30.0
    for _ in range(int(num_ops)):
        op = torch.randint(0, len(OPS), (x.shape[0],), generator=generator).to(x.device)
        sign = (torch.randint(0, 2, (x.shape[0],), generator=generator) * 2 - 1).to(x.device)
        out = _apply(out, op, sign, m)
    return cutout(out, generator, cutout_size) if cutout_size > 0 else out


def sample_lambda(alpha: float, generator: torch.Generator | None = None) -> float:
    """``lam ~ Beta(alpha, alpha)``, seeded by one draw from ``generator``; 1.0 when
    ``alpha <= 0`` (no mixing)."""
    if alpha <= 0:
        return 1.0
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    return float(np.random.default_rng(seed).beta(alpha, alpha))


def mixup(
    x1: torch.Tensor, y1: torch.Tensor, x2: torch.Tensor, y2: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """MixUp of two batches: ``(lam x1 + (1-lam) x2, lam y1 + (1-lam) y2)``.

    >>> one, zero = torch.ones(1, 1, 1, 1), torch.zeros(1, 1, 1, 1)
    >>> x, y = mixup(one, torch.tensor([[1., 0.]]), zero, torch.tensor([[0., 1.]]), 0.7)
    >>> float(x), y.tolist()
    (0.7, [[0.7, 0.30000001192092896]])
    """
    if x1.shape != x2.shape or y1.shape != y2.shape:
        raise ValueError(
            f"mixup needs equal shapes, got {tuple(x1.shape)} / {tuple(x2.shape)} and "
            f"{tuple(y1.shape)} / {tuple(y2.shape)}"
        )
    return lam * x1 + (1 - lam) * x2, lam * y1 + (1 - lam) * y2


__all__ = ["OPS", "weak_view", "strong_view", "cutout", "mixup", "sample_lambda"]
