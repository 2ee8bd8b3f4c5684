"""uint8 image batches -> normalised (optionally augmented) float batches, vectorised.

The engine keeps the training images once, as uint8, and turns each minibatch into
floats here, on the device, with the client's seeded generator for augmentation.
"""

from __future__ import annotations

import math

import torch

NORMALIZE = ("fixed", "imagenet", "instance")
AUGMENT = ("none", "flip", "shift", "flip_shift", "flip_affine")
#: ``flip_affine``'s ranges: FedMLP's released training transform (``dataset/dataset.py``:
#: ``RandomAffine(degrees=10, translate=(0.02, 0.02))``, then ``RandomHorizontalFlip``).
AFFINE_DEGREES, AFFINE_TRANSLATE = 10.0, 0.02
_IMAGENET = {3: ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), 1: ([0.449], [0.226])}


class Preprocess:
    """``fixed``: (x/255 - 0.5) / 0.25; ``imagenet``: ImageNet mean/std (grey: their
    mean); ``instance``: per-image (x - mean) / std (FedPSL).  ``augment`` (training only,
    on the [0, 1] image before normalisation, see :func:`augment_batch`): random
    horizontal flips and/or translations of up to 1/8 of the size (reflect padding), or
    ``flip_affine``, FedMLP's released transform."""

    def __init__(self, normalize: str = "fixed", augment: str = "none", channels_last: bool = False):
        if normalize not in NORMALIZE:
            raise ValueError(f"unknown normalize {normalize!r}; use one of {NORMALIZE}")
        if augment not in AUGMENT:
            raise ValueError(f"unknown augment {augment!r}; use one of {AUGMENT}")
        self.normalize, self.augment, self.channels_last = normalize, augment, channels_last
        self._stats: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def _imagenet(self, c: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        key = (c, device)
        if key not in self._stats:  # built once per (channels, device), not per batch
            mean, std = _IMAGENET[3 if c == 3 else 1]
            self._stats[key] = (
                torch.tensor(mean, device=device).view(1, -1, 1, 1),
                torch.tensor(std, device=device).view(1, -1, 1, 1),
            )
        return self._stats[key]

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None, train: bool = False) -> torch.Tensor:
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        if x.dtype == torch.uint8:  # one pass: uint8 -> float32 / 255 into a new tensor
            x = torch.div(
                x,
                255.0,
                out=torch.empty(
                    x.shape,
                    dtype=torch.float32,
                    device=x.device,
                    memory_format=fmt if x.dim() == 4 else torch.contiguous_format,
                ),
            )
        else:
            x = x.float().div_(255.0)
        if train and self.augment != "none":
            x = augment_batch(x, self.augment, generator, memory_format=fmt)
        if self.normalize == "fixed":
            x = x.sub_(0.5).div_(0.25)
        elif self.normalize == "imagenet":
            mean, std = self._imagenet(x.shape[1], x.device)
            x = x.sub_(mean).div_(std)
        else:
            m = x.mean(dim=(1, 2, 3), keepdim=True)
            s = x.std(dim=(1, 2, 3), keepdim=True).clamp_min(1e-6)
            x = x.sub_(m).div_(s)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x


def augment_batch(
    x: torch.Tensor,
    kind: str,
    generator: torch.Generator | None,
    memory_format: torch.memory_format = torch.contiguous_format,
) -> torch.Tensor:
    """Random per-sample augmentation of a float batch ``[B, C, H, W]``.

    * ``flip``: horizontal flip with probability 1/2.
    * ``shift``: integer translation by up to ``H // 8`` pixels per axis, the border
      filled by **reflection**: FixMatch's weak "flip-and-shift" (Sohn et al. 2020,
      Sec. 2.3; its reference implementations pad 1/8 of the size with
      ``padding_mode="reflect"`` and crop).  **[finding]** Zero padding (this
      function's fill before) put a black band of up to 4 px into every shifted 32-px
      chest X-ray, an edge no test image has; on FedMLP's CXR m = 7 cpu setting FedAvg
      lost 7.0 points with zero-padded shifts and 4.4 with reflected ones
      (``benchmarks/augmentation_cost.py``).
    * ``flip_affine``: FedMLP's released transform: a random rotation in +-10 degrees and
      a translation in +-2 % of the size per axis (``RandomAffine(10, (0.02, 0.02))``),
      then the flip.  **[choice]** The translation is continuous (torchvision rounds it
      to whole pixels, which at 32 px is -1, 0 or 1) and the rotation is bilinear with
      zero fill, torchvision's default fill on the un-normalised image.

    The random draws come from ``generator`` on the host (the same numbers on every device)
    and go to the device without a host synchronisation (``non_blocking``).  A translated or
    rotated batch comes back in ``memory_format``."""
    b, _, h, w = x.shape
    dev = x.device
    if kind == "flip_affine":
        ang = (torch.rand(b, generator=generator) * 2 - 1) * math.radians(AFFINE_DEGREES)
        d = (torch.rand(2, b, generator=generator) * 2 - 1) * (2 * AFFINE_TRANSLATE)  # grid units span 2
        c, s = ang.cos(), ang.sin()
        # the grid maps output to input: input = R^-1 (output - d), so the image is rotated
        # about its centre and then moved by d in the output frame (torchvision's order)
        theta = torch.stack(
            [torch.stack([c, s, -(c * d[0] + s * d[1])], 1), torch.stack([-s, c, -(-s * d[0] + c * d[1])], 1)], 1
        ).to(dev, x.dtype, non_blocking=True)
        grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
        x = torch.nn.functional.grid_sample(
            x, grid, mode="bilinear", padding_mode="zeros", align_corners=False
        ).contiguous(memory_format=memory_format)
    if "flip" in kind:
        flip = torch.rand(b, generator=generator).lt(0.5).to(dev, non_blocking=True)
        x = torch.where(flip.view(b, 1, 1, 1), x.flip(-1), x)
    if "shift" in kind:
        p = min(max(1, h // 8), h - 1, w - 1)  # reflection needs a pad smaller than the side
        off = torch.randint(0, 2 * p + 1, (2, b), generator=generator).to(dev, non_blocking=True)
        xp = torch.nn.functional.pad(x, (p, p, p, p), mode="reflect")
        rows = torch.arange(h, device=dev)[None, :] + off[0][:, None]  # [B, H]
        cols = torch.arange(w, device=dev)[None, :] + off[1][:, None]  # [B, W]
        bi = torch.arange(b, device=dev)[:, None, None]
        x = (
            xp.permute(0, 2, 3, 1)[bi, rows[:, :, None], cols[:, None, :]]
            .permute(0, 3, 1, 2)
            .contiguous(memory_format=memory_format)
        )
    return x
