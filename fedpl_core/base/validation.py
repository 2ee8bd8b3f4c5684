"""Validated configuration dataclasses and options.

:func:`validate` checks (and, where it is lossless, converts) every field of a dataclass
against its annotation before any work is done: ``Literal`` values, ``int`` / ``float``
(YAML reads ``1e-3`` as the string ``'1e-3'``: converted), strict booleans (``"ture"`` is
refused, not read as False), optional values, and the ranges a class declares in
``_RANGES``.  A bad value raises :class:`ConfigError` with one line naming the field.
The same rules check a method's or model's keyword options (:func:`check_kwargs_types`)
and a notebook parameter written as text (:func:`parse_literal`).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import textwrap
import types
import typing
from typing import Any, Literal, Union

ConfigError = type("ConfigError", (ValueError,), {"__doc__": "A configuration value is invalid."})

#: The notebooks' profiles (:mod:`fedpl_core.studies.parameters` holds what each one sets).
PROFILES = ("smoke", "cpu", "paper", "gpu", "full")
Profile = Literal["smoke", "cpu", "paper", "gpu", "full"]
#: Profiles only the papers' notebooks have (the others: every notebook).
PAPER_ONLY_PROFILES = ("paper",)


def check_profile(profile: str) -> str:
    """``profile`` itself, or a ``ValueError`` naming the profiles there are."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose one of {', '.join(PROFILES)}")
    return profile


_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def parse_bool(value: Any, name: str = "value") -> bool:
    """Strict boolean: True/False, 0/1, or one of true/false/yes/no/on/off/1/0 (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{name} must be a boolean (true/false), got {value!r}")


#: The largest integer from which every smaller one is a float too (2**53): an integer written
#: as a float (``1e3``, as YAML and the command line may give it) is exact up to it only.
EXACT_INTEGERS = 2**53


def _convert(value: Any, tp: Any, name: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in (a for a in args if a is not type(None)):
            try:
                return _convert(value, a, name)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{name}: invalid value {value!r}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{name} must be one of {', '.join(map(repr, args))}; got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is bool:
        return parse_bool(value, name)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, str, float)):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip(), 10)  # every digit kept: "9007199254740993" is not 2**53
            except ValueError:
                pass
        try:
            f = float(value)
        except (ValueError, OverflowError):
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        if abs(f) > EXACT_INTEGERS:
            raise ConfigError(
                f"{name} {value!r} is written as a float beyond 2**53, where a float no longer holds every "
                "integer; write it with its digits"
            )
        return int(f)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        try:
            return float(value)
        except (ValueError, OverflowError):
            raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, got {value!r}")
        return value
    base = origin or tp
    if isinstance(base, type) and not isinstance(value, base):
        raise ConfigError(f"{name} must be a {base.__name__}, got {type(value).__name__} {value!r}")
    return value


def _check_range(name: str, value: Any, rule: str) -> None:
    """``rule``: ``">=1"``, ``">0"``, ``"(0,1]"``, ``"[0,1)"``..."""
    if value is None:
        return
    if rule.startswith(("(", "[")):
        lo, hi = (float(x) for x in rule[1:-1].split(","))
        ok = (value > lo if rule[0] == "(" else value >= lo) and (value < hi if rule[-1] == ")" else value <= hi)
    elif rule.startswith(">="):
        ok = value >= float(rule[2:])
    elif rule.startswith(">"):
        ok = value > float(rule[1:])
    else:  # pragma: no cover - a programming error in _RANGES
        raise AssertionError(rule)
    if not ok or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigError(f"{name} must be {rule.replace(',', ', ')}, got {value!r}")


def validate(obj: Any, prefix: str = "") -> None:
    """Check and convert every field of dataclass ``obj`` in place (see module docstring),
    then run the checks :data:`AFTER_FIELDS` holds for its class."""
    hints = typing.get_type_hints(type(obj), include_extras=False)
    ranges = getattr(type(obj), "_RANGES", {})
    for f in dataclasses.fields(obj):
        if f.name.startswith("_") or f.name not in hints:
            continue
        name = prefix + f.name
        value = _convert(getattr(obj, f.name), hints[f.name], name)
        if f.name in ranges:
            _check_range(name, value, ranges[f.name])
        object.__setattr__(obj, f.name, value)
    for c in type(obj).__mro__:
        check = AFTER_FIELDS.get(f"{c.__module__}:{c.__qualname__}")
        if check is not None:
            check(obj)
            break


#: The largest finite float32: training runs in float32, so a larger lr overflows in torch.
FLOAT32_MAX = 3.4028234663852886e38
#: The smallest normal float32 (``torch.finfo(torch.float32).tiny``, 2**-126).  Training runs
#: in float32: a step size below it is a denormal number (1e-39, 1e-45, with fewer and fewer
#: significant bits) or rounds to zero (1e-46, 1e-300), and its product with any gradient of
#: order one is not representable, so nothing trains and every such value gives the same
#: numbers.  Such a value is refused as a mistake.  The bound is the one that is certain, not
#: the one that is practical: a learning rate well above it (1e-20) can still be too small to
#: move float32 weights, but whether it is depends on the run (the optimizer, the gradients,
#: the weights), and small rates such as 1e-7 are legitimate.
FLOAT32_TINY = 1.1754943508222875e-38


def check_float32_value(value: Any, name: str) -> None:
    """A :class:`ConfigError` for a finite float that float32 training cannot hold: above
    :data:`FLOAT32_MAX` in magnitude (it overflows), or not zero and below
    :data:`FLOAT32_TINY` in magnitude (a step that small is zero or denormal in float32:
    nothing would train).  Zero, other types and non-finite values are left to the range
    checks."""
    if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
        return
    if abs(value) > FLOAT32_MAX:
        raise ConfigError(f"{name} must be at most {FLOAT32_MAX:.3g} (training runs in float32), got {value!r}")
    if value != 0 and abs(value) < FLOAT32_TINY:
        raise ConfigError(
            f"{name} {value!r} is below {FLOAT32_TINY:.3g}, float32's smallest normal number: training runs "
            "in float32, where it is zero or denormal and nothing would train"
        )


def check_float32(obj: Any, names: typing.Iterable[str], prefix: str = "") -> None:
    """The float fields ``names`` of ``obj`` checked by :func:`check_float32_value`: too large
    for float32, or too small to be a step in it (a learning rate of 1e-300 trains nothing)."""
    for n in names:
        check_float32_value(getattr(obj, n), prefix + n)


DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(device: str, name: str = "device") -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (``meta`` and other torch device
    types hold no data to train on); availability is checked when a run starts."""
    if device == "auto":
        return device
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError):
        kind = None
    if kind not in DEVICE_TYPES:
        raise ConfigError(f"{name} must be auto, cpu, cuda, cuda:N or mps, got {device!r}")
    return device


