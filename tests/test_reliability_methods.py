"""Issue 24, the methods' side: every registered method runs with a client validation
split and partial participation, resumes to identical numbers, refuses a checkpoint that
does not fit, stops on a loss that explodes, and refuses out-of-range options.  Each test
failed on the code before the fix."""

import math
import os
import sys
import warnings

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import FLAGS, cli, one_error_line, tiny  # noqa: E402

from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.fl.federation import DivergenceError  # noqa: E402
from fedpl_core.methods import METHODS, available_methods  # noqa: E402
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run  # noqa: E402

NAMES = available_methods()
TIME_KEYS = ("train_time", "eval_time")


def config(name: str, **engine) -> ExperimentConfig:
    """The tiny setting (3 classes, 28 px, 240 images, width-8 CNN, 2 rounds); a
    single-label method gets the synthetic skin data (7 classes) instead."""
    eng = EngineConfig(**{"rounds": 2, "batch_size": 32, "progress": False, **engine})
    if "multilabel" in METHODS[name].tasks:
        return tiny(method=name, engine=eng)
    return tiny(method=name, dataset="synthetic-skin", classes=None, engine=eng)


def numbers(history) -> str:
    """Every number of the history but the timings (``repr``: exact, NaN equals NaN)."""
    return repr([{k: v for k, v in h.items() if k not in TIME_KEYS} for h in history])


