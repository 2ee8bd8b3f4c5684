"""uint8 image batches -> normalised (optionally augmented) float batches, vectorised.

The engine keeps the training images once, as uint8, and turns each minibatch into
floats here, on the device, with the client's seeded generator for augmentation.
"""
from __future__ import annotations

import torch

NORMALIZE = ("fixed", "imagenet", "instance")
AUGMENT = ("none", "flip", "shift", "flip_shift")
_IMAGENET = {3: ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), 1: ([0.449], [0.226])}


class Preprocess:
    """``fixed``: (x/255 - 0.5) / 0.25; ``imagenet``: ImageNet mean/std (grey: their
    mean); ``instance``: per-image (x - mean) / std (FedPSL).  ``augment``: random
    horizontal flips and/or translations of up to 1/8 of the size (training only)."""

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
            self._stats[key] = (torch.tensor(mean, device=device).view(1, -1, 1, 1),
                                torch.tensor(std, device=device).view(1, -1, 1, 1))
        return self._stats[key]

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None, train: bool = False) -> torch.Tensor:
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        if x.dtype == torch.uint8:  # one pass: uint8 -> float32 / 255 into a new tensor
            x = torch.div(x, 255.0, out=torch.empty(x.shape, dtype=torch.float32, device=x.device,
                                                    memory_format=fmt if x.dim() == 4 else torch.contiguous_format))
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


def augment_batch(x: torch.Tensor, kind: str, generator: torch.Generator | None,
                  memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
    """Random horizontal flips and/or integer translations (zero padding), per sample;
    a translated batch comes back in ``memory_format``."""
    b, _, h, w = x.shape
    dev = x.device
    if "flip" in kind:
        flip = torch.rand(b, generator=generator).lt(0.5).to(dev)
        x = torch.where(flip.view(b, 1, 1, 1), x.flip(-1), x)
    if "shift" in kind:
        p = max(1, h // 8)
        off = torch.randint(0, 2 * p + 1, (2, b), generator=generator).to(dev)
        xp = torch.nn.functional.pad(x, (p, p, p, p))
        rows = (torch.arange(h, device=dev)[None, :] + off[0][:, None])  # [B, H]
        cols = (torch.arange(w, device=dev)[None, :] + off[1][:, None])  # [B, W]
        bi = torch.arange(b, device=dev)[:, None, None]
        x = xp.permute(0, 2, 3, 1)[bi, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2).contiguous(memory_format=memory_format)
    return x
