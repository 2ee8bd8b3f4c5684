"""Profiles are declared one way: each study's ``PROFILES`` table (smoke / cpu / gpu / full rows of
named fields) and :func:`fedpl_core.studies.parameters.apply_parameters`, which applies a notebook's
parameters to a row; every notebook's parameters cell has the same names."""

import importlib
import re
from pathlib import Path

import nbformat
import pytest

from fedpl_core.base.validation import ConfigError
from fedpl_core.studies.parameters import (
    NOTEBOOK_PARAMETERS,
    PROFILES,
    ROW_FIELDS,
    apply_parameters,
    check_table,
    fields_of,
)

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ["introduction", "fedpsl", "fedlsm", "surgical", "fedmlp", "benchmark"]
#: study -> the notebook that applies its table
NOTEBOOKS = {
    "introduction": "00_introduction",
    "fedpsl": "01_fedpsl",
    "fedlsm": "02_fedlsm",
    "surgical": "03_surgical_aggregation",
    "fedmlp": "04_fedmlp",
    "benchmark": "05_benchmark",
}
EXTRAS = {"data_root", "data_roots", "first_order", "pretrained", "exclude", "dataset_kwargs", "plugins"}


def _study(name):
    return importlib.import_module(f"fedpl_core.studies.{name}")


def _plain(v) -> bool:
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))


@pytest.mark.parametrize("name", STUDIES)
def test_every_study_declares_its_profiles_in_one_table(name):
    table = _study(name).PROFILES
    assert list(PROFILES) == ["smoke", "cpu", "paper", "gpu", "full"]
    papers = ("fedpsl", "fedlsm", "surgical", "fedmlp")  # the paper profile: the four papers' studies only
    assert list(table) == [p for p in PROFILES if p != "paper" or name in papers]
    check_table(table)
    for profile, row in table.items():
        assert set(ROW_FIELDS) <= set(row), (name, profile)
        assert all(_plain(v) for v in row.values()), f"{name}.PROFILES[{profile!r}]: plain values only"
        settings_cls = getattr(_study(name), "Settings", None)
        if settings_cls is not None:  # every field of the table is a field of the study's settings
            fields_of(settings_cls, row)


@pytest.mark.parametrize("name", STUDIES)
def test_apply_parameters_overrides_rounds_lr_and_seeds_and_keeps_the_rest(name):
    table = _study(name).PROFILES
    row = apply_parameters(table, "smoke", seeds="[3, 4]", rounds="5", lr="0.02", data_seed=1, device="cpu")
    assert (row["seeds"], row["rounds"], row["lr"], row["data_seed"], row["device"], row["profile"]) == (
        [3, 4],
        5,
        0.02,
        1,
        "cpu",
        "smoke",
    )
    assert {k: v for k, v in row.items() if k not in {*ROW_FIELDS, "data_seed", "device", "profile"}} == {
        k: v for k, v in table["smoke"].items() if k not in ROW_FIELDS
    }
    same = apply_parameters(table, "cpu", seeds=None, rounds=None, lr=None)  # None: the profile's value
    assert {k: same[k] for k in ROW_FIELDS} == {k: table["cpu"][k] for k in ROW_FIELDS}
    row["seeds"].append(9)  # a copy: the table is never changed
    assert 9 not in table["smoke"]["seeds"]


def test_the_settings_of_every_study_take_the_applied_rounds_lr_and_seeds():
    from fedpl_core.studies import benchmark, fedlsm, fedmlp, fedpsl, surgical

    p = dict(seeds=[7], rounds=3, lr=0.01, data_seed=2, device="cpu")
    s = fedpsl.settings(apply_parameters(fedpsl.PROFILES, "smoke", **p))
    assert (s.seeds, s.engine.rounds, s.engine.lr, s.config().data_seed) == ([7], 3, 0.01, 2)
    assert fedpsl.settings("smoke", **p) == s
    s = fedlsm.settings(apply_parameters(fedlsm.PROFILES, "smoke", **p))
    e = s.config("Task 1").engine
    assert (s.seeds, e.rounds, e.lr, e.device, s.config("Task 2").data_seed) == ([7], 3, 0.01, "cpu", 2)
    s = fedmlp.settings(apply_parameters(fedmlp.PROFILES, "smoke", **p))
    e = s.config("ICH").engine
    assert (s.seeds, e.rounds, e.lr, s.config("CXR").data_seed) == ([7], 3, 0.01, 2)
    s = surgical.settings(apply_parameters(surgical.profiles(), "smoke", **p))
    assert (s.seeds, s.engine().rounds, s.engine().lr, s.seed) == ([7], 3, 0.01, 2)
    for cfg in benchmark.settings(apply_parameters(benchmark.PROFILES, "smoke", **p)).values():
        assert (cfg.engine.rounds, cfg.engine.lr, cfg.engine.eval_every, cfg.data_seed) == (3, 0.01, 3, 2)


