"""What the Reliability page (docs/reliability.md) promises: safe checkpoints, results that survive
corrupt files and concurrent processes, validated settings, divergence stops, honest
summaries.  Each case failed on the code before it was hardened."""

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

from fedpl_core.base.validation import ConfigError
from fedpl_core.fl.checkpoint import CheckpointError, read_checkpoint
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.fl.federation import DivergenceError
from fedpl_core.runs.build import build_partition, build_simulation, load_data
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.results import RunResult, atomic_write_json
from fedpl_core.runs.runner import clean_stale_files, run
from fedpl_core.runs.study import run_many

TINY = dict(
    dataset="synthetic-cxr",
    classes=["Cardiomegaly", "Effusion", "Pneumothorax"],
    image_size=28,
    n_train=240,
    n_test=120,
    num_clients=3,
    model_kwargs={"width": 8},
)
FLAGS = [
    "--classes",
    "Cardiomegaly,Effusion,Pneumothorax",
    "--image-size",
    "28",
    "--n-train",
    "240",
    "--n-test",
    "120",
    "--num-clients",
    "3",
    "--model-kwargs",
    '{"width": 8}',
    "--progress",
    "false",
]


def tiny(**kw):
    kw.setdefault("engine", EngineConfig(rounds=2, batch_size=32, progress=False))
    return ExperimentConfig(**{**TINY, **kw})


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fedpl_core", *args], capture_output=True, text=True, cwd=cwd)


def one_error_line(p, needle):
    """Exit status 2, no traceback, exactly one ``fedpl: error:`` line containing ``needle``."""
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("fedpl: error:")]
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(errors) == 1 and needle in errors[0], p.stderr


# ------------------------------------------------------------------ 1. safe checkpoints
class _Planted:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['PLANTED_MARK']}",))


def test_planted_checkpoint_is_refused_and_runs_nothing(tmp_path, monkeypatch):
    mark = tmp_path / "pwned"
    monkeypatch.setenv("PLANTED_MARK", str(mark))
    cfg = tiny(engine=EngineConfig(rounds=2, batch_size=32, progress=False, checkpoint_every=1))
    ckpt = tmp_path / f"{cfg.run_id()}.ckpt"
    torch.save({"round": 1, "payload": _Planted()}, ckpt)
    with pytest.raises(CheckpointError, match="refused"):
        read_checkpoint(ckpt)
    with pytest.warns(UserWarning, match="refused"):
        res = run(cfg, tmp_path)  # the run starts again instead of unpickling the file
    assert not mark.exists()
    assert len(res.history) == 2 and not ckpt.exists()


# ------------------------------------------------------------------ 2. corrupt files
def test_corrupt_result_and_truncated_checkpoint_are_redone(tmp_path):
    a, b = (
        tiny(method="fedavg"),
        tiny(method="fedavg_pl", engine=EngineConfig(rounds=2, batch_size=32, progress=False, checkpoint_every=1)),
    )
    (tmp_path / f"{a.run_id()}.json").write_text('{"config": {"meth')
    good = run(b)
    sim = build_simulation(b, checkpoint_path=tmp_path / f"{b.run_id()}.ckpt")
    sim.run(rounds=1)
    ck = tmp_path / f"{b.run_id()}.ckpt"
    ck.write_bytes(ck.read_bytes()[:200])  # truncated by a crash
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        df = run_many(
            tiny(), ["fedavg", ("pl", {"method": "fedavg_pl", "checkpoint_every": 1})], [0], tmp_path, progress=False
        )
    said = " ".join(str(x.message) for x in w)
    assert "corrupt result file" in said and "unreadable" in said
    assert len(df) == 2
    assert df.set_index("label").loc["pl", "auroc_mean"] == good.final["auroc_mean"]
    assert json.loads((tmp_path / f"{a.run_id()}.json").read_text())["final"]["round"] == 2