def check_device_available(device: str, name: str = "device") -> str:
    """``device`` itself if this machine has it (:func:`check_device` first): a ``ConfigError``
    in one line for ``cuda`` without a CUDA GPU, ``cuda:N`` past the GPUs there are, ``mps``
    without Apple's GPU.  Not part of a config's own checks (a config written on a GPU machine
    is still read on a CPU one): it is called where runs start or are about to, so that a
    missing device is refused before any run, not once per run and attempt."""
    check_device(device, name)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"{name} {device!r} is not available on this machine (no CUDA GPU); use auto or cpu")
        index = torch.device(device).index or 0
        if index >= torch.cuda.device_count():
            raise ConfigError(
                f"{name} {device!r} is not available: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise ConfigError(f"{name} 'mps' is not available on this machine; use auto or cpu")
    return device


#: The longest schedule a run may ask for: **[choice]** the papers train 50 to 500 rounds of
#: at most a few local epochs; a value far beyond (``--rounds 1e308``, ``--local-epochs 1e9``)
#: is a mistake that would train until killed, so it is refused.  ``field -> largest value``.
SCHEDULE_MAX = {"rounds": 100_000, "local_epochs": 10_000, "local_iters": 10_000_000}


def check_schedule(obj: Any, prefix: str = "") -> None:
    """A :class:`ConfigError` naming the first field of :data:`SCHEDULE_MAX` that ``obj`` (an
    engine config, or any object with those attributes) sets beyond its bound."""
    for name, most in SCHEDULE_MAX.items():
        v = getattr(obj, name, None)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > most:
            raise ConfigError(
                f"{prefix}{name} {v!r} is beyond {most:,}: the papers train 50 to 500 rounds of a few local "
                "epochs; give a schedule that ends"
            )


def machine_cores() -> int:
    """The CPU cores this process may use (its affinity where the system says, else all)."""
    import os

    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cap_workers(workers: Any, what: str = "workers") -> Any:
    """``workers`` capped to :func:`machine_cores`, with a warning naming both numbers: more
    worker processes than cores only share the cores (and each holds its own copy of the
    data).  Anything but an integer is returned as it is (its own check refuses it).  The
    command line, the notebooks and ``run_many`` / ``run_grid`` call it."""
    import warnings

    cores = machine_cores()
    if isinstance(workers, int) and not isinstance(workers, bool) and workers > cores:
        warnings.warn(
            f"{what} {workers} is more than the {cores} CPU core(s) of this machine; using {cores}", stacklevel=3
        )
        return cores
    return workers


def check_seed(seed: int, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ConfigError(f"{name} {seed!r} is out of range: use an integer in [0, 2**63)")
    return seed


def check_ignored(obj: Any, rules: dict[str, tuple[typing.Callable[[Any], bool], str]], prefix: str = "") -> None:
    """A :class:`ConfigError` for the first field of dataclass ``obj`` set to other than
    its default where ``rules[field][0](obj)`` says it does not apply: a setting that
    would be ignored is refused, not dropped in silence.  ``rules[field][1]`` says why,
    formatted with ``obj``'s fields."""
    defaults = {f.name: f.default for f in dataclasses.fields(obj)}
    for name, (applies, why) in rules.items():
        value = getattr(obj, name)
        if value != defaults[name] and not applies(obj):
            reason = why.format(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
            raise ConfigError(f"{prefix}{name} {value!r} would be ignored: {reason}; leave it out")


def field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` of dataclass ``cls``: the string literal on the line after
    each field (PEP 257 attribute docstrings), whitespace joined to one line; a field
    without one maps to ``""``."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return {f.name: docs.get(f.name, "") for f in dataclasses.fields(cls)}


# --------------------------------------------------------------------------- keyword options
_SCALARS = (bool, int, float, str)


def _scalar_hint(tp: Any) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return all(a is type(None) or _scalar_hint(a) for a in args)
    return tp in _SCALARS or origin is Literal


def _param_hints(cls: Any) -> dict[str, Any]:
    """``{parameter: type}`` of the keyword parameters of ``cls``'s constructors along its
    MRO (``**kw`` passed on to a base class), from annotations, else the default's type."""
    out: dict[str, Any] = {}
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):  # its fields' types (DecodeOptions)
        try:
            out.update({k: v for k, v in typing.get_type_hints(cls).items() if not k.startswith("_")})
        except Exception:  # an annotation that does not resolve: the defaults' types below
            pass
    targets = (
        [c.__init__ for c in getattr(cls, "__mro__", ()) if "__init__" in vars(c)] if isinstance(cls, type) else [cls]
    )
    for fn in targets:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # an annotation that does not resolve
            hints = {}
        for name, prm in sig.parameters.items():
            if name in out or prm.kind in (prm.VAR_KEYWORD, prm.VAR_POSITIONAL) or name == "self":
                continue
            tp = hints.get(name)
            if tp is None and prm.default is not prm.empty and type(prm.default) in _SCALARS:
                tp = type(prm.default)
            if tp is not None:
                out[name] = tp
    return out


def _path_hint(tp: Any) -> bool:
    """Whether ``tp`` is a folder or file path (``str | os.PathLike | None`` and the like)."""
    import os
    import pathlib

    args = typing.get_args(tp) if typing.get_origin(tp) in (Union, types.UnionType) else (tp,)
    paths = (os.PathLike, pathlib.Path, pathlib.PurePath)
    return any(a in paths for a in args) and all(a in paths or a in (str, type(None)) for a in args)


#: Options of a method class (``module:class``; its subclasses too) that are parts of one
#: client's samples: given as shares (numbers in [0, 1)), together they cannot exceed the
#: whole.  FedLSM's D_l and D_h (``n_l``, ``n_h``): at 0.6 and 0.6 the method would clip D_l to
#: the 0.4 left, not run the split asked for.  Counts (whole numbers >= 1) depend on a client's
#: size, which a config does not know: they are not summed.
SHARES_OF_ONE: dict[str, tuple[str, ...]] = {"fedpl_core.methods.fedlsm:FedLSM": ("n_l", "n_h")}


def _check_shares(target: Any, kwargs: dict[str, Any], what: str) -> None:
    for c in getattr(target, "__mro__", ()):
        names = SHARES_OF_ONE.get(f"{c.__module__}:{c.__qualname__}")
        if not names:
            continue
        given = {k: kwargs[k] for k in names if kwargs.get(k) is not None}
        try:
            shares = {k: float(v) for k, v in given.items()}
        except (TypeError, ValueError):
            return  # not numbers: the type checks name them
        if len(shares) == len(names) and all(0 <= v < 1 for v in shares.values()) and sum(shares.values()) > 1:
            parts = " + ".join(f"{k} ({v:g})" for k, v in shares.items())
            raise ConfigError(
                f"{what}: {parts} add up to more than 1: as shares of a client's samples they cannot "
                "exceed all of them; lower them"
            )


def check_kwargs_types(target: Any, kwargs: dict[str, Any], what: str, float32: bool = True) -> None:
    """Check the value of each option in ``kwargs`` against the annotation (or default)
    of the parameter of that name of ``target`` (a class along its MRO, or a function):
    numbers must be numbers (a number written as a string, as YAML reads ``1e-3``,
    passes) and finite, booleans must be booleans, a path must be text.  A target that
    checks its own options (a method's ``check_options``: its declared ranges) is asked once
    the types pass.  With ``float32`` (a method's options: they reach float32 training), a
    float option must also be one float32 holds as a step (:func:`check_float32_value`).
    Options that are shares of one whole must not exceed it (:data:`SHARES_OF_ONE`).  Only
    scalar and path parameters are checked; values are not changed.  Unknown names are left
    to the callee."""
    import os

    if not isinstance(kwargs, dict):
        raise ConfigError(f"{what} must be a mapping of option names to values, got {type(kwargs).__name__}")
    hints = _param_hints(target)
    values: dict[str, Any] = {}
    for k, v in kwargs.items():
        tp = hints.get(k)
        name = f"{what} {k}"
        if tp is not None and _path_hint(tp):
            if v is not None and not isinstance(v, (str, os.PathLike)):
                raise ConfigError(f"{name} must be a path (text), got {type(v).__name__} {v!r}")
            continue
        if tp is None or not _scalar_hint(tp):
            continue
        values[k] = _convert(v, tp, name)
        if tp is bool and not isinstance(v, bool) and not (isinstance(v, int) and v in (0, 1)):
            raise ConfigError(f"{name} must be true or false, got {v!r}")
    own_check = getattr(target, "check_options", None)
    if callable(own_check):  # a method's declared ranges (option_ranges), in its own words
        own_check(kwargs)
    for k, value in values.items():
        name = f"{what} {k}"
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number, got {kwargs[k]!r}")
        if float32:
            check_float32_value(value, name)
    _check_shares(target, kwargs, what)


#: Checks :func:`validate` runs after the fields of a class (``module:qualname``; its
#: subclasses too): what a config passes on to code in the layers above this one, so the
#: check is theirs (:func:`after_fields`; the experiment's: :mod:`fedpl_core.runs.options`).
#: They live outside the config's class, so that a new check changes no run's code
#: fingerprint (:mod:`fedpl_core.runs.provenance`: validation never changes a run's numbers).
AFTER_FIELDS: dict[str, typing.Callable[[Any], None]] = {}


def after_fields(key: str, check: typing.Callable[[Any], None]) -> None:
    """Have :func:`validate` run ``check(obj)`` after the fields of the class ``key``
    (``module:qualname``) and of its subclasses."""
    AFTER_FIELDS[key] = check
