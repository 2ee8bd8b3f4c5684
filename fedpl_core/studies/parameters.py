"""Run profiles shared by every notebook: ``smoke``, ``cpu``, ``gpu`` and ``full``, and ``paper`` for
the four papers' notebooks (01-04).

One parameter, ``profile``, decides how big a notebook's runs are:

========  ====================================================================  ========================
profile   what it is for                                                        budget
========  ====================================================================  ========================
smoke     the test suite: every cell runs, the numbers mean nothing             90 s or less a notebook
cpu       the default: converged runs with 3 seeds on 2 CPU cores               15 min or less
paper     the papers' training schedules (rounds, local steps, warm-up,         2.5 h or less a
          synchronisation, thresholds) on the cpu profile's small model and     notebook on 2 CPU
          data, seeds chosen for power; only the runs of the headline claims    cores
          (notebooks 01-04: ``make reproduce-paper``)
gpu       the papers' backbones (ResNet-18 for FedMLP, DenseNet-121 for         10 min or less on one
          the others) at 64-128 px, the papers' schedules in proportion,        H100, all six within
          3 seeds, bf16 autocast and channels-last (``make reproduce-gpu``)     an hour (on paper)
full      the papers' settings (models, image sizes, schedules): a GPU          hours
========  ====================================================================  ========================

Profiles are declared one way: each study module has a table ``PROFILES = {"smoke": {...},
"cpu": {...}, "gpu": {...}, "full": {...}}`` (a paper's study also ``"paper"``, after ``"cpu"``)
of named fields (its settings: data sizes, model,
``seeds``, ``rounds``, ``lr``, ...), and :func:`apply_parameters` takes a profile's row and applies a
notebook's parameters to it (``None``: the profile's value).  Every notebook has the same
parameters (:data:`NOTEBOOK_PARAMETERS`: ``profile``, ``seeds``, ``rounds``, ``lr``,
``data_seed``, ``device``, ``workers``, ``results_dir``), then its data folder(s) and its own
extras; any of them can be set with papermill
(``papermill nb.ipynb out.ipynb -p profile cpu -p seeds "[0, 1]" -p rounds 4``).  The
parameters are checked by :func:`notebook_parameters`, which also reads the text papermill's
``-p`` gives a list or a mapping (``"[0, 1]"``).

What a profile costs on a GPU is :mod:`fedpl_core.studies.budget`'s: on paper, and from the
step times a GPU measured.

>>> TABLE = {"smoke": {"seeds": [0], "rounds": 2, "lr": 1e-3},
...          "cpu": {"seeds": [0, 1, 2], "rounds": 16, "lr": 3e-3},
...          "gpu": {"seeds": [0, 1, 2], "rounds": 30, "lr": 1e-3},
...          "full": {"seeds": [0, 1, 2], "rounds": 100, "lr": 1e-3}}
>>> row = apply_parameters(TABLE, "cpu", seeds="[0, 1]", rounds=None, lr=1e-2)
>>> row["seeds"], row["rounds"], row["lr"]
([0, 1], 16, 0.01)
>>> check_profile("tpu")
Traceback (most recent call last):
...
ValueError: unknown profile 'tpu': choose one of smoke, cpu, paper, gpu, full
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from ..base.validation import PAPER_ONLY_PROFILES, PROFILES, check_profile  # noqa: F401  (the names live with the config)

#: The profiles of the small CNN on CPU cores: one run a core, one torch thread each, channels-last.
SMALL_CPU = ("cpu", "paper")


#: The profiles in the papers' schedules (hours a notebook): their runs keep a checkpoint
#: (:func:`engine_options`).
LONG_SCHEDULES = ("paper", "full")


def engine_options(profile: str, rounds: int | None = None) -> dict:
    """Engine settings a profile adds to every run: the ``cpu`` profile trains and
    evaluates in ``channels_last`` layout (NHWC), 1.24x faster for the small CNN on one
    thread (16 rounds of FedAvg on 1,000 images at 32 px: 8.8 s -> 7.1 s on this project's
    machine).  The numbers differ from the default layout by float rounding only (final
    AUROC within about 3e-4), not in kind.  The ``gpu`` profile adds bfloat16 autocast
    (``amp``, on CUDA only: a CPU run of it is in float32) to the same layout, the one the
    H100's tensor cores take; ``smoke`` and ``full`` keep the defaults.

    In the papers' schedules (:data:`LONG_SCHEDULES`; a run there takes up to about 20
    minutes on 2 cores) a run of ``rounds`` rounds with a results folder also writes a
    checkpoint every tenth of its rounds (``checkpoint_every``), so a run stopped midway
    resumes from its last checkpoint, to the same numbers, instead of from round 0.  The
    checkpoint interval is not part of the run id: the cached results stay addressable.

    >>> engine_options("cpu"), engine_options("gpu"), engine_options("full")
    ({'channels_last': True}, {'channels_last': True, 'amp': True}, {})
    >>> engine_options("paper", rounds=50), engine_options("full", rounds=5)
    ({'channels_last': True, 'checkpoint_every': 5}, {'checkpoint_every': 1})
    """
    profile = check_profile(profile)
    out: dict = {"channels_last": True} if profile in (*SMALL_CPU, "gpu") else {}
    if profile == "gpu":
        out["amp"] = True
    if profile in LONG_SCHEDULES and rounds:
        out["checkpoint_every"] = max(1, int(rounds) // 10)
    return out


def default_workers(profile: str, device: str = "auto") -> int:
    """Worker processes for ``run_many``: one per CPU core in the cpu profile on a CPU
    (each run single-threaded), else 1 (smoke: starting workers costs more than it
    saves; a GPU, and the gpu profile anywhere: one device, one run at a time)."""
    import os

    import torch

    check_profile(profile)
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    return max(1, os.cpu_count() or 1) if profile in SMALL_CPU and on_cpu else 1


def prepare(profile: str, device: str = "auto") -> str:
    """Check ``profile`` and set up torch for it; returns the profile.

    On a CPU the small-CNN profiles (smoke, cpu) run with one torch thread: their
    convolutions gain little from two, and two threads waiting on each other on a busy
    2-core machine can make a run many times slower.  The gpu profile on a CPU keeps
    torch's threads (its backbones are large).  On CUDA each run sets cuDNN up itself
    (``EngineConfig.deterministic``, :func:`fedpl_core.fl.site.configure_cuda`: the
    autotuner unless determinism is asked for).  Warnings print as one line each,
    ``fedpl: warning: ...``, as on the command line (:mod:`fedpl_core.base.messages`), not with
    the package's source line under them.
    """
    import torch

    from ..base.messages import use_one_line_warnings

    check_profile(profile)
    use_one_line_warnings()
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    if profile in ("smoke", *SMALL_CPU) and on_cpu:
        torch.set_num_threads(1)
    return profile


def _rounds(value, name: str) -> int:
    """Rounds: a whole number from 1 to the schedule's bound
    (:data:`fedpl_core.base.validation.SCHEDULE_MAX`)."""
    from ..base.validation import SCHEDULE_MAX, ConfigError

    v = _int(value, name, 1)
    if v > SCHEDULE_MAX["rounds"]:
        raise ConfigError(f"{name} must be at most {SCHEDULE_MAX['rounds']:,}, got {value!r}")
    return v


def _int(value, name: str, lo: int) -> int:
    from ..base.validation import ConfigError, _convert

    v = _convert(value, int, name)
    if v < lo:
        raise ConfigError(f"{name} must be >= {lo}, got {value!r}")
    return v


def _folder(value, name: str) -> str:
    from pathlib import Path

    from ..base.validation import ConfigError

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a folder path, got {value!r}")
    if not Path(value).expanduser().is_dir():
        raise ConfigError(f"{name}: folder not found: {value}")
    return value


def _seeds(value, name: str):
    from ..base.config_files import parse_literal
    from ..base.validation import ConfigError, check_seed

    if value is None:
        return None
    value = parse_literal(value, name)
    if isinstance(value, str):  # "0, 1" or "3"
        value = [v for v in value.replace(",", " ").split()]
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{name} must be a non-empty list of seeds such as [0, 1, 2], got {value!r}")
    out = [check_seed(_int(v, f"{name} entry", 0), f"{name} entry") for v in value]
    if len(set(out)) != len(out):
        raise ConfigError(f"{name} lists a seed twice: {out}")
    return out


def _root(value, name: str):
    return None if value is None else _folder(value, name)


def _roots(value, name: str):
    from ..base.config_files import parse_literal
    from ..base.validation import ConfigError

    if value is None:
        return None
    value = parse_literal(value, name)
    if isinstance(value, dict):
        return {str(k): (None if v is None else _folder(v, f"{name}[{k!r}]")) for k, v in value.items()}
    raise ConfigError(
        f'{name} maps a name to a data folder, e.g. {{"Task 2": "/data/HAM10000"}} (02) or '
        f'{{"ICH": "/data/rsna-ich"}} (04); got {type(value).__name__} {value!r}'
    )


def data_roots_by_key(
    value, keys: dict[str, str], name: str, what: str, example: str, must_exist: bool = True
) -> dict[str, str]:
    """A study's ``{key: data folder}`` parameter (None: ``{}``): a mapping whose keys are in
    ``keys`` (key -> the data set it names), or its text as ``papermill -p`` passes it.  A
    bare folder, an unknown key or (``must_exist``) a missing folder is an error naming
    ``name``, never ignored.  Notebooks 02 (tasks) and 04 (tables) share it."""
    from pathlib import Path

    from ..base.config_files import parse_literal

    value = parse_literal(value, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(
            f"{name} maps a {what} to its data folder, e.g. {example}; got {type(value).__name__} {value!r}"
        )
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise ValueError(
            f"unknown {what} {unknown[0]!r} in {name}; use " + " and/or ".join(f"{k!r} ({d})" for k, d in keys.items())
        )
    out = {k: str(v) for k, v in value.items() if v is not None}
    for k, v in out.items():
        if must_exist and not Path(v).is_dir():
            raise FileNotFoundError(f"{name}[{k!r}]: folder not found: {v}")
    return out


def _lr(value, name: str):
    """A learning rate: positive, finite, and one float32 training can step by
    (:func:`fedpl_core.base.validation.check_float32_value`: 1e-300 is refused, 1e-7 is not)."""
    from ..base.validation import ConfigError, _convert, check_float32_value

    if value is None:
        return None
    v = _convert(value, float, name)
    if not 0 < v < float("inf"):
        raise ConfigError(f"{name} must be a positive number such as 1e-3, got {value!r}")
    check_float32_value(v, name)
    return v


def _names(value, name: str):
    from ..base.config_files import parse_literal
    from ..base.validation import ConfigError

    value = parse_literal(value, name)
    if value is None:
        return []
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{name} must be a list of names, got {value!r}")
    return list(value)


def _optional_bool(value, name: str):
    from ..base.validation import parse_bool

    return None if value is None else parse_bool(value, name)


def _text(value, name: str) -> str:
    from ..base.validation import ConfigError

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _device(value, name: str) -> str:
    """A device this machine has (:func:`fedpl_core.base.validation.check_device_available`):
    ``cuda`` on a machine without a GPU is refused here, before the notebook's first run."""
    from ..base.validation import check_device_available

    return check_device_available(_text(value, name), name)


