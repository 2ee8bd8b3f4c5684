"""Issue 24's bad inputs, one line each: user mistakes end with exactly one ``fedpl: error:``
line and exit status 2 before any work, never a traceback, an internal torch / numpy
message, or a setting quietly ignored.  Each case failed on the code before.

The command line is called in this process (``fedpl_core.apps.cli.main``), not in a subprocess,
so the file stays fast; ``one_error_line`` is ``tests/test_reliability.py``'s check."""

import json
import os
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fixtures_data as fx  # noqa: E402
from test_notebooks import notebook_head  # noqa: E402
from test_reliability import one_error_line  # noqa: E402

from fedpl_core.base.validation import ConfigError  # noqa: E402
from fedpl_core.data.base import DataError  # noqa: E402
from fedpl_core.runs.build import build_partition, load_data
from fedpl_core.runs.experiment_config import ExperimentConfig  # noqa: E402

BASE = [
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
    "--num-clients",
    "3",
    "--progress",
    "false",
    "--model-kwargs",
    '{"width": 4}',
]
#: ``report`` takes the data and partition flags only.
REPORT_BASE = [
    "--n-train",
    "200",
    "--n-test",
    "100",
    "--image-size",
    "28",
    "--classes",
    "Effusion,Pneumothorax,Nodule",
    "--num-clients",
    "3",
    "--progress",
    "false",
]


def written(tmp_path):
    return sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file() and "cache" not in p.parts)


# ------------------------------------------------------------------ failure 6: files that crashed
def test_weights_file_that_is_not_a_state_dict(main, tmp_path):
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    p = main("run", *BASE, "--model", "resnet18", "--model-kwargs", json.dumps({"weights_path": str(text)}))
    one_error_line(p, f"weights file {text} is not a torch state-dict file")
    pkl = tmp_path / "w.pkl"
    pkl.write_bytes(pickle.dumps({"conv1.weight": SimpleNamespace(a=1)}))  # a pickle of an arbitrary object
    p = main("run", *BASE, "--model", "resnet18", "--model-kwargs", json.dumps({"weights_path": str(pkl)}))
    one_error_line(p, f"weights file {pkl}")
    assert written(tmp_path) == [Path("passwd"), Path("w.pkl")]


def test_huge_image_among_ham10000_images_names_the_file(main, tmp_path, monkeypatch):
    from PIL import Image

    root = fx.write_ham10000(tmp_path / "ham")
    bomb = next((root / "HAM10000_images_part_1").glob("*.jpg"))
    Image.new("RGB", (300, 300), (90, 60, 40)).save(bomb)  # 90,000 px: a "bomb" under a limit of 2 x 20,000
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 20_000)
    p = main(
        "run",
        "--dataset",
        "ham10000",
        "--data-root",
        root,
        "--image-size",
        "28",
        "--num-clients",
        "2",
        "--partition",
        "iid",
        "--progress",
        "false",
        "--model-kwargs",
        '{"width": 4}',
    )
    one_error_line(p, f"image file {bomb} is 90,000 pixels")


def _npz(path, **arrays):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def _chest(n=(4, 2, 3)):
    rng = np.random.default_rng(0)
    out = {}
    for s, m in zip(("train", "val", "test"), n):
        out[f"{s}_images"] = rng.integers(0, 256, (m, 28, 28), dtype=np.uint8)
        out[f"{s}_labels"] = rng.integers(0, 2, (m, 14)).astype(np.uint8)
    return out


@pytest.mark.parametrize(
    "case,needle",
    [
        ("empty", "is empty (0 bytes)"),
        ("random", "is not an .npz archive"),
        ("nan", "label NaN in row 1 of its test_labels"),
        ("seven", "label 7 in row 0 of its train_labels"),
        ("no_samples", "hold no images"),
    ],
)
def test_broken_medmnist_files_name_the_file_and_the_problem(tmp_path, case, needle):
    from fedpl_core.data.loaders.medmnist import load_medmnist

    path = tmp_path / "chestmnist.npz"
    if case == "empty":
        path.write_bytes(b"")
    elif case == "random":
        path.write_bytes(np.random.default_rng(0).bytes(2000))
    else:
        a = _chest((0, 0, 0) if case == "no_samples" else (4, 2, 3))
        if case == "nan":
            a["test_labels"] = a["test_labels"].astype(np.float32)
            a["test_labels"][1, 3] = np.nan
        if case == "seven":
            a["train_labels"][0, 2] = 7
        _npz(path, **a)
    with pytest.raises(DataError) as e:
        load_medmnist(tmp_path, "chestmnist", None)
    msg = str(e.value)
    assert str(path) in msg and needle in msg and "allow_pickle" not in msg and "\n" not in msg