# ------------------------------------------------------------------ 3. stale files and locks
def test_stale_temporary_files_are_removed_and_live_locks_respected(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".x.json.{dead.pid}.tmp"
    stale.write_text("half")
    mine = tmp_path / f".y.json.{os.getpid()}.tmp"
    mine.write_text("in progress")
    assert clean_stale_files(tmp_path) == [stale]
    assert not stale.exists() and mine.exists()

    from test_locks import hold, stop

    cfg = tiny()
    lock = tmp_path / f"{cfg.run_id()}.lock"
    holder = hold(lock)
    try:
        assert run(cfg, tmp_path, wait=False) is None  # held by a live process: not done twice
    finally:
        stop(holder, kill=True)
    res = run(cfg, tmp_path, wait=False)  # the holder died: the kernel let its lock go
    assert res is not None and not lock.exists()


# ------------------------------------------------------------------ 4, 5. configuration
def test_config_round_trip_and_type_conversion(tmp_path):
    cfg = tiny(method="fedprox", method_kwargs={"mu": 0.1}, seed=3)
    again = ExperimentConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.run_id() == cfg.run_id()
    (tmp_path / "c.yaml").write_text("method: fedavg\nlr: 1e-3\nrounds: '4'\namp: 'yes'\n")
    c = ExperimentConfig.from_file(tmp_path / "c.yaml")
    assert c.engine.lr == 0.001 and isinstance(c.engine.lr, float) and c.engine.rounds == 4 and c.engine.amp is True


def test_cli_config_file_runs(tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(
        "method: fedavg\nclasses: [Cardiomegaly, Effusion, Pneumothorax]\nimage_size: 28\nn_train: 240\n"
        "n_test: 120\nnum_clients: 3\nmodel_kwargs: {width: 8}\nengine:\n  rounds: 1\n  progress: false\n"
    )
    p = cli("run", "--config", str(f), "--out", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "r.json").read_text())["config"]["method"] == "fedavg"


@pytest.mark.parametrize(
    "text,needle",
    [
        ("method: [fedavg\n", "not valid YAML"),
        ("- method: fedavg\n", "must be a mapping"),
        ("lr: fast\n", "lr must be a number"),
    ],
)
def test_bad_config_file_is_one_line_error(tmp_path, text, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    one_error_line(cli("run", "--config", str(f)), needle)


@pytest.mark.parametrize(
    "over,needle",
    [
        (dict(num_clients=0), "num_clients must be >=1"),
        (dict(rounds=0), "rounds must be >=1"),
        (dict(batch_size=0), "batch_size must be >=1"),
        (dict(eval_every=0), "eval_every must be >=1"),
        (dict(lr=0.0), "lr must be >0"),
        (dict(local_epochs=-1.0), "local_epochs must be >0"),
        (dict(client_fraction=1.5), "client_fraction must be (0, 1]"),
        (dict(selection="auroc"), "unknown selection key 'auroc'"),
        (dict(selection_mode="maximum"), "selection_mode must be one of"),
        (dict(seed=-1), "seed -1 is out of range"),
    ],
)
def test_settings_are_validated_before_any_work(over, needle):
    with pytest.raises(ConfigError) as e:
        tiny().replace(**over)
    assert needle in str(e.value)


def test_strict_booleans_on_the_command_line():
    one_error_line(cli("run", *FLAGS, "--amp", "ture"), "amp must be a boolean")


def test_client_without_classes_warns():
    from fedpl_core.partitions import PartitionWarning

    with pytest.warns(PartitionWarning, match=r"client B annotate\(s\) no class"):
        build_partition(
            tiny(
                partition="explicit",
                partition_kwargs={"client_classes": {"A": ["Cardiomegaly", "Effusion", "Pneumothorax"], "B": []}},
            ),
            load_data(tiny()).train,
        )


# ------------------------------------------------------------------ 7. --out
@pytest.mark.parametrize("where", ["folder", "under_file", "sys"])
def test_unwritable_out_fails_before_training(tmp_path, where):
    out = {"folder": tmp_path, "under_file": tmp_path / "f.txt" / "r.json", "sys": "/sys/x.json"}[where]
    (tmp_path / "f.txt").write_text("")
    t0 = time.perf_counter()
    p = cli("run", *FLAGS, "--rounds", "50", "--out", str(out))
    one_error_line(p, "")
    assert time.perf_counter() - t0 < 30  # 50 rounds would take far longer: nothing was trained
    assert not list(tmp_path.glob(".*.tmp"))


# ------------------------------------------------------------------ 8. divergence
def test_divergence_stops_with_round_and_client():
    with pytest.raises(DivergenceError, match=r"round 1, client A: the training loss is nan; lower the learning"):
        run(tiny(engine=EngineConfig(rounds=2, batch_size=32, progress=False, lr=1e30, optimizer="sgd")))
    p = cli("run", *FLAGS, "--rounds", "2", "--lr", "1e30")
    one_error_line(p, "lower the learning rate (lr=1e+30)")
    # a model whose outputs are not finite is caught at evaluation, not by scikit-learn
    sim = build_simulation(tiny())
    sim.server.global_state["head.bias"][0] = float("nan")
    with pytest.raises(DivergenceError, match="after round 0 the model's outputs on .* are not finite"):
        sim.evaluate(sim.test_set)


def test_results_json_never_holds_nan(tmp_path):
    atomic_write_json(
        {"a": float("nan"), "b": [1.0, float("inf")], "c": torch.tensor(float("nan"))}, tmp_path / "x.json"
    )
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": None, "b": [1.0, None], "c": None}


# ------------------------------------------------------------------ 9-12. real-data usability
def test_dataset_kwargs_reach_the_data_source():
    plain = load_data(tiny()).train
    strong = load_data(tiny(dataset_kwargs={"strength": 2.0})).train
    assert plain.images.shape == strong.images.shape and (plain.images != strong.images).any()
    p = cli("run", *FLAGS, "--rounds", "1", "--dataset-kwargs", '{"strenght": 2}')
    one_error_line(p, "strenght")


def test_summary_leads_with_auroc_map_and_names_unscored_classes():
    from fedpl_core.apps.cli import summary_line

    res = RunResult(
        config={},
        history=[],
        best={},
        class_names=["A", "B", "C"],
        run_id="x",
        timings={"total_s": 1.0},
        final={
            "round": 3,
            "auroc_mean": 0.8,
            "map": 0.5,
            "bacc": 0.6,
            "threshold": 0.5,
            "n_defined": 2,
            "class_names": ["A", "B", "C"],
            "auroc_per_class": [0.7, None, 0.9],
            "n_positives": [12, 0, 3],
            "few_positives": ["B", "C"],
        },
    )
    line = summary_line("fedavg", res)
    assert line.index("auroc_mean=0.8000") < line.index("map=0.5000") < line.index("bacc@0.5=0.6000")
    assert "2/3 classes scored (B: no positives)" in line and "fewer than 5 test positives: B, C" in line


def test_metrics_flag_classes_with_few_test_positives():
    import numpy as np

    from fedpl_core.nn.metrics import multilabel_metrics

    y = np.array([[1, 0], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [1, 0]])
    m = multilabel_metrics(y, np.random.default_rng(0).random(y.shape), ["rare", "common"])
    assert m["n_positives"] == [2, 5] and m["few_positives"] == ["rare"]


def test_real_data_log_says_n_train_does_not_apply(tmp_path):
    from fixtures_data import write_medmnist  # noqa: E402

    write_medmnist(tmp_path, "pneumoniamnist")
    p = cli(
        "run",
        "--dataset",
        "medmnist:pneumoniamnist",
        "--data-root",
        str(tmp_path),
        "--image-size",
        "28",
        "--num-clients",
        "2",
        "--partition",
        "iid",
        "--rounds",
        "1",
        "--batch-size",
        "4",
        "--model-kwargs",
        '{"width": 4}',
        "--progress",
        "false",
    )
    assert p.returncode == 0, p.stderr
    assert "n_train / n_test do not apply" in p.stderr


# ------------------------------------------------------------------ the documented command lines
def readme_cli_examples() -> list[str]:
    """The commands of the block of the usage page (``docs/usage.md``) that follows its
    ``% cli-examples: tested`` comment (continuation lines joined, comments dropped)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text()
    block = text.split("% cli-examples: tested", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    cmds, cur = [], ""
    for line in block.splitlines():
        line = line.split("  # ")[0].rstrip()
        cur += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            if cur.strip():
                cmds.append(cur.strip())
            cur = ""
    return cmds


def test_readme_cli_examples_run(tmp_path, monkeypatch):
    import shlex

    # `report` saves its heatmap under figures_dir(): the checkout's figures/ whatever the working directory
    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    cmds = readme_cli_examples()
    assert len(cmds) >= 4 and all(c.startswith("python -m fedpl_core ") for c in cmds)
    (tmp_path / "my_experiment.yaml").write_text(
        "method: fedavg_pl\nclasses: [Effusion, Pneumothorax, Nodule]\nimage_size: 28\nn_train: 300\nn_test: 150\n"
        "num_clients: 3\nmodel_kwargs: {width: 8}\nengine: {rounds: 2, progress: false}\n"
    )
    for cmd in cmds:
        p = cli(*shlex.split(cmd)[3:], cwd=tmp_path)
        assert p.returncode == 0, f"{cmd}\n{p.stderr}"
    assert (tmp_path / "figures" / "partition_report.png").is_file()