def test_surgical_full_row_follows_the_data_and_the_weights_and_the_notebook_lr_wins():
    from fedpl_core.studies import surgical

    assert surgical.profiles()["full"] == surgical.PROFILES["full"]
    real = surgical.profiles("/", "true")  # papermill's text is read as a boolean
    assert real["full"]["model"] == "densenet121" and real["full"]["image_size"] == 224
    assert real["full"]["lr"] == 5e-5 and real["full"]["model_kwargs"] == {"pretrained": True}
    assert {k: real[k] for k in ("smoke", "cpu")} == {k: surgical.PROFILES[k] for k in ("smoke", "cpu")}
    st = surgical.settings("full", data_root="/", pretrained=True, lr=1e-4)
    assert (st.lr, st.model, st.normalize, st.calibrate_bn) == (1e-4, "densenet121", "imagenet", False)


@pytest.mark.parametrize(
    "params,error,needle",
    [
        (dict(round=4), TypeError, "unknown notebook parameter(s) ['round']"),
        (dict(rounds=0), ConfigError, "rounds must be >= 1, got 0"),
        (dict(rounds="many"), ConfigError, "rounds"),
        (dict(lr=0), ConfigError, "lr must be a positive number"),
        (dict(lr="-1e-3"), ConfigError, "lr must be a positive number"),
        (dict(lr="fast"), ConfigError, "lr"),
        (dict(seeds="[0, 0]"), ConfigError, "lists a seed twice"),
        (dict(data_root="/nonexistent/folder"), ConfigError, "data_root: folder not found"),
    ],
)
def test_apply_parameters_refuses_an_unknown_parameter_or_a_bad_value(params, error, needle):
    from fedpl_core.studies import fedpsl

    with pytest.raises(error) as e:
        apply_parameters(fedpsl.PROFILES, "cpu", **params)
    assert needle in str(e.value)


def test_apply_parameters_refuses_an_unknown_profile_and_a_table_that_is_not_one():
    with pytest.raises(ValueError, match="unknown profile 'tpu'"):
        apply_parameters(_study("fedpsl").PROFILES, "tpu")
    with pytest.raises(ValueError, match=r"the rows smoke, cpu, gpu, full \(and paper after cpu\)"):
        apply_parameters({"smoke": {"seeds": [0], "rounds": 1, "lr": 1e-3}}, "smoke")
    with pytest.raises(ValueError, match=r"PROFILES\['cpu'\] lacks lr"):
        check_table({p: {"seeds": [0], "rounds": 1, **({} if p == "cpu" else {"lr": 1.0})} for p in PROFILES})
    with pytest.raises(TypeError, match="has no field"):  # a misspelt field of a table is never ignored
        _study("fedpsl").settings({**apply_parameters(_study("fedpsl").PROFILES, "smoke"), "roundz": 3})


def test_the_paper_profile_belongs_to_the_papers_notebooks_and_sits_after_cpu():
    with pytest.raises(ValueError, match="profile 'paper' is for the papers' notebooks"):
        apply_parameters(_study("introduction").PROFILES, "paper")
    rows = {p: {"seeds": [0], "rounds": 1, "lr": 1e-3} for p in ("smoke", "gpu", "paper", "cpu", "full")}
    with pytest.raises(ValueError, match="and paper after cpu"):  # paper before cpu: not a profile table
        check_table(rows)
    row = apply_parameters(_study("fedpsl").PROFILES, "paper", workers=None)
    from fedpl_core.studies.fedpsl.profile import PAPER_SEEDS

    assert row["profile"] == "paper" and row["seeds"] == PAPER_SEEDS