def test_cli_reports_an_empty_npz_in_one_line(main, tmp_path):
    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "chestmnist.npz").write_bytes(b"")
    one_error_line(
        main("run", *BASE, "--dataset", "medmnist:chestmnist", "--data-root", tmp_path / "mm"),
        "chestmnist.npz is empty",
    )


@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--n-train", "1e12"], "1000000000000 training and 100 test images at 28 px need about"),
        (["--n-test", "1e12"], "200 training and 1000000000000 test images at 28 px need about"),
    ],
)
def test_too_many_images_are_refused_with_an_estimate(main, tmp_path, flags, needle):
    p = main("run", *BASE, *flags)
    one_error_line(p, needle)
    assert "lower n_train / n_test / image_size" in p.stderr and written(tmp_path) == []


def test_memory_estimate_uses_what_this_machine_has(main, monkeypatch):
    from fedpl_core.data import base

    monkeypatch.setattr(base, "available_memory", lambda: 4 * 10**9)  # 4 GB available
    p = main("run", *BASE, "--n-train", "10000000")
    one_error_line(p, "need about 10.7 GB")  # 10 M x (1.25 x 784 + 64 + 8 x 3) bytes
    assert "4 GB is available" in p.stderr


def test_image_size_of_real_data_is_bounded(main, tmp_path):
    fx.write_medmnist(tmp_path / "mm", "pneumoniamnist")
    p = main(
        "run",
        "--dataset",
        "medmnist:pneumoniamnist",
        "--data-root",
        tmp_path / "mm",
        "--image-size",
        "100000",
        "--num-clients",
        "2",
        "--partition",
        "iid",
        "--progress",
        "false",
    )
    one_error_line(p, "image_size must be in 16..1024 for medmnist:pneumoniamnist")


# ------------------------------------------------------------------ failure 7: --classes on every data set
def test_classes_are_honoured_or_refused_for_synthetic_skin(main):
    p = main("run", *BASE, "--dataset", "synthetic-skin", "--classes", "Effusion")
    one_error_line(p, "unknown class name(s) ['Effusion']; known classes: ['MEL', 'NV', 'BCC'")
    data = load_data(
        ExperimentConfig(dataset="synthetic-skin", classes=["NV", "MEL"], image_size=28, n_train=60, n_test=30)
    )
    assert data.train.class_names == ["NV", "MEL"] and len(data.train) == 60
    assert (data.train.labels.sum(1) == 1).all() and (data.test.labels.sum(1) == 1).all()


def test_classes_of_a_one_class_data_set_are_refused():
    from fedpl_core.data.catalog import load_split

    with pytest.raises(DataError, match="tb has the one class 'Tuberculosis'; classes=\\['Effusion'\\]"):
        load_split("tb", "/", classes=["Effusion"])


# ------------------------------------------------------------------ failure 8: the README's papermill command
def test_notebook_parameters_read_papermill_text():
    from fedpl_core.studies.parameters import notebook_parameters

    got = notebook_parameters(
        profile="smoke",
        seeds="[0, 1]",
        rounds=None,
        data_seed=0,
        device="auto",
        workers=None,
        results_dir="r",
        exclude='["fedavg"]',
    )
    assert got == {
        "profile": "smoke",
        "seeds": [0, 1],
        "rounds": None,
        "data_seed": 0,
        "device": "auto",
        "workers": None,
        "results_dir": "r",
        "exclude": ["fedavg"],
    }
    assert notebook_parameters(seeds="0, 2")["seeds"] == [0, 2] and notebook_parameters(seeds=3)["seeds"] == [3]
    assert notebook_parameters(data_roots='{"Task 2": "/"}')["data_roots"] == {"Task 2": "/"}
    with pytest.raises(ConfigError, match="seeds '\\[0, x\\]' is not a list or mapping"):
        notebook_parameters(seeds="[0, x]")


@pytest.mark.parametrize(
    "params,needle",
    [
        (dict(rounds=0), "rounds must be >= 1, got 0"),  # was: quietly the profile's rounds
        (dict(data_root="/nonexistent"), "data_root: folder not found: /nonexistent"),
        (dict(data_roots="/nonexistent"), "data_roots maps a name to a data folder"),
        (dict(seeds=[0, 0]), "seeds lists a seed twice"),
    ],
)
def test_notebook_parameters_that_would_be_ignored_are_errors(params, needle):
    from fedpl_core.studies.parameters import notebook_parameters

    with pytest.raises(ConfigError) as e:
        notebook_parameters(**params)
    assert needle in str(e.value)


