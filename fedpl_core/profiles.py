"""Run profiles shared by every notebook: ``smoke``, ``cpu`` and ``full``.

One parameter, ``profile``, decides how big a notebook's runs are:

========  ================================================================  ======================
profile   what it is for                                                    budget
========  ================================================================  ======================
smoke     the test suite: every cell runs, the numbers mean nothing         90 s or less a notebook
cpu       the default: converged runs with 3 seeds on 2 CPU cores           15 min or less
full      the papers' settings (models, image sizes, schedules): a GPU      hours
========  ================================================================  ======================

Each study maps a profile to its settings (``studies.fedpsl.settings(profile)``,
``studies.surgical.make_settings(profile)``, ``studies.benchmark.settings(profile)``; the
introduction notebook picks its few values with :func:`pick`);
any single notebook parameter can still be overridden with papermill
(``papermill nb.ipynb out.ipynb -p profile cpu -p seeds "[0, 1]"``).  Every notebook passes
its parameters through :func:`notebook_parameters`, which checks them and reads the text
papermill's ``-p`` gives a list or a mapping (``"[0, 1]"``).

>>> pick("cpu", smoke=1, cpu=3, full=5)
3
>>> check_profile("gpu")
Traceback (most recent call last):
...
ValueError: unknown profile 'gpu': choose one of smoke, cpu, full
"""
from __future__ import annotations

from typing import Literal, TypeVar

PROFILES = ("smoke", "cpu", "full")
Profile = Literal["smoke", "cpu", "full"]
T = TypeVar("T")


