"""``python -m fedpl_core gpu-checks``: the first checks on a GPU machine, in steps that fit a
short allocation.

The steps run in this order, so that an allocation cut short has taught the most:

================  ==========================================================================
step              what it runs
================  ==========================================================================
``environment``   versions (Python, torch, CUDA, cuDNN), the GPU and its bf16 support, every
                  package the install needs against its declared lower bound, the Jupyter
                  kernel papermill starts, the run locks and the pretrained extra
``gpu-tests``     ``pytest tests/test_gpu.py`` (its tests skip where torch sees no GPU)
``step-times``    a training step and a 512-image evaluation of each backbone at the gpu
                  profile's sizes (:data:`fedpl_core.studies.budget.STEP_TIME_SIZES`; bf16 autocast
                  and channels-last on CUDA) against the figures the gpu profile assumed
                  (:data:`fedpl_core.studies.budget.GPU_ASSUMPTIONS`)
``smoke``         the six notebooks in the smoke profile on the GPU, in parallel processes
``throughput``    ``benchmarks/gpu_throughput.py`` for the small CNN at K = 8, 32, 128, then
                  for ResNet-18 at K = 8, 32
``grids``         ``benchmarks/grid_throughput.py``: serial, spawned processes and threads
================  ==========================================================================

Each step runs in a process of its own under its own time limit (:data:`STEPS`) and writes
its log (``log.txt``), its result (``result.json``: status, seconds, one line of what it
found) and its products into ``<out>/<nn>-<step>/``; a failed step does not stop the next.
A step that would not fit the remaining ``--budget`` is skipped and says so.  After every
step ``<out>/summary.md`` and ``summary.json`` are rewritten (atomically), and the table is
printed at the end.  Running the command again with the same ``--out`` continues: a step
that finished (status ok) is not run again unless ``--redo`` names it; a failed, timed-out
or skipped one is.  ``--out`` must be a folder, not a link to one; every file the driver writes
there goes through :func:`~fedpl_core.base.fileio.atomic_write` with ``root=out`` (a link planted
at a name is replaced, a link on the way refused), a step's folder that is a link is refused, and
so is a kept step folder holding a link (``--redo`` the step to empty it).  ``--redo`` names steps
among ``--steps``.

On CUDA the measured step times also go to the checkout's
:data:`fedpl_core.studies.budget.STEP_TIMES_FILE` (which :func:`fedpl_core.studies.budget.gpu_estimate`
then uses) and the throughput tables to ``figures/bench_gpu_throughput_cuda.*``: the files a
GPU session commits.  ``--device cpu`` rehearses every step on a CPU with tiny sizes (the
numbers mean nothing there and go to ``<out>`` only): the machinery, not the GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..base.fileio import UnsafePath, atomic_write_text, open_log, safe_dir

ROOT = Path(__file__).resolve().parents[2]
#: Seconds kept back from ``--budget`` for writing the summary after the last step.
RESERVE_S = 10


@dataclasses.dataclass(frozen=True)
class Step:
    """One check: its name, its time limit (seconds), the least time worth starting it with,
    and what it runs (a function of :class:`Context` in the step's own process)."""

    name: str
    limit_s: int
    min_s: int
    title: str
    body: Callable[[Context], tuple[bool, str]]


@dataclasses.dataclass
class Context:
    """What a step's process gets: its folder, the device, tiny sizes (a CPU rehearsal), the
    smoke step's notebooks and parallel processes, the time (``time.time()``) by which it must
    have ended."""

    folder: Path
    device: str
    tiny: bool
    notebooks: list[str]
    parallel: int
    deadline: float

    def left(self, margin: float = 5.0) -> float:
        """Seconds until the deadline, less ``margin``."""
        return self.deadline - time.time() - margin

    def write(self, name: str, text: str) -> Path:
        """Write ``name`` in the step's folder (atomically; a link on the way is refused, one at
        the name replaced)."""
        p = self.folder / name
        atomic_write_text(p, text, root=self.folder)
        return p


def _python() -> str:
    return sys.executable


def _run(cmd: list[str], ctx: Context, env: dict[str, str] | None = None, log: Path | None = None) -> int:
    """Run ``cmd`` from the checkout, its output into ``log`` (default: this step's log);
    returns its exit status, 124 when it had to be stopped 5 s before the step's deadline
    (it and everything it started: :func:`_reap`)."""
    print("$", " ".join(cmd), flush=True)
    full = {**os.environ, **(env or {})}
    out = open_log(log, append=True) if log is not None else None
    try:
        p = subprocess.Popen(cmd, cwd=ROOT, env=full, stdout=out or None, stderr=subprocess.STDOUT if out else None)
        try:
            return p.wait(timeout=max(ctx.left(), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            _reap(os.environ.get(MARK, ""))  # and what it started
            p.wait()
            return 124
    finally:
        if out is not None:
            out.close()


#: The environment variable that marks every process a step starts (its value is the step's
#: own), so that what a stopped step left behind is found and ended, whatever session or
#: process group it runs in (Jupyter kernels start sessions of their own).
MARK = "FEDPL_GPU_CHECKS_STEP"


def _reap(mark: str, spare: int | None = None) -> list[int]:
    """End (SIGKILL) every process of this user whose environment holds ``MARK=mark``, but
    ``spare`` and this process; returns their ids."""
    if not mark:
        return []
    needle = f"{MARK}={mark}".encode() + b"\0"
    killed = []
    for p in Path("/proc").glob("[0-9]*"):
        pid = int(p.name)
        if pid in (os.getpid(), spare):
            continue
        try:
            if needle not in (p / "environ").read_bytes() + b"\0":
                continue
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            continue
    return killed


# =========================================================================== the steps' bodies
def environment(ctx: Context) -> tuple[bool, str]:
    """Versions, the GPU, the packages against their lower bounds, the kernel, the locks."""
    import importlib.metadata as md

    import torch
    from packaging.requirements import Requirement

    cuda = torch.cuda.is_available()
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "gpu_memory_gib": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1) if cuda else None,
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
        "device": ctx.device,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }
    problems: list[str] = []
    rows = []
    try:
        reqs = [Requirement(r) for r in (md.requires("fedpl") or [])]
    except md.PackageNotFoundError:
        reqs = []
        problems.append("fedpl is not installed (pip install -e .): its requirements are not checked")
    for r in reqs:
        if r.marker is not None and not r.marker.evaluate({"extra": "test"}):
            continue  # an extra the checks do not need (pretrained: probed below; ray, flower, notebooks)
        try:
            have = md.version(r.name)
        except md.PackageNotFoundError:
            rows.append((r.name, str(r.specifier), "MISSING"))
            problems.append(f"{r.name} missing")
            continue
        ok = r.specifier.contains(have, prereleases=True)
        rows.append((r.name, str(r.specifier), have if ok else f"{have} TOO OLD"))
        if not ok:
            problems.append(f"{r.name} {have} does not meet {r.specifier}")
    info["packages"] = {n: {"needs": s, "has": h} for n, s, h in rows}
    probes = {
        "kernel python3": "from jupyter_client.kernelspec import KernelSpecManager as K; "
        "print(' '.join(K().get_kernel_spec('python3').argv[:3]))",
        "papermill": "import papermill; print(papermill.__version__)",
        "run locks (filelock on_acquired)": "import tempfile, os; from fedpl_core.base.locks import try_lock; "
        "l = try_lock(os.path.join(tempfile.mkdtemp(), 'x.lock')); "
        "print('held' if l is not None else 'NOT HELD'); l.release()",
        "torchvision backbones": "import torch, torchvision; from fedpl_core.nn.models import build_model; "
        "[build_model(n, 2, 1, 64)(torch.zeros(2, 1, 64, 64)) for n in "
        "('resnet18', 'densenet121')]; print('torchvision', torchvision.__version__, "
        "'builds ResNet-18 and DenseNet-121')",
    }
    optional = {
        "pretrained extra": "import torch; from fedpl_core.nn.models import build_model, "
        "missing_pretrained_extra as m; gone = m(); "
        "print('not installed: ' + ', '.join(gone)) if gone else "
        "(build_model('efficientnet_lite0', 2, 1, 64, pretrained=True)"
        "(torch.zeros(2, 1, 64, 64)), print('EfficientNet-Lite0 loads its ImageNet "
        "weights'))"
    }
    for what, code in {**probes, **optional}.items():
        p = subprocess.run([_python(), "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        said = (p.stdout.strip() or p.stderr.strip()).splitlines() or ["?"]
        text = said[-1] if p.returncode == 0 else "FAILED: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        info[what] = text
        if p.returncode != 0 or what in optional and text.startswith("not installed"):
            problems.append(f"{what}: {text}")
    ctx.write("environment.json", json.dumps(info, indent=1, default=str) + "\n")
    for k, v in info.items():
        if k != "packages":
            print(f"{k:34s} {v}")
    for n, s, h in rows:
        print(f"  {n:28s} {s:14s} {h}")
    if ctx.device.startswith("cuda") and not cuda:
        problems.insert(0, "torch sees no CUDA GPU")
    head = (
        f"torch {info['torch']}, CUDA {info['cuda']}, {info['gpu']} ({info['gpu_memory_gib']} GiB, bf16 {info['bf16']})"
        if cuda
        else f"torch {info['torch']}, no CUDA GPU (device {ctx.device})"
    )
    return not problems, head + ("; " + "; ".join(problems) if problems else "")


def gpu_tests(ctx: Context) -> tuple[bool, str]:
    """``pytest tests/test_gpu.py`` (pyproject's addopts replaced: no nbval needed)."""
    junit = ctx.folder / "junit.xml"
    rc = _run(
        [
            _python(),
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-q",
            "-rs",
            f"--junitxml={junit}",
            "tests/test_gpu.py",
        ],
        ctx,
    )
    counts = _junit_counts(junit)
    text = ", ".join(f"{v} {k}" for k, v in counts.items() if v) or f"pytest exit status {rc}"
    return rc == 0, text


def _junit_counts(path: Path) -> dict[str, int]:
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    suites = [root] if root.tag == "testsuite" else list(root)
    tot = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    return {
        "passed": tot["tests"] - tot["failures"] - tot["errors"] - tot["skipped"],
        "failed": tot["failures"],
        "errors": tot["errors"],
        "skipped": tot["skipped"],
    }


def step_times(ctx: Context) -> tuple[bool, str]:
    """Time a training step and a 512-image evaluation of each backbone of
    :data:`fedpl_core.studies.budget.STEP_TIME_SIZES` (:func:`time_backbone`)."""
    import torch

    from ..base.paths import checkout
    from ..nn.models import missing_pretrained_extra
    from ..studies.budget import STEP_TIME_SIZES, STEP_TIMES_FILE, assumed_step

    dev = torch.device(ctx.device)
    rows, skipped, seen = [], [], set()
    for model, px, bs in STEP_TIME_SIZES:
        if model == "efficientnet_lite0" and missing_pretrained_extra():
            skipped.append(f"{model}: the pretrained extra is not installed")
            continue
        # tiny: 64 px (the ImageNet stem: a quarter of the 32-px CIFAR stem's work), 2 images a batch
        size = (min(px, 64), 2, 8) if ctx.tiny else (px, bs, 512)
        if (model, *size) in seen:
            continue
        seen.add((model, *size))
        r = time_backbone(model, size[0], size[1], dev, n_eval=size[2], steps=(1, 2) if ctx.tiny else (8, 24))
        r.update({f"assumed_{k}": v for k, v in assumed_step(model, size[0], size[1]).items()})
        r["x assumed"] = round(r["train_step_s"] / r["assumed_train_step_s"], 2)
        rows.append(r)
        print(json.dumps(r), flush=True)
    rec = {
        "device_type": dev.type,
        "device_name": torch.cuda.get_device_name(dev)
        if dev.type == "cuda"
        else platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "tiny": ctx.tiny,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rows": rows,
        "note": "train_step_s: mean of consecutive steps (no synchronisation between them, as the engine "
        "trains); train_step_synced_s: median of single synchronised steps; eval512_s: 512 images in "
        "batches of the engine's eval_batch_size",
    }
    text = json.dumps(rec, indent=1) + "\n"
    ctx.write("step_times.json", text)
    ctx.write("step_times.md", _step_table(rows) + "\n")
    if dev.type == "cuda" and not ctx.tiny and checkout() is not None:
        atomic_write_text(checkout() / STEP_TIMES_FILE, text)
        print(f"-> {checkout() / STEP_TIMES_FILE} (the gpu profile's estimate uses it)")
    print(_step_table(rows))
    note = "; ".join(
        f"{r['model']} {r['image_size']} px b{r['batch_size']}: {r['train_step_s'] * 1e3:.1f} ms "
        f"(x{r['x assumed']} assumed)"
        for r in rows
    )
    return bool(rows), note + ("; skipped " + "; ".join(skipped) if skipped else "")


def _step_table(rows: list[dict]) -> str:
    head = "| model | px | batch | step ms | synced ms | eval 512 ms | assumed step ms | x assumed | peak MiB |"
    out = [head, "|" + "---|" * 9]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['image_size']} | {r['batch_size']} | {r['train_step_s'] * 1e3:.1f} | "
            f"{r['train_step_synced_s'] * 1e3:.1f} | {r['eval512_s'] * 1e3:.1f} | "
            f"{r['assumed_train_step_s'] * 1e3:.1f} | {r['x assumed']} | {r['peak_mib']} |"
        )
    return "\n".join(out)


def time_backbone(
    model: str,
    image_size: int,
    batch_size: int,
    device,
    n_eval: int = 512,
    steps: tuple[int, int] = (8, 24),
    classes: int = 14,
) -> dict[str, Any]:
    """One backbone's training step and evaluation as the gpu profile runs them: grey uint8
    images turned into floats on the device, channels-last, bf16 autocast on CUDA, the
    masked BCE, Adam.  ``steps`` = (warm-up, timed) steps; ``train_step_s`` is the mean of
    the timed steps run back to back (no synchronisation between them, as the engine
    trains), ``train_step_synced_s`` the median of single synchronised steps (the latency of
    one); ``eval512_s`` evaluates ``n_eval`` images (scaled to 512) in batches of the
    engine's ``eval_batch_size``."""
    import statistics

    import torch

    from ..fl.engine_config import EngineConfig
    from ..nn.losses import masked_bce
    from ..nn.models import build_model

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(0)
    if cuda:
        torch.backends.cudnn.benchmark = True
        torch.cuda.reset_peak_memory_stats(dev)
    cl = torch.channels_last
    m = build_model(model, num_classes=classes, in_channels=1, image_size=image_size).to(dev).to(memory_format=cl)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    warm, timed = steps
    n = warm + 2 * timed
    x = torch.randint(0, 256, (n, batch_size, 1, image_size, image_size), dtype=torch.uint8, device=dev)
    y = (torch.rand(n, batch_size, classes, device=dev) < 0.2).float()

    def step(i: int) -> None:
        xb = x[i].float().div_(255).sub_(0.5).div_(0.25).contiguous(memory_format=cl)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda):
            loss = masked_bce(m(xb).float(), y[i])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    m.train()
    for i in range(warm):
        step(i)
    sync()
    synced = []
    for i in range(warm, warm + timed):
        t = time.perf_counter()
        step(i)
        sync()
        synced.append(time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(warm + timed, n):
        step(i)
    sync()
    pipelined = (time.perf_counter() - t) / timed
    m.eval()
    eb = EngineConfig().eval_batch_size
    xe = torch.randint(0, 256, (n_eval, 1, image_size, image_size), dtype=torch.uint8, device=dev)

    def evaluate() -> None:
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda):
            for s in range(0, n_eval, eb):
                m(xe[s : s + eb].float().div_(255).sub_(0.5).div_(0.25).contiguous(memory_format=cl)).float().sigmoid()

    evaluate()
    sync()
    reps = 3
    t = time.perf_counter()
    for _ in range(reps):
        evaluate()
    sync()
    ev = (time.perf_counter() - t) / reps * 512 / n_eval
    peak = round(torch.cuda.max_memory_allocated(dev) / 2**20) if cuda else None
    return {
        "model": model,
        "image_size": image_size,
        "batch_size": batch_size,
        "amp": cuda,
        "channels_last": True,
        "train_step_s": round(pipelined, 6),
        "train_step_synced_s": round(statistics.median(synced), 6),
        "eval512_s": round(ev, 6),
        "peak_mib": peak,
    }