def test_the_paper_rows_run_the_papers_schedules():
    from fedpl_core.studies import fedlsm, fedmlp, fedpsl, surgical

    r = fedpsl.PROFILES["paper"]  # 100 local epochs synchronised every 10; Table V at E = 10 and 100
    assert (r["rounds"], r["local_epochs"], r["total_epochs"], r["table5_e"]) == (10, 10, 100, [10, 100])
    assert r["first_order"] is False and r["lr"] == 1e-3  # Algorithm 1's second-order TADL, the paper's Adam
    r = fedmlp.PROFILES["paper"]  # 500 rounds, warm-up 50, T0 = 0.5 %, T1 = 1 %
    assert (r["rounds"], r["warmup_rounds"], r["t0"], r["t1"]) == (500, 50, 0.005, 0.01)
    r = surgical.PROFILES["paper"]  # heads warmed up 15 epochs, at most 150 rounds, stopped after 25 without progress
    assert (r["rounds"], r["warmup_epochs"], r["patience"], r["batch_size"]) == (150, 15, 25, 64)
    if "paper" in fedlsm.PROFILES:  # 50 rounds of 200 (Task 1) / 30 (Task 2) local iterations
        r = fedlsm.PROFILES["paper"]
        assert (r["rounds"], r["local_iters"]) == (50, {"Task 1": 200, "Task 2": 30})
    for study in (fedpsl, fedmlp, surgical):  # the small model and data of the cpu profile
        cpu, paper = study.PROFILES["cpu"], study.PROFILES["paper"]
        assert paper.get("model", "cnn") == cpu.get("model", "cnn")
        assert paper.get("image_size") == cpu.get("image_size")


# ============================================================================ the gpu profile (issue 27)
#: study -> the backbone of its gpu row: the papers' (ResNet-18 for FedMLP, DenseNet-121 for the others)
GPU_MODELS = {
    "introduction": "densenet121",
    "fedpsl": "densenet121",
    "fedlsm": "densenet121",
    "surgical": "densenet121",
    "fedmlp": "resnet18",
    "benchmark": "densenet121",
}


def _size(row):
    return row.get("image_size", row.get("size"))


@pytest.mark.parametrize("name", STUDIES)
def test_every_gpu_row_has_the_papers_backbone_at_64_to_128_px_and_3_seeds(name):
    row = apply_parameters(_study(name).PROFILES, "gpu", workers=None)
    assert row["model"] == GPU_MODELS[name]
    assert 64 <= _size(row) <= 128  # the ImageNet stem (models.build_model: 64 px and above)
    assert row["seeds"] == [0, 1, 2]
    assert not row["model_kwargs"].get("pretrained", False)  # no weights can be downloaded
    assert row["workers"] == 1  # one device, one run at a time


def test_the_gpu_rows_keep_the_papers_proportions():
    from fedpl_core.studies import fedlsm, fedmlp, fedpsl, surgical

    r = fedmlp.PROFILES["gpu"]  # FedMLP: warm-up 50 of 500 rounds, T0 = 0.5 %, T1 = 1 %
    assert r["warmup_rounds"] / r["rounds"] == 50 / 500 and (r["t0"], r["t1"]) == (0.005, 0.01)
    assert r["lr"] == 1e-3 and r["model"] == "resnet18"
    r = fedlsm.PROFILES["gpu"]  # FedLSM: 200 (Task 1) / 30 (Task 2) local iterations a round, 50 rounds
    assert r["local_iters"]["Task 1"] / r["rounds"] == 200 / 50
    assert r["local_iters"]["Task 2"] == round(30 / 50 * r["rounds"])
    assert r["weight_decay"] == fedlsm.PROFILES["full"]["weight_decay"] == 5e-4
    r = fedpsl.PROFILES["gpu"]  # FedPSL: 100 epochs synchronised every E = 10: 10 rounds; Table V's E / T
    assert r["rounds"] * r["local_epochs"] == r["total_epochs"] and r["rounds"] == 100 // 10
    assert {e / r["total_epochs"] for e in r["table5_e"]} <= {e / 100 for e in (10, 20, 50, 100)}
    assert r["lr"] == 1e-3
    r = surgical.PROFILES["gpu"]  # Surgical: head warm-up 15 epochs to 150 rounds of one epoch, batch 64, FedBN+
    assert r["warmup_epochs"] / r["rounds"] == 15 / 150 and r["batch_size"] == 64 and r["bn"] == "frozen"