def _workers(value, name: str):
    """Worker processes: a whole number >= 1 (None: the profile's).  More than this
    machine's cores is capped to them with a warning
    (:func:`~fedpl_core.base.validation.cap_workers`): the runs would only wait for each
    other and hold more memory."""
    from ..base.validation import cap_workers

    if value is None:
        return None
    return cap_workers(_int(value, name, 1), name)


def _plugins(value, name: str) -> list[str]:
    """A notebook's ``plugins``: module names, imported now (and exported to worker
    processes through ``$FEDPL_PLUGINS``, :func:`fedpl_core.base.plugins.load_plugins`)."""
    from .. import methods  # noqa: F401  (its guard watches what a plugin registers)
    from ..base.plugins import load_plugins

    return load_plugins(_names(value, name))


def _dataset_kwargs(value, name: str):
    """A mapping (or its papermill text); which keys it may have is the study's to check
    (:func:`dataset_kwargs_by_key`)."""
    from ..base.config_files import parse_literal
    from ..base.validation import ConfigError

    value = parse_literal(value, name)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f'{name} must be a mapping such as {{"CXR": {{"skip_missing": true}}}}, got {value!r}')
    return value


class NotebookParameterError(TypeError):
    """A notebook parameter the notebook does not have (a misspelt ``papermill -p`` name).
    In a kernel it shows as one line (IPython's ``_render_traceback_``), not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"fedpl: error: {self}"]


#: The errors a notebook parameter's bad value raises (a ``ConfigError`` is a ``ValueError``; a
#: missing data folder an ``OSError``; a plugin that does not import an ``ImportError``).
PARAMETER_ERRORS = (ValueError, TypeError, OSError, ImportError)


def _one_line(error: BaseException) -> BaseException:
    """``error`` itself, shown in a kernel as one line, ``fedpl: error: <message>``, as a
    misspelt name is (:class:`NotebookParameterError`), not as a traceback through the
    package: IPython renders an exception by its ``_render_traceback_`` when it has one.
    Its type and message are unchanged (outside a kernel nothing changes)."""
    message = f"fedpl: error: {error}"
    error._render_traceback_ = lambda: [message]  # type: ignore[attr-defined]
    return error


#: The first line of the cell papermill injects (``papermill.translators``: a comment, then
#: one assignment a parameter).
INJECTED_HEADER = "# Parameters"


def injected_cell(cells) -> str | None:
    """The last papermill-injected cell among ``cells`` (a kernel's input history, IPython's
    ``In``: the source of every cell run so far), or None (a run in JupyterLab or nbval)."""
    for src in reversed(list(cells or ())):
        if isinstance(src, str) and src.splitlines()[:1] == [INJECTED_HEADER]:
            return src
    return None


def assigned_names(src: str | list[str] | None) -> list[str]:
    """The names a cell's source (text, or papermill's list of lines) assigns at its top
    level, in order (``[]`` for source that does not parse)."""
    import ast

    try:
        tree = ast.parse("".join(src) if isinstance(src, list) else (src or ""))
    except SyntaxError:
        return []
    return [
        t.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    ]


def injected_names(cells) -> list[str]:
    """The names the last papermill-injected cell among ``cells`` assigns (:func:`injected_cell`;
    ``[]`` without one)."""
    return assigned_names(injected_cell(cells))


_CHECKED: set[str] = set()  # injected cells already checked in this kernel (by the setup cell)


def _kernel_history():
    """IPython's ``In`` when this runs in a kernel, else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return None if shell is None else shell.user_ns.get("In")


