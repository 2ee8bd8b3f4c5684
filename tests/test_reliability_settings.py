"""Settings refused before any work, and messages that name the problem: config files that
would expand without bound, settings that would be ignored, errors that used to come late
(after a grid started, after a notebook run began, after training), advice that pointed
at the wrong cause, a method's check that disagreed with its paper, and warnings printed
as one line.  Each case failed on the code before.

The command line is called in this process (``fedpl_core.apps.cli.main``), as in
``tests/test_reliability_inputs.py``."""

import json
import os
import sys
import warnings

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import one_error_line  # noqa: E402

from fedpl_core.base.validation import ConfigError
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.experiment_config import ExperimentConfig  # noqa: E402

#: The data of a tiny run, and a tiny run (three clients, a 4-channel CNN, one round).
DATA = [
    "--n-train",
    "200",
    "--n-test",
    "100",
    "--rounds",
    "1",
    "--image-size",
    "28",
    "--classes",
    "Effusion,Pneumothorax,Nodule",
    "--progress",
    "false",
    "--model-kwargs",
    '{"width": 4}',
]
BASE = DATA + ["--num-clients", "3"]


# ------------------------------------------------------------------ config files that expand
def laughs(key: str | None, depth: int = 9, width: int = 9) -> str:
    """A "billion laughs" YAML: ``width`` ** ``depth`` values from ``depth`` lines of
    aliases, under ``key`` (None: at the top level)."""
    pad = "  " if key else ""
    lines = [f"{key}:"] if key else []
    lines.append(f"{pad}a0: &a0 [{', '.join(['lol'] * width)}]")
    lines += [f"{pad}a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "key", ["method_kwargs", "dataset_kwargs", "partition_kwargs", "split_kwargs", "model_kwargs", None]
)
def test_a_billion_laughs_config_is_refused_under_any_key(tmp_path, key):
    """Round 3 refused it under an unknown key only; under a known key it passed the
    checks and ``to_dict`` expanded it (2 GB after 45 s and growing)."""
    f = tmp_path / "laughs.yaml"
    f.write_text(laughs(key))
    assert len(f.read_bytes()) < 1000
    with pytest.raises(ConfigError, match="expands to more than 100,000 values"):
        ExperimentConfig.from_file(f)


def test_merge_keys_and_self_reference_are_bounded_too(tmp_path):
    merge = "method_kwargs:\n  a0: &a0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9}\n" + "".join(
        f"  a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 9)}]}}\n" for i in range(1, 9)
    )
    (tmp_path / "merge.yaml").write_text(merge)
    with pytest.raises(ConfigError, match="expands to more than"):
        ExperimentConfig.from_file(tmp_path / "merge.yaml")
    (tmp_path / "self.yaml").write_text("method_kwargs: &a {mu: *a}\n")
    with pytest.raises(ConfigError, match="refers to itself"):
        ExperimentConfig.from_file(tmp_path / "self.yaml")
    (tmp_path / "deep.json").write_text('{"method_kwargs": {"a": ' + "[" * 200 + "]" * 200 + "}}")
    with pytest.raises(ConfigError, match="nested more than 64 levels"):
        ExperimentConfig.from_file(tmp_path / "deep.json")


def test_a_config_built_in_python_from_shared_lists_is_bounded():
    nested = ["lol"] * 9
    for _ in range(8):
        nested = [nested] * 9  # 9 ** 9 values once copied out, 81 list objects
    with pytest.raises(ConfigError, match="expands to more than"):
        ExperimentConfig(method_kwargs={"a": nested})


