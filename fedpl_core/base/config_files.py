"""Structured input read safely: every YAML or JSON value a user or a file hands the package.

One reader for all of them: a config file (:func:`read_config_file`), a ``--*-kwargs`` flag or a
papermill ``-p`` value (:func:`parse_value`), a record or cache file the package wrote itself
(:func:`read_structured_file`).  Each is bounded in size, in nodes and depth once every YAML alias
is expanded (no "billion laughs"), refuses a key given twice, never follows a link or reads a
device, and answers in one line (:class:`~fedpl_core.base.validation.ConfigError`) that names the
option or file.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import typing
from pathlib import Path
from typing import Any

from .validation import ConfigError


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
                            raise ConfigError(
                                f"key {key!r} is given twice (lines {seen[key]} and "
                                f"{key_node.start_mark.line + 1}); keep one"
                            )
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


def check_expanded_size(
    root: Any,
    children: typing.Callable[[Any], typing.Iterable[Any]],
    what: str = "the config",
    max_nodes: int | None = None,
    max_depth: int | None = None,
) -> int:
    """The number of nodes of the tree below ``root`` once every shared node is expanded
    (counted once per place it appears), computed without expanding anything: each
    distinct node is visited once (its expanded size memoised), so a chain of aliases
    costs its length, not its expansion.  ``children(node)`` lists a node's children (the
    same object for a repeated alias).  Raises :class:`ConfigError` when the expansion
    would exceed :data:`CONFIG_MAX_NODES` nodes or :data:`CONFIG_MAX_DEPTH` levels, or when
    a node contains itself (a YAML anchor used inside its own value), which no config
    can be written out as.  No paper equation; the limits are this package's choice
    (``max_nodes`` / ``max_depth`` None: :data:`CONFIG_MAX_NODES` / :data:`CONFIG_MAX_DEPTH`)."""
    max_nodes = CONFIG_MAX_NODES if max_nodes is None else max_nodes
    max_depth = CONFIG_MAX_DEPTH if max_depth is None else max_depth
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
            if len(on_path) > max_depth:
                raise ConfigError(_too_deep(what, max_depth))
            for k in kids:
                if id(k) in on_path:
                    raise ConfigError(
                        f"{what} refers to itself (an anchor used inside its own value): it has no finite form"
                    )
                if id(k) not in size:
                    stack.append((k, None))
            continue
        stack.pop()
        on_path.discard(key)
        size[key] = 1 + sum(size[id(k)] for k in kids)
        if size[key] > max_nodes:
            raise ConfigError(
                f"{what} expands to more than {max_nodes:,} values (a YAML alias counts as every "
                f"value it repeats); at most {max_nodes:,} are read"
            )
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


def check_config_size(
    obj: Any, what: str = "the config", max_nodes: int | None = None, max_depth: int | None = None
) -> int:
    """:func:`check_expanded_size` of a parsed config (mappings, lists, values): the
    same limits for a config built in Python, whose lists and mappings may be shared."""
    return check_expanded_size(obj, _object_children, what, max_nodes, max_depth)


def _json_pairs(pairs: list) -> dict:
    d: dict = {}
    for k, v in pairs:
        if k in d:
            raise ConfigError(f"key {k!r} is given twice; keep one")
        d[k] = v
    return d


def _too_deep(what: str, depth: int | None = None) -> str:
    depth = CONFIG_MAX_DEPTH if depth is None else depth
    return f"{what} is nested more than {depth} levels deep; at most {depth} are read"


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return " ".join(text.splitlines()[:1]) if text else type(e).__name__


def parse_yaml(text: str, what: str = "the config") -> Any:
    """YAML with a ``SafeLoader`` (no ``!!python`` tags) that refuses a key given twice;
    the document's node graph is measured (:func:`check_expanded_size`) before any
    value is built, so a file of nested aliases is refused before it is expanded."""
    loader = _UniqueKeyLoader.get()(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise ConfigError(_too_deep(what)) from None
        if node is None:
            return None
        check_expanded_size(node, _yaml_children, what)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_json(
    text: str,
    what: str = "the config",
    max_nodes: int | None = None,
    max_depth: int | None = None,
    parse_constant: typing.Callable[[str], Any] | None = None,
) -> Any:
    """JSON that refuses a key given twice, within ``max_depth`` levels and ``max_nodes``
    values (default :data:`CONFIG_MAX_DEPTH`, :data:`CONFIG_MAX_NODES`: JSON has no aliases,
    so its nodes are bounded by its size); ``parse_constant`` as :func:`json.loads` takes it
    (a reader that refuses ``NaN``)."""
    try:
        d = json.loads(text, object_pairs_hook=_json_pairs, parse_constant=parse_constant)
    except RecursionError:
        raise ConfigError(_too_deep(what, max_depth)) from None
    check_config_size(d, what, max_nodes, max_depth)
    return d


#: The longest value one option (a ``--*-kwargs`` flag, a papermill ``-p`` value) may hold.
VALUE_MAX_CHARS = 10_000


def parse_value(text: str, what: str, fmt: str = "json") -> Any:
    """The value of one option written as text (``fmt`` ``"json"``: a ``--*-kwargs`` flag;
    ``"yaml"``: a papermill ``-p`` value, as papermill's ``-y`` reads it), bounded like a
    config file: at most :data:`VALUE_MAX_CHARS` characters, :data:`CONFIG_MAX_NODES` values
    once aliases are expanded, :data:`CONFIG_MAX_DEPTH` levels.  Anything wrong is one
    :class:`ConfigError` line that starts with ``what`` (the option's name)."""
    if not isinstance(text, str):
        raise ConfigError(f"{what} must be text, got {type(text).__name__}")
    if len(text) > VALUE_MAX_CHARS:
        raise ConfigError(
            f"{what}: the value is {len(text):,} characters long; an option holds at most {VALUE_MAX_CHARS:,}"
        )
    parse = {"json": parse_json, "yaml": parse_yaml}[fmt]
    try:
        value = parse(text, "the value")
    except ConfigError as e:
        raise ConfigError(f"{what}: {e}") from None
    except MemoryError:
        raise ConfigError(f"{what}: the value is too large to read") from None
    except Exception as e:  # json.JSONDecodeError, yaml.YAMLError
        msg = e.msg if isinstance(e, json.JSONDecodeError) else _first_line(e)
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ConfigError(f"{what}: not valid {fmt.upper()} ({msg}): {shown!r}") from None
    check_config_size(value, f"{what}: the value")
    return value


def read_bytes_bounded(path: str | Path, what: str, max_bytes: int, too_long: str = "is it the right file?") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them: a link is
    refused (never followed: ``O_NOFOLLOW``), as is a folder, a device (``/dev/zero``), a
    pipe or a longer file (``too_long``: the advice then), each in one line that names
    ``what`` and the file.  A missing file is ``FileNotFoundError``; the others are
    :class:`ConfigError`."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {p}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"{what} {p} is a symbolic link; give the file itself")
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{what} {p} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what} {p} is not a regular file (a device, pipe or socket); give a file")
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped after the lstat
            raise ConfigError(f"{what} {p} is not a regular file; give a file")
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        size = f"{max_bytes // 2**20} MiB" if max_bytes >= 2**20 else f"{max_bytes:,} bytes"
        raise ConfigError(f"{what} {p} is over {size}; {too_long}")
    return raw


def _decode(raw: bytes, what: str, p: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{what} {p} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None


def read_structured_file(path: str | Path, what: str, max_bytes: int = CONFIG_MAX_BYTES) -> Any:
    """The parsed JSON of a file the package wrote and reads back (a run record, a cache's
    index), read like a config file (:func:`read_bytes_bounded`, :func:`parse_json`): one
    :class:`ConfigError` line naming ``what`` and the file for anything wrong."""
    p = Path(path)
    text = _decode(read_bytes_bounded(p, what, max_bytes), what, p)
    try:
        return parse_json(text)
    except ConfigError as e:
        raise ConfigError(f"{what} {p}: {e}") from None
    except ValueError as e:  # json.JSONDecodeError
        raise ConfigError(f"{what} {p} is not valid JSON: {_first_line(e)}") from None


def read_config_file(path: str | Path) -> Any:
    """The parsed content of a config file: ``.json`` as JSON, ``.yaml`` / ``.yml`` (any
    case) as YAML, any other name by its content (JSON, else YAML).  A key given twice in
    one mapping, a file that is not UTF-8 text, or one that does not parse is a
    :class:`ConfigError` naming the file (and, for another suffix, both parsers' reasons);
    a link to a missing file, a folder or a device is named as such
    (:func:`read_bytes_bounded`)."""
    p = Path(path)
    if p.is_symlink() and p.exists():
        p = p.resolve()  # a config file may be a link the user made; it is only read
    raw = read_bytes_bounded(
        p, "config file", CONFIG_MAX_BYTES, "a config is a few lines of settings; is it the right file?"
    )
    text = _decode(raw, "config file", p)
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
    raise ConfigError(
        f"config file {p} ({suffix or 'no suffix'}: read by content) is neither valid JSON "
        f"({reasons[0][1]}) nor valid YAML ({reasons[1][1]})"
    )


def check_engine_conflicts(d: dict[str, Any], engine_fields: typing.Collection[str]) -> None:
    """An engine field (or the seed) given both at the top level of a config mapping and
    under its ``engine`` is refused, not resolved by precedence."""
    engine = d.get("engine")
    if not isinstance(engine, dict):
        return
    for k, v in d.items():
        if (k in engine_fields or k == "seed") and k in engine:
            raise ConfigError(
                f"{k} is given twice, at the top level ({v!r}) and under engine ({engine[k]!r}); keep one"
            )


def parse_literal(value: Any, name: str) -> Any:
    """A list or mapping given as text (papermill's ``-p seeds "[0, 1]"`` passes the
    string): parsed as JSON, else as a Python literal, within the bounds of every value a
    user hands the package (:func:`fedpl_core.base.config_files.parse_value`: its length,
    values and depth); anything else is returned as is."""
    if not isinstance(value, str) or value.strip()[:1] not in ("[", "{", "("):
        return value
    text = value.strip()
    if len(text) > VALUE_MAX_CHARS:
        raise ConfigError(
            f"{name}: the value is {len(text):,} characters long; a parameter holds at most {VALUE_MAX_CHARS:,}"
        )
    try:
        return parse_json(text, "the value")
    except ConfigError as e:
        raise ConfigError(f"{name}: {e}") from None
    except ValueError:
        pass
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ConfigError(
            f"{name} {text if len(text) <= 80 else text[:77] + '...'!r} is not a list or mapping written in JSON "
            'or Python (quote names: ["a", "b"])'
        ) from None
    try:
        check_config_size(parsed, name)
    except RecursionError:
        raise ConfigError(f"{name} is nested too deeply") from None
    return parsed
