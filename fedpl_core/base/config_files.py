"""Config files read safely: YAML or JSON, bounded in size, nodes and depth once every alias
is expanded (no "billion laughs"), a key given twice refused, one line naming the problem."""

from __future__ import annotations

import json
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
    root: Any, children: typing.Callable[[Any], typing.Iterable[Any]], what: str = "the config"
) -> int:
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
                raise ConfigError(
                    f"{what} is nested more than {CONFIG_MAX_DEPTH} levels deep; a config nests at most "
                    f"{CONFIG_MAX_DEPTH}"
                )
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
        if size[key] > CONFIG_MAX_NODES:
            raise ConfigError(
                f"{what} expands to more than {CONFIG_MAX_NODES:,} values (a YAML alias counts as every "
                f"value it repeats); a config holds at most {CONFIG_MAX_NODES:,}"
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
        raise ConfigError(
            f"config file {p} is over {CONFIG_MAX_BYTES // 2**20} MiB: a config is a few lines of "
            "settings; is it the right file?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {p} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None
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
