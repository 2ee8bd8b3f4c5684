"""The offline GPU path: the wheelhouse resolves an extra that names the package itself
(``fedpl[docs]`` in ``test``, which ``pip download`` cannot find), the offline install
installs what the GPU checks need and only wheels ``SHA256SUMS`` lists, ``gpu_node.sh`` hands
back three flat files, the ``grids`` step's command line is one its benchmark and ``run_many``
accept, and ``gpu-checks`` refuses a bad option in one line before any work.  No test needs the
package index."""

import argparse
import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from fedpl_core.apps import gpu_checks as G
from fedpl_core.apps.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def wheelhouse():
    return _load(ROOT / "tools" / "wheelhouse.py", "wheelhouse_under_test")


# ---------------------------------------------------------------- the wheelhouse
def test_an_extra_naming_the_package_itself_is_expanded_not_downloaded(wheelhouse, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "My_Pkg"\ndependencies = ["numpy>=1"]\n'
        "[project.optional-dependencies]\n"
        'docs = ["sphinx>=8"]\n'
        'lint = ["ruff", "my-pkg[docs]"]\n'
        'test = ["pytest", "my_pkg[lint,extra2]; python_version >= \'3.11\'"]\n'
        "extra2 = [\"tomli; python_version < '3.12'\"]\n"
        '[build-system]\nrequires = ["setuptools>=64"]\n'
    )
    reqs, build = wheelhouse.read_pyproject(["test"], [], pyproject=tmp_path / "pyproject.toml")
    got = [str(r) for r in reqs]
    assert not any(Requirement(r).name.lower().replace("_", "-") == "my-pkg" for r in got)
    assert got[:2] == ["numpy>=1", "pytest"]
    assert 'ruff; python_version >= "3.11"' in got and 'sphinx>=8; python_version >= "3.11"' in got
    assert 'tomli; python_version >= "3.11" and python_version < "3.12"' in got
    assert [str(r) for r in build] == ["setuptools>=64"]
    # an extra in `without` is not followed through the package, but is taken when named itself
    left = [str(r) for r in wheelhouse.read_pyproject(["test"], ["docs"], pyproject=tmp_path / "pyproject.toml")[0]]
    assert not any(r.startswith("sphinx") for r in left) and any(r.startswith("ruff") for r in left)
    named = wheelhouse.read_pyproject(["test", "docs"], ["docs"], pyproject=tmp_path / "pyproject.toml")[0]
    assert "sphinx>=8" in [str(r) for r in named]