def test_fedmlp_study_refuses_a_bare_data_root():
    from fedpl_core.studies import fedmlp

    with pytest.raises(TypeError, match="data_roots maps a table to its data folder"):
        fedmlp.settings("smoke", data_roots="/nonexistent")  # notebook 04 with -p data_roots /nonexistent
    with pytest.raises(FileNotFoundError, match="data_roots\\['ICH'\\]: folder not found"):
        fedmlp.settings("smoke", data_roots='{"ICH": "/nonexistent"}')


# ------------------------------------------------------------------ empty strings
@pytest.mark.parametrize(
    "cmd,flag", [("run", "--classes"), ("run", "--out"), ("run", "--results-dir"), ("report", "--figure")]
)
def test_empty_strings_are_errors(main, tmp_path, cmd, flag):
    p = main(cmd, *(BASE if cmd == "run" else REPORT_BASE), flag, "")
    one_error_line(p, f"{flag} is empty")
    assert written(tmp_path) == []


def test_empty_class_name_in_a_list(main):
    one_error_line(main("run", *BASE, "--classes", "Effusion,,Nodule"), "holds an empty class name")


# ------------------------------------------------------------------ config conflicts
@pytest.mark.parametrize(
    "text,needle",
    [
        ("method: fedavg\nrounds: 2\nmethod: fedprox\n", "key 'method' is given twice (lines 1 and 3)"),
        ("rounds: 2\nengine:\n  rounds: 3\n", "rounds is given twice, at the top level (2) and under engine (3)"),
        ("seed: 1\nengine: {seed: 2}\n", "seed is given twice, at the top level (1) and under engine (2)"),
    ],
)
def test_config_conflicts_are_refused(main, tmp_path, text, needle):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    one_error_line(main("run", "--config", f), needle)


def test_duplicate_json_key_is_refused(tmp_path):
    from fedpl_core.base.config_files import read_config_file

    f = tmp_path / "c.json"
    f.write_text('{"rounds": 2, "rounds": 3}')
    with pytest.raises(ConfigError, match="key 'rounds' is given twice"):
        read_config_file(f)


# ------------------------------------------------------------------ config-file messages
def test_config_file_suffix_and_content(tmp_path):
    from fedpl_core.base.config_files import read_config_file

    (tmp_path / "A.YAML").write_text("method: fedprox\nrounds: 3\n")
    assert ExperimentConfig.from_file(tmp_path / "A.YAML").method == "fedprox"
    (tmp_path / "a.txt").write_text("method: fedprox\nengine:\n  rounds: 3\n")
    assert ExperimentConfig.from_file(tmp_path / "a.txt").engine.rounds == 3
    (tmp_path / "b.txt").write_text("method: [fedavg\n")
    with pytest.raises(
        ConfigError,
        match=r"b.txt \(.txt: read by content\) is neither valid JSON \(.*\) nor valid "
        r"YAML",
    ):
        read_config_file(tmp_path / "b.txt")


def test_non_utf8_config_file_is_named(main, tmp_path):
    f = tmp_path / "latin1.yaml"
    f.write_bytes("name: caf\xe9\n".encode("latin-1"))
    one_error_line(main("run", "--config", f), f"config file {f} is not UTF-8 text (byte 0xe9 at offset 9)")


# ------------------------------------------------------------------ selection keys
@pytest.mark.parametrize("key", ["nosuch/auroc_mean", "accuracy"])
def test_selection_key_that_never_matches_is_refused(main, key):
    p = main("run", *BASE, "--selection", key)
    one_error_line(
        p, f"selection key {key!r} is never recorded by this run; use one of val_loss, train_loss, auroc_mean, map"
    )


def test_selection_keys_of_single_label_data_and_extra_sets():
    from fedpl_core.fl.selection import check_selection_key, recorded_keys

    keys = recorded_keys({"": "multiclass", "external": "multilabel"}, False)
    assert "accuracy" in keys and "map" not in keys and "external/map" in keys
    check_selection_key("external/auroc_mean", {"": "multilabel", "external": "multilabel"}, False)
    with pytest.raises(ConfigError, match="'map' is never recorded"):
        check_selection_key("map", {"": "multiclass"}, False)


