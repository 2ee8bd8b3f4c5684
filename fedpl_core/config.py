"""Validated configuration dataclasses.

:func:`validate` checks (and, where it is lossless, converts) every field of a dataclass
against its annotation before any work is done: ``Literal`` values, ``int`` / ``float``
(YAML reads ``1e-3`` as the string ``'1e-3'``: converted), strict booleans (``"ture"`` is
refused, not read as False), optional values, and the ranges a class declares in
``_RANGES``.  A bad value raises :class:`ConfigError` with one line naming the field.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

ConfigError = type("ConfigError", (ValueError,), {"__doc__": "A configuration value is invalid."})

#: The notebooks' profiles (:mod:`fedpl_core.profiles` holds what each one sets).
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


#: Record keys that are losses (lower is better); every other selection key is maximised.
LOSS_KEYS = ("val_loss", "train_loss")
#: Metric names a selection key may end with (``"external/auroc_mean"`` is fine too).
SELECTION_METRICS = LOSS_KEYS + ("auroc_mean", "map", "bacc", "f1", "precision", "recall", "accuracy")


@dataclass
class EngineConfig:
    """Training schedule and numerics shared by every method.  Each field's docstring
    below is its ``--help`` text (:func:`field_docs`)."""

    rounds: int = 20
    """Communication rounds."""
    local_epochs: float = 1.0
    """Passes over its data a client makes each round (fractions allowed)."""
    local_iters: int | None = None
    """A fixed number of local steps each round (FedLSM); overrides local_epochs."""
    batch_size: int = 64
    """Training batch size."""
    client_fraction: float = 1.0
    """Share of the clients sampled each round."""
    optimizer: Literal["adam", "adamw", "sgd"] = "adam"
    """Local optimizer."""
    lr: float = 1e-3
    """Learning rate."""
    weight_decay: float = 0.0
    """Weight decay of the optimizer."""
    momentum: float = 0.9
    """Momentum of sgd (the other optimizers ignore it)."""
    optimizer_state: Literal["reset", "keep"] = "reset"
    """reset: a fresh optimizer each round (as most released codes do); keep: each client
    keeps its optimizer state across rounds."""
    normalize: Literal["fixed", "imagenet", "instance"] = "fixed"
    """Input normalisation: fixed ((x/255 - 0.5) / 0.25), imagenet (ImageNet mean and std)
    or instance (per-image (x - mean) / std, FedPSL)."""
    augment: Literal["none", "flip", "shift", "flip_shift", "flip_affine"] = "none"
    """Training augmentation: random horizontal flip, random translation by up to 1/8 of
    the size (reflect padding), both, or flip_affine (FedMLP's released transform: rotation
    +-10 degrees, translation +-2 %, flip)."""
    eval_every: int = 1
    """Evaluate every that many rounds (and after the last)."""
    eval_batch_size: int = 512
    """Batch size of evaluation."""
    selection: str | None = "val_loss"
    """History key that picks the best round: val_loss reads the clients' validation splits
    only, never the test set; auroc_mean picks on the test set (optimistic); none: no
    selection."""
    selection_mode: Literal["auto", "max", "min"] = "auto"
    """Whether selection maximises or minimises; auto minimises losses and maximises
    everything else."""
    patience: int | None = None
    """Stop early after that many evaluations without improvement of selection (none: never)."""
    device: str = "auto"
    """auto, cpu, cuda, cuda:N or mps."""
    amp: bool = False
    """Mixed precision (bfloat16 autocast) on CUDA."""
    seed: int = 0
    """Seed of the engine (an experiment sets it to its own seed)."""
    client_val_fraction: float = 0.0
    """Share of every client's samples held out (seeded) as its validation split; each
    evaluation then records val_loss, the mean over clients of their validation loss."""
    checkpoint_every: int = 0
    """With a results folder, save a checkpoint every that many rounds, from which an
    interrupted run resumes (0: never)."""
    channels_last: bool = False
    """Run convolutions in the channels-last memory format (faster on CPU and on GPU tensor
    cores; numbers agree to float rounding)."""
    deterministic: bool = False
    """On CUDA, deterministic kernels (``torch.use_deterministic_algorithms``, cuDNN's
    deterministic convolutions): the same numbers bit for bit on every run.  Off, cuDNN
    times its convolution algorithms for the run's shapes and keeps the fastest
    (``cudnn.benchmark``), which can move the numbers by float rounding from run to run.
    No effect on a CPU, whose numbers are the same on every run either way."""
    batched_clients: int = 0
    """Train up to this many of a round's sampled clients at a time as one vmapped step
    (``fedpl_core.fl.batched``, for GPUs: methods whose client round is FedAvg's, listed by
    ``fedpl_core.methods.batchable_methods()``, on a model without BatchNorm, clients with
    equal steps; any other round falls back to the loop, saying why once; halved while it
    runs out of GPU memory); 0: one client after the other (the default; on a CPU the loop
    is faster)."""
    progress: bool = True
    """Show progress bars."""

    _RANGES: typing.ClassVar[dict[str, str]] = {
        "batched_clients": ">=0",
        "rounds": ">=1", "local_epochs": ">0", "local_iters": ">=1", "batch_size": ">=1",
        "client_fraction": "(0,1]", "lr": ">0", "weight_decay": ">=0", "momentum": "[0,1)", "eval_every": ">=1",
        "eval_batch_size": ">=1", "patience": ">=1", "client_val_fraction": "[0,1)", "checkpoint_every": ">=0"}
    #: Settings that other settings make meaningless: ``field -> (applies(config), why not)``;
    #: a value other than the default where it does not apply is refused (:func:`check_ignored`).
    _IGNORED: typing.ClassVar[dict[str, tuple[typing.Callable[[Any], bool], str]]] = {
        "momentum": (lambda c: c.optimizer == "sgd", "it is sgd's momentum, and optimizer is {optimizer}"),
        "local_epochs": (lambda c: c.local_iters is None, "local_iters ({local_iters}) sets the local steps"),
        "patience": (lambda c: c.selection is not None, "early stopping follows the selection key, and selection "
                                                         "is none"),
        "selection_mode": (lambda c: c.selection is not None, "there is no selection key (selection is none)"),
    }

    def __post_init__(self) -> None:
        validate(self)
        check_seed(self.seed)
        check_float32(self, ("lr", "weight_decay", "local_epochs"))
        check_device(self.device)
        if self.selection is not None and self.selection.rsplit("/", 1)[-1] not in SELECTION_METRICS:
            raise ConfigError(f"unknown selection key {self.selection!r}; use one of {', '.join(SELECTION_METRICS)} "
                              "(optionally '<eval set>/<metric>'), or None")
        check_ignored(self, self._IGNORED)

    @property
    def maximise(self) -> bool:
        """Whether a larger ``selection`` value is better."""
        if self.selection_mode != "auto":
            return self.selection_mode == "max"
        return (self.selection or "").rsplit("/", 1)[-1] not in LOSS_KEYS


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
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return {f.name: docs.get(f.name, "") for f in dataclasses.fields(cls)}


# --------------------------------------------------------------------------- config files
class _UniqueKeyLoader:
    """A ``yaml.SafeLoader`` subclass (made on first use) that refuses a key given twice
    in one mapping instead of keeping the last."""

    cls = None

    @classmethod
    def get(cls):
        if cls.cls is None:
            import yaml

            class Loader(yaml.SafeLoader):
                def construct_mapping(self, node, deep=False):
                    seen = {}
                    for key_node, _ in node.value:
                        key = self.construct_object(key_node, deep=deep)
                        try:
                            hash(key)
                        except TypeError:
                            continue  # SafeLoader reports unhashable keys itself
                        if key in seen:
                            raise ConfigError(f"key {key!r} is given twice (lines {seen[key]} and "
                                              f"{key_node.start_mark.line + 1}); keep one")
                        seen[key] = key_node.start_mark.line + 1
                    return super().construct_mapping(node, deep)

            cls.cls = Loader
        return cls.cls


#: What one config file may hold, so that a small file cannot make a huge config: its size
#: in bytes, its nodes (every mapping, list, key and value) counted once per place they
#: appear once every YAML alias is expanded (a "billion laughs" file of 9 lists of 9 aliases
#: is 1 KB of text and 400 million nodes), and the depth of its nesting.  A config of this
#: package holds a few hundred nodes; explicit client tables a few thousand.
CONFIG_MAX_BYTES = 1 << 20
CONFIG_MAX_NODES = 100_000
CONFIG_MAX_DEPTH = 64


def check_expanded_size(root: Any, children: typing.Callable[[Any], typing.Iterable[Any]],
                        what: str = "the config") -> int:
    """The number of nodes of the tree below ``root`` once every shared node is expanded
    (counted once per place it appears), computed without expanding anything: each
    distinct node is visited once (its expanded size memoised), so a chain of aliases
    costs its length, not its expansion.  ``children(node)`` lists a node's children (the
    same object for a repeated alias).  Raises :class:`ConfigError` when the expansion
    would exceed :data:`CONFIG_MAX_NODES` nodes or :data:`CONFIG_MAX_DEPTH` levels, or when
    a node contains itself (a YAML anchor used inside its own value), which no config
    can be written out as.  No paper equation; the limits are this package's choice."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, list | None]] = [(root, None)]
    while stack:
        node, kids = stack[-1]
        key = id(node)
        if kids is None:  # first visit: expand its children
            if key in size:
                stack.pop()
                continue
            kids = list(children(node))
            stack[-1] = (node, kids)
            on_path.add(key)
            if len(on_path) > CONFIG_MAX_DEPTH:
                raise ConfigError(f"{what} is nested more than {CONFIG_MAX_DEPTH} levels deep; a config nests at most "
                                  f"{CONFIG_MAX_DEPTH}")
            for k in kids:
                if id(k) in on_path:
                    raise ConfigError(f"{what} refers to itself (an anchor used inside its own value): it has no "
                                      "finite form")
                if id(k) not in size:
                    stack.append((k, None))
            continue
        stack.pop()
        on_path.discard(key)
        size[key] = 1 + sum(size[id(k)] for k in kids)
        if size[key] > CONFIG_MAX_NODES:
            raise ConfigError(f"{what} expands to more than {CONFIG_MAX_NODES:,} values (a YAML alias counts as every "
                              f"value it repeats); a config holds at most {CONFIG_MAX_NODES:,}")
    return size[id(root)]


