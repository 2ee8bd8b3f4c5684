"""The record of a committed run: which code produced the executed notebooks, and whether
today's code is still that code.

``reproduce`` writes ``RUN.json`` beside the executed notebooks (:func:`write_record`): the
commit and its dirty flag, the profile, the wall time, the machine's load, the numeric
platforms and the **code state** (:func:`code_state`): a SHA-256 of every source file that can
change what a notebook shows (every module of ``fedpl_core`` and every notebook source), and one
fingerprint over them.
The documentation site reads it on every build (:func:`compare`) and states on every page the
commit and fingerprint that produced its results, and whether today's code differs, in which
files.  ``reproduce`` refuses to write into the committed ``reports/`` from cached results it
was asked to keep although stale (:func:`check_fresh_target`), and a test fails if a
committed executed notebook holds a stale-result warning (:func:`stale_warnings`).

**Numeric platforms** (:func:`fedpl_core.runs.provenance.numeric_platform`: torch, the CPU
kernels, the thread count) decide the last digits of a result.  The record keeps two, labelled:
``training_platforms``, the distinct platforms the notebooks' runs report in their results (each
run's own, with the threads it trained with: one a run in the cpu and smoke profiles), collected
while ``reproduce`` runs (:func:`platform_log`), also per notebook and per invocation; and
``driver_platform``, the platform of the process that executed the notebooks (its thread count
is not the runs').  A record written before these has ``numeric_platform``: the driver's.
:func:`platform_note` compares a record's training platforms with this machine's without the
thread count (the profile, not the machine, sets the runs' threads;
:func:`fedpl_core.runs.provenance.platform_base`), and says what a different platform means; the
site's banner and ``reproduce`` show it.

A record is read back against one schema (:func:`check_record`): every field the site uses has
its type and its form (a fingerprint is 16 hex digits, a commit hex, a profile one of the
profiles, a date ISO 8601, a notebook a plain name), so a record that is damaged or written by
someone else is refused in one line (:class:`RecordError`) before any of it reaches a page.  A run
that kept stale cached results (``$FEDPL_KEEP_STALE``) records so (``kept_stale``) and claims no
code fingerprint for its notebooks: older code may have made what they show.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..base.config_files import read_bytes_bounded, read_structured_file
from ..base.validation import PROFILES, ConfigError
from ..runs.provenance import PLATFORM_LOG_ENV, is_platform_text, platform_base, platform_threads

ROOT = Path(__file__).resolve().parents[2]
RECORD = "RUN.json"
#: The form of every stale-result warning (:func:`fedpl_core.runs.results.stale_message`):
#: "N of M cached result(s) is stale" (N = 1) or "... are stale", then why and whether they were kept.
STALE_MARK = r"(\d+) of (\d+) cached result\(s\) (?:is|are) stale"
_STALE = re.compile(STALE_MARK + r"\b[^\n]*")
_KEPT = "kept as they are"
#: The largest executed notebook :func:`stale_warnings` reads (its figures are inline images).
NOTEBOOK_MAX_BYTES = 256 << 20


class RecordError(ConfigError):
    """A run record that cannot be used: unreadable, or a field of the wrong type or form (one
    line naming the file and the field)."""


_HEX16 = re.compile(r"[0-9a-f]{16}")
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,120}")
_CODE_PATH = re.compile(
    r"(?:fedpl_core/(?:[A-Za-z0-9_]+/)*[A-Za-z0-9_]+\.py|notebooks/[A-Za-z0-9][A-Za-z0-9_.-]*\.ipynb)"
)
_TEXT_MAX = 2000
_PLATFORMS_MAX = 64


def _is_date(v: Any) -> bool:
    if not isinstance(v, str) or len(v) > 40:
        return False
    try:
        datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


#: The form of each field of a record, of a notebook's entry and of an invocation: a test that
#: the value passes, and what it must be (said when it does not).  A field may be missing (older
#: records lack some) but ``code`` and ``code_fingerprint`` at the top.
_FIELDS: dict[str, tuple[Any, str]] = {
    "commit": (lambda v: v is None or (isinstance(v, str) and _COMMIT.fullmatch(v)), "a hex commit id or null"),
    "dirty": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "code_fingerprint": (lambda v: isinstance(v, str) and _HEX16.fullmatch(v), "16 hex digits"),
    "profile": (lambda v: v in PROFILES, f"one of {', '.join(PROFILES)}"),
    "date": (_is_date, "an ISO 8601 date"),
    "cpus": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0), "a count or null"),
    "numeric_platform": (is_platform_text, "a numeric platform (printable text, one line, up to 200 characters)"),
    "driver_platform": (is_platform_text, "a numeric platform (printable text, one line, up to 200 characters)"),
    "training_platforms": (
        lambda v: isinstance(v, list) and len(v) <= _PLATFORMS_MAX and all(is_platform_text(x) for x in v),
        f"a list of up to {_PLATFORMS_MAX} numeric platforms (printable text, one line, up to 200 characters each)",
    ),
    "parameters": (lambda v: isinstance(v, dict), "a mapping"),
    "status": (lambda v: isinstance(v, str) and len(v) <= _TEXT_MAX, "text"),
    "seconds": (lambda v: _is_number(v) and v >= 0, "a number of seconds"),
    "load_average_at_end": (
        lambda v: v is None or (isinstance(v, list) and len(v) <= 3 and all(_is_number(x) for x in v)),
        "a list of up to 3 numbers or null",
    ),
    "kept_stale": (
        lambda v: isinstance(v, bool) or (isinstance(v, int) and v >= 0),
        "true, false or a count of results",
    ),
    "notebooks_list": (
        lambda v: isinstance(v, list) and all(isinstance(n, str) and _NAME.fullmatch(n) for n in v),
        "a list of plain notebook names",
    ),
    "seconds_by_notebook": (
        lambda v: isinstance(v, dict) and all(_NAME.fullmatch(k) and _is_number(x) for k, x in v.items()),
        "a mapping of plain notebook names to seconds",
    ),
}


def _check_fields(d: dict[str, Any], where: str, skip: tuple[str, ...] = ()) -> None:
    for key, value in d.items():
        name = "notebooks_list" if (key == "notebooks" and where.startswith("invocations")) else key
        if key in skip or name not in _FIELDS:
            continue  # a field the site does not read is never shown
        test, form = _FIELDS[name]
        if not test(value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise RecordError(f"{where}{key} is {shown}; it must be {form}")


def check_record(rec: Any) -> dict[str, Any]:
    """``rec`` when it has the form of a run record, else :class:`RecordError` naming the first
    field that does not: ``code`` maps plain source paths to 16-hex-digit hashes,
    ``code_fingerprint`` is 16 hex digits (and every notebook entry's, or null for a notebook
    made with stale results kept), ``commit`` hex, ``profile`` one of the profiles, dates ISO
    8601, notebook names plain (letters, digits, ``_``, ``-``, ``.``), seconds numbers.  Only
    checked fields ever reach a page."""
    if not isinstance(rec, dict):
        raise RecordError(f"it holds {type(rec).__name__}, not a mapping of fields")
    for key in ("code", "code_fingerprint"):
        if key not in rec:
            raise RecordError(f"it has no {key!r} field")
    code = rec["code"]
    if not isinstance(code, dict) or not code:
        raise RecordError("code must be a mapping of source files to their hashes")
    for path, digest in code.items():
        if not _CODE_PATH.fullmatch(path):
            raise RecordError(f"code names {path[:60]!r}, not a source file of the package or a notebook")
        if not (isinstance(digest, str) and _HEX16.fullmatch(digest)):
            raise RecordError(f"code[{path!r}] must be 16 hex digits")
    _check_fields(rec, "", skip=("code", "notebooks", "invocations"))
    notebooks = rec.get("notebooks", {})
    if not isinstance(notebooks, dict):
        raise RecordError("notebooks must be a mapping of notebook names to their runs")
    for name, entry in notebooks.items():
        if not _NAME.fullmatch(name):
            raise RecordError(f"notebooks names {name[:60]!r}, not a plain notebook name")
        if not isinstance(entry, dict):
            raise RecordError(f"notebooks[{name!r}] must be a mapping")
        fp = entry.get("code_fingerprint")
        if fp is None and "kept_stale" in entry:
            entry = {k: v for k, v in entry.items() if k != "code_fingerprint"}  # no claim: stale results kept
        _check_fields(entry, f"notebooks[{name!r}].")
    invocations = rec.get("invocations", [])
    if not isinstance(invocations, list) or not all(isinstance(i, dict) for i in invocations):
        raise RecordError("invocations must be a list of mappings")
    for k, inv in enumerate(invocations):
        _check_fields(inv, f"invocations[{k}].")
    return rec


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
    say that two notebooks were made by different code; a record that cannot be read
    (:func:`read_record`) is replaced.

    With stale cached results kept (``$FEDPL_KEEP_STALE``,
    :func:`fedpl_core.runs.provenance.keep_stale_default`), or a notebook whose outputs say it
    kept some (:func:`stale_counts`), the notebook's entry holds ``kept_stale`` (how many its
    outputs name, or true) and a null ``code_fingerprint``: the results it shows may come from
    older code, and the record does not say they come from today's.

    Numeric platforms: ``driver_platform`` is this process's; ``training_platforms`` (in each
    notebook entry and the invocation) those the runs of the notebooks report, read from the
    log of :func:`platform_log` (none without one: then the entries do not have it), and at the
    top the union over the notebooks' entries."""
    from ..base.fileio import atomic_write
    from ..runs.provenance import git_state, keep_stale_default, numeric_platform

    commit, _ = git_state()
    dirty = code_dirty() if commit else None
    state = code_state()
    fp = fingerprint(state)
    keep = keep_stale_default(None)
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    try:
        old = read_record(folder) or {}
    except RecordError:
        old = {}
    entries = dict(old.get("notebooks") or {})
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    trained = logged_platforms()
    kept_by_notebook: dict[str, int | bool] = {}
    for name, seconds, status, params in runs:
        executed = Path(folder) / f"{name}.ipynb"
        try:
            kept = stale_counts(executed)[1] if executed.is_file() else 0
        except (OSError, ValueError):
            kept = 0
        entry: dict[str, Any] = {
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
        if trained:
            entry["training_platforms"] = trained
        if keep or kept:
            entry["kept_stale"] = kept_by_notebook[name] = kept or True
            entry["code_fingerprint"] = None
        entries[name] = entry
    invocations = list(old.get("invocations") or [])
    invocation: dict[str, Any] = {
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
    if trained:
        invocation["training_platforms"] = trained
    if keep or kept_by_notebook:
        invocation["kept_stale"] = True
    invocations.append(invocation)
    rec = {
        "commit": commit,
        "dirty": dirty,
        "profile": profile,
        "date": date,
        "cpus": os.cpu_count(),
        "driver_platform": numeric_platform()["key"],
        "code_fingerprint": fp,
        "code": state,
        "notebooks": dict(sorted(entries.items())),
        "invocations": invocations,
    }
    union = sorted({key for e in entries.values() for key in e.get("training_platforms") or []})
    if union:
        rec["training_platforms"] = union
    home = Path(folder).resolve()  # the --output a user named may be a link; nothing below it may be
    target = home / RECORD
    with atomic_write(target, root=home) as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    return target


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """The run record of ``folder``, checked (:func:`check_record`); None when it has none.
    A record that is there but cannot be used (a link, a device, not JSON, a field of the
    wrong type or form) is :class:`RecordError`: one line naming the file and what is wrong."""
    p = Path(folder) / RECORD
    if not os.path.lexists(p):
        return None
    what = "run record"
    try:
        rec = read_structured_file(p, what)
    except ValueError as e:  # ConfigError: a link, a device, too large, not JSON
        raise RecordError(str(e)) from None
    except OSError as e:
        raise RecordError(f"{what} {p} cannot be read: {e.strerror or e}") from None
    try:
        return check_record(rec)
    except RecordError as e:
        raise RecordError(f"{what} {p}: {e}") from None


def kept_stale(record: dict[str, Any]) -> dict[str, int | bool]:
    """``{notebook: kept_stale}`` of the record's notebooks made with stale cached results kept."""
    entries = record.get("notebooks") or {}
    return {n: e["kept_stale"] for n, e in sorted(entries.items()) if e.get("kept_stale")}


def compare(record: dict[str, Any] | None, root: str | Path = ROOT) -> dict[str, Any]:
    """Today's code against the record: ``{"same": bool, "changed": [files], "fingerprint":
    today's, "older": [notebooks made by other code than the record's last, or with stale
    results kept], "kept_stale": {notebook: count or true}}`` (``same`` is None without a
    record)."""
    state = code_state(root)
    if record is None:
        return {"same": None, "changed": [], "fingerprint": fingerprint(state), "older": [], "kept_stale": {}}
    old = record["code"]
    changed = sorted(k for k in set(old) | set(state) if old.get(k) != state.get(k))
    entries = record.get("notebooks") or {}
    older = sorted(n for n, e in entries.items() if e.get("code_fingerprint") != record.get("code_fingerprint"))
    return {
        "same": not changed,
        "changed": changed,
        "fingerprint": fingerprint(state),
        "older": older,
        "kept_stale": kept_stale(record),
    }


def describe(record: dict[str, Any] | None, root: str | Path = ROOT) -> str:
    """One or two sentences for the top of every page: what produced the results, and
    whether today's code differs.  Plain text made of checked fields only
    (:func:`check_record`); the page escapes it (:func:`fedpl_core.report.sanitize.banner_html`)."""
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
    kept = c["kept_stale"]
    older = [n for n in c["older"] if n not in kept]
    if older:
        head += f" Made by older code: {', '.join(older)}."
    if kept:
        said = ", ".join(n if v is True else f"{n} ({v} result(s))" for n, v in kept.items())
        return head + (
            f" Stale cached results were kept in {said}: older code made them, so no code fingerprint "
            "vouches for what these notebooks show."
        )
    if c["same"]:
        return head + " Today's code is the same."
    shown = ", ".join(c["changed"][:6]) + (f" and {len(c['changed']) - 6} more" if len(c["changed"]) > 6 else "")
    return head + f" Today's code differs in {len(c['changed'])} file(s): {shown}."


@contextlib.contextmanager
def platform_log() -> Iterator[Path]:
    """For ``reproduce``: while inside, ``$FEDPL_PLATFORM_LOG`` names a new private temporary
    file, where every grid of the notebooks executed meanwhile (their kernels inherit the
    variable) notes the numeric platforms its results report
    (:func:`fedpl_core.runs.provenance.note_platforms`); :func:`write_record` reads it.  The
    variable is restored and the file removed on the way out."""
    fd, name = tempfile.mkstemp(prefix="fedpl-platforms-", suffix=".txt")
    os.close(fd)
    before = os.environ.get(PLATFORM_LOG_ENV)
    os.environ[PLATFORM_LOG_ENV] = name
    try:
        yield Path(name)
    finally:
        if before is None:
            os.environ.pop(PLATFORM_LOG_ENV, None)
        else:
            os.environ[PLATFORM_LOG_ENV] = before
        with contextlib.suppress(OSError):
            os.unlink(name)


def logged_platforms() -> list[str]:
    """The numeric platforms noted in the log ``$FEDPL_PLATFORM_LOG`` names (:func:`platform_log`),
    sorted; none without the variable, and none, with a warning, from a log that cannot be read."""
    from ..runs.provenance import read_platform_log

    path = os.environ.get(PLATFORM_LOG_ENV)
    if not path:
        return []
    try:
        return read_platform_log(path)[:_PLATFORMS_MAX]
    except (OSError, ValueError) as e:
        warnings.warn(f"the runs' numeric platforms are not recorded: {e}", RuntimeWarning, stacklevel=2)
        return []


def training_platforms(record: dict[str, Any] | None) -> tuple[list[str], bool]:
    """``(platforms, trained)``: the numeric platforms of a record's runs and whether they are
    the training processes' own (``training_platforms``, with their thread counts), or, for a
    record written before those were recorded, the platform of the process that executed the
    notebooks (``numeric_platform``: the same machine, not the runs' thread count).  ``([],
    False)`` when the record names none."""
    if not record:
        return [], False
    trained = record.get("training_platforms")
    if isinstance(trained, list) and trained:
        return list(trained), True
    legacy = record.get("driver_platform") or record.get("numeric_platform")
    return ([legacy], False) if is_platform_text(legacy) else ([], False)


def _platforms_text(keys: list[str], trained: bool) -> str:
    """``keys`` as a sentence names them: each machine once, with the thread counts of its runs
    when they were recorded (``trained``)."""
    threads: dict[str, set[int]] = {}
    for key in keys:
        n = platform_threads(key)
        threads.setdefault(platform_base(key), set()).update([n] if n is not None and trained else [])
    return "; ".join(
        base + (f", {' and '.join(map(str, sorted(ns)))} thread(s) a run" if ns else "")
        for base, ns in sorted(threads.items())
    )


def trained_on(record: dict[str, Any] | None) -> str | None:
    """One sentence naming the numeric platform(s) the record's runs were trained on (or, for
    an older record, the platform of the process that executed its notebooks); None when it
    names none."""
    keys, trained = training_platforms(record)
    if not keys:
        return None
    if trained:
        return f"Trained on {_platforms_text(keys, True)}."
    return f"Executed on {_platforms_text(keys, False)} (the runs' own platform was not recorded then)."


def platform_note(
    record: dict[str, Any] | None, current: str | None = None, *, where: str = "this machine"
) -> str | None:
    """What a reader on another numeric platform is told, or None when there is nothing to
    tell: the record names no platform, or its runs' platforms are all this one.  ``current``:
    the reader's platform's key (default: this process's,
    :func:`fedpl_core.runs.provenance.numeric_platform`); ``where``: how the note names the
    reader's machine.  Platforms are compared without their thread count
    (:func:`fedpl_core.runs.provenance.platform_base`): the runs' threads are set by the
    profile, not by the machine, and the record names them apart."""
    keys, trained = training_platforms(record)
    if not keys:
        return None
    if current is None:
        from ..runs.provenance import numeric_platform

        current = numeric_platform()["key"]
    here = platform_base(current)
    if {platform_base(k) for k in keys} == {here}:
        return None
    made = "were trained on" if trained else "were made on"
    return (
        f"The recorded runs {made} {_platforms_text(keys, trained)}, and {where} has numeric platform "
        f"{here}: re-run on it, the last digits move, and a verdict should not."
    )


def committed_record(profile: str, root: str | Path = ROOT) -> dict[str, Any] | None:
    """The record of the committed run of ``profile`` (``reports/``; the gpu profile's in
    ``reports/gpu/``), or None when there is none of that profile or it cannot be read (the
    site builder says why)."""
    from ..base.paths import OWN_FOLDER

    try:
        rec = read_record(Path(root) / "reports" / OWN_FOLDER.get(profile, ""))
    except RecordError:
        return None
    return rec if rec is not None and rec.get("profile") == profile else None


def _outputs(nb: Any) -> list[list[str]]:
    """The texts of each output of a notebook (its stream text, or each of its MIME forms)."""
    found = []
    cells = nb.get("cells", []) if isinstance(nb, dict) else []
    for cell in cells if isinstance(cells, list) else []:
        outputs = cell.get("outputs", []) if isinstance(cell, dict) else []
        for out in outputs if isinstance(outputs, list) else []:
            if not isinstance(out, dict):
                continue
            parts = [out.get("text")] + (list(out["data"].values()) if isinstance(out.get("data"), dict) else [])
            found.append(["".join(map(str, p)) if isinstance(p, list) else str(p) for p in parts if p is not None])
    return found


def count_stale(text: str) -> tuple[int, int]:
    """``(stale, kept)``: how many cached results the stale-result warnings in ``text`` name
    (the ``N`` of each "N of M cached result(s) is/are stale",
    :func:`fedpl_core.runs.results.stale_message`), and how many of them were kept."""
    stale = kept = 0
    for m in _STALE.finditer(text):
        n = int(m.group(1))
        stale += n
        if _KEPT in m.group(0):
            kept += n
    return stale, kept


def stale_counts(notebook: str | Path) -> tuple[int, int]:
    """:func:`count_stale` over every output of an executed notebook (read bounded, no link):
    ``(stale results named, of them kept)``.  A notebook shows one warning per text output,
    so a warning repeated in its text and HTML forms counts once (the largest count wins)."""
    raw = read_bytes_bounded(notebook, "executed notebook", NOTEBOOK_MAX_BYTES)
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"executed notebook {notebook} is not a JSON notebook: {e}") from None
    stale = kept = 0
    for forms in _outputs(nb):
        s, k = max((count_stale(text) for text in forms), default=(0, 0))
        stale, kept = stale + s, kept + k
    return stale, kept


def stale_warnings(notebook: str | Path) -> int:
    """How many cached results the stale-result warnings in an executed notebook's outputs name
    as stale, whether kept or recomputed (:func:`stale_counts`): the committed reports hold none."""
    return stale_counts(notebook)[0]


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
    "RecordError",
    "check_record",
    "kept_stale",
    "count_stale",
    "stale_counts",
    "code_state",
    "code_dirty",
    "fingerprint",
    "write_record",
    "read_record",
    "compare",
    "describe",
    "platform_log",
    "logged_platforms",
    "training_platforms",
    "trained_on",
    "platform_note",
    "committed_record",
    "stale_warnings",
    "is_committed_reports",
    "check_fresh_target",
]
