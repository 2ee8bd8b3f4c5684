"""Options checked before any work: from Python (the config's own checks, which the command
line shares), from the notebooks' parameters (papermill) and in the data, partition and
method options.  A bad value is one line naming it; the checks live outside the code a
run's fingerprint reads (``fedpl_core.base.validation``, ``fedpl_core.studies``)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fedpl_core.base.validation import (
    FLOAT32_TINY,
    ConfigError,
    check_device_available,
    check_float32_value,
    check_kwargs_types,
)
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.studies import budget
from fedpl_core.studies.parameters import apply_parameters, notebook_parameters

ROOT = Path(__file__).resolve().parent.parent
TABLE = {p: {"seeds": [0], "rounds": 2, "lr": 1e-3} for p in ("smoke", "cpu", "gpu", "full")}


# ------------------------------------------------------------------ learning rates float32 cannot step by
@pytest.mark.parametrize("lr", [1e-300, 1e-46, 1e-45, 1e-39, "1e-300"])
def test_a_learning_rate_below_float32s_smallest_normal_is_refused(lr):
    """1e-300 and 1e-46 are zero in float32, 1e-45 and 1e-39 denormal: nothing trains, and all
    gave the same AUROC.  Refused from the config (Python and the command line) and from papermill."""
    for make in (lambda: ExperimentConfig.from_dict({"lr": lr}), lambda: EngineConfig(lr=lr)):
        with pytest.raises(ConfigError, match=r"^lr .* below 1\.18e-38, float32's smallest normal number"):
            make()
    with pytest.raises(ConfigError, match=r"^lr .* below 1\.18e-38"):
        notebook_parameters(lr=lr)


@pytest.mark.parametrize("lr", [1e-7, 1e-12, FLOAT32_TINY, 1e-3])
def test_small_legitimate_learning_rates_pass(lr):
    assert ExperimentConfig.from_dict({"lr": lr}).engine.lr == lr
    assert notebook_parameters(lr=lr)["lr"] == lr


def test_the_bound_is_float32s_smallest_normal_number():
    torch = pytest.importorskip("torch")
    assert FLOAT32_TINY == torch.finfo(torch.float32).tiny
    check_float32_value(0.0, "weight_decay")  # zero is a value, not a step too small
    with pytest.raises(ConfigError, match="weight_decay"):
        EngineConfig(weight_decay=1e-40)


def test_a_method_step_size_float32_cannot_hold_is_refused():
    with pytest.raises(ConfigError, match=r"^method_kwargs warmup_lr 1e-300 is below"):
        ExperimentConfig(method="fedlsm", method_kwargs={"warmup_lr": 1e-300})


# ------------------------------------------------------------------ a device this machine lacks
@pytest.fixture
def no_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_a_device_this_machine_lacks_is_refused_in_one_line(no_gpu, device):
    with pytest.raises(ConfigError, match=r"^device .* is not available on this machine.*use auto or cpu$"):
        check_device_available(device)
    with pytest.raises(ConfigError, match=r"^device .* is not available"):
        notebook_parameters(device=device)
    with pytest.raises(ConfigError, match=r"^device .* is not available"):
        apply_parameters(TABLE, "smoke", device=device, cells=[])
    # the config itself stays readable: one written on a GPU machine is read on a CPU one
    assert ExperimentConfig.from_dict({"device": device}).engine.device == device


def test_a_cuda_index_past_the_gpus_is_refused(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    check_device_available("cuda:0")
    with pytest.raises(ConfigError, match=r"^device 'cuda:1' is not available: this machine has 1 CUDA device"):
        check_device_available("cuda:1")


def test_the_devices_every_machine_has_pass():
    assert notebook_parameters(device="cpu")["device"] == "cpu"
    assert notebook_parameters(device="auto")["device"] == "auto"


# ------------------------------------------------------------------ dataset, partition and split options
@pytest.mark.parametrize(
    "dataset, kwargs, message",
    [
        ("nih", {"max_images": "ten"}, r"^dataset_kwargs max_images must be an integer, got 'ten'$"),
        ("nih", {"image_size": 64}, r"^dataset_kwargs 'image_size': set it as the config field image_size, not in"),
        ("synthetic-cxr", {"image_size": 64}, r"set it as the config field image_size, not in dataset_kwargs$"),
        ("synthetic-cxr", {"n_train": 5}, r"set it as the config field n_train"),
        ("nih", {"seed": 1}, r"set it as the config field data_seed"),
        ("nih", {"cache_dir": 5}, r"^dataset_kwargs cache_dir must be a path \(text\), got int 5$"),
        (
            "nih",
            {"max_imags": 5},
            r"^data set 'nih' \(dataset_kwargs\): got an unexpected option 'max_imags'; its options are .*max_images",
        ),
        ("synthetic-cxr", {"max_images": 5}, r"got an unexpected option 'max_images'; its options are .*strength"),
        ("medmnist:chestmnist", {"one_class": "yes please"}, r"^dataset_kwargs one_class must be a boolean"),
        ("fedpsl", {"pool": "many"}, r"^dataset_kwargs pool must be an integer"),
    ],
)
def test_dataset_kwargs_are_checked_against_the_source_before_any_work(dataset, kwargs, message):
    root = None if dataset.startswith("synthetic") or dataset == "fedpsl" else "/nonexistent"
    with pytest.raises(ConfigError, match=message):
        ExperimentConfig(dataset=dataset, data_root=root, dataset_kwargs=kwargs)


@pytest.mark.parametrize(
    "dataset, kwargs",
    [
        ("synthetic-cxr", {"strength": 0.5, "external_domain": 1}),
        ("synthetic-skin", {"channels": 3, "priors": {"MEL": 0.5}}),
        ("nih", {"max_images": 10, "cache_dir": "/tmp/c", "use_cache": False, "skip_missing": True}),
        ("medmnist:chestmnist", {"max_images": 10, "mmap": True}),
        ("fedpsl", {"pool": 100, "table": "I"}),
    ],
)
def test_the_options_a_source_takes_pass(dataset, kwargs):
    root = None if dataset.startswith("synthetic") or dataset == "fedpsl" else "/nonexistent"
    cfg = ExperimentConfig(dataset=dataset, data_root=root, dataset_kwargs=kwargs)
    assert cfg.dataset_kwargs == kwargs


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"partition": "dirichlet", "partition_kwargs": {"alpah": 1}},
            r"^partition 'dirichlet' \(partition_kwargs\): got an unexpected option 'alpah'",
        ),
        ({"partition": "dirichlet", "partition_kwargs": {"alpha": "x"}}, r"^partition_kwargs alpha must be a number"),
        ({"partition": "iid", "partition_kwargs": {"num_clients": 3}}, r"set it as the config field num_clients"),
        (
            {"partition": "all", "split": "dirichlet", "split_kwargs": {"alpah": 1}},
            r"^split 'dirichlet' \(split_kwargs\): got an unexpected option",
        ),
        ({"partition": "all", "split": "dirichlet", "split_kwargs": {"alpha": float("nan")}}, r"must be a finite"),
        ({"partition": "missing_classes", "split": "iid", "partition_kwargs": {"mising": 2}}, r"rule 'missing_cl"),
    ],
)
def test_partition_and_split_options_are_checked_before_any_work(fields, message):
    with pytest.raises(ConfigError, match=message):
        ExperimentConfig(**fields)


def test_the_partition_options_the_studies_use_pass():
    ExperimentConfig(partition="dirichlet", partition_kwargs={"alpha": 0.5, "seed": 3})
    ExperimentConfig(partition="missing_classes", split="dirichlet", split_kwargs={"alpha": 1.0})
    ExperimentConfig(dataset="fedpsl", partition="explicit", partition_kwargs={"take": "first", "name": "t1"})


# ------------------------------------------------------------------ method options that cannot work
@pytest.mark.parametrize("value", [float("nan"), float("inf"), "nan"])
def test_a_method_option_that_is_not_finite_is_refused_by_the_config(value):
    """A declared range refuses it in the method's words (``option_ranges``), now when the
    config is made; an option without one is refused as not finite."""
    with pytest.raises(ConfigError, match=r"^method 'fedprox': option mu must be >=0"):
        ExperimentConfig(method="fedprox", method_kwargs={"mu": value})

    def plugin_method(weight: float = 1.0): ...  # a method of a plugin, with no declared range

    with pytest.raises(ConfigError, match=r"^method_kwargs weight must be a finite number"):
        check_kwargs_types(plugin_method, {"weight": value}, "method_kwargs")


def test_fedlsm_shares_of_d_l_and_d_h_above_the_whole_are_refused():
    with pytest.raises(ConfigError, match=r"n_l \(0\.6\) \+ n_h \(0\.6\) add up to more than 1"):
        ExperimentConfig(method="fedlsm", method_kwargs={"n_l": 0.6, "n_h": 0.6})
    ExperimentConfig(method="fedlsm", method_kwargs={"n_l": 0.3, "n_h": 0.6})  # shares that fit
    ExperimentConfig(method="fedlsm", method_kwargs={"n_l": 50, "n_h": 0.6})  # a count: a client's size decides


# ------------------------------------------------------------------ workers beyond the cores
def test_workers_beyond_the_cores_are_capped_with_a_warning():
    from fedpl_core.base.validation import machine_cores

    cores = machine_cores()
    with pytest.warns(UserWarning, match=rf"workers {cores + 5} is more than the {cores} CPU core"):
        assert notebook_parameters(workers=cores + 5)["workers"] == cores
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert notebook_parameters(workers=1)["workers"] == 1


# ------------------------------------------------------------------ budgets that are not finite
@pytest.mark.parametrize(
    "assumptions, message",
    [
        ({"utilisation": math.nan}, "utilisation"),
        ({"utilisation": 0}, "utilisation"),
        ({"utilisation": 2.0}, "at most 1"),
        ({"run_overhead_s": math.inf}, "run_overhead_s"),
        ({"step_floor_s": {"cnn": -1.0}}, r"step_floor_s\['cnn'\]"),
        ({"utilisaton": 0.1}, "unknown GPU assumption"),
    ],
)
def test_gpu_assumptions_that_are_not_finite_or_cannot_be_are_refused(assumptions, message):
    cfg = ExperimentConfig.from_dict({"rounds": 1, "n_train": 100, "n_test": 50})
    with pytest.raises(ValueError, match=message):
        budget.gpu_estimate([cfg], assumptions, measured=None)


def test_measured_step_times_that_are_not_finite_are_refused(tmp_path):
    row = {"model": "cnn", "image_size": 32, "batch_size": 32, "train_step_s": math.nan, "eval512_s": 0.01}
    path = tmp_path / "times.json"
    path.write_text(json.dumps({"device_type": "cuda", "rows": [row]}))  # json writes NaN
    with pytest.raises(ValueError, match=r"train_step_s of cnn must be a finite number of seconds"):
        budget.measured_step_times(path)


# ------------------------------------------------------------------ papermill: a bad value in one line
def test_a_bad_parameter_value_renders_as_one_line_in_a_kernel():
    """What IPython shows for an exception with ``_render_traceback_``: the notebook's last
    line is the whole error, as for a misspelt name; type and message are unchanged."""
    with pytest.raises(ConfigError) as info:
        apply_parameters(TABLE, "smoke", rounds="abc", cells=[])
    assert info.value._render_traceback_() == ["fedpl: error: rounds must be an integer, got 'abc'"]
    with pytest.raises(ValueError) as info:
        apply_parameters(TABLE, "tpu", cells=[])
    assert info.value._render_traceback_() == [
        "fedpl: error: unknown profile 'tpu': choose one of smoke, cpu, paper, gpu, full"
    ]


@pytest.mark.notebook
def test_papermill_shows_a_bad_value_in_one_line(tmp_path):
    """``-p rounds abc`` ended in a 47-line traceback through the package; now in the one
    line a misspelt name gets (the other bad values take the same path: tests above)."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "00_introduction.ipynb", as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    nb.cells = nb.cells[: i + 2]  # the parameters and the setup cell that reads them
    nbformat.write(nb, tmp_path / "head.ipynb")
    env = {
        **os.environ,
        "FEDPL_FIGURES": str(tmp_path / "figures"),
        "FEDPL_RESULTS": str(tmp_path / "results"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    out = tmp_path / "out.ipynb"
    p = subprocess.run(
        [sys.executable, "-m", "papermill", str(tmp_path / "head.ipynb"), str(out), "-p", "profile", "smoke"]
        + ["-p", "rounds", "abc", "--cwd", str(ROOT)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode != 0
    errors = [
        o
        for c in nbformat.read(out, as_version=4).cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]
    assert len(errors) == 1
    assert errors[0]["traceback"] == ["fedpl: error: rounds must be an integer, got 'abc'"]