def _shrink(row: dict) -> dict:
    """A gpu row in smoke size: its model, image size, seeds and schedule's shape, with a few
    images and rounds, for the CPU."""
    small = {
        "n_train": 200,
        "n_test": 100,
        "n": 20,
        "pool": 30,
        "test_pos": 20,
        "test_neg": 20,
        "n_external": 100,
        "n_nih": 100,
        "n_chexpert": 150,
        "n_noniid_test": 100,
        "n_public": 64,
        "fig4_base": 20,
    }
    out = {}
    for k, v in row.items():
        if k in small and isinstance(v, int):
            out[k] = small[k]
        elif k in ("n_train", "n_test") and isinstance(v, dict):
            out[k] = {t: small[k] for t in v}
        else:
            out[k] = v
    for k in ("fig3_n", "fig4_n"):
        if k in out:
            out[k] = [10, 20]
    return out


def test_the_gpu_rows_build_valid_configs_in_smoke_size():
    from fedpl_core.runs.experiment_config import ExperimentConfig
    from fedpl_core.studies import benchmark, fedlsm, fedmlp, fedpsl, surgical
    from fedpl_core.studies.parameters import engine_options

    assert engine_options("gpu") == {"amp": True, "channels_last": True}

    def check(cfg: ExperimentConfig, model: str):
        assert (cfg.model, cfg.image_size) == (model, 128), cfg.name
        assert cfg.engine.amp and cfg.engine.channels_last, cfg.name

    row = _shrink(apply_parameters(fedpsl.PROFILES, "gpu", device="cpu"))
    s = fedpsl.settings(row)
    assert s.seeds == [0, 1, 2] and s.first_order and s.engine.local_epochs == 2
    for t in ("II", "IV"):
        check(s.config(t), "densenet121")
    assert {k: v["local_epochs"] * v["rounds"] for k, v in fedpsl.table5_settings(s).items()} == {
        "E=2": 20,
        "E=10": 20,
        "E=20": 20,
    }
    s = fedlsm.settings(_shrink(apply_parameters(fedlsm.PROFILES, "gpu", device="cpu")))
    for t in fedlsm.TASKS:
        check(s.config(t), "densenet121")
    assert s.config("Task 1").engine.local_iters == 12 and s.config("Task 1").engine.rounds == 3
    s = fedmlp.settings(_shrink(apply_parameters(fedmlp.PROFILES, "gpu", device="cpu")))
    for t in fedmlp.TABLES:
        check(s.config(t), "resnet18")
    assert s.fedmlp_kwargs() == {"warmup_rounds": 1, "t0": 0.005, "t1": 0.01}
    s = surgical.settings(_shrink(apply_parameters(surgical.profiles(), "gpu", device="cpu")))
    check(surgical.ablation_config(s), "densenet121")
    check(surgical.noniid_config(s, heterogeneous=True), "densenet121")
    assert dict(surgical.ablation_methods(s))["FL + SA"]["method_kwargs"]["warmup_epochs"] == 1
    for cfg in benchmark.settings(_shrink(apply_parameters(benchmark.PROFILES, "gpu", device="cpu"))).values():
        check(cfg, "densenet121")


@pytest.mark.filterwarnings("ignore:partition")
def test_a_gpu_row_runs_on_the_cpu_in_smoke_size():
    """The gpu profile's settings build and train on a CPU (bf16 autocast is CUDA's only: the
    CPU run is float32): one round of FedMLP on ResNet-18 and of FedLSM on DenseNet-121, at
    64 px and with a few images, so that the test stays quick."""
    from fedpl_core.runs.runner import run
    from fedpl_core.studies import fedlsm, fedmlp

    s = fedmlp.settings(
        {
            **_shrink(apply_parameters(fedmlp.PROFILES, "gpu", device="cpu")),
            "rounds": 1,
            "image_size": 64,
            "n_train": {"ICH": 40, "CXR": 40},
            "n_test": {"ICH": 30, "CXR": 30},
        }
    )
    cfg = s.config("ICH").replace(method="fedmlp", method_kwargs=s.fedmlp_kwargs(warmup_rounds=0))
    res = run(cfg)
    assert res.final["auroc_mean"] == res.final["auroc_mean"]  # a number, not NaN
    s = fedlsm.settings(
        {
            **_shrink(apply_parameters(fedlsm.PROFILES, "gpu", device="cpu")),
            "rounds": 1,
            "image_size": 64,
            "local_iters": {"Task 1": 1, "Task 2": 1},
            "n_train": {"Task 1": 40, "Task 2": 40},
            "n_test": {"Task 1": 30, "Task 2": 30},
        }
    )
    res = run(s.config("Task 2").replace(method="fedlsm"))
    assert res.final["auroc_mean"] == res.final["auroc_mean"]