def check_injected(parameters, cells=None) -> None:
    """Refuse a name that papermill injected (``-p round 2``) and that is not among
    ``parameters`` (the notebook's parameters): :class:`NotebookParameterError` naming it and
    the notebook's parameters.  ``cells``: the kernel's input history (None: IPython's ``In``
    when running in a kernel).  An injected cell is checked once per kernel: the first call
    (the setup cell, with every parameter) decides."""
    cells = _kernel_history() if cells is None else cells
    src = injected_cell(cells)
    if src is None or src in _CHECKED:
        return
    unknown = [k for k in injected_names([src]) if k not in parameters]
    if unknown:
        raise NotebookParameterError(
            f"unknown parameter {unknown[0]!r} (papermill -p {unknown[0]} ...): this notebook's parameters are "
            + ", ".join(parameters)
        )
    _CHECKED.add(src)


#: How :func:`notebook_parameters` reads each parameter the notebooks share.
PARAMETERS = {
    "profile": lambda v, n: check_profile(v),
    "seeds": _seeds,
    "rounds": lambda v, n: None if v is None else _rounds(v, n),
    "lr": _lr,
    "data_seed": lambda v, n: _int(v, n, 0),
    "device": _device,
    "workers": _workers,
    "data_root": _root,
    "data_roots": _roots,
    "results_dir": lambda v, n: None if v is None else _text(v, n),  # None: paths.results_dir(<notebook>)
    "first_order": _optional_bool,
    "pretrained": lambda v, n: _optional_bool(v, n) or False,
    "exclude": _names,
    "plugins": _plugins,
    "dataset_kwargs": _dataset_kwargs,
}