def test_aliases_within_the_limit_still_work(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text("classes: &c [Effusion, Nodule]\nmethod: fedprox\nmethod_kwargs: &k {mu: 0.1}\n")
    cfg = ExperimentConfig.from_file(f)
    assert cfg.classes == ["Effusion", "Nodule"] and cfg.method_kwargs == {"mu": 0.1}


def test_the_command_line_refuses_a_laughs_file_in_one_line(main, tmp_path, monkeypatch):
    from fedpl_core.base import config_files as config

    monkeypatch.setattr(config, "CONFIG_MAX_NODES", 1000)  # the same check on a file that expands to 4,096
    f = tmp_path / "laughs.yaml"
    f.write_text(laughs("method_kwargs", depth=6, width=4))
    one_error_line(main("run", *BASE, "--config", f), f"config file {f}: the config expands to more than 1,000")


def test_a_config_file_over_a_mebibyte_is_refused(tmp_path):
    f = tmp_path / "big.yaml"
    f.write_text("# " + "x" * (1 << 20) + "\nmethod: fedavg\n")
    with pytest.raises(ConfigError, match="is over 1 MiB"):
        ExperimentConfig.from_file(f)


# ------------------------------------------------------------------ settings that would be ignored
@pytest.mark.parametrize(
    "flags,needle",
    [
        # 2: within the cores of any machine the suite runs on (more are capped to the cores first)
        (["--backend", "serial", "--workers", "2"], "workers 2 would be ignored: the serial backend"),
        (["--backend", "threads", "--ray-address", "auto"], "ray_address 'auto' would be ignored"),
        (["--keep-stale"], "keep_stale would be ignored"),
        (["--checkpoint-every", "1"], "--checkpoint-every 1 would be ignored"),
        (["--split-kwargs", '{"alpha": 0.1}'], "split_kwargs {'alpha': 0.1} would be ignored"),
        (["--momentum", "0.5"], "momentum 0.5 would be ignored: it is sgd's momentum, and optimizer is adam"),
        (["--local-iters", "3", "--local-epochs", "2"], "local_epochs 2.0 would be ignored"),
        (["--selection", "none", "--patience", "3"], "patience 3 would be ignored"),
        (["--selection", "none", "--selection-mode", "max"], "selection_mode 'max' would be ignored"),
    ],
)
def test_grid_settings_that_would_be_ignored_are_refused(main, tmp_path, flags, needle):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("n_train: 200\nn_test: 100\nimage_size: 28\nnum_clients: 3\nprogress: false\n")
    p = main("grid", cfg, "--methods", "fedavg", "--rounds", "1", *flags)
    one_error_line(p, needle)


def test_run_refuses_settings_that_need_a_results_folder(main, tmp_path):
    one_error_line(main("run", *BASE, "--keep-stale"), "--keep-stale would be ignored")
    one_error_line(main("run", *BASE, "--checkpoint-every", "1"), "--checkpoint-every 1 would be ignored")


def test_calibrate_bn_without_public_images_is_refused(main):
    one_error_line(
        main("run", *BASE, "--calibrate-bn", "true"),
        "calibrate_bn would be ignored: data set 'synthetic-cxr' provides no public images",
    )


def test_settings_that_apply_are_accepted():
    EngineConfig(optimizer="sgd", momentum=0.5)
    EngineConfig(local_iters=3, local_epochs=1.0)  # the default: nothing ignored
    EngineConfig(selection="train_loss", patience=2, selection_mode="min")
    ExperimentConfig(split="iid", partition="missing_classes", split_kwargs={"group_aware": False})


# ------------------------------------------------------------------ errors found before the work
def test_a_single_label_method_on_multi_label_data_is_refused_before_the_grid(main, tmp_path, monkeypatch):
    """It was retried as a transient failure, then reported as a GridError."""
    from fedpl_core.runs import grid

    started = []
    monkeypatch.setattr(grid, "make_backend", lambda *a, **k: started.append(a) or pytest.fail("a backend started"))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "n_train: 200\nn_test: 100\nimage_size: 28\nnum_clients: 3\nprogress: false\n"
        "classes: [Effusion, Pneumothorax, Nodule]\n"
    )
    for method in ("fedrs", "fedpu"):
        p = main("grid", cfg, "--methods", "fedavg", method, "--rounds", "1", "--results-dir", tmp_path / "r")
        one_error_line(
            p,
            f"method {method!r} is defined for single-label tasks only, not for data set "
            "'synthetic-cxr', a multi-label data set",
        )
    assert not started and not list((tmp_path / "r").glob("*.json"))


