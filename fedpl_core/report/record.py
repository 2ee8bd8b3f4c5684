"""The record of a committed run: which code produced the executed notebooks, and whether
today's code is still that code.

``reproduce`` writes ``RUN.json`` beside the executed notebooks (:func:`write_record`): the
commit and its dirty flag, the profile, the wall time, the machine's load, the numeric
platform (:func:`fedpl_core.runs.provenance.numeric_platform`) and the **code state**
(:func:`code_state`): a SHA-256 of every source file that can change what a notebook shows
(every module of ``fedpl_core`` and every notebook source), and one fingerprint over them.
The documentation site reads it on every build (:func:`compare`) and states on every page the
commit and fingerprint that produced its results, and whether today's code differs, in which
files.  ``reproduce`` refuses to write into the committed ``reports/`` from cached results it
was asked to keep although stale (:func:`check_fresh_target`), and a test fails if a
committed executed notebook holds a stale-result warning (:func:`stale_warnings`).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORD = "RUN.json"
#: The text every stale-result warning holds (:mod:`fedpl_core.runs`).
STALE_MARK = "are stale"


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def code_state(root: str | Path = ROOT) -> dict[str, str]:
    """``{relative path: hash}`` of every file whose change can change a committed result:
    ``fedpl_core/**/*.py`` and ``notebooks/*.ipynb`` (their sources; outputs are stripped there)."""
    root = Path(root)
    files = sorted(root.glob("fedpl_core/**/*.py")) + sorted(root.glob("notebooks/*.ipynb"))
    return {p.relative_to(root).as_posix(): _hash(p) for p in files if "__pycache__" not in p.parts}


def fingerprint(state: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(state.items())).encode()).hexdigest()[:16]


def code_dirty(root: str | Path = ROOT) -> bool | None:
    """Whether the code of :func:`code_state` (``fedpl_core/``, ``notebooks/``) differs from the
    commit; None outside a git checkout.  The results a run writes (``reports/``, ``figures/``)
    are not code: a checkout is not dirty because a run is writing them."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "fedpl_core", "notebooks"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip())


def write_record(folder: str | Path, profile: str, runs: list[tuple[str, float, str, dict[str, Any]]]) -> Path:
    """Add the notebooks just executed to ``<folder>/RUN.json`` (written atomically): ``runs``
    are ``(notebook, seconds, status, parameters)``.  Each notebook's entry keeps the commit,
    the code fingerprint, the profile, the parameters besides the profile, the status, the
    seconds, the date and the machine's load at its end; the record's top holds today's code
    state; ``invocations`` lists every ``reproduce`` that wrote to the folder (its notebooks,
    parameters, wall time and each notebook's).  ``dirty``: whether the code differed from the
    commit (:func:`code_dirty`).  Entries of notebooks not run again are kept, so a record can
    say that two notebooks were made by different code."""
    from ..base.fileio import atomic_write
    from ..runs.provenance import git_state, numeric_platform

    commit, _ = git_state()
    dirty = code_dirty() if commit else None
    state = code_state()
    fp = fingerprint(state)
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    old = read_record(folder) or {}
    entries = dict(old.get("notebooks") or {}) if isinstance(old.get("notebooks"), dict) else {}
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for name, seconds, status, params in runs:
        entries[name] = {
            "commit": commit,
            "dirty": dirty,
            "code_fingerprint": fp,
            "profile": profile,
            "parameters": params,
            "status": status,
            "seconds": round(seconds, 1),
            "date": date,
            "load_average_at_end": load,
        }
    invocations = list(old.get("invocations") or []) if isinstance(old.get("invocations"), list) else []
    invocations.append(
        {
            "date": date,
            "commit": commit,
            "code_fingerprint": fp,
            "profile": profile,
            "notebooks": [name for name, *_ in runs],
            "parameters": runs[0][3] if runs else {},
            "seconds": round(sum(sec for _, sec, _, _ in runs), 1),
            "seconds_by_notebook": {name: round(sec, 1) for name, sec, _, _ in runs},
            "load_average_at_end": load,
        }
    )
    rec = {
        "commit": commit,
        "dirty": dirty,
        "profile": profile,
        "date": date,
        "cpus": os.cpu_count(),
        "numeric_platform": numeric_platform()["key"],
        "code_fingerprint": fp,
        "code": state,
        "notebooks": dict(sorted(entries.items())),
        "invocations": invocations,
    }
    target = Path(folder) / RECORD
    with atomic_write(target) as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    return target


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """The run record of ``folder``, or None when it has none or it cannot be read."""
    p = Path(folder) / RECORD
    if p.is_symlink() or not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("code"), dict) else None


def compare(record: dict[str, Any] | None, root: str | Path = ROOT) -> dict[str, Any]:
    """Today's code against the record: ``{"same": bool, "changed": [files], "fingerprint":
    today's, "older": [notebooks made by other code than the record's last]}`` (``same`` is
    None without a record)."""
    state = code_state(root)
    if record is None:
        return {"same": None, "changed": [], "fingerprint": fingerprint(state), "older": []}
    old = record["code"]
    changed = sorted(k for k in set(old) | set(state) if old.get(k) != state.get(k))
    entries = record.get("notebooks") if isinstance(record.get("notebooks"), dict) else {}
    older = sorted(
        n
        for n, e in entries.items()
        if isinstance(e, dict) and e.get("code_fingerprint") != record.get("code_fingerprint")
    )
    return {"same": not changed, "changed": changed, "fingerprint": fingerprint(state), "older": older}


def describe(record: dict[str, Any] | None, root: str | Path = ROOT) -> str:
    """One or two sentences for the top of every page: what produced the results, and
    whether today's code differs."""
    if record is None:
        return "These results carry no run record: which code produced them is not known."
    c = compare(record, root)
    commit = (record.get("commit") or "an unknown commit")[:10] + (
        " (with uncommitted changes)" if record.get("dirty") else ""
    )
    head = (
        f"Results from commit {commit}, code fingerprint {record['code_fingerprint']}, "
        f"{record.get('profile', '?')} profile, run on {str(record.get('date', '?'))[:10]}."
    )
    if c["older"]:
        head += f" Made by older code: {', '.join(c['older'])}."
    if c["same"]:
        return head + " Today's code is the same."
    shown = ", ".join(c["changed"][:6]) + (f" and {len(c['changed']) - 6} more" if len(c["changed"]) > 6 else "")
    return head + f" Today's code differs in {len(c['changed'])} file(s): {shown}."


def stale_warnings(notebook: str | Path) -> int:
    """How many outputs of an executed notebook hold a stale-result warning."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    n = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            text = out.get("text") or "".join(str(v) for v in (out.get("data") or {}).values())
            text = "".join(text) if isinstance(text, list) else str(text)
            n += text.count(STALE_MARK)
    return n


def is_committed_reports(folder: str | Path) -> bool:
    """Whether ``folder`` is the checkout's committed ``reports/`` (or a folder inside it)."""
    target = Path(folder).resolve()
    reports = (ROOT / "reports").resolve()
    return target == reports or reports in target.parents


def check_fresh_target(output: str | Path, keep_stale: bool) -> None:
    """Refuse (``ValueError``, one line) to write the committed reports from results kept
    although stale: they would show numbers today's code does not produce."""
    if keep_stale and is_committed_reports(output):
        raise ValueError(
            f"refusing to write the committed reports ({output}) from stale cached results "
            "(FEDPL_KEEP_STALE / --keep-stale): re-run from an empty results folder, or write elsewhere"
        )


__all__ = [
    "RECORD",
    "STALE_MARK",
    "code_state",
    "code_dirty",
    "fingerprint",
    "write_record",
    "read_record",
    "compare",
    "describe",
    "stale_warnings",
    "is_committed_reports",
    "check_fresh_target",
]