# ------------------------------------------------------------------ internal torch / numpy messages
@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--model-kwargs", '{"width": 0}'], "model_kwargs width must be >= 1, got 0"),
        (["--model", "resnet18", "--model-kwargs", '{"width": 8}'], "model_kwargs 'width' applies to cnn only"),
        (["--lr", "1e300"], "lr must be at most 3.4e+38 (training runs in float32), got 1e+300"),
        (["--method", "fedprox", "--method-kwargs", '{"mu": "abc"}'], "method_kwargs mu must be a number, got 'abc'"),
        (
            ["--method", "fedprox", "--method-kwargs", '{"partial": "no"}'],
            "method_kwargs partial must be true or false",
        ),
        (["--partition", "explicit"], "partition 'explicit' needs partition_kwargs {\"client_classes\""),
        (["--num-clients", "1"], "partition 'missing_classes' needs num_clients >= 2"),
        (
            ["--split", "dirichlet", "--split-kwargs", '{"alfa": 1}'],
            "split 'dirichlet' (split_kwargs): got an unexpected",
        ),
        (["--device", "meta"], "device must be auto, cpu, cuda, cuda:N or mps, got 'meta'"),
        (["--dataset", "nosuch"], "unknown data set 'nosuch'; available: chexpert, "),
        (["--dataset", "medmnist:nosuch"], "unknown MedMNIST flag 'nosuch'"),
    ],
)
def test_internal_messages_become_settings_messages(main, tmp_path, flags, needle):
    one_error_line(main("run", *BASE, *flags), needle)
    assert written(tmp_path) == []


def test_split_without_partition_options_uses_the_default_missing():
    cfg = ExperimentConfig(
        classes=["Effusion", "Pneumothorax", "Nodule"],
        image_size=28,
        n_train=120,
        n_test=60,
        num_clients=3,
        split="dirichlet",
    )
    part = build_partition(cfg, load_data(cfg).train)  # was: MissingClasses.__init__() missing 'missing'
    assert part.masks.sum(1).tolist() == [1, 1, 1]


def test_out_under_a_file_names_the_flag(main, tmp_path):
    (tmp_path / "f").write_text("x")
    one_error_line(
        main("run", *BASE, "--out", tmp_path / "f" / "x.json"),
        f"--out {tmp_path / 'f' / 'x.json'}: {tmp_path / 'f'} is a file, not a folder",
    )


# ------------------------------------------------------------------ ignored settings
def test_data_root_with_built_in_data_is_refused(main, tmp_path):
    one_error_line(main("run", *BASE, "--data-root", tmp_path), "data_root does not apply to synthetic-cxr")


# ------------------------------------------------------------------ data messages
def test_ham10000_on_an_empty_root_names_both_layouts(main, tmp_path):
    (tmp_path / "empty").mkdir()
    p = main(
        "run", "--dataset", "ham10000", "--data-root", tmp_path / "empty", "--image-size", "28", "--progress", "false"
    )
    one_error_line(p, "neither the HAM10000 layout (HAM10000_metadata.csv")
    assert "ISIC 2018 layout (ISIC2018_Task3_Training_GroundTruth.csv" in p.stderr


# ------------------------------------------------------------------ the notebooks' parameter cells, run by papermill


@pytest.mark.notebook
def test_readme_papermill_command_reads_seeds_as_a_list(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    nb = notebook_head("00_introduction.ipynb", tmp_path)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(nb),
            str(tmp_path / "o.ipynb"),
            "-p",
            "profile",
            "smoke",
            "-p",
            "seeds",
            "[0, 1]",
            "--cwd",
            str(Path(__file__).resolve().parent.parent),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "seeds 0, 1" in (tmp_path / "o.ipynb").read_text()  # the list, printed as prose


@pytest.mark.notebook
def test_notebook_04_refuses_a_data_root_it_would_ignore(tmp_path, monkeypatch):
    import papermill as pm

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    nb = notebook_head("04_fedmlp.ipynb", tmp_path)
    with pytest.raises(pm.PapermillExecutionError, match="data_roots maps a name to a data folder"):
        pm.execute_notebook(
            str(nb),
            str(tmp_path / "o.ipynb"),
            parameters={"profile": "smoke", "data_roots": "/nonexistent"},
            progress_bar=False,
            kernel_name="python3",
        )
    with pytest.raises(pm.PapermillExecutionError, match="rounds must be >= 1, got 0"):
        pm.execute_notebook(
            str(nb),
            str(tmp_path / "o2.ipynb"),
            parameters={"profile": "smoke", "rounds": 0},
            progress_bar=False,
            kernel_name="python3",
        )


@pytest.mark.notebook
def test_papermill_rounds_and_lr_reach_the_notebooks_settings(tmp_path, monkeypatch):
    """``-p rounds`` and ``-p lr`` (text, as papermill may pass them) go through the profile
    table's one function into the settings the notebook prints."""
    import papermill as pm

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    nb = notebook_head("04_fedmlp.ipynb", tmp_path)
    pm.execute_notebook(
        str(nb),
        str(tmp_path / "o.ipynb"),
        parameters={"profile": "smoke", "rounds": 3, "lr": "5e-3"},
        progress_bar=False,
        kernel_name="python3",
    )
    assert "3 rounds (1 warm-up), Adam lr 0.005" in (tmp_path / "o.ipynb").read_text()
