"""One schema for a run's result as it is read back (a cached file, or a run's own result
before it is written): :func:`read_result`, :func:`parse_result`.  Parsed within bounds of
size, values and depth (:func:`load_json`: the package's one bounded reader); the keys, the
types, no NaN or infinity, each record key's type and range, one per-class value per class,
the rounds and the evaluations its config makes, the class names its config says, the run
id, the provenance.  A file that fails a check raises :class:`ResultFileError`; the cache
(:mod:`fedpl_core.runs.runner`) then warns and does the run again.

This module is never part of a run's code fingerprint (:mod:`fedpl_core.runs.provenance`):
a check changes no number.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from ..base.config_files import CONFIG_MAX_DEPTH, parse_json
from ..base.validation import ConfigError
from .results import METRIC_KEYS, TRAINING_KEYS, RunResult, final_record, finite_or_none

#: Record keys (the part after the last ``/``) whose values are shares: in [0, 1] (the
#: metrics, the threshold, pseudo-label quality); per-class lists of these metrics too.
UNIT_KEYS = {
    "auroc_mean",
    "map",
    "bacc",
    "f1",
    "precision",
    "recall",
    "accuracy",
    "threshold",
    "coverage",
    "pos_precision",
    "pos_recall",
}
UNIT_PER_CLASS = {"auroc", "ap", "bacc", "f1", "precision", "recall", "accuracy"}
#: Record keys that time something, in seconds: >= 0.
SECONDS_KEYS = {"train_time", "eval_time"}
#: Record keys that count classes: integers, ``n_defined`` in [0, classes], ``n_classes`` the
#: number of classes of its evaluation set.
COUNT_KEYS = {"n_defined", "n_classes"}
#: Losses: numbers of either sign.  A method's training loss need not be >= 0 (SimSiam's
#: pre-training loss is a negative cosine similarity, FedPU's PU risk is not clamped at 0),
#: nor its supervised loss, which scores the validation splits.
LOSS_KEYS = {"train_loss", "val_loss"}
#: Every key a record may hold besides ``log/<name>`` (a method's own logged numbers, of any
#: sign) and an evaluation set's ``<set>/<key>``: the engine's
#: (:meth:`fedpl_core.fl.simulation.Simulation.step`), the metrics'
#: (:func:`fedpl_core.nn.metrics.evaluate`) and the pseudo-label quality's
#: (:func:`fedpl_core.fl.evaluation.pseudo_label_quality`).  ``NONNEGATIVE_KEYS``: the
#: counts and times among them.
NONNEGATIVE_KEYS = SECONDS_KEYS | COUNT_KEYS
_RECORD_NUMBERS = set(METRIC_KEYS) | {"round", "threshold"} | LOSS_KEYS | NONNEGATIVE_KEYS


class ResultFileError(ValueError):
    """A cached result file that cannot be used (then the run is done again)."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_finite(obj: Any, where: str) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ResultFileError(f"{where} is {obj}")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _check_finite(v, f"{where}[{i}]")


def _check_names(v: Any, where: str) -> list[str]:
    """A list of distinct names."""
    if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        raise ResultFileError(f"{where} is not a list of names")
    seen: set[str] = set()
    for x in v:
        if x in seen:
            raise ResultFileError(f"{where} names {x!r} twice")
        seen.add(x)
    return v


def _shown_names(names: list[str]) -> str:
    return repr(names) if len(names) <= 8 else repr(names[:8])[:-1] + ", ...]"


def _set_classes(rec: dict[str, Any], prefix: str, model: list[str], where: str) -> list[str]:
    """The classes of the evaluation set ``prefix`` (``""``: the test set) of a record: its
    ``class_names``, the model's classes or some of them (a set is scored on the model's
    columns of its classes, matched by name); the test set's, when they are the model's,
    in the model's order (:meth:`RunResult.per_class` pairs them).  Without them: the model's."""
    key = prefix + "class_names"
    if key not in rec:
        return model
    names = _check_names(rec[key], f"{where}.{key}")
    if not names:
        raise ResultFileError(f"{where}.{key} is empty")
    unknown = [c for c in names if c not in model]
    if unknown:
        raise ResultFileError(f"{where}.{key} names {unknown[0]!r}, not a class of the model ({_shown_names(model)})")
    if not prefix and set(names) == set(model) and names != model:
        i = next(i for i, (a, b) in enumerate(zip(names, model)) if a != b)
        raise ResultFileError(f"{where}.{key}[{i}] is {names[i]!r}, where class_names[{i}] is {model[i]!r}")
    return names


