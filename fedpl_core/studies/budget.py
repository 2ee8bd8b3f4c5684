"""What a notebook's gpu profile costs on one GPU, before it runs.

:func:`gpu_estimate` turns the runs a notebook makes (their configs) into seconds: on paper
from FLOP counts (:data:`FORWARD_GFLOPS_224`), the published bf16 peak of an H100
(:data:`H100_BF16_TFLOPS`) and the stated assumptions (:data:`GPU_ASSUMPTIONS`), or, for a
backbone a GPU has timed (``python -m fedpl_core gpu-checks``, :data:`STEP_TIMES_FILE`), from
the measured step and evaluation times.  :func:`run_cost` is one run's work; a method's cost
factor is its class's ``train_cost``.  ``python tests/test_profile_runs.py --gpu-budget``
prints every notebook's estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Forward GFLOPs of one 224 x 224 grayscale image through the package's backbones (FedModel:
#: encoder + linear head), counted by ``torch.utils.flop_counter`` (2 FLOPs a multiply-add).
#: torchvision's published 1.82 (ResNet-18) and 2.87 (DenseNet-121) "GFLOPs" count
#: multiply-adds of a 3-channel image: x 2 gives these within 5 %.  Above 64 px (the
#: ImageNet stem) the count scales as (px / 224)^2: :func:`forward_gflops`.
FORWARD_GFLOPS_224 = {"resnet18": 3.47, "densenet121": 5.51, "efficientnet_lite0": 0.77}
#: H100 SXM's published dense bf16 tensor-core peak (NVIDIA's data sheet: 989 TFLOPS).
H100_BF16_TFLOPS = 989.0
#: The assumptions of :func:`gpu_estimate`, none of them measured on a GPU (no GPU was lent
#: when the gpu profile was sized):
#:
#: * ``utilisation``: the share of the bf16 peak a training or evaluation step reaches.
#:   MLPerf's ResNet-50 on H100 (DALI, large batches, tuned kernels) reaches about 9 %;
#:   eager PyTorch with batch 32 reaches less: 5 % (the 15-25 % often assumed for
#:   transformers is not reached by these convolutions and BatchNorm layers).
#: * ``step_floor_s``: the least time of one eager training step (forward, backward, Adam)
#:   whatever the batch: its kernels are launched one by one from Python.  DenseNet-121 has
#:   about 600 forward and 1,200 backward kernels, ResNet-18 about 150 and 300, at about
#:   10 us a launch; the step takes the larger of this floor and its FLOPs at
#:   ``utilisation``.  At batch 32 and 128 px the floor is the larger.
#: * ``eval_floor_s``: the same floor for one evaluation batch (forward only).
#: * ``run_overhead_s``: what a run costs besides its steps: building the model on the CPU
#:   (DenseNet-121: 0.13 s measured on this project's CPU), moving it, metrics, its result
#:   file.  The synthetic data are made once a process (about 1.4 ms an image at 128 px on
#:   one CPU core: seconds a notebook) and are not counted.
#:
#: A method's training cost relative to plain supervised training (3 forward passes a training
#: image: teachers, second views, look-aheads and local-data estimates cost more) is an
#: assumption too, stated on its class: :attr:`Method.train_cost <fedpl_core.methods.base.Method.train_cost>`.
GPU_ASSUMPTIONS: dict[str, Any] = {
    "utilisation": 0.05,
    # EfficientNet-Lite0: 16 blocks of depthwise and pointwise convolutions, BatchNorm and ReLU6
    # (about 200 forward kernels): between ResNet-18 and DenseNet-121
    "step_floor_s": {"cnn": 0.002, "resnet18": 0.005, "densenet121": 0.015, "efficientnet_lite0": 0.008},
    "eval_floor_s": {"cnn": 0.001, "resnet18": 0.002, "densenet121": 0.005, "efficientnet_lite0": 0.003},
    "run_overhead_s": 0.3,
}


def forward_gflops(model: str, image_size: int) -> float:
    """Forward GFLOPs of one image (:data:`FORWARD_GFLOPS_224` scaled by (px / 224)^2; the
    small CNN of the smoke and cpu profiles counts 0.01)."""
    if model not in FORWARD_GFLOPS_224:
        return 0.01
    return FORWARD_GFLOPS_224[model] * (image_size / 224) ** 2


_METHOD_FACTS: dict[str, tuple[float, bool]] = {}


def method_facts(method: str, method_kwargs: Mapping[str, Any] | None = None) -> tuple[float, bool]:
    """``(train_cost, personalised)`` of the method ``method`` with the options ``method_kwargs``,
    as its class says them: :attr:`~fedpl_core.methods.base.Method.train_cost` and whether it is
    scored with one model per client (``evaluation == "personalised"``: evaluated once a client)."""
    import json

    key = json.dumps([method, method_kwargs or {}], sort_keys=True, default=str)
    if key not in _METHOD_FACTS:
        from ..methods import get_method

        m = get_method(method, **(method_kwargs or {}))
        _METHOD_FACTS[key] = (float(m.train_cost), m.evaluation == "personalised")
    return _METHOD_FACTS[key]


def run_cost(cfg) -> dict[str, float]:
    """What one run of ``cfg`` (an :class:`~fedpl_core.runs.experiment_config.ExperimentConfig`) does, on
    paper, without loading its data: ``steps`` (training steps of ``batch_size``,
    x the method's ``train_cost``), ``train_images`` (training image passes, the same factor),
    ``eval_images`` and ``eval_batches`` (forward passes: test and validation sets at every
    evaluation, head warm-up epochs).  Every round trains every client (the profiles sample
    all of them); early stopping is not counted (the worst case)."""
    import math

    e = cfg.engine
    kw, dkw = cfg.partition_kwargs or {}, cfg.dataset_kwargs or {}
    if cfg.dataset == "fedpsl":
        k = 6 if dkw.get("table") == "IV" else 4
        sizes = kw.get("sizes")
        sizes = [dkw.get("pool", 1000)] * k if sizes is None else ([sizes] * k if isinstance(sizes, int) else sizes)
        n_train = sum(sizes) + (k - len(sizes)) * sizes[-1]
        n_test = (dkw.get("test_pos", 300) + dkw.get("test_neg", 300)) * (8 if k == 6 else 6)
    else:
        k = 2 if cfg.partition == "by_source" else (cfg.num_clients or 1)
        n_train = cfg.n_train
        n_test = cfg.n_test * (2 if cfg.dataset == "surgical-noniid" else 1) + int(dkw.get("n_external", 0))
    if cfg.partition == "all":
        k = 1
    factor, personal = method_facts(cfg.method, cfg.method_kwargs)
    held = n_train * e.client_val_fraction
    if e.local_iters:
        per_round_steps = k * e.local_iters * e.client_fraction
        per_round_images = per_round_steps * e.batch_size
    else:
        per_round_images = (n_train - held) * e.local_epochs * e.client_fraction
        per_round_steps = per_round_images / e.batch_size + k
    evaluations = math.ceil(e.rounds / e.eval_every)
    eval_images = evaluations * (n_test * (k if personal else 1) + held)
    warmup = float((cfg.method_kwargs or {}).get("warmup_epochs", 0) or 0) * (n_train - held)
    eval_images += warmup
    return {
        "steps": factor * e.rounds * per_round_steps,
        "train_images": factor * e.rounds * per_round_images,
        "eval_images": eval_images,
        "eval_batches": eval_images / e.eval_batch_size + warmup / e.batch_size,
    }


def check_assumptions(assumptions: Mapping[str, Any] | None) -> dict[str, Any]:
    """:data:`GPU_ASSUMPTIONS` with ``assumptions`` replacing some, checked: an unknown name,
    a ``utilisation`` outside (0, 1], a floor or overhead that is negative, NaN or infinite is
    a ``ValueError`` naming it (an estimate of NaN or infinite seconds says nothing, and a
    budget compared with it is never exceeded)."""
    import math

    a = {**GPU_ASSUMPTIONS, **(assumptions or {})}
    unknown = sorted(set(a) - set(GPU_ASSUMPTIONS))
    if unknown:
        raise ValueError(f"unknown GPU assumption(s) {unknown}; known: {', '.join(GPU_ASSUMPTIONS)}")

    def number(value: Any, name: str, positive: bool = False) -> None:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value < 0 or (positive and value == 0):
            least = "above 0" if positive else "0 or more"
            raise ValueError(f"GPU assumption {name} must be a finite number {least}, got {value!r}")

    number(a["utilisation"], "utilisation", positive=True)
    if a["utilisation"] > 1:
        raise ValueError(f"GPU assumption utilisation is a share of the peak, at most 1, got {a['utilisation']!r}")
    number(a["run_overhead_s"], "run_overhead_s")
    for key in ("step_floor_s", "eval_floor_s"):
        if not isinstance(a[key], Mapping):
            raise ValueError(f"GPU assumption {key} maps a model to seconds, got {a[key]!r}")
        for model, v in a[key].items():
            number(v, f"{key}[{model!r}]")
    return a


def paper_seconds(
    model: str, image_size: int, batch_size: float, assumptions: Mapping[str, Any] | None = None, train: bool = True
) -> float:
    """Seconds of one training step (``train``; 3 forward passes an image) or one evaluation
    batch of ``batch_size`` images on one H100, on paper: the larger of its FLOPs at
    ``utilisation`` of :data:`H100_BF16_TFLOPS` and the step's floor (:data:`GPU_ASSUMPTIONS`,
    ``assumptions`` replacing some)."""
    a = check_assumptions(assumptions)
    flops = (3 if train else 1) * forward_gflops(model, image_size) * 1e9 * batch_size
    floor = a["step_floor_s" if train else "eval_floor_s"].get(model, 0.005 if train else 0.002)
    return max(flops / (a["utilisation"] * H100_BF16_TFLOPS * 1e12), floor)


def assumed_step(model: str, image_size: int, batch_size: int) -> dict[str, float]:
    """What the gpu profile assumed for what ``gpu-checks`` measures: ``train_step_s`` (one
    training step) and ``eval512_s`` (512 images in batches of the engine's
    ``eval_batch_size``), by :func:`paper_seconds`."""
    import math

    from ..fl.engine_config import EngineConfig

    eb = EngineConfig().eval_batch_size
    return {
        "train_step_s": paper_seconds(model, image_size, batch_size),
        "eval512_s": math.ceil(512 / eb) * paper_seconds(model, image_size, min(eb, 512), train=False),
    }


def gpu_estimate(
    configs, assumptions: Mapping[str, Any] | None = None, measured: Mapping[str, Any] | None | bool = True
) -> dict[str, float]:
    """Seconds on one H100 of the runs ``configs`` (each run id once: ``run_many`` caches a
    repeated run).  On paper, by :data:`GPU_ASSUMPTIONS` (``assumptions`` replaces some): a
    training step takes the larger of its FLOPs (3 forward passes an image) at
    ``utilisation`` of :data:`H100_BF16_TFLOPS` and ``step_floor_s``; an evaluation batch the
    larger of its forward FLOPs and ``eval_floor_s``; each run adds ``run_overhead_s``.

    Measured, where a GPU has timed the run's backbone (``measured``: the step times that
    ``python -m fedpl_core gpu-checks`` wrote, :func:`measured_step_times`; True, the default:
    the checkout's :data:`STEP_TIMES_FILE` when it exists; None or False: on paper only): a
    training step takes the measured time of one step of its model at its image size and
    batch size (:func:`measured_step`), an evaluation image 1/512 of the measured 512-image
    evaluation.  The method's cost factor and ``run_overhead_s`` stay assumptions.

    Returns ``runs``, ``measured_runs`` (runs timed from measurements), ``steps``,
    ``train_images``, ``eval_images``, ``pflop`` (total PFLOPs), ``flop_s`` (the FLOPs alone at
    ``utilisation``), ``floor_s`` (the floors alone) and ``seconds`` (the estimate)."""
    a = check_assumptions(assumptions)
    if measured is True:
        measured = measured_step_times()
    rate = a["utilisation"] * H100_BF16_TFLOPS * 1e12
    seen: dict[str, Any] = {}
    for cfg in configs:
        seen.setdefault(cfg.run_id(), cfg)
    out = dict.fromkeys(
        ("steps", "train_images", "eval_images", "pflop", "flop_s", "floor_s", "seconds", "measured_runs"), 0.0
    )
    for cfg in seen.values():
        c = run_cost(cfg)
        g = forward_gflops(cfg.model, cfg.image_size) * 1e9
        step_floor = a["step_floor_s"].get(cfg.model, 0.005)
        eval_batch_images = c["eval_images"] / max(c["eval_batches"], 1e-9)
        eval_floor = a["eval_floor_s"].get(cfg.model, 0.002)
        flops = 3 * g * c["train_images"] + g * c["eval_images"]
        out["steps"] += c["steps"]
        out["train_images"] += c["train_images"]
        out["eval_images"] += c["eval_images"]
        out["pflop"] += flops / 1e15
        out["flop_s"] += flops / rate
        out["floor_s"] += c["steps"] * step_floor + c["eval_batches"] * eval_floor
        timed = measured_step(measured, cfg.model, cfg.image_size, cfg.engine.batch_size) if measured else None
        if timed is not None:
            out["measured_runs"] += 1
            out["seconds"] += c["steps"] * timed["train_step_s"] + c["eval_images"] * timed["eval512_s"] / 512
        else:
            out["seconds"] += c["steps"] * paper_seconds(cfg.model, cfg.image_size, cfg.engine.batch_size, a) + c[
                "eval_batches"
            ] * paper_seconds(cfg.model, cfg.image_size, eval_batch_images, a, train=False)
    out["runs"] = float(len(seen))
    out["seconds"] += a["run_overhead_s"] * len(seen)
    return out


# =========================================================================== measured step times
#: The sizes at which ``gpu-checks`` times a training step and a 512-image evaluation of each
#: backbone (its ``step-times`` step): the gpu profile's (model, image size, batch size), bf16
#: autocast and channels-last on CUDA.  DenseNet-121 at batch 64 is Surgical Aggregation's
#: batch; EfficientNet-Lite0 is the pretrained second backbone of each paper's headline pair.
STEP_TIME_SIZES: tuple[tuple[str, int, int], ...] = (
    ("densenet121", 128, 32),
    ("densenet121", 128, 64),
    ("resnet18", 128, 32),
    ("efficientnet_lite0", 128, 32),
    ("cnn", 32, 32),
)
#: Where the measured step times live in a checkout, committed after a GPU session:
#: ``gpu-checks`` writes them there when it ran on CUDA, and :func:`gpu_estimate` reads them.
STEP_TIMES_FILE = "figures/gpu/step_times.json"


def measured_step_times(path: Any = None) -> dict[str, Any] | None:
    """The step times ``gpu-checks`` measured (``path``; None: the checkout's
    :data:`STEP_TIMES_FILE`), or None when there are none.  Only times measured on CUDA
    count for the H100 estimate: a file measured on a CPU (a rehearsal) is read only when
    named.  A file that is not such a record is a ``ValueError`` naming it."""
    import json
    import math
    from pathlib import Path

    from ..base.paths import checkout

    if path is None:
        root = checkout()
        if root is None or not (root / STEP_TIMES_FILE).is_file():
            return None
        path = root / STEP_TIMES_FILE
        named = False
    else:
        named = True
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"step times {path}: not readable JSON ({type(e).__name__})") from None
    rows = d.get("rows") if isinstance(d, dict) else None
    keys = ("model", "image_size", "batch_size", "train_step_s", "eval512_s")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and all(k in r for k in keys) for r in rows):
        raise ValueError(f"step times {path}: not a gpu-checks step-time record (rows of {', '.join(keys)})")
    for r in rows:  # JSON reads NaN and Infinity: a time that is not a finite positive number times nothing
        if r["train_step_s"] is None:
            continue  # a backbone that could not be timed (measured_step skips it)
        for k in ("train_step_s", "eval512_s"):
            v = r[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(
                    f"step times {path}: {k} of {r['model']} must be a finite number of seconds, got {v!r}"
                )
    if not named and d.get("device_type") != "cuda":
        return None
    return d


def measured_step(
    measured: Mapping[str, Any] | None, model: str, image_size: int, batch_size: int
) -> dict[str, float] | None:
    """``{"train_step_s", "eval512_s"}`` of ``model`` from ``measured`` (:func:`measured_step_times`):
    the row of the same image size and batch size, else **[choice]** the row of the same
    image size with the nearest batch size, its step time scaled by the ratio of the batch
    sizes when larger (never made cheaper: a step at the launch floor costs the same for
    fewer images); None when the model was not timed at that image size."""
    if not measured:
        return None
    rows = [
        r
        for r in measured["rows"]
        if r["model"] == model and int(r["image_size"]) == int(image_size) and r.get("train_step_s") is not None
    ]
    if not rows:
        return None
    r = min(rows, key=lambda r: (abs(int(r["batch_size"]) - batch_size), -int(r["batch_size"])))
    scale = max(1.0, batch_size / int(r["batch_size"]))
    return {"train_step_s": float(r["train_step_s"]) * scale, "eval512_s": float(r["eval512_s"])}