def _cells(nb):
    cells = nbformat.read(ROOT / "notebooks" / f"{nb}.ipynb", as_version=4).cells
    i = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    return cells[i].source, cells[i + 1].source


@pytest.mark.parametrize("name", STUDIES)
def test_every_parameters_cell_has_the_same_names_and_applies_them_one_way(name):
    params, setup = _cells(NOTEBOOKS[name])
    names = re.findall(r"^(\w+)(?:: [^=]+)? = ", params, flags=re.M)  # typed: name: type = value
    assert tuple(names[: len(NOTEBOOK_PARAMETERS)]) == NOTEBOOK_PARAMETERS, names
    assert set(names[len(NOTEBOOK_PARAMETERS) :]) <= EXTRAS, names
    call = setup[setup.index("apply_parameters(") :]
    call = call[: call.index(")\n")]
    assert "PROFILES" in call or "profiles(" in call
    for k in names[1:]:  # every parameter goes through the one function
        assert f"{k}={k}" in call, (name, k)
    assert "(P_[k] for k in NOTEBOOK_PARAMETERS)" in setup
    assert "pick(" not in setup and "notebook_parameters(" not in setup
    assert not re.search(r"^if rounds|^\s*S\.rounds =|S\.engine = ", setup, flags=re.M)


# =========================================================================== measured step times (issue 34)
def _gpu_config(model="densenet121", batch=32):
    from fedpl_core.fl.engine_config import EngineConfig
    from fedpl_core.runs.experiment_config import ExperimentConfig

    return ExperimentConfig(
        dataset="synthetic-cxr",
        image_size=128,
        n_train=400,
        n_test=200,
        num_clients=4,
        model=model,
        engine=EngineConfig(rounds=3, batch_size=batch, progress=False),
    )


def _record(rows, device_type="cuda"):
    return {"device_type": device_type, "device_name": "test", "rows": rows}


def test_gpu_estimate_uses_the_measured_step_times_of_a_timed_backbone():
    from fedpl_core.studies.budget import GPU_ASSUMPTIONS, gpu_estimate, run_cost

    cfg = _gpu_config()
    paper = gpu_estimate([cfg], measured=None)
    assert paper["measured_runs"] == 0
    rec = _record(
        [{"model": "densenet121", "image_size": 128, "batch_size": 32, "train_step_s": 0.03, "eval512_s": 0.05}]
    )
    got = gpu_estimate([cfg], measured=rec)
    c = run_cost(cfg)
    assert got["measured_runs"] == 1
    assert got["seconds"] == pytest.approx(
        c["steps"] * 0.03 + c["eval_images"] * 0.05 / 512 + GPU_ASSUMPTIONS["run_overhead_s"]
    )
    other = _record([{"model": "resnet18", "image_size": 128, "batch_size": 32, "train_step_s": 9.0, "eval512_s": 9.0}])
    assert gpu_estimate([cfg], measured=other) == {**paper}  # another backbone timed: on paper


def test_measured_step_takes_the_nearest_batch_and_never_makes_a_step_cheaper():
    from fedpl_core.studies.budget import measured_step

    rec = _record(
        [{"model": "densenet121", "image_size": 128, "batch_size": 32, "train_step_s": 0.02, "eval512_s": 0.05}]
    )
    assert measured_step(rec, "densenet121", 128, 32)["train_step_s"] == 0.02
    assert measured_step(rec, "densenet121", 128, 64)["train_step_s"] == pytest.approx(0.04)
    assert measured_step(rec, "densenet121", 128, 16)["train_step_s"] == 0.02
    assert measured_step(rec, "densenet121", 224, 32) is None and measured_step(None, "densenet121", 128, 32) is None