# ------------------------------------------------------------ 1. a client validation split
@pytest.mark.parametrize("fraction", [0.5, 1.0])
@pytest.mark.parametrize("name", NAMES)
def test_every_method_runs_with_a_validation_split(name, fraction):
    """The split is scored for every client, sampled or not, before or after its first
    round, by the supervised loss alone (no per-round state)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run(config(name, client_val_fraction=0.2, client_fraction=fraction))
    losses = [h["val_loss"] for h in res.history]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)


# ------------------------------------------------------------ 2. resume
@pytest.mark.parametrize("name", NAMES)
def test_every_method_resumes_to_identical_numbers(tmp_path, name):
    """Interrupted after round 1 of 2 and resumed from the checkpoint: the same history
    and the same global arrays as the run left alone (validation split, partial
    participation, augmentation, kept optimizer state)."""
    cfg = config(
        name,
        client_val_fraction=0.2,
        client_fraction=0.5,
        augment="flip_shift",
        optimizer_state="keep",
        checkpoint_every=1,
    )
    ck = tmp_path / "run.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = build_simulation(cfg)
        full.run()
        build_simulation(cfg, checkpoint_path=ck).run(rounds=1)  # "killed" after round 1
        resumed = build_simulation(cfg, checkpoint_path=ck)
        resumed.load_checkpoint(ck)
        assert resumed.round == 1
        resumed.run()
    assert numbers(resumed.history) == numbers(full.history)
    g, h = resumed.server.global_state, full.server.global_state
    assert g.keys() == h.keys() and all(torch.equal(g[k], h[k]) for k in g)


@pytest.mark.parametrize("name", NAMES)
def test_writing_checkpoints_leaves_every_methods_numbers_alone(tmp_path, name):
    """A run that writes a checkpoint after every round (the papers' schedules keep one)
    gives the same history and global arrays as the run that writes none."""
    cfg = config(name, augment="flip_shift", checkpoint_every=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = build_simulation(cfg)
        plain.run()
        saving = build_simulation(cfg, checkpoint_path=tmp_path / "run.ckpt")
        saving.run()
    assert (tmp_path / "run.ckpt").exists()
    assert numbers(saving.history) == numbers(plain.history)
    g, h = saving.server.global_state, plain.server.global_state
    assert g.keys() == h.keys() and all(torch.equal(g[k], h[k]) for k in g)


# ------------------------------------------------------------ 3. a well-formed but wrong checkpoint
def redone(tmp_path, cfg, blob, needle):
    """``blob`` planted as the run's checkpoint: a warning naming what does not fit, and
    a fresh run (both rounds; the checkpoint removed when the run is done)."""
    ck = tmp_path / f"{cfg.run_id()}.ckpt"
    torch.save(blob, ck)
    with pytest.warns(UserWarning, match=f"does not fit this run: {needle}.*starts again from round 0"):
        res = run(cfg, tmp_path)
    assert [h["round"] for h in res.history] == [1, 2] and not ck.exists()
    return res


def real_checkpoint(tmp_path, cfg) -> dict:
    ck = tmp_path / "real" / "run.ckpt"
    build_simulation(cfg, checkpoint_path=ck).run(rounds=1)
    return torch.load(ck, weights_only=True)


def test_checkpoint_without_a_round_is_redone(tmp_path):
    redone(tmp_path, config("fedavg", checkpoint_every=1), {"method": "fedavg"}, "it lacks client_states")


def test_checkpoint_that_is_not_a_mapping_is_redone(tmp_path):
    redone(tmp_path, config("fedavg", checkpoint_every=1), [1, 2, 3], "it holds a list")


def test_checkpoint_with_a_round_out_of_range_is_redone(tmp_path):
    cfg = config("fedavg", checkpoint_every=1)
    blob = real_checkpoint(tmp_path, cfg)
    blob["round"] = 99
    res = redone(tmp_path, cfg, blob, r"its round 99 is not in 0\.\.2")
    assert numbers(res.history) == numbers(run(cfg).history)


def test_checkpoint_of_another_class_list_is_redone(tmp_path):
    cfg = config("fedavg", checkpoint_every=1)
    other = real_checkpoint(tmp_path, cfg.replace(classes=["Cardiomegaly", "Effusion"]))
    redone(tmp_path, cfg, other, r"model array 'head.weight' is \[2, .*another model or class list")


# ------------------------------------------------------------ 4. a finite loss that explodes
@pytest.mark.parametrize("method,optimizer", [("fedavg", "sgd"), ("centralized", "adam")])
def test_a_loss_that_explodes_stops_the_run(method, optimizer):
    """lr = 1e6 trains to a loss of 1e8 - 1e12 (finite) and used to end with AUROC 0.5 and
    exit status 0."""
    with pytest.raises(
        DivergenceError,
        match=r"round 1, client .*: the training loss is .*e\+\d+, over 10000 times "
        rf"its start .*diverged; lower the learning rate \(lr=1e\+06\) of the {optimizer} optimizer",
    ):
        run(config(method, lr=1e6, optimizer=optimizer))


def test_a_model_blown_up_by_its_last_step_stops_the_run():
    """One local step per round: the recorded training loss is the one before the step
    (0.69), the aggregated model's is 1e8."""
    with pytest.raises(
        DivergenceError,
        match=r"after round 1, the global model's loss is .*e\+\d+, over 10000 times "
        r"its start .*diverged; lower the learning rate \(lr=1e\+06\) of the sgd optimizer",
    ):
        run(config("fedavg", lr=1e6, optimizer="sgd", local_iters=1))


def test_a_loss_that_explodes_is_one_error_line():
    """The issue's command: one round, SGD at lr 1e6."""
    one_error_line(
        cli("run", *FLAGS, "--rounds", "1", "--optimizer", "sgd", "--lr", "1e6"),
        "the training diverged; lower the learning rate (lr=1e+06) of the sgd optimizer",
    )


# ------------------------------------------------------------ 5. method options are range-checked
@pytest.mark.parametrize(
    "name,options,needle",
    [
        ("fedprox", {"mu": -1}, "option mu must be >=0, got -1"),
        ("fedprox", {"mu": float("nan")}, "option mu must be >=0, got nan"),
        ("fedprox_star", {"mu": float("inf")}, "option mu must be >=0, got inf"),
        ("fedlsm", {"tau_p": 1.5}, "option tau_p must be [0, 1], got 1.5"),
        ("fedmlp", {"warmup_rounds": 2.5}, "option warmup_rounds must be a whole number >=0, got 2.5"),
        ("surgical", {"warmup_lr": 0}, "option warmup_lr must be >0, got 0"),
        ("fedssp", {"ssp_lr": -0.1}, "option ssp_lr must be >0, got -0.1"),
    ],
)
def test_method_options_out_of_range_are_refused(name, options, needle):
    from fedpl_core.base.validation import ConfigError
    from fedpl_core.methods import get_method

    with pytest.raises(ConfigError) as e:
        get_method(name, **options)
    assert f"method {name!r}: {needle}" == str(e.value)


def test_method_option_out_of_range_is_one_line_before_training():
    """FedProx mu = -1 used to run; mu = NaN ended in a DivergenceError that blamed the
    learning rate."""
    for mu in ("-1", "NaN"):
        p = cli("run", *FLAGS, "--rounds", "50", "--method", "fedprox", "--method-kwargs", f'{{"mu": {mu}}}')
        one_error_line(p, f"method 'fedprox': option mu must be >=0, got {mu.lower()}")