def _check_record(rec: Any, where: str, model: list[str], empty_ok: bool = False) -> None:
    """A history record / ``final`` / ``best``: a mapping whose ``round`` is an integer and
    every key of which follows its rule (:data:`_RECORD_NUMBERS` and the lists below):
    shares in [0, 1], times >= 0, losses and a method's ``log/<name>`` numbers of either
    sign, ``n_defined`` an integer count in [0, classes], ``n_classes`` the number of
    classes, each ``*_per_class`` list and ``n_positives`` one entry per class of its
    evaluation set (``<set>/``, or none: the test set), whose ``class_names`` are the
    model's (``model``) or some of them; any other key a number."""
    if not isinstance(rec, dict):
        raise ResultFileError(f"{where} is a {type(rec).__name__}, not a mapping")
    if not rec and empty_ok:
        return
    if not _is_int(rec.get("round")):
        raise ResultFileError(f"{where}.round is {rec.get('round')!r}, not an integer")
    if rec["round"] < 1:
        raise ResultFileError(f"{where}.round is {rec['round']}, not a round (1 or more)")
    classes: dict[str, list[str]] = {}
    for k, v in rec.items():
        if k.startswith("log/"):  # a method's own numbers (ctx.log): any sign
            if not (v is None or _is_number(v)):
                raise ResultFileError(f"{where}.{k} is {v!r}, not a number")
            continue
        prefix, _, base = k.rpartition("/")  # "<eval set>/<metric>" keys follow the metric's rule
        prefix += "/" if prefix else ""
        if prefix not in classes:
            classes[prefix] = _set_classes(rec, prefix, model, where)
        names = classes[prefix]
        if base in _RECORD_NUMBERS or base in UNIT_KEYS:
            if not (v is None or _is_number(v)):
                raise ResultFileError(f"{where}.{k} is {v!r}, not a number")
            _check_range(v, base in UNIT_KEYS, base in SECONDS_KEYS, f"{where}.{k}")
            if base in COUNT_KEYS:
                _check_count(v, base, names, rec.get(prefix + "auroc_per_class"), f"{where}.{k}")
        elif base.endswith("_per_class"):
            if not (isinstance(v, list) and all(x is None or _is_number(x) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of numbers")
            _check_length(v, names, f"{where}.{k}")
            unit = base[: -len("_per_class")] in UNIT_PER_CLASS
            for i, x in enumerate(v):
                _check_range(x, unit, False, f"{where}.{k}[{i}]")
        elif base == "n_positives":
            if not (isinstance(v, list) and all(_is_int(x) for x in v)):
                raise ResultFileError(f"{where}.{k} is not a list of counts (integers)")
            _check_length(v, names, f"{where}.{k}")
            for i, x in enumerate(v):
                _check_range(x, False, True, f"{where}.{k}[{i}]")
        elif base == "class_names":
            pass  # checked by _set_classes
        elif base == "few_positives":
            few = _check_names(v, f"{where}.{k}")
            other = [c for c in few if c not in names]
            if other:
                raise ResultFileError(f"{where}.{k} names {other[0]!r}, not a class of its evaluation set")
        elif not (v is None or _is_number(v)):
            raise ResultFileError(f"{where}.{k} is {v!r}, not a number")


def _check_length(v: list, names: list[str], where: str) -> None:
    if len(v) != len(names):
        raise ResultFileError(f"{where} holds {len(v)} values for {len(names)} classes")


def _check_count(v: Any, base: str, names: list[str], auroc: Any, where: str) -> None:
    """``n_classes``: the number of classes; ``n_defined``: an integer in [0, classes], at
    least the classes with an AUROC (a class whose AUROC came out NaN is null in the file)."""
    if not _is_int(v):
        raise ResultFileError(f"{where} is {v!r}, not an integer count")
    if base == "n_classes" and v != len(names):
        raise ResultFileError(f"{where} is {v}, for {len(names)} classes")
    if base == "n_defined":
        if not 0 <= v <= len(names):
            raise ResultFileError(f"{where} is {v}, outside [0, {len(names)}] (its classes)")
        scored = sum(x is not None for x in auroc) if isinstance(auroc, list) else 0
        if v < scored:
            raise ResultFileError(f"{where} is {v}, below the {scored} classes with an AUROC")


def _check_range(v: Any, unit: bool, nonnegative: bool, where: str) -> None:
    """A share (``unit``) in [0, 1], a count or time (``nonnegative``) >= 0; None passes."""
    if v is None:
        return
    if unit and not 0 <= v <= 1:
        raise ResultFileError(f"{where} is {v!r}, outside [0, 1]")
    if nonnegative and v < 0:
        raise ResultFileError(f"{where} is {v!r}, below 0")


def _reject_constant(name: str) -> Any:
    raise ResultFileError(f"it holds {name}")


#: Bounds of a result file read back, so that a huge or deeply nested file is refused before
#: it is used: its size, its nodes (every mapping, list, key and value) and its depth.  Not
#: the config files' bounds (:mod:`fedpl_core.base.config_files`, 100,000 nodes): a result
#: holds its config (up to that many nodes and ``CONFIG_MAX_DEPTH`` levels) one level down,
#: and its history grows with the rounds.  The largest result of the studies is 142 KB and
#: 8,024 nodes (100 rounds); a record of an evaluation on three sets of 20 classes is about
#: 800 nodes, so a run of 2,000 such evaluations stays within the bound.
RESULT_MAX_BYTES = 64 << 20
RESULT_MAX_NODES = 2_000_000
RESULT_MAX_DEPTH = CONFIG_MAX_DEPTH + 8


def load_json(text: str) -> Any:
    """The JSON ``text`` of a result file, read by the package's one bounded reader
    (:func:`fedpl_core.base.config_files.parse_json`) with a result's own bounds
    (:data:`RESULT_MAX_BYTES`, :data:`RESULT_MAX_NODES`, :data:`RESULT_MAX_DEPTH`): no NaN or
    infinity, no key given twice in a mapping.  Anything wrong is one :class:`ResultFileError`
    line."""
    if len(text) > RESULT_MAX_BYTES:
        raise ResultFileError(f"it is over {RESULT_MAX_BYTES >> 20} MiB; a result holds at most that")
    try:
        return parse_json(text, "it", RESULT_MAX_NODES, RESULT_MAX_DEPTH, parse_constant=_reject_constant)
    except ResultFileError:
        raise
    except ConfigError as e:
        raise ResultFileError(str(e)) from None
    except MemoryError:
        raise ResultFileError("it is too large to read") from None
    except json.JSONDecodeError as e:
        raise ResultFileError(f"it is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise ResultFileError(f"it is not valid JSON ({str(e).splitlines()[0] if str(e) else 'a bad value'})") from None


def parse_result(text: str, run_id: str | None = None, config: dict[str, Any] | None = None) -> RunResult:
    """A :class:`RunResult` from a results JSON, checked: its size (:func:`load_json`), the
    keys, the types (config and records are mappings, history a list of records, class names
    distinct strings, metrics numbers), no NaN or infinity, each record key's range
    (:func:`_check_record`: shares in [0, 1], counts and times >= 0, per-class lists one
    value per class), ``final`` the history's last evaluated record (:func:`final_record`),
    ``best`` one of its records; the rounds those of its config (:func:`_check_rounds`),
    the class names those of its data set where the config says them
    (:func:`expected_classes`); ``run_id`` (the file's name), when given, must be the
    file's own ``run_id``; ``config`` (the run's :meth:`ExperimentConfig.to_dict`), when
    given, must be the file's config in every field that makes the run id
    (:func:`~fedpl_core.runs.experiment_config.run_identity`).  Raises :class:`ResultFileError` (a
    ``ValueError``) naming what is wrong."""
    d = load_json(text)
    if not isinstance(d, dict):
        raise ResultFileError(f"it holds a {type(d).__name__}, not a mapping")
    names = {f.name for f in dataclasses.fields(RunResult)}
    if set(d) - names or (names - {"run_id", "provenance"}) - set(d):
        raise ResultFileError(f"its keys are {sorted(d)}, expected {sorted(names)}")
    _check_finite(d, "result")
    cfg = d["config"]
    if not isinstance(cfg, dict):
        raise ResultFileError(f"config is a {type(cfg).__name__}, not a mapping")
    if not isinstance(cfg.get("method"), str):
        raise ResultFileError(f"config.method is {cfg.get('method')!r}, not a name")
    if not _is_int(cfg.get("seed")):
        raise ResultFileError(f"config.seed is {cfg.get('seed')!r}, not an integer")
    model = _check_names(d["class_names"], "class_names")
    if not model:
        raise ResultFileError("class_names is empty")
    if not isinstance(d["history"], list) or not d["history"]:
        raise ResultFileError("history is not a non-empty list of records")
    for i, rec in enumerate(d["history"]):
        _check_record(rec, f"history[{i}]", model)
    _check_record(d["final"], "final", model)
    _check_record(d["best"], "best", model, empty_ok=True)
    t = d["timings"]
    if not (isinstance(t, dict) and all(_is_number(v) for v in t.values()) and "total_s" in t):
        raise ResultFileError("timings is not a mapping of numbers with total_s")
    for k, v in t.items():  # seconds, and the peak GPU memory in MiB
        _check_range(v, False, True, f"timings.{k}")
    if d["final"] != final_record(d["history"]):
        raise ResultFileError(f"final (round {d['final']['round']}) is not the history's last evaluated record")
    if d["best"] and d["best"] not in d["history"]:
        raise ResultFileError(f"best (round {d['best']['round']}) is not a record of the history")
    rid = d.get("run_id")
    if run_id is not None and rid != run_id:
        raise ResultFileError(
            f"its run_id {rid!r} is not {run_id!r}"
            if rid is not None
            else f"it names no run_id (this run is {run_id!r})"
        )
    if rid is not None and not isinstance(rid, str):
        raise ResultFileError(f"its run_id {rid!r} is not a name")
    if config is not None:
        _check_own_config(cfg, config)
    _check_provenance(d.get("provenance", {}))
    _check_rounds(d["history"], cfg)
    _check_classes(model, cfg)
    return RunResult.from_json(d)


def _config_int(engine: dict[str, Any], key: str, none_ok: bool = False) -> Any:
    """``engine[key]``: an integer >= 1 (or None where ``none_ok``)."""
    v = engine.get(key)
    if v is None and none_ok:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return v
    raise ResultFileError(f"config.engine.{key} is {v!r}, not an integer >= 1")


def _is_evaluation(rec: dict[str, Any]) -> bool:
    """Whether a record holds an evaluation: any key but a training one
    (:data:`TRAINING_KEYS`), a method's ``log/<name>`` and the pseudo-label shares ``pl/``."""
    return any(k not in TRAINING_KEYS and not k.startswith(("log/", "pl/")) for k in rec)


def _check_rounds(history: list[dict[str, Any]], cfg: dict[str, Any]) -> None:
    """The history is the run's, round by round (:meth:`fedpl_core.fl.simulation.Simulation.step`
    appends one record a round, :meth:`~fedpl_core.fl.simulation.Simulation.run` stops after
    ``engine.rounds``, or earlier when ``patience`` stops it after a record of its selection
    key): its records
    are rounds 1, 2, ... in order, at most ``rounds`` of them, and end at ``rounds`` unless
    ``patience`` is set; a round is evaluated when ``eval_every`` divides it, and the last
    round always (``eval_time``: the records of the rounds that were, where one holds it)."""
    engine = cfg.get("engine")
    if not isinstance(engine, dict):
        raise ResultFileError(f"config.engine is a {type(engine).__name__}, not a mapping")
    rounds = _config_int(engine, "rounds")
    every = _config_int(engine, "eval_every") if "eval_every" in engine else None
    # patience (early stopping) set; a config without the field: not known, so allowed
    stops_early = _config_int(engine, "patience", none_ok=True) is not None if "patience" in engine else True
    if len(history) > rounds:
        raise ResultFileError(f"history holds {len(history)} records for a run of {rounds} rounds")
    for i, rec in enumerate(history):
        r = rec["round"]
        if r > rounds:
            raise ResultFileError(f"history[{i}].round is {r}, after the run's last round ({rounds})")
        if i and r <= history[i - 1]["round"]:
            raise ResultFileError(f"history[{i}].round is {r}, after round {history[i - 1]['round']}: not in order")
        if r != i + 1:
            raise ResultFileError(f"history[{i}].round is {r}: the history has no record of round {i + 1}")
    last = history[-1]
    if last["round"] < rounds:
        if not stops_early:
            raise ResultFileError(
                f"history ends at round {last['round']} of {rounds}, and the run has no patience to stop early"
            )
        key = engine.get("selection")
        if isinstance(key, str) and last.get(key) is None:  # patience counts the records that hold it
            raise ResultFileError(
                f"history ends at round {last['round']} of {rounds} on a record without {key} "
                "(an early stop follows one that holds it)"
            )
    if every is None:
        return
    timed = any("eval_time" in h for h in history)
    for i, rec in enumerate(history):
        r = rec["round"]
        due = r % every == 0 or r == rounds
        if not due and _is_evaluation(rec):
            raise ResultFileError(
                f"history[{i}] (round {r}) holds an evaluation; the run evaluates every {every} round(s) and the last"
            )
        if due and timed and "eval_time" not in rec:
            raise ResultFileError(
                f"history[{i}] (round {r}) holds no evaluation; the run evaluates every {every} round(s) and the last"
            )


def expected_classes(cfg: dict[str, Any]) -> list[str] | None:
    """The classes of a run with the stored config ``cfg``, in order, where the config says
    them without building the data: the ``classes`` it names, or the built-in generator's
    own (:data:`fedpl_core.data.synthetic.NIH14`, ``SKIN_CLASSES``, ``ICH_CLASSES``), for the
    package's own data sources (the generated sets, the real data sets of
    :mod:`fedpl_core.data.catalog`, MedMNIST), which keep the classes named in that order,
    and the one class of a one-class data set; None for the others (the papers' federations,
    whose tables fix their classes; a plugin's source)."""
    dataset, classes = cfg.get("dataset"), cfg.get("classes")
    if not isinstance(dataset, str):
        raise ResultFileError(f"config.dataset is {dataset!r}, not a name")
    if classes is not None:
        classes = _check_names(classes, "config.classes")
    from ..data import synthetic
    from ..data.catalog import DATASETS
    from ..data.sources import SOURCES, SYNTHETIC

    if dataset in SYNTHETIC:
        builder = SOURCES.get(dataset)
        if builder is None or builder.__module__ != "fedpl_core.data.sources.synthetic":
            return None  # registered over by a plugin
        own = {"synthetic-cxr": synthetic.NIH14, "synthetic-skin": synthetic.SKIN_CLASSES}
        return list(classes if classes is not None else own.get(dataset, synthetic.ICH_CLASSES))
    if dataset in SOURCES or not (dataset in DATASETS or dataset.startswith("medmnist:")):
        return None
    info = DATASETS.get(dataset)
    if info is not None and not info.takes_classes:
        return [str(info.one_class)]
    return None if classes is None else list(classes)


def _check_classes(model: list[str], cfg: dict[str, Any]) -> None:
    """``class_names`` are the classes of the run's data (:func:`expected_classes`) where its
    config says them."""
    expected = expected_classes(cfg)
    if expected is None or model == expected:
        return
    source = f"{cfg['dataset']}" + (", the config's classes" if cfg.get("classes") is not None else "")
    if len(model) != len(expected):
        raise ResultFileError(
            f"class_names holds {len(model)} names; its data ({source}) has {len(expected)}: {_shown_names(expected)}"
        )
    i = next(i for i, (a, b) in enumerate(zip(model, expected)) if a != b)
    raise ResultFileError(f"class_names[{i}] is {model[i]!r}, where its data ({source}) has {expected[i]!r}")


def _check_own_config(stored: dict[str, Any], config: dict[str, Any]) -> None:
    """The stored config is ``config`` (as a result file holds it: JSON, no NaN) in every
    field that makes the run id; else the fields that differ are named."""
    from .experiment_config import run_identity

    own = run_identity(json.loads(json.dumps(finite_or_none(config), default=str)))
    try:
        theirs = run_identity(stored)
    except (KeyError, TypeError, AttributeError):
        raise ResultFileError("its config is not a run's config") from None
    if theirs == own:
        return
    flat_own, flat_theirs = _flatten(own), _flatten(theirs)
    diff = [k for k in sorted(set(flat_own) | set(flat_theirs)) if flat_own.get(k, _NA) != flat_theirs.get(k, _NA)]
    said = "; ".join(
        f"{k} {_shown(flat_theirs.get(k, _NA))} (this run: {_shown(flat_own.get(k, _NA))})" for k in diff[:3]
    )
    raise ResultFileError(f"its config is another run's: {said}" + (f"; {len(diff) - 3} more" if len(diff) > 3 else ""))


_NA = object()


def _shown(v: Any) -> str:
    return "absent" if v is _NA else json.dumps(v)


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and k == "engine":
            out.update(_flatten(v, f"{k}."))
        else:
            out[prefix + k] = v
    return out


def _is_value(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _check_provenance(p: Any) -> None:
    """``provenance``: a mapping of names to strings, numbers, booleans or null, or to
    mappings of names to those (``numeric_platform``); its ``code`` a mapping of module
    names to hashes."""
    if not isinstance(p, dict):
        raise ResultFileError(f"provenance is a {type(p).__name__}, not a mapping")
    for k, v in p.items():
        if k == "code":
            if not (isinstance(v, dict) and all(isinstance(h, str) for h in v.values())):
                raise ResultFileError("provenance.code is not a mapping of module names to hashes")
        elif isinstance(v, dict):
            if not all(isinstance(n, str) and _is_value(x) for n, x in v.items()):
                raise ResultFileError(f"provenance.{k} is not a mapping of names to values")
        elif not _is_value(v):
            raise ResultFileError(f"provenance.{k} is a {type(v).__name__}, not a value")


def read_result(out: str | Path, config: dict[str, Any] | None = None) -> RunResult:
    """The checked result in the file ``out`` (:func:`parse_result`: its run id must be the
    file's name; with ``config``, the run's ``to_dict()``, its config must be that run's);
    a link is refused, never followed.  Raises ``OSError`` or :class:`ResultFileError`."""
    out = Path(out)
    if stat.S_ISLNK(os.lstat(out).st_mode):
        raise ResultFileError("it is a symbolic link, not a file")
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ResultFileError("it is not a regular file")
        raw = f.read(RESULT_MAX_BYTES + 1)
    if len(raw) > RESULT_MAX_BYTES:
        raise ResultFileError(f"it is over {RESULT_MAX_BYTES >> 20} MiB; a result holds at most that")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileError("it is not UTF-8 text") from None
    return parse_result(text, run_id=out.stem, config=config)


#: A record's check (the runner's of a checkpoint's history), by its public name.
check_record = _check_record


__all__ = [
    "ResultFileError",
    "parse_result",
    "read_result",
    "load_json",
    "expected_classes",
    "check_record",
    "RESULT_MAX_BYTES",
    "RESULT_MAX_NODES",
    "RESULT_MAX_DEPTH",
]