def _yaml_children(node: Any) -> list:
    value = node.value
    if isinstance(value, list):  # a sequence (nodes) or a mapping ((key, value) node pairs)
        return [x for item in value for x in (item if isinstance(item, tuple) else (item,))]
    return []


def _object_children(obj: Any) -> list:
    if isinstance(obj, dict):
        return [x for kv in obj.items() for x in kv]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    return []


def check_config_size(obj: Any, what: str = "the config") -> int:
    """:func:`check_expanded_size` of a parsed config (mappings, lists, values): the
    same limits for a config built in Python, whose lists and mappings may be shared."""
    return check_expanded_size(obj, _object_children, what)


def _json_pairs(pairs: list) -> dict:
    d: dict = {}
    for k, v in pairs:
        if k in d:
            raise ConfigError(f"key {k!r} is given twice; keep one")
        d[k] = v
    return d


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return " ".join(text.splitlines()[:1]) if text else type(e).__name__


def parse_yaml(text: str) -> Any:
    """YAML with a ``SafeLoader`` (no ``!!python`` tags) that refuses a key given twice;
    the document's node graph is measured (:func:`check_expanded_size`) before any
    value is built, so a file of nested aliases is refused before it is expanded."""
    loader = _UniqueKeyLoader.get()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expanded_size(node, _yaml_children)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_json(text: str) -> Any:
    """JSON that refuses a key given twice, within :data:`CONFIG_MAX_DEPTH` and
    :data:`CONFIG_MAX_NODES` (JSON has no aliases: its nodes are bounded by its size)."""
    d = json.loads(text, object_pairs_hook=_json_pairs)
    check_config_size(d)
    return d


