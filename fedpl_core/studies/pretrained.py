"""The ImageNet start: does a paper's headline finding change when the backbone starts from
ImageNet weights instead of from scratch?

The papers start from ImageNet weights (FedMLP's ResNet-18, the DenseNet-121s of the
others); the notebooks' gpu profile trains those backbones from scratch, because their
ImageNet weights are downloaded at run time, which an offline GPU node cannot.  The one
offline stand-in is EfficientNet-Lite0 with the ImageNet weights of the ``pretrained`` extra
(:data:`fedpl_core.studies.parameters.PRETRAINED_BACKBONE`).  :func:`imagenet_start` runs a paper's
headline pair (its method and its main baseline) in the notebook's headline setting twice:
with the profile's backbone from scratch (the notebook's own runs, shared through the
results cache) and with the pretrained Lite0, and tables the gap for each.  Each study
module's ``imagenet_start`` names its pair and setting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..report.tables import paired_difference, verdict
from ..runs.experiment_config import ExperimentConfig
from ..runs.study import run_many
from .parameters import pretrained_backbone

#: Display names of the backbones in the table.
BACKBONE_NAMES = {
    "cnn": "small CNN",
    "resnet18": "ResNet-18",
    "densenet121": "DenseNet-121",
    "efficientnet_lite0": "EfficientNet-Lite0",
}


def settings_for(
    base: ExperimentConfig, setting: Mapping[str, Any] | None, backbone: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """``run_many`` settings of the two backbones: the headline ``setting`` (config overrides;
    None: the base config) as it is (from scratch, so that its runs are the notebook's) and
    with ``backbone``'s model and model options on top."""
    own = dict(setting or {})
    scratch = f"{BACKBONE_NAMES.get(base.model, base.model)}, " + (
        "ImageNet" if (base.model_kwargs or {}).get("pretrained") else "from scratch"
    )
    pre = f"{BACKBONE_NAMES.get(backbone['model'], backbone['model'])}, ImageNet"
    return {scratch: own, pre: {**own, **backbone}}


def jobs(
    base: ExperimentConfig,
    pair: Sequence[tuple[str, dict]],
    profile: str,
    setting: Mapping[str, Any] | None = None,
    verbose: bool = True,
    force: bool = False,
) -> dict[str, dict] | None:
    """The settings :func:`imagenet_start` runs ``pair`` in (:func:`settings_for`), or None
    where the profile does not run the pretrained backbone (unless ``force``) or its extra is
    missing (:func:`fedpl_core.studies.parameters.pretrained_backbone`, which prints why)."""
    if len(pair) != 2:
        raise ValueError(f"the headline pair is two methods (the paper's and its baseline), got {len(pair)}")
    backbone = pretrained_backbone(profile, verbose=verbose, force=force)
    return None if backbone is None else settings_for(base, setting, backbone)


def imagenet_start(
    base: ExperimentConfig,
    pair: Sequence[tuple[str, dict]],
    seeds: Sequence[int],
    results_dir: Any,
    profile: str,
    setting: Mapping[str, Any] | None = None,
    *,
    which: str = "final",
    metric: str = "auroc_mean",
    workers: int = 1,
    progress: bool = False,
    force: bool = False,
) -> pd.DataFrame | None:
    """The headline ``pair`` = ``[(method label, overrides), (baseline label, overrides)]`` on
    ``base`` with ``setting``, from scratch and from ImageNet (:func:`jobs`), ``seeds`` each,
    through :func:`~fedpl_core.runs.study.run_many` and its cache in ``results_dir``.

    Returns one row per backbone: the method's and the baseline's ``metric`` (x 100, mean ±
    SD over the seeds, model ``which``: ``"final"`` the last round, ``"best"`` the selected
    one), their paired difference (points, paired on the seed), its 95 % interval and
    p-value, and the verdict on the paper's claim "the method is above its baseline"
    (:func:`fedpl_core.report.tables.verdict`).  None (after one printed line) where the
    profile does not run the ImageNet start: smoke and cpu (unless ``force``), or the
    ``pretrained`` extra missing."""
    settings = jobs(base, pair, profile, setting, force=force)
    if settings is None:
        return None
    df = run_many(base, list(pair), list(seeds), results_dir, settings=settings, progress=progress, workers=workers)
    return gap_table(df, pair[0][0], pair[1][0], which=which, metric=metric)


def gap_table(df: pd.DataFrame, a: str, b: str, which: str = "final", metric: str = "auroc_mean") -> pd.DataFrame:
    """One row per setting of ``df`` (here: per backbone): ``a`` and ``b`` (mean ± SD x 100 of
    ``metric``), ``a - b`` paired on the seed (points), its 95 % CI, p and the verdict on
    "``a`` is above ``b``"."""
    rows = []
    for s in dict.fromkeys(df["setting"]):
        d = df[(df["setting"] == s) & (df["which"] == which)]
        vals = {lab: d[d["label"] == lab][metric] * 100 for lab in (a, b)}
        pd_ = paired_difference(df[df["setting"] == s], a, b, metric, which=which)
        rows.append(
            {
                "backbone": s,
                **{
                    lab: f"{v.mean():.1f} ± {v.std(ddof=1):.1f}" if len(v) > 1 else f"{v.mean():.1f}"
                    for lab, v in vals.items()
                },
                f"{a} - {b} (points)": round(pd_["diff"], 2),
                "95 % CI": f"{pd_['ci'][0]:.1f} to {pd_['ci'][1]:.1f}" if pd_.get("ci") else None,
                "p": pd_["p"],
                "verdict": verdict(pd_),
                "seeds": pd_["n"],
            }
        )
    return pd.DataFrame(rows).set_index("backbone")


__all__ = ["BACKBONE_NAMES", "settings_for", "jobs", "imagenet_start", "gap_table"]