def check_profile(profile: str) -> str:
    """``profile`` itself, or a ``ValueError`` naming the profiles there are."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return profile


def pick(profile: str, *, smoke: T, cpu: T, full: T) -> T:
    """The value of ``profile`` among three."""
    return {"smoke": smoke, "cpu": cpu, "full": full}[check_profile(profile)]


def engine_options(profile: str) -> dict:
    """Engine settings a profile adds to every run: the ``cpu`` profile trains and
    evaluates in ``channels_last`` layout (NHWC), 1.24x faster for the small CNN on one
    thread (16 rounds of FedAvg on 1,000 images at 32 px: 8.8 s -> 7.1 s on this project's
    machine).  The numbers differ from the default layout by float rounding only (final
    AUROC within about 3e-4), not in kind; ``smoke`` and ``full`` keep the default layout.

    >>> engine_options("cpu"), engine_options("full")
    ({'channels_last': True}, {})
    """
    return {"channels_last": True} if check_profile(profile) == "cpu" else {}


def default_workers(profile: str, device: str = "auto") -> int:
    """Worker processes for ``run_many``: one per CPU core in the cpu profile on a CPU
    (each run single-threaded), else 1 (smoke: starting workers costs more than it
    saves; a GPU: one device)."""
    import os

    import torch

    check_profile(profile)
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    return max(1, os.cpu_count() or 1) if profile == "cpu" and on_cpu else 1


def prepare(profile: str, device: str = "auto") -> str:
    """Check ``profile`` and set up torch for it; returns the profile.

    On a CPU the small-CNN profiles (smoke, cpu) run with one torch thread: their
    convolutions gain little from two, and two threads waiting on each other on a busy
    2-core machine can make a run many times slower.
    """
    import torch

    check_profile(profile)
    on_cpu = device == "cpu" or (device == "auto" and not torch.cuda.is_available())
    if profile != "full" and on_cpu:
        torch.set_num_threads(1)
    return profile


def _int(value, name: str, lo: int) -> int:
    from .config import ConfigError, _convert

    v = _convert(value, int, name)
    if v < lo:
        raise ConfigError(f"{name} must be >= {lo}, got {value!r}")
    return v


def _folder(value, name: str) -> str:
    from pathlib import Path

    from .config import ConfigError

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a folder path, got {value!r}")
    if not Path(value).expanduser().is_dir():
        raise ConfigError(f"{name}: folder not found: {value}")
    return value


def _seeds(value, name: str):
    from .config import ConfigError, check_seed, parse_literal

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
    from .config import ConfigError, parse_literal

    if value is None:
        return None
    value = parse_literal(value, name)
    if isinstance(value, dict):
        return {str(k): (None if v is None else _folder(v, f"{name}[{k!r}]")) for k, v in value.items()}
    raise ConfigError(f"{name} maps a name to a data folder, e.g. {{\"Task 2\": \"/data/HAM10000\"}}; got "
                      f"{type(value).__name__} {value!r}")


def data_roots_by_key(value, keys: dict[str, str], name: str, what: str, example: str,
                      must_exist: bool = True) -> dict[str, str]:
    """A study's ``{key: data folder}`` parameter (None: ``{}``): a mapping whose keys are in
    ``keys`` (key -> the data set it names), or its text as ``papermill -p`` passes it.  A
    bare folder, an unknown key or (``must_exist``) a missing folder is an error naming
    ``name``, never ignored.  Notebooks 02 (tasks) and 04 (tables) share it."""
    from pathlib import Path

    from .config import parse_literal

    value = parse_literal(value, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name} maps a {what} to its data folder, e.g. {example}; got {type(value).__name__} {value!r}")
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise ValueError(f"unknown {what} {unknown[0]!r} in {name}; use "
                         + " and/or ".join(f"{k!r} ({d})" for k, d in keys.items()))
    out = {k: str(v) for k, v in value.items() if v is not None}
    for k, v in out.items():
        if must_exist and not Path(v).is_dir():
            raise FileNotFoundError(f"{name}[{k!r}]: folder not found: {v}")
    return out

def _names(value, name: str):
    from .config import ConfigError, parse_literal

    value = parse_literal(value, name)
    if value is None:
        return []
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{name} must be a list of names, got {value!r}")
    return list(value)


def _optional_bool(value, name: str):
    from .config import parse_bool

    return None if value is None else parse_bool(value, name)


def _text(value, name: str) -> str:
    from .config import ConfigError

    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _device(value, name: str) -> str:
    from .config import check_device

    return check_device(_text(value, name), name)


#: How :func:`notebook_parameters` reads each parameter the notebooks share.
PARAMETERS = {
    "profile": lambda v, n: check_profile(v),
    "seeds": _seeds,
    "rounds": lambda v, n: None if v is None else _int(v, n, 1),
    "data_seed": lambda v, n: _int(v, n, 0),
    "device": _device,
    "workers": lambda v, n: None if v is None else _int(v, n, 1),
    "data_root": _root,
    "data_roots": _roots,
    "results_dir": lambda v, n: None if v is None else _text(v, n),  # None: paths.results_dir(<notebook>)
    "first_order": _optional_bool,
    "pretrained": lambda v, n: _optional_bool(v, n) or False,
    "exclude": _names,
}


def notebook_parameters(**params) -> dict:
    """The notebook parameters ``params`` checked and converted, in the order given.

    papermill's ``-p name value`` passes a list or a mapping as its text: ``-p seeds
    "[0, 1]"`` gives the string ``"[0, 1]"``, read here as the list ``[0, 1]`` (JSON or a
    Python literal; ``"0, 1"`` works too).  ``None`` keeps "the profile's value" where a
    parameter has one (``seeds``, ``rounds``, ``workers``, ``first_order``); any other
    value is checked, so a value that would be ignored or silently replaced is an error:
    ``rounds=0`` (not the profile's rounds), a ``data_root`` folder that does not exist,
    a ``data_roots`` that is not a mapping of names to existing folders.

    >>> notebook_parameters(profile="smoke", seeds="[0, 1]", rounds=None)
    {'profile': 'smoke', 'seeds': [0, 1], 'rounds': None}
    >>> notebook_parameters(rounds=0)
    Traceback (most recent call last):
    ...
    fedpl_core.config.ConfigError: rounds must be >= 1, got 0
    """
    unknown = [k for k in params if k not in PARAMETERS]
    if unknown:
        raise TypeError(f"unknown notebook parameter(s) {unknown}; known: {', '.join(PARAMETERS)}")
    return {k: PARAMETERS[k](v, k) for k, v in params.items()}