def notebook_parameters(**params) -> dict:
    """The notebook parameters ``params`` checked and converted, in the order given.

    papermill's ``-p name value`` passes a list or a mapping as its text: ``-p seeds
    "[0, 1]"`` gives the string ``"[0, 1]"``, read here as the list ``[0, 1]`` (JSON or a
    Python literal; ``"0, 1"`` works too).  ``None`` keeps "the profile's value" where a
    parameter has one (``seeds``, ``rounds``, ``lr``, ``workers``, ``first_order``); any other
    value is checked, so a value that would be ignored or silently replaced is an error:
    ``rounds=0`` (not the profile's rounds), a ``data_root`` folder that does not exist,
    a ``data_roots`` that is not a mapping of names to existing folders, a learning rate
    float32 cannot step by (``1e-300``), a ``device`` this machine does not have (``cuda``
    without a GPU).  ``workers`` above this machine's cores is capped to them, with a warning.

    >>> notebook_parameters(profile="smoke", seeds="[0, 1]", rounds=None)
    {'profile': 'smoke', 'seeds': [0, 1], 'rounds': None}
    >>> notebook_parameters(rounds=0)
    Traceback (most recent call last):
    ...
    fedpl_core.base.validation.ConfigError: rounds must be >= 1, got 0
    """
    unknown = [k for k in params if k not in PARAMETERS]
    if unknown:
        raise TypeError(f"unknown notebook parameter(s) {unknown}; known: {', '.join(PARAMETERS)}")
    return {k: PARAMETERS[k](v, k) for k, v in params.items()}


