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
import json
import math
import textwrap
import types
import typing
from typing import Any, Literal, Union

ConfigError = type("ConfigError", (ValueError,), {"__doc__": "A configuration value is invalid."})

#: The notebooks' profiles (:mod:`fedpl_core.studies.parameters` holds what each one sets).
PROFILES = ("smoke", "cpu", "gpu", "full")
Profile = Literal["smoke", "cpu", "gpu", "full"]


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
        try:
            f = float(value)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        return int(f) if not isinstance(value, int) else value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        try:
            return float(value)
        except ValueError:
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
    """Check and convert every field of dataclass ``obj`` in place (see module docstring)."""
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


#: The largest finite float32: training runs in float32, so a larger lr overflows in torch.
FLOAT32_MAX = 3.4028234663852886e38


def check_float32(obj: Any, names: typing.Iterable[str], prefix: str = "") -> None:
    """A float field above :data:`FLOAT32_MAX` in magnitude cannot reach torch."""
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, float) and math.isfinite(v) and abs(v) > FLOAT32_MAX:
            raise ConfigError(f"{prefix}{n} must be at most {FLOAT32_MAX:.3g} (training runs in float32), got {v!r}")


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


def check_kwargs_types(target: Any, kwargs: dict[str, Any], what: str) -> None:
    """Check the value of each option in ``kwargs`` against the annotation (or default)
    of the parameter of that name of ``target`` (a class along its MRO, or a function):
    numbers must be numbers (a number written as a string, as YAML reads ``1e-3``,
    passes), booleans must be booleans.  Only scalar parameters are checked; values are
    not changed.  Unknown names are left to the callee."""
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{what} must be a mapping of option names to values, got {type(kwargs).__name__}")
    hints = _param_hints(target)
    for k, v in kwargs.items():
        tp = hints.get(k)
        if tp is None or not _scalar_hint(tp):
            continue
        name = f"{what} {k}"
        _convert(v, tp, name)
        if tp is bool and not isinstance(v, bool) and not (isinstance(v, int) and v in (0, 1)):
            raise ConfigError(f"{name} must be true or false, got {v!r}")


# --------------------------------------------------------------------------- list / mapping parameters
def parse_literal(value: Any, name: str) -> Any:
    """A list or mapping given as text (papermill's ``-p seeds "[0, 1]"`` passes the
    string): parsed as JSON, else as a Python literal; anything else is returned as is."""
    if not isinstance(value, str) or value.strip()[:1] not in ("[", "{", "("):
        return value
    text = value.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ConfigError(
            f'{name} {value!r} is not a list or mapping written in JSON or Python (quote names: ["a", "b"])'
        ) from None