def test_the_projects_defaults_are_what_the_gpu_checks_need_without_the_docs(wheelhouse):
    reqs = {Requirement(r).name for r in map(str, wheelhouse.read_pyproject(["test", "pretrained"], ["docs"])[0])}
    assert "fedpl" not in reqs and "sphinx" not in reqs
    assert {"torch", "pytest", "papermill", "ipykernel", "nbformat", "timm"} <= reqs
    assert "sphinx" in {Requirement(str(r)).name for r in wheelhouse.read_pyproject(["test"], [])[0]}
    p = subprocess.run(
        [sys.executable, "tools/wheelhouse.py", "--print-requirements"], cwd=ROOT, capture_output=True, text=True
    )
    assert p.returncode == 0 and "pytest>=7.4" in p.stdout.splitlines() and "sphinx" not in p.stdout
    p = subprocess.run(
        [sys.executable, "tools/wheelhouse.py", "--print-requirements", "--without", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and p.stderr.startswith("wheelhouse: error: unknown extra (--without) 'nope'")


def test_the_wheelhouse_asks_pip_for_no_requirement_that_names_the_package(wheelhouse, tmp_path, monkeypatch):
    """``main`` end to end with pip stood in for: every requirement pip is asked for gets an
    empty wheel.  Before, ``fedpl[docs]`` went to ``pip download`` ("No matching
    distribution found for fedpl[docs]")."""
    asked = []

    def fake_pip(cmd, **kw):
        dl = Path(cmd[cmd.index("-d") + 1])
        dl.mkdir(exist_ok=True)
        lines = Path(cmd[cmd.index("-r") + 1]).read_text().splitlines()
        asked.extend(lines)
        for line in lines:
            wheelhouse.stand_in_wheel(dl, Requirement(line).name, "99999.0")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(wheelhouse.subprocess, "run", fake_pip)
    dest = tmp_path / "wh"
    assert wheelhouse.main(["--python-version", "3.12", "--have", "numpy", "--dest", str(dest)]) == 0
    names = {Requirement(r).name for r in asked}
    assert "fedpl" not in names and "sphinx" not in names and "pytest" in names
    listed = [ln.split("  ")[1] for ln in (dest / "SHA256SUMS").read_text().splitlines()]
    assert sorted(listed) == sorted(p.name for p in dest.glob("*.whl"))
    assert not any(n.startswith(("torch-", "torchvision-", "numpy-")) for n in listed)


# ---------------------------------------------------------------- the offline install
def _fake_env(root: Path) -> Path:
    """A stand-in for the node's virtual environment: its python records each call and runs
    ``tools/wheelhouse.py`` for real, everything else (pip, the import check) succeeds."""
    env = root / "env"
    (env / "bin").mkdir(parents=True)
    py = env / "bin" / "python"
    py.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{root}/calls"\n'
        'case "$1" in tools/wheelhouse.py) exec ' + sys.executable + ' "$@" ;; esac\n'
        '[ "$2" = pip ] && for a in "$@"; do case "$a" in /*) [ -f "$a" ] && cat "$a" > '
        f'"{root}/installed.txt" ;; esac; done\n'
        "exit 0\n"
    )
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    return env


def _tiny_wheelhouse(wheelhouse, folder: Path, listed: list[str]) -> None:
    folder.mkdir()
    sums = []
    for name in listed:
        w = wheelhouse.stand_in_wheel(folder, name, "1.0")
        sums.append(f"{hashlib.sha256(w.read_bytes()).hexdigest()}  {w.name}")
    (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    (folder / "MANIFEST.json").write_text("{}\n")


def _install(tmp_path: Path, wh: Path, env: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(ROOT / "tools" / "offline_install.sh"), str(env)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WHEELHOUSE": str(wh), "BASE_PYTHON": sys.executable, **extra},
    )


@pytest.mark.parametrize(
    "planted", ["setuptools-999.0.0-py3-none-any.whl", ".hidden-1.0-py3-none-any.whl", "setuptools-999.0.0.TAR.GZ"]
)
def test_an_unlisted_wheel_in_the_wheelhouse_is_refused_before_anything_is_installed(wheelhouse, tmp_path, planted):
    """``sha256sum -c`` checks only the files SHA256SUMS lists, and pip takes every wheel in
    the folder: a planted wheel (its code would run at install time) passed before."""
    wh = tmp_path / "wh"
    _tiny_wheelhouse(wheelhouse, wh, ["tabulate"])
    bad = wheelhouse.stand_in_wheel(tmp_path, "setuptools", "999.0.0")
    shutil.move(bad, wh / planted)
    env = _fake_env(tmp_path)
    p = _install(tmp_path, wh, env)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith("offline_install: error: ") and p.stderr.count("\n") == 1
    assert f"{planted} is not listed in SHA256SUMS" in p.stderr
    assert not (tmp_path / "calls").exists()  # nothing ran in the environment, pip least of all


def test_files_pip_does_not_read_may_travel_beside_the_wheels(wheelhouse, tmp_path):
    """A GPU call carries its run script and requirements file in the wheelhouse folder: pip's
    --find-links reads only archives, so these are no reason to refuse the install."""
    wh = tmp_path / "wh"
    _tiny_wheelhouse(wheelhouse, wh, ["tabulate"])
    (wh / "device_run.sh").write_text("#!/bin/sh\n")
    (wh / "node-requirements.txt").write_text("pytest>=7.4\n")
    env = _fake_env(tmp_path)
    p = _install(tmp_path, wh, env)
    assert p.returncode == 0, p.stderr
    assert any(c.startswith("-m pip install") for c in (tmp_path / "calls").read_text().splitlines())


def test_a_listed_wheelhouse_installs_the_package_with_what_the_checks_need_and_not_the_docs(wheelhouse, tmp_path):
    wh = tmp_path / "wh"
    _tiny_wheelhouse(wheelhouse, wh, ["tabulate"])
    env = _fake_env(tmp_path)
    p = _install(tmp_path, wh, env)
    assert p.returncode == 0, p.stderr
    pip = [c for c in (tmp_path / "calls").read_text().splitlines() if c.startswith("-m pip install")]
    assert len(pip) == 1 and f"--no-index --find-links {wh} -e . -r " in pip[0]
    installed = (tmp_path / "installed.txt").read_text().splitlines()
    assert "pytest>=7.4" in installed and "timm>=0.9" in installed and "papermill>=2.5" in installed
    assert not any(r.startswith(("sphinx", "fedpl")) for r in installed)
    # a damaged listed wheel is still refused
    (wh / "tabulate-1.0-py3-none-any.whl").write_bytes(b"not a wheel")
    p = _install(tmp_path, wh, env)
    assert p.returncode == 2 and "is missing or damaged" in p.stderr


# ---------------------------------------------------------------- gpu_node.sh: what it hands back
FAKE_CHECKS = r"""
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
for i in range(6):
    for j in range(10):
        d = os.path.join(out, f"{i:02d}-step", "deep", "deeper")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"f{j}.txt"), "w").write("x" * 100)
open(os.path.join(out, "summary.md"), "w").write("| step | status |\n| environment | ok |\n")
os.makedirs("figures/gpu", exist_ok=True)
open("figures/gpu/step_times.json", "w").write("{}")
print("the checks ran with", " ".join(args))
"""

FAKE_NOTEBOOK = r"""
import os, sys
for d in ("reports/gpu", "figures/gpu", "results/gpu/01_x/run"):
    os.makedirs(d, exist_ok=True)
open("reports/gpu/01_fedpsl.ipynb", "w").write("{}")
open("figures/gpu/fig.png", "w").write("png")
open("results/gpu/01_x/run/result.json", "w").write("{}")
print("notebook ran with", " ".join(sys.argv[1:]), os.environ["FEDPL_RESULTS"])
"""


def _node_checkout(tmp_path: Path, fake: str) -> Path:
    """A checkout with tools/gpu_node.sh and an installed node environment whose python runs
    ``fake`` (a stand-in for ``python -m fedpl_core ...`` that writes many files, deep)."""
    ck = tmp_path / "checkout"
    (ck / "tools").mkdir(parents=True)
    shutil.copy(ROOT / "tools" / "gpu_node.sh", ck / "tools")
    (ck / "pyproject.toml").write_text("")
    os.utime(ck / "pyproject.toml", (1, 1))
    env = ck / ".venv-node"
    (env / "bin").mkdir(parents=True)
    (env / ".installed").write_text("")
    (ck / "fake.py").write_text(fake)
    py = env / "bin" / "python"
    py.write_text(f'#!/bin/sh\nshift 2\nexec {sys.executable} "{ck}/fake.py" "$@"\n')
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    return ck


def _handed_back(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*"))


def test_the_checks_hand_back_a_summary_a_log_and_one_archive(tmp_path):
    """Before: 55 or more files, some 3 folders down, in the folder a remote job hands back."""
    ck = _node_checkout(tmp_path, FAKE_CHECKS)
    out = tmp_path / "handed-back"
    p = subprocess.run(
        ["bash", str(ck / "tools" / "gpu_node.sh"), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OUT": str(out)},
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert _handed_back(out) == ["log.txt", "results.tar.gz", "summary.md"]
    summary = (out / "summary.md").read_text()
    assert summary.startswith("| step | status |\n| environment | ok |") and "62 files in results.tar.gz" in summary
    log = (out / "log.txt").read_text()
    assert "== offline install" in log and "the checks ran with gpu-checks --out outputs/gpu-checks --budget" in log
    assert "--device cpu" in log
    with tarfile.open(out / "results.tar.gz") as t:
        names = t.getnames()
    assert len(names) == 62 and "figures/gpu/step_times.json" in names
    assert "outputs/gpu-checks/03-step/deep/deeper/f7.txt" in names and "outputs/gpu-checks/summary.md" in names


def test_a_notebook_and_a_failed_install_hand_back_the_same_three_files(tmp_path):
    ck = _node_checkout(tmp_path, FAKE_NOTEBOOK)
    out = tmp_path / "handed-back"
    run = dict(capture_output=True, text=True, timeout=60)
    p = subprocess.run(
        ["bash", str(ck / "tools" / "gpu_node.sh"), "notebook", "01"], env={**os.environ, "OUT": str(out)}, **run
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert _handed_back(out) == ["log.txt", "results.tar.gz", "summary.md"]
    with tarfile.open(out / "results.tar.gz") as t:
        assert sorted(t.getnames()) == [
            "figures/gpu/fig.png",
            "reports/gpu/01_fedpsl.ipynb",
            "results/gpu/01_x/run/result.json",
        ]
    assert "exit status 0" in (out / "summary.md").read_text()
    # the install fails (no wheelhouse): still the three files, the summary says so
    (ck / ".venv-node" / ".installed").unlink()
    shutil.rmtree(out)
    p = subprocess.run(["bash", str(ck / "tools" / "gpu_node.sh")], env={**os.environ, "OUT": str(out)}, **run)
    assert p.returncode == 2
    assert _handed_back(out) == ["log.txt", "results.tar.gz", "summary.md"]
    assert "install: FAILED" in (out / "summary.md").read_text()
    assert "offline_install" in (out / "log.txt").read_text() or "No such file" in (out / "log.txt").read_text()


def test_sigterm_mid_checks_still_hands_back_the_three_files(tmp_path):
    """An allocation that ends the command with SIGTERM: the checks are stopped and what they
    wrote so far comes back, packed, at once."""
    ck = _node_checkout(tmp_path, FAKE_CHECKS + "\nimport time\ntime.sleep(120)\n")
    out = tmp_path / "handed-back"
    p = subprocess.Popen(
        ["bash", str(ck / "tools" / "gpu_node.sh")],
        env={**os.environ, "OUT": str(out)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):  # until the stand-in checks have written their summary
            if (ck / "outputs" / "gpu-checks" / "summary.md").is_file():
                break
            time.sleep(0.1)
        time.sleep(0.3)
        p.terminate()
        p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 143
    assert _handed_back(out) == ["log.txt", "results.tar.gz", "summary.md"]
    with tarfile.open(out / "results.tar.gz") as t:
        assert "outputs/gpu-checks/summary.md" in t.getnames()


# ---------------------------------------------------------------- the grids step's command line
def test_the_grids_steps_command_line_is_accepted_by_the_benchmark_and_run_many():
    """The step's arguments (tiny and full) parse, and each backend gets workers that
    ``run_many``'s check accepts (the serial backend refuses more than one)."""
    from fedpl_core.runs.grid import check_args

    bench = _load(ROOT / "benchmarks" / "grid_throughput.py", "grid_throughput_under_test")
    for tiny in (True, False):
        a = bench.parser().parse_args(G.grids_argv("cuda", tiny))
        assert "serial" in a.backends and a.workers > 1
        for name in a.backends + (["ray (warm)"] if "ray" in a.backends else []):
            kw = bench.grid_args(name, a.workers)
            assert check_args(kw["backend"], kw["workers"], 0) == kw["backend"]
    assert bench.grid_args("serial", 4) == {"backend": "serial", "workers": 1}
    assert bench.grid_args("spawn", 4) == {"backend": "process", "workers": 4}


# ---------------------------------------------------------------- gpu-checks' options
@pytest.mark.parametrize(
    "args, says",
    [
        (["--tiny", "maybe"], "argument --tiny: takes true or false, got 'maybe'"),
        (["--budget", "nan"], "argument --budget: takes a finite number of seconds, more than 10, got 'nan'"),
        (["--budget", "inf"], "argument --budget: takes a finite number"),
        (["--budget", "-1"], "argument --budget: takes a finite number"),
        (["--budget", "lots"], "argument --budget: takes a finite number"),
        (["--parallel", "two"], "argument --parallel: takes a whole number >= 1, got 'two'"),
        (["--parallel", "-3"], "argument --parallel: takes a whole number >= 1"),
        (["--device", "cudax"], "--device must be cuda, cuda:N or cpu, got 'cudax'"),
        (["--device", "cuda:one"], "--device must be cuda, cuda:N or cpu"),
        (["--notebooks", "99"], "--notebooks: '99' names no notebook; the notebooks are 00_introduction"),
        (["--notebooks", "0"], "--notebooks: '0' names no notebook"),
        (["--redo", "smoke", "tests"], "unknown step 'tests'"),
    ],
)
def test_a_bad_gpu_checks_option_is_one_line_naming_it_before_any_work(args, says, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["gpu-checks", "--device", "cpu", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedpl: error: ") and says in err and err.count("\n") == 1, err
    assert "Traceback" not in err and not out.exists()  # no folder made, no step run


def test_the_option_checks_hold_for_a_namespace_given_directly(tmp_path):
    """``check_args`` checks the ranges itself (``main`` may be called without the parser)."""
    base = dict(steps=None, redo=None, budget=None, parallel=6, tiny=None, device="cpu", notebooks=None)
    for bad in ({"budget": float("nan")}, {"budget": float("inf")}, {"parallel": 0}, {"tiny": "maybe"}):
        with pytest.raises(ValueError, match="--budget|--parallel|--tiny"):
            G.check_args(argparse.Namespace(**{**base, **bad, "out": str(tmp_path / "o")}))
    assert not (tmp_path / "o").exists()
    assert G.notebook_stems(["01", "02_fedlsm", "00_introduction.ipynb"]) == [
        "01_fedpsl",
        "02_fedlsm",
        "00_introduction",
    ]