def smoke(ctx: Context) -> tuple[bool, str]:
    """The notebooks in the smoke profile, ``ctx.parallel`` at a time, each in a process of
    its own: ``python -m fedpl_core reproduce --profile smoke``, figures and run cache in
    this step's folder (a fresh cache: every run is done)."""
    nbs = [Path(n) for n in ctx.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))  # checked: notebook_stems
    env = {
        "FEDPL_FIGURES": str(ctx.folder / "figures"),
        "FEDPL_RESULTS": str(ctx.folder / "results"),
        "OMP_NUM_THREADS": "2",
        "MKL_NUM_THREADS": "2",
        "MPLBACKEND": "Agg",
    }
    pending, running, done = list(nbs), {}, {}
    t0 = time.perf_counter()
    while pending or running:
        while pending and len(running) < max(1, ctx.parallel):
            nb = pending.pop(0)
            log = open_log(ctx.folder / f"{nb.stem}.log")
            cmd = [
                _python(),
                "-m",
                "fedpl_core",
                "reproduce",
                "--profile",
                "smoke",
                "--notebooks",
                nb.stem,
                "--output",
                str(ctx.folder / "notebooks"),
            ]
            print("$", " ".join(cmd), flush=True)
            p = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
            running[nb.stem] = (p, log, time.perf_counter())
        if ctx.left() <= 0:  # the step's time is up: stop what runs (and its kernels), say which
            _reap(os.environ.get(MARK, ""))
            for p, _log, _start in running.values():
                p.wait()
            pending.clear()
        for name, (p, log, start) in list(running.items()):
            if p.poll() is not None:
                log.close()
                done[name] = (p.returncode if ctx.left() > 0 else None, time.perf_counter() - start)
                print(f"{name}: {_nb_status(done[name][0])} in {done[name][1]:.0f} s", flush=True)
                del running[name]
        time.sleep(0.5)
    ok = [n for n, (rc, _) in done.items() if rc == 0]
    parts = [f"{n[:2]} {_nb_status(rc)} {s:.0f} s" for n, (rc, s) in done.items()]
    return len(ok) == len(done), (
        f"{len(ok)} of {len(done)} notebooks ran in {time.perf_counter() - t0:.0f} s ({', '.join(parts)})"
    )