#: The parameters every notebook's ``parameters`` cell has, in this order (then its data
#: folder(s), ``data_root`` or ``data_roots``, then its own extras: ``first_order``,
#: ``pretrained``, ``exclude``).
NOTEBOOK_PARAMETERS = ("profile", "seeds", "rounds", "lr", "data_seed", "device", "workers", "results_dir")
#: The fields every row of a study's ``PROFILES`` table has: the values of the parameters
#: whose ``None`` means "the profile's value".
ROW_FIELDS = ("seeds", "rounds", "lr")


def check_table(table: Mapping[str, Mapping[str, Any]], name: str = "PROFILES") -> Mapping:
    """``table`` itself if it is a profile table: the keys smoke, cpu, gpu and full in the order of
    :data:`PROFILES` (and, for a paper's study, ``paper`` after ``cpu``:
    :data:`PAPER_ONLY_PROFILES`), each a dict of named fields that has at least
    :data:`ROW_FIELDS`; else a ``ValueError``.

    >>> check_table({"smoke": {}, "cpu": {}})
    Traceback (most recent call last):
    ...
    ValueError: PROFILES must have the rows smoke, cpu, gpu, full (and paper after cpu); got smoke, cpu
    """
    required = [p for p in PROFILES if p not in PAPER_ONLY_PROFILES]
    if (
        not isinstance(table, Mapping)
        or [p for p in table if p not in PAPER_ONLY_PROFILES] != required
        or [p for p in PROFILES if p in table] != list(table)
    ):
        got = ", ".join(map(str, table)) if isinstance(table, Mapping) else type(table).__name__
        raise ValueError(
            f"{name} must have the rows {', '.join(required)} (and {', '.join(PAPER_ONLY_PROFILES)} after cpu); "
            f"got {got}"
        )
    for profile, row in table.items():
        if not isinstance(row, Mapping):
            raise ValueError(f"{name}[{profile!r}] must be a dict of named fields, got {type(row).__name__}")
        lacking = [k for k in ROW_FIELDS if k not in row]
        if lacking:
            raise ValueError(f"{name}[{profile!r}] lacks {', '.join(lacking)}: every row names {', '.join(ROW_FIELDS)}")
    return table