@pytest.mark.parametrize("name", ["synthetic-cxr", "synthetic-skin", "synthetic-ich"])
def test_a_declared_source_task_is_the_task_of_its_data(name):
    """The grid refuses a method by the task a source declares: it must be the data's."""
    from fedpl_core.data.sources import load_bundle, source_task

    assert source_task(name) == load_bundle(name, image_size=28, n_train=60, n_test=30, progress=False).train.task


def test_a_grid_does_not_retry_a_run_that_fails_the_same_way_every_time(tmp_path, monkeypatch):
    from fedpl_core.runs import grid

    calls = []

    def broken(cfg, *a, **k):
        calls.append(cfg.method)
        raise ValueError("a setting this run cannot have")

    monkeypatch.setattr(grid, "run", broken)
    cfg = ExperimentConfig(
        classes=["Effusion", "Nodule"],
        image_size=28,
        n_train=100,
        n_test=50,
        num_clients=2,
        engine=EngineConfig(rounds=1, progress=False),
    )
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(grid.GridError, match="a setting this run cannot have"):
            grid.run_grid([cfg], None, retries=2, progress=False)
    assert calls == ["fedavg"] and not [w for w in rec if "retrying" in str(w.message)]


def test_reproduce_refuses_an_unknown_kernel_before_starting(main, tmp_path):
    out = tmp_path / "nbs"
    one_error_line(
        main("reproduce", "--notebooks", "00", "--kernel", "no-such-kernel", "--output", out),
        "--kernel 'no-such-kernel' is not an installed Jupyter kernel; installed: ",
    )
    assert not out.exists()