def _nb_status(rc: int | None) -> str:
    return "ok" if rc == 0 else "stopped at the step's limit" if rc is None else "FAILED"


def throughput(ctx: Context) -> tuple[bool, str]:
    """``benchmarks/gpu_throughput.py`` for the small CNN, then ResNet-18 (if the step's time
    allows), each writing its table into this step's folder; on CUDA the two tables together
    go to the checkout's ``figures/bench_gpu_throughput_cuda.*``."""
    import pandas as pd

    from ..base.paths import checkout
    from ..report.tables import save_table

    dev = ctx.device.split(":")[0]
    size = (
        [
            "--clients",
            "2",
            "4",
            "--per-client",
            "4",
            "--batch",
            "4",
            "--steps",
            "1",
            "--size",
            "28",
            "--rounds",
            "1",
            "--repeats",
            "1",
        ]
        if ctx.tiny
        else ["--clients", "8", "32", "128"]
    )
    notes, frames, ok = [], [], True
    for model in ("cnn", "resnet18"):
        folder = ctx.folder / model
        csv = folder / f"bench_gpu_throughput_{dev}.csv"
        if csv.is_file():  # measured by an earlier, unfinished run of this step
            rc = 0
            notes.append(f"{model}: from the earlier run")
        elif model == "resnet18" and ctx.left() < 30:
            notes.append(f"resnet18 not run: {ctx.left():.0f} s of the step left")
            ok = False
            continue
        else:
            # ResNet-18 at K = 128 does not fit the step's limit (K = 8 and 32 took most of it on an H200)
            sizes = size[:-1] if model == "resnet18" and not ctx.tiny else size
            rc = _run(
                [
                    _python(),
                    "benchmarks/gpu_throughput.py",
                    "--models",
                    model,
                    "--device",
                    ctx.device,
                    "--no-flower",
                    *sizes,
                ],
                ctx,
                env={"FEDPL_FIGURES": str(folder), "PYTHONPATH": _pythonpath()},
            )
        if rc != 0 or not csv.is_file():
            ok = False
            notes.append(f"{model}: {'timed out' if rc == 124 else f'exit status {rc}'}")
            continue
        df = pd.read_csv(csv, index_col=0)
        frames.append(df)
        notes.append(
            f"{model} "
            + ", ".join(
                f"K={r['K']}: batched/loop {r['batched / loop']}x, loop/plain {r['loop / plain']}x"
                for _, r in df.iterrows()
            )
        )
    if frames:
        both = pd.concat(frames, ignore_index=True)
        save_table(both, f"bench_gpu_throughput_{dev}", folder=ctx.folder)
        if dev == "cuda" and not ctx.tiny and checkout() is not None:
            paths = save_table(both, "bench_gpu_throughput_cuda", folder=checkout() / "figures")
            print(f"-> {paths['md']}")
    return ok and bool(frames), "; ".join(notes)