def apply_parameters(
    table: Mapping[str, Mapping[str, Any]], profile: str, *, cells=None, **parameters: Any
) -> dict[str, Any]:
    """The row ``table[profile]`` of a study's profile table (a copy) with a notebook's
    ``parameters`` applied: the one way every notebook turns its parameters into settings.

    ``parameters`` are checked and converted by :func:`notebook_parameters` (an unknown
    name or a bad value is an error naming it).  In a kernel run by papermill, a name papermill
    injected (``-p round 2``) that is not ``profile`` or one of ``parameters`` raises
    :class:`NotebookParameterError` naming it and the notebook's parameters (papermill itself
    only warns, and the notebook would run to the end on the profile's value;
    :func:`check_injected`; ``cells``: the input history to read, default IPython's ``In``).
    A parameter the row has (``seeds``,
    ``rounds``, ``lr``, a study's ``first_order``, ...) replaces the row's value unless it
    is ``None`` (the profile's value); any other parameter (``data_seed``, ``device``, a data
    folder, ...) is added to the row as given.  ``workers=None`` becomes the profile's
    default (:func:`default_workers`).  The result also holds ``profile``.  A bad value shows
    in a kernel as one line, ``fedpl: error: <message>``, as a misspelt name does
    (:func:`_one_line`: the exception keeps its type and message).

    >>> row = apply_parameters({"smoke": {"seeds": [0], "rounds": 2, "lr": 1e-3, "n": 60},
    ...                         "cpu": {"seeds": [0, 1, 2], "rounds": 16, "lr": 3e-3, "n": 200},
    ...                         "gpu": {"seeds": [0, 1, 2], "rounds": 10, "lr": 1e-3, "n": 1000},
    ...                         "full": {"seeds": [0, 1, 2], "rounds": 10, "lr": 1e-3, "n": 1000}},
    ...                        "smoke", rounds="4", lr=None, data_seed=1)
    >>> row
    {'seeds': [0], 'rounds': 4, 'lr': 0.001, 'n': 60, 'data_seed': 1, 'profile': 'smoke'}
    >>> apply_parameters({"smoke": {}, "cpu": {}, "gpu": {}, "full": {}}, "smoke", round=4)
    Traceback (most recent call last):
    ...
    TypeError: unknown notebook parameter(s) ['round']; known: profile, seeds, rounds, lr, ...
    """
    from ..base.messages import one_line_warnings

    try:
        with one_line_warnings():  # workers capped to the cores: one line, as the notebook's other warnings
            check_injected(["profile", *parameters], cells)
            checked = notebook_parameters(profile=profile, **parameters)
    except PARAMETER_ERRORS as e:
        raise _one_line(e) from None
    profile = checked.pop("profile")
    if profile not in check_table(table):
        raise ValueError(
            f"profile {profile!r} is for the papers' notebooks (01-04), which test the papers' claims; "
            f"this notebook has the profiles {', '.join(table)}"
        )
    row = copy.deepcopy(dict(table[profile]))
    for k, v in checked.items():
        if v is not None or k not in row:
            row[k] = v
    if "workers" in row and row["workers"] is None:
        row["workers"] = default_workers(profile, row.get("device", "auto"))
    row["profile"] = profile
    return row


