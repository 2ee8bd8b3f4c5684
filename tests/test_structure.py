"""The package's import graph has no circle (issue 26): every import counts, at module
level or inside a function, under ``TYPE_CHECKING`` too.  A module that imports another
module of the package depends on it; importing a package depends on its ``__init__``."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fedpl_core"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports (``from .x import y`` names module
    ``x.y`` when that is a module, else ``x``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # a name inside a module: the module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imports(p, modules) for p in files}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_circles_finds_a_planted_circle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(g) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_imports_resolve_relative_and_function_level_imports(tmp_path, monkeypatch):
    g = graph()
    assert "fedpl_core.methods.base" in g["fedpl_core.methods.fedavg"]  # from .base import Method


def test_the_package_has_no_import_circle():
    found = circles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


#: The layers of docs/architecture.md, bottom up; a module belongs to the layer of its
#: longest matching prefix and may import only from its own layer or those below it.
LAYERS = [
    ("base", ["fedpl_core.base"]),
    ("data", ["fedpl_core.data", "fedpl_core.partitions"]),
    ("arithmetic", ["fedpl_core.nn"]),
    ("fl", ["fedpl_core.fl"]),
    ("methods", ["fedpl_core.methods"]),
    ("runs", ["fedpl_core.runs"]),
    ("report", ["fedpl_core.report"]),
    ("studies", ["fedpl_core.studies"]),
    ("apps", ["fedpl_core.apps", "fedpl_core.__main__", "fedpl_core"]),
]

def layer(module: str) -> int | None:
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def upward_imports(g: dict[str, set[str]]) -> list[str]:
    return [f"{m} ({LAYERS[layer(m)][0]}) -> {d} ({LAYERS[layer(d)][0]})"
            for m, deps in sorted(g.items()) for d in sorted(deps) if layer(d) > layer(m)]


def test_every_module_has_a_layer_and_imports_only_downward():
    g = graph()
    assert not [m for m in g if layer(m) is None], "a module of no layer: add it to LAYERS and the table of docs/architecture.md"
    up = upward_imports(g)
    assert not up, "imports that go up a layer: " + "; ".join(up)
    # the check can fail: a planted import from the data layer up into the runner
    assert upward_imports({"fedpl_core.data.sources": {"fedpl_core.runs.runner"}})