def _pythonpath() -> str:
    """The checkout first, then what the caller had (a script in benchmarks/ imports fedpl_core
    from the checkout even where the package is not installed)."""
    return os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def grids_argv(device: str, tiny: bool) -> list[str]:
    """The arguments of ``benchmarks/grid_throughput.py`` in the ``grids`` step: serial,
    spawned worker processes and threads (on CUDA, 4 workers sharing the GPU); tiny: serial
    and threads, two one-round runs."""
    size = (
        ["--backends", "serial", "threads", "--workers", "2", "--runs", "2", "--rounds", "1", "--n-train", "200"]
        if tiny
        else ["--backends", "serial", "spawn", "threads", "--workers", "4"]
    )
    return ["--device", device, *size]


def grids(ctx: Context) -> tuple[bool, str]:
    """``benchmarks/grid_throughput.py`` with :func:`grids_argv`."""
    log = ctx.folder / "grid_throughput.txt"
    rc = _run(
        [_python(), "benchmarks/grid_throughput.py", *grids_argv(ctx.device, ctx.tiny)],
        ctx,
        env={"PYTHONPATH": _pythonpath()},
        log=log,
    )
    text = log.read_text(errors="replace") if log.is_file() else ""
    print(text)
    lines = [" ".join(ln.split("(target")[0].split()) for ln in text.splitlines() if "/ serial throughput" in ln]
    walls = [" ".join(ln.split()[:4]) for ln in text.splitlines() if " wall " in ln]
    return rc == 0, "; ".join(walls + lines) or f"exit status {rc}"