def fields_of(cls, row: Mapping[str, Any], extra: tuple[str, ...] = ("workers", "results_dir")) -> dict[str, Any]:
    """The entries of ``row`` that are fields of the dataclass ``cls``, for ``cls(**...)``; an
    entry that is neither a field nor in ``extra`` (notebook parameters a study's settings
    do not hold) is an error, so that a misspelt field of a profile table is never ignored."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in row if k not in names and k not in extra]
    if unknown:
        raise TypeError(f"{cls.__module__}.{cls.__qualname__} has no field(s) {unknown}")
    return {k: v for k, v in row.items() if k in names}


def settings_with_data_roots(
    cls,
    table: Mapping[str, Mapping[str, Any]],
    profile: str | Mapping[str, Any],
    check_roots: Callable[[Any], Any],
    data_roots: Any = None,
    **parameters: Any,
):
    """A study's settings ``cls(...)`` for ``profile`` (a row of ``table`` with the notebook
    ``parameters`` applied by :func:`apply_parameters`, or a row it returned) and its real-data
    folders ``data_roots`` (given here or in the row), checked by ``check_roots``; the row's
    ``dataset_kwargs`` (the loader options of each data folder) are checked against those
    folders by :func:`dataset_kwargs_by_key`."""
    if isinstance(profile, Mapping):
        row = dict(profile)
        data_roots = row.pop("data_roots", None) if data_roots is None else data_roots
    else:
        row = apply_parameters(table, profile, **parameters)
    try:
        roots = check_roots(data_roots)
        if "dataset_kwargs" in row:
            row["dataset_kwargs"] = dataset_kwargs_by_key(row["dataset_kwargs"], roots)
    except PARAMETER_ERRORS as e:
        raise _one_line(e) from None
    return cls(**fields_of(cls, row), data_roots=roots)


def dataset_kwargs_by_key(value: Any, roots: Mapping[str, str], name: str = "dataset_kwargs") -> dict[str, dict]:
    """A notebook's ``dataset_kwargs``: the loader options of each data folder of
    ``data_roots`` (``roots``), ``{key: {option: value}}`` with the keys of ``data_roots``,
    e.g. ``{"CXR": {"skip_missing": True}}`` (None: ``{}``).  A key that names no given data
    folder is an error (the built-in data take no loader options); each option is checked
    against its loader when the study builds the config (:func:`check_loader_kwargs`)."""
    from ..base.config_files import parse_literal
    from ..base.validation import ConfigError

    value = parse_literal(value, name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{name} maps a key of data_roots to its loader options, e.g. "
            f'{{"CXR": {{"skip_missing": true}}}}; got {type(value).__name__} {value!r}'
        )
    for key, kw in value.items():
        if key not in roots:
            given = ", ".join(repr(k) for k in roots) or "none"
            raise ConfigError(
                f"{name}[{key!r}] names no folder of data_roots (given: {given}); loader options "
                "apply to real data only"
            )
        if not isinstance(kw, Mapping) or not all(isinstance(k, str) for k in kw):
            raise ConfigError(
                f'{name}[{key!r}] must map option names to values, e.g. {{"skip_missing": true}}; got {kw!r}'
            )
    return {str(k): dict(v) for k, v in value.items()}


def check_loader_kwargs(dataset: str, kwargs: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``kwargs`` if the loader of the registered data set ``dataset`` takes every one of them
    (its own keyword arguments and the decoding options,
    :class:`~fedpl_core.data.cache.DecodeOptions`), else a ``ConfigError`` naming the option
    and the ones it takes: a misspelt option is refused before any image is read."""
    import inspect

    from ..base.validation import ConfigError
    from ..data.cache import DECODE_FIELDS
    from ..data.catalog import DATASETS

    info = DATASETS.get(dataset)
    if info is None or not kwargs:
        return dict(kwargs)
    fixed = {"root", "split", "classes", "seed", "decode"} | set(info.loader_kwargs)  # the registry sets these
    sig = inspect.signature(info.load_fn())
    takes = sorted(
        {p.name for p in sig.parameters.values() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - fixed
        | set(DECODE_FIELDS)
    )
    for k in kwargs:
        if k not in takes:
            raise ConfigError(f"{name}: the {dataset} loader has no option {k!r}; it takes {', '.join(takes)}")
    return dict(kwargs)


# =========================================================================== the ImageNet start
#: The second backbone of each paper's headline pair in the gpu profile: EfficientNet-Lite0
#: from the ImageNet weights of the ``pretrained`` extra (:func:`fedpl_core.nn.models.efficientnet_lite0`),
#: the one offline stand-in for the papers' ImageNet start (their ResNet-18 and DenseNet-121
#: weights are downloaded at run time, which an offline node cannot).
PRETRAINED_BACKBONE = {"model": "efficientnet_lite0", "model_kwargs": {"pretrained": True}}
#: The profiles that run it: gpu and full.  Not the cpu profile: on this project's 2-core CPU a
#: Lite0 training step costs 4-5 times the small CNN's (32 px, batch 32, one thread:
#: :func:`fedpl_core.apps.gpu_checks.time_backbone`).  Not the smoke profile either: at the smoke sizes
#: FedMLP's and FedPSL's ImageNet starts took 69-71 s each on that CPU while it was loaded, against a
#: smoke notebook's 90 s (the tests run the study functions at the smoke sizes with ``force``).
PRETRAINED_PROFILES = ("gpu", "full")


def pretrained_backbone(profile: str, verbose: bool = True, force: bool = False) -> dict[str, Any] | None:
    """The config overrides of the ImageNet-pretrained second backbone
    (:data:`PRETRAINED_BACKBONE`) in ``profile``, or None where it does not run: a profile not
    in :data:`PRETRAINED_PROFILES` (unless ``force``), or the ``pretrained`` extra is not
    installed (then, with ``verbose``, one line says so and how to install it)."""
    import copy

    from ..nn.models import missing_pretrained_extra

    profile = check_profile(profile)
    if profile not in PRETRAINED_PROFILES and not force:
        if verbose:
            print(f"ImageNet start: the gpu and full profiles run it, not the {profile} profile")
        return None
    missing = missing_pretrained_extra()
    if missing:
        if verbose:
            print(
                f"ImageNet start: skipped, the pretrained extra is not installed ({', '.join(missing)}): "
                "pip install 'fedpl[pretrained]'"
            )
        return None
    return copy.deepcopy(PRETRAINED_BACKBONE)