def test_reproduce_output_at_a_file_or_a_dangling_link(main, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("keep me\n")
    one_error_line(main("reproduce", "--notebooks", "00", "--output", f), f"--output {f} is a file, not a folder")
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    one_error_line(
        main("reproduce", "--notebooks", "00", "--output", link),
        f"--output {link} is a link to {tmp_path / 'nowhere'}, which does not exist",
    )
    assert f.read_text() == "keep me\n" and not (tmp_path / "nowhere").exists()


# ------------------------------------------------------------------ advice that names the cause
def test_weights_holding_nan_are_named_not_blamed_on_the_learning_rate(main, tmp_path):
    w = tmp_path / "w.pt"
    torch.save({"conv1.weight": torch.full((64, 3, 7, 7), float("nan")), "fc.bias": torch.zeros(3)}, w)
    p = main("run", *BASE, "--model", "resnet18", "--model-kwargs", json.dumps({"weights_path": str(w)}))
    one_error_line(p, f"weights file {w} holds NaN or infinite values in 1 array(s) (e.g. conv1.weight)")
    assert "learning rate" not in p.stderr


def test_a_non_finite_initial_model_is_not_blamed_on_the_learning_rate():
    from fedpl_core.fl.federation import DivergenceError
    from fedpl_core.runs.build import build_simulation

    cfg = ExperimentConfig(
        classes=["Effusion", "Nodule"],
        image_size=28,
        n_train=100,
        n_test=50,
        num_clients=2,
        model_kwargs={"width": 4},
        engine=EngineConfig(rounds=1, progress=False),
    )
    sim = build_simulation(cfg)
    state = {
        k: (torch.full_like(v, float("inf")) if v.is_floating_point() else v)
        for k, v in sim.server.global_state.items()
    }
    sim.server.global_state = state
    with pytest.raises(DivergenceError, match="before any training the initial model's loss is") as e:
        sim.run()
    assert "learning rate" not in str(e.value)


@pytest.mark.parametrize("alpha", [1e-3, 1e-300])
def test_dirichlet_with_a_tiny_alpha_ends_in_its_own_message_only(main, alpha):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        p = main(
            "run",
            *DATA,
            "--num-clients",
            "8",
            "--partition",
            "dirichlet",
            "--partition-kwargs",
            json.dumps({"alpha": alpha}),
        )
    one_error_line(p, "dirichlet: no split with min_size 10 in 1000 tries")
    assert not [str(w.message) for w in rec if issubclass(w.category, RuntimeWarning)]


# ------------------------------------------------------------------ a method's check agrees with its paper
def test_fedlsm_takes_counts_as_the_paper_and_its_docstring_say(main):
    """FedLSM (Sec. 2.3): "top-n_k^h highest entropy ... top-n_k^l lowest": counts.  The
    docstring and ``split_counts`` took a whole number as a count; the check refused it
    ("option n_l must be [0, 1]")."""
    from fedpl_core.methods.fedlsm import FedLSM, split_counts

    m = FedLSM(n_l=3, n_h=2)
    assert split_counts(100, m.n_l, m.n_h) == (3, 2) and split_counts(100, 0.2, 0.05) == (20, 5)
    p = main("run", *BASE, "--method", "fedlsm", "--local-iters", "2", "--method-kwargs", '{"n_l": 3, "n_h": 2}')
    assert p.returncode == 0 and p.stdout.startswith("fedlsm: final"), p.stderr
    for bad in (2.5, -1, 1.5):
        with pytest.raises(ConfigError, match=r"option n_l must be \[0, 1\) or a whole number >=1"):
            FedLSM(n_l=bad)


def test_every_method_accepts_its_own_defaults():
    """The declared ranges agree with the constructors: every default passes its check."""
    import inspect

    from fedpl_core.methods import METHODS, available_methods

    assert len(available_methods()) > 30

    for cls in METHODS.values():
        for c in cls.__mro__:
            if "__init__" not in vars(c):
                continue
            defaults = {
                k: p.default
                for k, p in inspect.signature(c.__init__).parameters.items()
                if p.default is not p.empty and p.default is not None
            }
            cls.check_options(defaults)  # raises naming the option when a default is out of its own range


# ------------------------------------------------------------------ warnings: one line each
def test_warnings_print_as_one_line_on_the_command_line(tmp_path):
    """They printed as ``.../runs/build.py:63: PartitionWarning: ...`` and the source line
    ``return fn(train, ...)``.  (A subprocess: pytest records warnings instead of printing them.)"""
    from test_reliability import cli

    p = cli(
        "run",
        *DATA,
        "--num-clients",
        "3",
        "--partition",
        "dirichlet",
        "--partition-kwargs",
        '{"alpha": 0.001, "min_size": 1}',
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    said = [ln for ln in p.stderr.splitlines() if "partition 'dirichlet'" in ln]
    assert said and all(ln.startswith("fedpl: warning: partition 'dirichlet': class") for ln in said), p.stderr
    assert ".py:" not in p.stderr and "return fn(" not in p.stderr, p.stderr


def test_the_command_line_restores_the_format_it_changed(main):
    before = warnings.formatwarning
    main("run", *BASE, "--momentum", "0.5")
    assert warnings.formatwarning is before


def test_one_line_format_of_the_package_and_of_other_libraries():
    from fedpl_core.base.messages import format_warning
    from fedpl_core.partitions import PartitionWarning

    own = format_warning("client A\nhas no class", PartitionWarning, "/elsewhere/x.py", 3, "src")
    other = format_warning("deprecated", DeprecationWarning, "/site-packages/lib/y.py", 9, "src")
    assert own == "fedpl: warning: client A has no class\n"
    assert other == "fedpl: warning: DeprecationWarning: deprecated\n"


def test_notebooks_print_warnings_as_one_line():
    from fedpl_core.base import messages
    from fedpl_core.studies.parameters import prepare

    try:
        prepare("smoke", device="cpu")
        assert (
            warnings.formatwarning("a partition warning", UserWarning, messages.__file__, 1, "return fn(train)")
            == "fedpl: warning: a partition warning\n"
        )
    finally:
        messages.use_one_line_warnings(False)
    assert warnings.formatwarning("w", UserWarning, "x.py", 1, "src").startswith("x.py:1: UserWarning: w")
