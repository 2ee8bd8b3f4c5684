"""The results cache travels: a folder of finished runs copied to another checkout path on
another host (the next allocation of a GPU node) is reused there as it is, with the same
numbers, not done again.  Found by this check: every result written since provenance
recorded its ``numeric_platform`` (a mapping) was refused as corrupt when read back, so no
run was ever reused."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fedpl_core.runs.schema import ResultFileError, parse_result

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import json, socket, sys, warnings
socket.gethostname = lambda: sys.argv[2]  # another host
warnings.simplefilter("error")  # a refused cache file warns: fail instead
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run
cfg = ExperimentConfig(dataset="synthetic-cxr", classes=["Effusion", "Nodule"], image_size=28, n_train=120,
                       n_test=60, partition="missing_classes", num_clients=2, partition_kwargs={"missing": 1},
                       model="cnn", model_kwargs={"width": 8}, method="fedavg_pl",
                       engine=EngineConfig(rounds=2, batch_size=20, progress=False))
r = run(cfg, results_dir=sys.argv[1])
print(json.dumps({"host": r.provenance["host"], "final": r.final, "run_id": r.run_id}))
"""


def _checkout_copy(dest: Path) -> Path:
    """The package and the files that make a checkout (pyproject.toml, notebooks/) at ``dest``."""
    shutil.copytree(ROOT / "fedpl_core", dest / "fedpl_core", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    (dest / "notebooks").mkdir()
    return dest


def _run(checkout: Path, results: Path, host: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(results), host],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_results_folder_copied_to_another_checkout_and_host_is_reused(tmp_path):
    a = _checkout_copy(tmp_path / "first")
    b = _checkout_copy(tmp_path / "elsewhere" / "second")
    first = _run(a, a / "results" / "gpu" / "nb", "node-a")
    assert first["host"] == "node-a"
    shutil.copytree(a / "results", b / "results")
    again = _run(b, b / "results" / "gpu" / "nb", "node-b")
    assert again["host"] == "node-a"  # read from the copied file, not run again on node-b
    assert again == first


def test_provenance_values_must_be_plain_values(tmp_path):
    from fedpl_core.fl.engine_config import EngineConfig
    from fedpl_core.runs.experiment_config import ExperimentConfig
    from fedpl_core.runs.runner import run

    cfg = ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Effusion", "Nodule"],
        image_size=28,
        n_train=120,
        n_test=60,
        num_clients=2,
        model_kwargs={"width": 8},
        engine=EngineConfig(rounds=1, batch_size=30, progress=False),
    )
    run(cfg, results_dir=tmp_path)
    d = json.loads((tmp_path / f"{cfg.run_id()}.json").read_text())
    assert isinstance(d["provenance"]["numeric_platform"], str)
    parse_result(json.dumps(d), cfg.run_id())  # as written: accepted
    d["provenance"]["numeric_platform"] = {"torch": [1, 2]}  # a mapping may hold plain values only
    with pytest.raises(ResultFileError, match="numeric_platform"):
        parse_result(json.dumps(d), cfg.run_id())
