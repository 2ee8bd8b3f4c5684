"""The package's code as units a run can depend on, and what each unit names.

A **unit** is one top-level statement group of a module: a function, a class (with all its
methods), or the value bound to a module-level name; the module's other top-level statements
(those that run on import: a registration call, a loop) form one more unit, ``<body>``, that
comes with any unit of its module.  Each unit has

* a **digest**: SHA-256 of its syntax tree with every docstring and bare string statement
  removed (a field's docstring too), type annotations reduced to what they decide at run time
  (with postponed evaluation a signature's never run; a variable's says whether it is a class
  variable), import statements inside it removed (what they bind is followed as a reference),
  and no positions: comments, blank lines, line breaks, quotes and the sorting of imports do
  not count, a changed name, value, operator or call does;
* its **references**: the names its code reads that resolve, through the module's own
  definitions and its imports (at any depth, re-exports followed), to a unit of another
  followed module (``S.make_cxr`` with ``from ..data import synthetic as S`` names the unit
  ``fedpl_core.data.synthetic:make_cxr``).

:meth:`CodeIndex.closure` follows references from a set of root units.  What it cannot see,
by construction: an attribute call on an object (``self.head_block(...)``), a name built at
run time (``importlib``, ``getattr``) and a registry's entries (a dict filled by a decorator
holds nothing in the source).  Those are the *roots* the caller passes: the objects a run
actually holds (:mod:`fedpl_core.runs.provenance`).  ``tests/test_fingerprint.py`` traces
the code a tiny run of every method executes and checks that the closure holds all of it.

Only the modules of the packages named in ``packages`` are followed; third-party code is
recorded by its versions, not read here.  The index reads source files, never imports them.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

BODY = "<body>"
ALL = "*"


@dataclass(frozen=True)
class Unit:
    """One unit: ``module:name``, its digest (16 hex digits) and the keys it references."""

    module: str
    name: str
    digest: str
    refs: frozenset[str]

    @property
    def key(self) -> str:
        return f"{self.module}:{self.name}"


def _is_docstring(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)


def _annotation_kind(a: ast.expr) -> str:
    """What a variable annotation decides at run time: a class variable or a dataclass field
    (``ClassVar`` / ``InitVar`` or neither); its type is a hint (postponed evaluation)."""
    text = a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else ast.unparse(a)
    return next((k for k in ("ClassVar", "InitVar") if k in text), "")


def _strip(node: ast.AST) -> ast.AST:
    """``node`` without what does not change what its code computes (in place): docstrings
    and bare string statements, signature annotations, the type of a variable annotation
    (kept: whether it declares a class variable), and import statements inside it (what an
    import binds is followed as a reference; their order and grouping are style)."""
    for n in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(n, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [s for s in body if not (_is_docstring(s) or isinstance(s, (ast.Import, ast.ImportFrom)))]
                setattr(n, field, kept or [ast.Pass()])
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n.returns = None
            a = n.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
                arg.annotation = None
        elif isinstance(n, ast.AnnAssign):
            n.annotation = ast.Constant(_annotation_kind(n.annotation))
    return node


def canonical(node: object) -> str:
    """A text of ``node``'s syntax tree that does not depend on the Python version's optional
    fields (an empty ``type_params`` of 3.12, a string's ``kind``) or on positions."""
    if isinstance(node, ast.AST):
        parts = []
        for f in node._fields:
            if f in ("ctx", "kind", "type_comment"):
                continue
            v = getattr(node, f, None)
            if v is None or (isinstance(v, list) and not v):
                continue
            parts.append(f"{f}={canonical(v)}")
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(canonical(x) for x in node) + "]"
    return repr(node)


def _targets(node: ast.AST) -> list[str]:
    out = []
    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                out.append(n.id)
    return out


class _Module:
    """One parsed module: its units' nodes, its import namespace, its star imports."""

    def __init__(self, name: str, tree: ast.Module, is_package: bool):
        self.name = name
        self.nodes: dict[str, list[ast.AST]] = {}
        self.namespace: dict[str, tuple[str, ...]] = {}
        self.stars: list[str] = []
        package = name if is_package else name.rpartition(".")[0]
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                for a in n.names:
                    if a.asname:
                        self.namespace[a.asname] = ("module", a.name)
                    else:
                        top = a.name.split(".")[0]
                        self.namespace[top] = ("module", top)
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (n.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for a in n.names:
                    if a.name == "*":
                        self.stars.append(base)
                    else:
                        self.namespace[a.asname or a.name] = ("from", base, a.name)
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.nodes.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and _targets(stmt):
                for t in _targets(stmt):
                    self.nodes.setdefault(t, []).append(stmt)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            elif _is_docstring(stmt):
                continue
            elif isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.dump(stmt.test):
                continue  # imports for the type checker
            else:
                self.nodes.setdefault(BODY, []).append(stmt)


class CodeIndex:
    """The units of the modules under ``roots`` (``{package name: its folder}``), read from
    their source files on first use.  ``packages``: the top-level packages whose references
    are followed (default: those of ``roots``)."""

    def __init__(
        self, roots: Mapping[str, str | Path], packages: Iterable[str] | None = None, exclude: Iterable[str] = ()
    ):
        self.roots = {k: Path(v) for k, v in roots.items()}
        self.packages = tuple(packages or self.roots)
        self.exclude = tuple(exclude)
        self._modules: dict[str, _Module | None] = {}
        self._units: dict[str, Unit | None] = {}
        self.extra_files: dict[str, Path] = {}

    # ------------------------------------------------------------ modules
    def followed(self, module: str) -> bool:
        """Whether references into ``module`` are followed (a package of ours, not excluded)."""
        if module in self.extra_files:
            return True
        if module.split(".")[0] not in self.packages:
            return False
        return not any(module == e or module.startswith(e + ".") for e in self.exclude)

    def source(self, module: str) -> Path | None:
        """The source file of ``module``, or None when it is not a module of ours."""
        if module in self.extra_files:
            return self.extra_files[module]
        top, _, rest = module.partition(".")
        root = self.roots.get(top)
        if root is None:
            return None
        base = root.joinpath(*rest.split(".")) if rest else root
        for p in (base.with_suffix(".py"), base / "__init__.py"):
            if p.is_file():
                return p
        return None

    def is_module(self, name: str) -> bool:
        return self.source(name) is not None

    def module(self, name: str) -> _Module | None:
        if name not in self._modules:
            path = self.source(name)
            self._modules[name] = (
                None
                if path is None
                else _Module(
                    name, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), path.name == "__init__.py"
                )
            )
        return self._modules[name]

    # ------------------------------------------------------------ units
    def unit(self, key: str) -> Unit | None:
        """The unit ``module:name`` (None when there is none)."""
        if key not in self._units:
            module, _, name = key.partition(":")
            mod = self.module(module)
            nodes = None if mod is None else mod.nodes.get(name)
            if not nodes:
                self._units[key] = None
            else:
                stripped = [_strip(copy.deepcopy(n)) for n in nodes]  # _strip edits in place
                digest = hashlib.sha256(canonical(stripped).encode()).hexdigest()[:16]
                refs = frozenset(r for n in stripped for r in self._refs(mod, n))
                self._units[key] = Unit(module, name, digest, refs - {key})
        return self._units[key]

    def unit_at(self, module: str, line: int) -> str | None:
        """The key of the unit of ``module`` whose source holds line ``line`` (a decorator's
        line counts as its definition's), or None for an import, a docstring or no unit."""
        mod = self.module(module)
        if mod is None:
            return None
        for name, nodes in mod.nodes.items():
            for n in nodes:
                first = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
                if first <= line <= n.end_lineno:
                    return f"{module}:{name}"
        return None

    def units_of(self, module: str) -> list[str]:
        mod = self.module(module)
        return [] if mod is None else [f"{module}:{n}" for n in mod.nodes]

    def _refs(self, mod: _Module, node: ast.AST) -> set[str]:
        out: set[str] = set()
        index = self

        class Names(ast.NodeVisitor):
            def visit_Attribute(self, n: ast.Attribute) -> None:
                chain, v = [], n
                while isinstance(v, ast.Attribute):
                    chain.append(v.attr)
                    v = v.value
                if isinstance(v, ast.Name):  # a.b.c: the unit it names, not all of module a
                    out.update(index._resolve_local(mod, v.id, chain[::-1]))
                else:
                    self.visit(v)

            def visit_Name(self, n: ast.Name) -> None:
                out.update(index._resolve_local(mod, n.id, []))

        Names().visit(node)
        return out

    def _resolve_local(self, mod: _Module, name: str, attrs: list[str]) -> set[str]:
        if name in mod.nodes:
            return {f"{mod.name}:{name}"}
        entry = mod.namespace.get(name)
        if entry is None:
            for star in mod.stars:
                if self.followed(star):
                    got = self._resolve_name(star, name, attrs, set())
                    if got:
                        return got
            return set()
        if entry[0] == "module":
            return self._resolve_attrs(entry[1], attrs, set())
        return self._resolve_name(entry[1], entry[2], attrs, set())

    def _resolve_attrs(self, module: str, attrs: list[str], seen: set) -> set[str]:
        """``module.a.b...``: the deepest module the chain names, then a name in it."""
        if not attrs:
            return {f"{module}:{ALL}"} if self.followed(module) else set()
        if self.is_module(f"{module}.{attrs[0]}"):
            return self._resolve_attrs(f"{module}.{attrs[0]}", attrs[1:], seen)
        return self._resolve_name(module, attrs[0], attrs[1:], seen)

    def _resolve_name(self, module: str, name: str, attrs: list[str], seen: set) -> set[str]:
        """Name ``name`` of ``module`` (a submodule, a unit, or a re-export followed)."""
        if (module, name) in seen or not self.followed(module.split(":")[0]):
            return set()
        seen.add((module, name))
        if self.is_module(f"{module}.{name}"):
            return self._resolve_attrs(f"{module}.{name}", attrs, seen)
        mod = self.module(module)
        if mod is None:
            return set()
        if name in mod.nodes:
            return {f"{module}:{name}"}
        entry = mod.namespace.get(name)
        if entry is not None:
            if entry[0] == "module":
                return self._resolve_attrs(entry[1], attrs, seen)
            return self._resolve_name(entry[1], entry[2], attrs, seen)
        for star in mod.stars:
            got = self._resolve_name(star, name, attrs, seen)
            if got:
                return got
        return {f"{module}:{BODY}"} if BODY in mod.nodes else set()  # made at run time: the module's own code

    # ------------------------------------------------------------ closure
    def closure(self, roots: Iterable[str]) -> dict[str, str]:
        """``{key: digest}`` of the units ``roots`` reach (``module:*`` stands for every unit
        of the module; a module's ``<body>`` comes with any of its units)."""
        todo, out = list(roots), {}
        seen: set[str] = set()
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            module, _, name = key.partition(":")
            if not self.followed(module):
                continue
            if name == ALL:
                todo += self.units_of(module)
                continue
            u = self.unit(key)
            if u is None:
                continue
            out[key] = u.digest
            todo += sorted(u.refs)
            todo.append(f"{module}:{BODY}")
        return out

    def path(self, roots: Iterable[str], target: str) -> list[str] | None:
        """A chain of references from one of ``roots`` to ``target`` (why a unit is in a
        closure), or None when the closure does not hold it."""
        parent: dict[str, str | None] = {r: None for r in roots}
        todo = list(parent)
        while todo:
            key = todo.pop(0)
            if key == target:
                chain = [key]
                while parent[chain[-1]] is not None:
                    chain.append(parent[chain[-1]])
                return chain[::-1]
            module, _, name = key.partition(":")
            if not self.followed(module):
                continue
            nxt = (
                self.units_of(module)
                if name == ALL
                else ([] if self.unit(key) is None else sorted(self.unit(key).refs) + [f"{module}:{BODY}"])
            )
            for k in nxt:
                if k not in parent:
                    parent[k] = key
                    todo.append(k)
        return None


def module_digests(closure: Mapping[str, str]) -> dict[str, str]:
    """``{module: digest}`` of a closure: one digest a module over its units in the closure
    (their names and digests), the compact form a result records."""
    by_module: dict[str, list[str]] = {}
    for key, digest in sorted(closure.items()):
        module, _, name = key.partition(":")
        by_module.setdefault(module, []).append(f"{name}={digest}")
    return {m: hashlib.sha256("\n".join(v).encode()).hexdigest()[:16] for m, v in by_module.items()}


__all__ = ["Unit", "CodeIndex", "canonical", "module_digests", "BODY", "ALL"]
