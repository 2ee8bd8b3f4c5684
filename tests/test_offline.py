"""The offline install over an existing PyTorch (issue 34): pytest runs where nbval is not
installed; tools/wheelhouse.py's resolution helpers; tools/offline_install.sh refuses a missing
wheelhouse with one line.  The install itself is rehearsed end to end by
tools/offline_rehearsal.sh (minutes; its numbers are in docs/gpu.md)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _wheelhouse():
    spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "tools" / "wheelhouse.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pytest_runs_without_nbval_and_the_notebooks_skip_saying_why():
    """``-p no:nbval`` stands for nbval not installed: pyproject's options must not name it
    (before: ``--nbval-lax`` in addopts, a usage error and exit status 4)."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:nbval",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rs",
            "tests/test_gpu.py::test_a_run_records_its_peak_gpu_memory",
            "notebooks/00_introduction.ipynb",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-2000:]
    assert "nbval is not installed (pip install -e .[test]): the notebook is not executed" in out


def test_the_notebooks_run_under_nbval_lax_when_it_is_installed():
    import pytest

    pytest.importorskip("nbval")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "notebooks/00_introduction.ipynb",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.returncode == 0 and "00_introduction.ipynb::Cell 0" in p.stdout, p.stdout[-2000:]


def test_reachable_follows_markers_and_extras_and_stops_at_the_machines_packages():
    w = _wheelhouse()
    env = w.target_env("3.12", "manylinux_2_28_x86_64")
    assert (env["python_version"], env["sys_platform"], env["platform_machine"]) == ("3.12", "linux", "x86_64")
    wheels = {
        "timm": ("1", ["torch", "huggingface-hub", "pyyaml"]),
        "huggingface-hub": (
            "1",
            ["tqdm", "colorama; platform_system == 'Windows'", "hf-xet; extra == 'xet'", "fsspec"],
        ),
        "pyyaml": ("1", []),
        "tqdm": ("1", []),
        "fsspec": ("1", []),
        "hf-xet": ("1", []),
        "colorama": ("1", []),
        "tomli": ("1", []),
        "torch": ("9999", ["sympy"]),
        "sympy": ("1", []),
        "numpy": ("1", []),
        "pandas": ("1", ["numpy", "tomli; python_version < '3.11'"]),
    }
    roots = [Requirement(r) for r in ("timm", "pandas", "huggingface-hub[xet]", "papermill")]
    wheels["papermill"] = ("2.7", ["aiohttp>=3.9; python_version == '3.12'", "tqdm"])
    need, missing = w.reachable(roots, wheels, env, stop={"torch", "numpy"})
    assert need == {"timm", "huggingface-hub", "pyyaml", "tqdm", "fsspec", "hf-xet", "pandas", "papermill"}
    assert missing == ["aiohttp>=3.9"]  # the target's marker, which pip (run by 3.11, say) did not see
    assert w.reachable(roots, wheels, w.target_env("3.11", "manylinux_2_28_x86_64"), {"torch", "numpy"})[1] == []


def test_a_stand_in_wheel_is_a_wheel_pip_reads(tmp_path):
    w = _wheelhouse()
    path = w.stand_in_wheel(tmp_path, "torch", "9999+offline")
    assert path.name == "torch-9999+offline-py3-none-any.whl"
    assert w.wheel_metadata(path) == ("torch", "9999+offline", [])


def test_the_install_without_a_wheelhouse_is_one_line(tmp_path):
    p = subprocess.run(
        ["bash", str(ROOT / "tools" / "offline_install.sh"), str(tmp_path / "env")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WHEELHOUSE": str(tmp_path / "none")},
    )
    assert p.returncode == 2
    assert p.stderr.startswith("offline_install: error: no ") and p.stderr.count("\n") == 1
    assert not (tmp_path / "env").exists()
