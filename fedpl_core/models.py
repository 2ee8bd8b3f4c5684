"""Models split into an encoder and a linear classification head.

Every model in fedpl is a :class:`FedModel`: ``features = model.encoder(x)`` (shape
``[B, d]``) and ``logits = model.head(features)`` with ``model.head`` an
``nn.Linear(d, C)``.  Methods aggregate the head row by row (row ``c`` of
``head.weight`` with ``head.bias[c]`` is the class-``c`` "proxy") and use the features
as prototypes, so the split is part of the contract.  State-dict keys of the head are
always ``head.weight`` and ``head.bias``.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HEAD_KEYS = ("head.weight", "head.bias")
MODELS = ("cnn", "resnet18", "densenet121")


class FedModel(nn.Module):
    """Encoder + linear head."""

    def __init__(self, encoder: nn.Module, feature_dim: int, num_classes: int):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(feature_dim, num_classes)
        self.feature_dim = feature_dim
        self.num_classes = num_classes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``(logits, features)``."""
        f = self.encoder(x)
        return self.head(f), f


def _norm(kind: str, channels: int) -> nn.Module:
    if kind == "bn":
        return nn.BatchNorm2d(channels)
    if kind == "gn":
        return nn.GroupNorm(min(32, channels // 4) or 1, channels)
    raise ValueError(f"unknown norm {kind!r}; use 'bn' or 'gn'")


class SmallCNN(nn.Sequential):
    """The CPU default: four conv-norm-ReLU blocks, global average pooling.

    Widths ``w, 2w, 4w, 4w`` (``w = 32`` gives 128 features, ~0.29 M parameters); each
    block after the first halves the resolution, so it works at any size >= 16 px.
    """

    def __init__(self, in_channels: int = 1, width: int = 32, norm: str = "bn"):
        widths = [width, 2 * width, 4 * width, 4 * width]
        layers: list[nn.Module] = []
        c = in_channels
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(c, w, 3, stride=1 if i == 0 else 2, padding=1, bias=False),
                       _norm(norm, w), nn.ReLU(inplace=True)]
            c = w
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        super().__init__(*layers)
        self.out_features = c


def _replace_bn_with_gn(module: nn.Module) -> None:
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, _norm("gn", child.num_features))
        else:
            _replace_bn_with_gn(child)


def _first_conv_channels(conv: nn.Conv2d, in_channels: int) -> nn.Conv2d:
    """A copy of ``conv`` taking ``in_channels``; pre-trained RGB weights are summed to gray."""
    if conv.in_channels == in_channels:
        return conv
    new = nn.Conv2d(in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                    conv.padding, bias=conv.bias is not None)
    with torch.no_grad():
        if in_channels == 1:
            new.weight.copy_(conv.weight.sum(1, keepdim=True))
        else:
            new.weight.copy_(conv.weight.mean(1, keepdim=True).repeat(1, in_channels, 1, 1))
    return new


def _torchvision(name: str, pretrained: bool, weights_path: str | None) -> nn.Module:
    import torchvision.models as tvm

    ctor = getattr(tvm, name)
    net = ctor(weights=None)
    if weights_path:
        p = Path(weights_path)
        if not p.is_file():
            raise FileNotFoundError(f"weights file not found: {p}")
        sd = torch.load(p, map_location="cpu", weights_only=True)
        net.load_state_dict(sd.get("state_dict", sd) if isinstance(sd, dict) else sd)
    elif pretrained:
        weights = tvm.get_model_weights(name).DEFAULT
        try:
            net = ctor(weights=weights)
        except Exception as e:  # offline, no cached file
            raise RuntimeError(
                f"ImageNet weights for {name} are not available ({type(e).__name__}: {e}). "
                "This machine may be offline: put the file in the torch hub cache "
                f"($TORCH_HOME/hub/checkpoints/{Path(weights.url).name}) or pass weights_path."
            ) from None
    return net


def build_model(name: str = "cnn", num_classes: int = 14, in_channels: int = 1,
                image_size: int = 32, norm: str = "bn", pretrained: bool = False,
                weights_path: str | None = None, width: int = 32) -> FedModel:
    """Build an encoder + linear head model.

    Args:
        name: ``"cnn"`` (:class:`SmallCNN`), ``"resnet18"`` or ``"densenet121"``
            (torchvision, random init by default).
        in_channels: 1 (grayscale) or 3.
        image_size: for the torchvision models an input below 64 px gets a CIFAR-style
            stem (3x3 stride-1 first convolution, no max-pool) so that small synthetic
            images are not pooled away; 64 px and above keep the ImageNet stem.
        norm: ``"bn"`` (BatchNorm) or ``"gn"`` (GroupNorm, e.g. for FedBN-free setups).
        pretrained: ImageNet weights through torchvision (needs the cached file offline).
        weights_path: a local state-dict file for the torchvision backbone.
    """
    if name == "cnn":
        enc = SmallCNN(in_channels, width, norm)
        return FedModel(enc, enc.out_features, num_classes)
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {MODELS}")
    net = _torchvision(name, pretrained, weights_path)
    small = image_size < 64
    if name == "resnet18":
        conv = net.conv1
        if small:
            conv = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            net.maxpool = nn.Identity()
        net.conv1 = _first_conv_channels(conv, in_channels)
        dim = net.fc.in_features
        net.fc = nn.Identity()
        encoder: nn.Module = net
    else:  # densenet121
        f = net.features
        if small:
            f.conv0 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            f.pool0 = nn.Identity()
        f.conv0 = _first_conv_channels(f.conv0, in_channels)
        dim = net.classifier.in_features
        encoder = nn.Sequential(f, nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    if norm == "gn":
        _replace_bn_with_gn(encoder)
    elif norm != "bn":
        raise ValueError(f"unknown norm {norm!r}; use 'bn' or 'gn'")
    return FedModel(encoder, dim, num_classes)


def is_bn_key(key: str, model: nn.Module) -> bool:
    """True for the parameters and buffers of BatchNorm layers (FedBN keeps them local)."""
    mod_name = key.rsplit(".", 1)[0]
    mod = dict(model.named_modules()).get(mod_name)
    return isinstance(mod, nn.modules.batchnorm._BatchNorm)
