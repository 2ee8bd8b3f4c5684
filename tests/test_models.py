import pytest
import torch
from torch import nn

from fedpl_core.nn.models import build_model, is_bn_key


@pytest.mark.parametrize("name", ["cnn", "resnet18", "densenet121"])
@pytest.mark.parametrize("channels,size", [(1, 28), (3, 64)])
def test_encoder_head_split_any_size_and_channels(name, channels, size):
    m = build_model(name, num_classes=5, in_channels=channels, image_size=size).eval()
    x = torch.randn(2, channels, size, size)
    logits, feats = m.forward_features(x)
    assert feats.shape == (2, m.feature_dim) and logits.shape == (2, 5)
    assert torch.allclose(m(x), m.head(m.encoder(x)))
    assert isinstance(m.head, nn.Linear) and {"head.weight", "head.bias"} <= set(m.state_dict())


@pytest.mark.parametrize("name", ["cnn", "resnet18", "densenet121"])
def test_groupnorm_replaces_every_batchnorm(name):
    m = build_model(name, 3, 1, 32, norm="gn")
    assert not any(isinstance(x, nn.BatchNorm2d) for x in m.modules())
    assert any(isinstance(x, nn.GroupNorm) for x in m.modules())
    assert not any(is_bn_key(k, m) for k in m.state_dict())
    bn = build_model(name, 3, 1, 32)
    assert any(is_bn_key(k, bn) for k in bn.state_dict()) and not is_bn_key("head.weight", bn)


def test_small_inputs_get_a_cifar_stem_large_ones_the_imagenet_stem():
    small = build_model("resnet18", 2, 1, 32)
    large = build_model("resnet18", 2, 1, 224)
    assert small.encoder.conv1.stride == (1, 1) and isinstance(small.encoder.maxpool, nn.Identity)
    assert large.encoder.conv1.stride == (2, 2) and large.encoder.conv1.in_channels == 1


def test_local_weights_file_and_clear_errors(tmp_path, monkeypatch):
    import torchvision

    sd = torchvision.models.resnet18(weights=None).state_dict()
    sd["conv1.weight"] = torch.full_like(sd["conv1.weight"], 0.5)
    torch.save(sd, tmp_path / "r18.pth")
    m = build_model("resnet18", 2, 1, 224, weights_path=str(tmp_path / "r18.pth"))
    # RGB weights summed into one gray channel: 3 * 0.5
    assert torch.allclose(m.encoder.conv1.weight, torch.full_like(m.encoder.conv1.weight, 1.5))
    with pytest.raises(FileNotFoundError, match="weights file not found"):
        build_model("resnet18", 2, weights_path=str(tmp_path / "missing.pth"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "empty-hub"))

    def offline(*a, **k):
        raise OSError("no network")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", offline)
    with pytest.raises(RuntimeError, match="ImageNet weights for resnet18 are not available"):
        build_model("resnet18", 2, pretrained=True)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("vit", 2)