#: The checks in their order: (name, limit s, least s to start, title, body).
STEPS: tuple[Step, ...] = (
    Step("environment", 120, 10, "versions, GPU, packages, kernel", environment),
    Step("gpu-tests", 240, 60, "tests/test_gpu.py", gpu_tests),
    Step("step-times", 150, 45, "train step and 512-image evaluation of each backbone", step_times),
    Step("smoke", 300, 120, "the six notebooks, smoke profile, on the device", smoke),
    Step(
        "throughput", 240, 60, "gpu_throughput: small CNN at K = 8 / 32 / 128, then ResNet-18 at K = 8 / 32", throughput
    ),
    Step("grids", 180, 100, "grid_throughput: serial, spawn, threads", grids),
)
STEP_NAMES = tuple(s.name for s in STEPS)


# =========================================================================== the driver
def _folder(out: Path, step: Step) -> Path:
    return out / f"{[s.name for s in STEPS].index(step.name) + 1:02d}-{step.name}"


def step_folder(out: Path, step: Step) -> Path:
    """The folder of ``step`` in ``out``, made if missing; a link on the way is refused
    (:func:`~fedpl_core.base.fileio.safe_dir`)."""
    return safe_dir(out, _folder(out, step).name)


def links_below(folder: Path) -> list[Path]:
    """The symbolic links anywhere in ``folder`` (none is followed)."""
    found = []
    for here, dirs, files in os.walk(folder):  # a link to a folder is listed in dirs, not entered
        found += [Path(here) / n for n in dirs + files if os.path.islink(os.path.join(here, n))]
    return sorted(found)