def read_config_file(path: str | Path) -> Any:
    """The parsed content of a config file: ``.json`` as JSON, ``.yaml`` / ``.yml`` (any
    case) as YAML, any other name by its content (JSON, else YAML).  A key given twice in
    one mapping, a file that is not UTF-8 text, or one that does not parse is a
    :class:`ConfigError` naming the file (and, for another suffix, both parsers' reasons)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file not found: {p}" + (" (it is a folder)" if p.is_dir() else ""))
    with open(p, "rb") as f:
        raw = f.read(CONFIG_MAX_BYTES + 1)
    if len(raw) > CONFIG_MAX_BYTES:
        raise ConfigError(f"config file {p} is over {CONFIG_MAX_BYTES // 2**20} MiB: a config is a few lines of "
                          "settings; is it the right file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {p} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                          "save it as UTF-8") from None
    suffix = p.suffix.lower()
    parsers = {".json": [("JSON", parse_json)], ".yaml": [("YAML", parse_yaml)], ".yml": [("YAML", parse_yaml)]}
    tries = parsers.get(suffix, [("JSON", parse_json), ("YAML", parse_yaml)])
    reasons = []
    for what, fn in tries:
        try:
            return fn(text)
        except ConfigError as e:
            raise ConfigError(f"config file {p}: {e}") from None
        except Exception as e:  # yaml.YAMLError, json.JSONDecodeError
            reasons.append((what, _first_line(e)))
    if len(reasons) == 1:
        raise ConfigError(f"config file {p} is not valid {reasons[0][0]}: {reasons[0][1]}")
    raise ConfigError(f"config file {p} ({suffix or 'no suffix'}: read by content) is neither valid JSON "
                      f"({reasons[0][1]}) nor valid YAML ({reasons[1][1]})")


def check_engine_conflicts(d: dict[str, Any], engine_fields: typing.Collection[str]) -> None:
    """An engine field (or the seed) given both at the top level of a config mapping and
    under its ``engine`` is refused, not resolved by precedence."""
    engine = d.get("engine")
    if not isinstance(engine, dict):
        return
    for k, v in d.items():
        if (k in engine_fields or k == "seed") and k in engine:
            raise ConfigError(f"{k} is given twice, at the top level ({v!r}) and under engine ({engine[k]!r}); "
                              "keep one")


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
    targets = [c.__init__ for c in getattr(cls, "__mro__", ()) if "__init__" in vars(c)] if isinstance(cls, type) \
        else [cls]
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
    if not isinstance(value, str) or not value.strip()[:1] in ("[", "{", "("):
        return value
    text = value.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ConfigError(f"{name} {value!r} is not a list or mapping written in JSON or Python (quote names: "
                          "[\"a\", \"b\"])") from None