def test_the_checkouts_step_times_count_only_when_measured_on_cuda(tmp_path, monkeypatch):
    import json

    import fedpl_core.base.paths as paths
    from fedpl_core.studies.budget import STEP_TIMES_FILE, measured_step_times

    monkeypatch.setattr(paths, "checkout", lambda: tmp_path)
    assert measured_step_times() is None  # none measured yet
    f = tmp_path / STEP_TIMES_FILE
    f.parent.mkdir(parents=True)
    row = {"model": "cnn", "image_size": 32, "batch_size": 2, "train_step_s": 0.1, "eval512_s": 0.2}
    f.write_text(json.dumps(_record([row], "cpu")))
    assert measured_step_times() is None  # a CPU rehearsal's numbers never size the H100 budget
    assert measured_step_times(f)["rows"] == [row]  # unless named
    f.write_text(json.dumps(_record([row], "cuda")))
    assert measured_step_times()["device_type"] == "cuda"
    f.write_text(json.dumps({"rows": [{"model": "cnn"}]}))
    with pytest.raises(ValueError, match="not a gpu-checks step-time record"):
        measured_step_times()


def test_the_assumed_figures_are_the_estimates_own():
    from fedpl_core.studies.budget import assumed_step, paper_seconds

    a = assumed_step("densenet121", 128, 32)
    assert a["train_step_s"] == paper_seconds("densenet121", 128, 32) == 0.015  # the floor: launches, not FLOPs
    assert a["eval512_s"] == paper_seconds("densenet121", 128, 512, train=False) > 0.005  # FLOPs above the floor


def test_run_cost_reads_the_methods_cost_and_evaluation_from_its_class():
    """The training cost factor is the class's ``train_cost`` (a variant inherits it) and a
    personalised method (``evaluation == "personalised"``, FedBN's ``bn_policy="local"`` too)
    is evaluated once a client: no list of methods beside the classes."""
    import dataclasses

    from fedpl_core.methods import METHODS
    from fedpl_core.studies.budget import run_cost

    cfg = _gpu_config()
    plain, costly = run_cost(cfg), run_cost(dataclasses.replace(cfg, method="fedpsl"))
    assert costly["steps"] == pytest.approx(METHODS["fedpsl"].train_cost * plain["steps"])
    assert METHODS["fedpsl"].train_cost > 1
    assert run_cost(dataclasses.replace(cfg, method="fedpsl_tdma"))["steps"] == pytest.approx(plain["steps"])
    assert run_cost(dataclasses.replace(cfg, method="moon_star"))["steps"] == pytest.approx(1.7 * plain["steps"])
    personal = run_cost(dataclasses.replace(cfg, method="pfl"))
    assert personal["eval_images"] > plain["eval_images"]
    local_bn = run_cost(dataclasses.replace(cfg, method_kwargs={"bn_policy": "local"}))
    assert local_bn["eval_images"] == personal["eval_images"]


def test_the_papers_schedules_keep_checkpoints_without_changing_run_ids():
    """The paper profile's runs (up to about 20 minutes each) write a checkpoint every tenth
    of their rounds, so a stopped run resumes midway; the interval is not in the run id, so
    the cached results stay addressable.  The cpu profile writes none."""
    import dataclasses

    from fedpl_core.studies import fedlsm, fedmlp
    from fedpl_core.studies.parameters import engine_options

    assert engine_options("paper", rounds=500)["checkpoint_every"] == 50
    assert engine_options("paper", rounds=7)["checkpoint_every"] == 1
    assert "checkpoint_every" not in engine_options("cpu", rounds=500)
    for study, key in ((fedlsm, "Task 1"), (fedmlp, "ICH")):
        cfg = study.settings(apply_parameters(study.PROFILES, "paper")).config(key)
        assert cfg.engine.checkpoint_every == cfg.engine.rounds // 10 > 0
        none = cfg.replace(engine=dataclasses.replace(cfg.engine, checkpoint_every=0))
        assert none.run_id() == cfg.run_id()
        cpu = study.settings(apply_parameters(study.PROFILES, "cpu")).config(key)
        assert cpu.engine.checkpoint_every == 0