def read_result(out: Path, step: Step) -> dict[str, Any] | None:
    """The recorded result of ``step`` in ``out`` (None: not run there yet, or unreadable)."""
    try:
        d = json.loads((_folder(out, step) / "result.json").read_text())
        return d if isinstance(d, dict) and "status" in d else None
    except (OSError, ValueError):
        return None


def write_summary(out: Path, header: str) -> str:
    """``summary.md`` and ``summary.json`` of every step's recorded result; returns the table."""
    rows = []
    for s in STEPS:
        r = read_result(out, s) or {"status": "not run", "seconds": 0, "note": ""}
        rows.append(
            {
                "step": s.name,
                "status": r["status"],
                "seconds": round(float(r.get("seconds") or 0), 1),
                "limit": r.get("limit", s.limit_s),
                "note": r.get("note", ""),
            }
        )
    table = ["| step | status | seconds | limit | what it found |", "|---|---|---|---|---|"]
    table += [f"| {r['step']} | {r['status']} | {r['seconds']:.1f} | {r['limit']} | {r['note']} |" for r in rows]
    text = header + "\n\n" + "\n".join(table) + "\n"
    atomic_write_text(out / "summary.md", text, root=out)
    atomic_write_text(out / "summary.json", json.dumps({"header": header, "steps": rows}, indent=1) + "\n", root=out)
    return "\n".join(table)


def run_step(
    step: Step,
    out: Path,
    device: str,
    tiny: bool,
    limit: float,
    notebooks: list[str],
    parallel: int,
    fresh: bool = False,
) -> dict[str, Any]:
    """Run ``step`` in a process of its own, killed after ``limit`` seconds; its log and
    result into its folder (emptied first when ``fresh``; else a step may reuse what an
    unfinished earlier run of it left there).  Returns the result.

    The folder is made by :func:`~fedpl_core.base.fileio.safe_dir` (a link at its name is
    refused); a folder kept from an earlier run that holds a symbolic link is refused
    (:func:`links_below`): the step's programs write with a plain ``open``."""
    folder = step_folder(out, step)
    if fresh:
        shutil.rmtree(folder)  # links inside are removed, never followed
        folder = step_folder(out, step)
    elif links := links_below(folder):
        raise UnsafePath(
            f"{links[0]} is a symbolic link in the folder of step {step.name}; the checks never write through "
            f"a link: remove it, or give --redo {step.name} (the step's folder is then emptied)"
        )
    log = folder / "log.txt"
    atomic_write_text(
        log,
        f"===== {step.name}: {step.title} (limit {limit:.0f} s, device {device}) "
        f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}\n",
        root=out,
    )
    (folder / "step.json").unlink(missing_ok=True)
    args = json.dumps(
        {
            "step": step.name,
            "body": f"{step.body.__module__}:{step.body.__qualname__}",
            "folder": str(folder),
            "device": device,
            "tiny": tiny,
            "notebooks": notebooks,
            "parallel": parallel,
            "deadline": time.time() + limit,
        }
    )
    mark = f"{folder}#{time.time_ns()}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", "PYTHONPATH": _pythonpath(), MARK: mark}
    t0 = time.perf_counter()
    with open_log(log, append=True) as f:
        p = subprocess.Popen(
            [_python(), "-m", "fedpl_core.apps.gpu_checks", args], cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT
        )
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            rc = None
        left = _reap(mark)  # the step's process (on a timeout) and whatever it left running
        p.wait()
        if left and rc is not None:
            f.write(f"ended {len(left)} process(es) the step left running\n".encode())
    seconds = time.perf_counter() - t0
    try:
        body = json.loads((folder / "step.json").read_text())
    except (OSError, ValueError):
        body = {}
    if rc is None:
        status, note = "timeout", f"stopped after {limit:.0f} s; " + _last_line(log)
    elif rc == 0 and body.get("ok"):
        status, note = "ok", body.get("note", "")
    else:
        status, note = "failed", body.get("note") or _last_line(log)
    res = {
        "step": step.name,
        "status": status,
        "seconds": round(seconds, 1),
        "limit": round(limit),
        "note": note,
        "device": device,
        "tiny": tiny,
        "exit_status": rc,
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    atomic_write_text(folder / "result.json", json.dumps(res, indent=1) + "\n", root=out)
    return res


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def check_args(a: argparse.Namespace) -> tuple[Path, list[Step], set[str]]:
    """The options, checked for type and range before any step runs (a bad one is a
    ``ValueError`` naming it)."""
    import re

    names = [s.name for s in STEPS]
    unknown = [s for s in (a.steps or []) + (a.redo or []) if s not in names]
    if unknown:
        raise ValueError(f"unknown step {unknown[0]!r}; the steps are {', '.join(names)}")
    if a.budget is not None and not (
        isinstance(a.budget, (int, float)) and math.isfinite(a.budget) and a.budget > RESERVE_S
    ):
        raise ValueError(f"--budget must be a finite number of seconds, more than {RESERVE_S}, got {a.budget!r}")
    if isinstance(a.parallel, bool) or not isinstance(a.parallel, int) or a.parallel < 1:
        raise ValueError(f"--parallel must be a whole number >= 1, got {a.parallel!r}")
    if a.tiny not in (None, True, False):
        raise ValueError(f"--tiny must be true or false, got {a.tiny!r}")
    if not isinstance(a.device, str) or not re.fullmatch(r"cpu|cuda(:[0-9]+)?", a.device):
        raise ValueError(f"--device must be cuda, cuda:N or cpu, got {a.device!r}")
    stray = [s for s in a.redo or [] if a.steps and s not in a.steps]
    if stray:
        raise ValueError(
            f"--redo {stray[0]}: the step is not among --steps {' '.join(a.steps)}, so it would not run; "
            "add it to --steps or leave --steps out"
        )
    if a.notebooks:
        notebook_stems(a.notebooks)
    if a.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError("torch sees no CUDA GPU here; --device cpu rehearses the checks on a CPU with tiny sizes")
        n = torch.cuda.device_count()
        if ":" in a.device and int(a.device.split(":")[1]) >= n:
            raise ValueError(f"--device {a.device}: torch sees {n} GPU(s), cuda:0 to cuda:{n - 1}")
    out = Path(a.out)
    if out.is_symlink():
        raise UnsafePath(
            f"--out {a.out} is a link; the checks are never written through a link: give the folder itself"
        )
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {a.out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    if out.is_symlink() or not out.is_dir():  # made by someone else meanwhile
        raise UnsafePath(f"--out {a.out} is not a plain folder; the checks are never written through a link")
    from ..base.fileio import check_writable

    check_writable(out / "summary.md")
    chosen = [s for s in STEPS if not a.steps or s.name in a.steps]
    return out, chosen, set(a.redo or [])


def notebook_stems(names: list[str]) -> list[str]:
    """The notebooks ``--notebooks`` names (a file name, a stem or its number, ``01``), each
    exactly one of ``notebooks/*.ipynb``; else a ``ValueError`` naming the option and the
    notebooks there are."""
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    stems = []
    for n in names:
        hits = [p.stem for p in nbs if n in (p.name, p.stem) or p.stem.split("_")[0] == n]
        if len(hits) != 1:
            raise ValueError(
                f"--notebooks: {n!r} names {'no' if not hits else 'more than one'} notebook; "
                f"the notebooks are {', '.join(p.stem for p in nbs)} (a number such as 01 will do)"
            )
        stems.append(hits[0])
    return stems


def main(a: argparse.Namespace) -> int:
    """The driver (see the module docstring): exit status 0 when every chosen step is ok."""
    out, chosen, redo = check_args(a)
    tiny = a.device == "cpu" if a.tiny is None else a.tiny
    budget = float("inf") if a.budget is None else float(a.budget)
    t0 = time.perf_counter()
    header = (
        f"fedpl gpu-checks, device {a.device}{' (tiny sizes: a rehearsal)' if tiny else ''}, "
        f"budget {'none' if a.budget is None else f'{a.budget:g} s'}, {platform.node()}, "
        f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}"
    )
    print(header, flush=True)
    for s in chosen:
        prev = read_result(out, s)
        same = bool(prev) and prev.get("device") == a.device and bool(prev.get("tiny")) == tiny
        if same and prev["status"] == "ok" and s.name not in redo:
            print(f"{s.name:12s} done earlier ({prev['seconds']:.0f} s): {prev['note']}", flush=True)
            continue
        left = budget - (time.perf_counter() - t0) - RESERVE_S
        if left < s.min_s:
            res = {
                "step": s.name,
                "status": "skipped",
                "seconds": 0,
                "limit": s.limit_s,
                "tiny": tiny,
                "device": a.device,
                "note": f"{max(left, 0):.0f} s of the budget left, the step needs {s.min_s} s: run again",
            }
            atomic_write_text(step_folder(out, s) / "result.json", json.dumps(res, indent=1) + "\n", root=out)
        else:
            print(f"{s.name:12s} running (limit {min(s.limit_s, left):.0f} s) ...", flush=True)
            res = run_step(
                s,
                out,
                a.device,
                tiny,
                min(s.limit_s, left),
                notebook_stems(a.notebooks) if a.notebooks else [],
                a.parallel,
                fresh=s.name in redo or not same,
            )
        print(f"{s.name:12s} {res['status']} ({res['seconds']:.0f} s): {res['note']}", flush=True)
        write_summary(out, header)
    table = write_summary(out, header)
    print(f"\n{table}\n\nlogs and results: {out}/ (summary.md; <nn>-<step>/log.txt, result.json)")
    statuses = [(read_result(out, s) or {}).get("status") for s in chosen]
    return 0 if all(st == "ok" for st in statuses) else 1


def _true_or_false(v: str) -> bool:
    """``--tiny``'s value: true or false (any case)."""
    if v.strip().lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"takes true or false, got {v!r}")
    return v.strip().lower() == "true"


def _seconds(v: str) -> float:
    """``--budget``'s value: a finite number of seconds above :data:`RESERVE_S`."""
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not (math.isfinite(x) and x > RESERVE_S):
        raise argparse.ArgumentTypeError(f"takes a finite number of seconds, more than {RESERVE_S}, got {v!r}")
    return x


def _whole_number(v: str) -> int:
    """``--parallel``'s value: a whole number >= 1."""
    try:
        x = int(v)
    except ValueError:
        x = 0
    if x < 1:
        raise argparse.ArgumentTypeError(f"takes a whole number >= 1, got {v!r}")
    return x


def add_parser(sub) -> argparse.ArgumentParser:
    """The ``gpu-checks`` subcommand of ``python -m fedpl_core``."""
    g = sub.add_parser(
        "gpu-checks",
        help="the first checks on a GPU machine, in resumable steps with time limits",
        usage="%(prog)s [options]",
        description="Run the checks of a GPU machine in order (" + ", ".join(STEP_NAMES) + "), each "
        "in its own process under its own time limit, its log and results in one folder; "
        "a failed step does not stop the others; running again continues.",
    )
    g.add_argument(
        "--out",
        default="outputs/gpu-checks",
        help="folder for the logs and results; a folder of an earlier run is continued (default: outputs/gpu-checks)",
    )
    g.add_argument(
        "--budget",
        type=_seconds,
        default=None,
        help="seconds for the whole command: a step that would not "
        "fit the rest is skipped (default: none; each step has its own limit)",
    )
    g.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu: a rehearsal with tiny sizes")
    g.add_argument("--steps", nargs="+", metavar="STEP", help=f"run only these ({', '.join(STEP_NAMES)})")
    g.add_argument("--redo", nargs="+", metavar="STEP", help="run these again even if they finished")
    g.add_argument(
        "--tiny",
        type=_true_or_false,
        default=None,
        metavar="BOOL",
        help="tiny sizes (default: true on a CPU, false on CUDA)",
    )
    g.add_argument("--notebooks", nargs="+", metavar="NB", help="smoke step: these notebooks (default: all six)")
    g.add_argument("--parallel", type=_whole_number, default=6, help="smoke step: notebooks at a time (default: 6)")
    g.set_defaults(func=main)
    return g


def _child(argv: list[str]) -> int:
    """A step's own process: run its body (``module:function``), record ``step.json`` (ok, one line)."""
    import importlib

    d = json.loads(argv[0])
    module, name = d["body"].split(":")
    body = getattr(importlib.import_module("fedpl_core.apps.gpu_checks" if module == "__main__" else module), name)
    ctx = Context(Path(d["folder"]), d["device"], d["tiny"], d["notebooks"], d["parallel"], d["deadline"])
    try:
        ok, note = body(ctx)
    except Exception as e:  # recorded, and the driver goes on with the next step
        import traceback

        traceback.print_exc()
        ok, note = False, f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    atomic_write_text(ctx.folder / "step.json", json.dumps({"ok": ok, "note": note}) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
