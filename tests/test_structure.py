"""The package's import graph has no circle and no upward arrow: every import counts, at
module level or inside a function, under ``TYPE_CHECKING`` too, and so does a module loaded
by name (``importlib.import_module`` / ``__import__`` with a literal name, or a formatted one:
``f"fedpl_core.data.loaders.{mod}"`` stands for every module its pattern matches, a
formatted value reading a module-level dict literal for each of the dict's values).  A module
that imports another module of the package depends on it; importing a package depends on
its ``__init__``.  Every layer is a folder: the package's top level holds only
``__init__.py`` and ``__main__.py``."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "fedpl_core"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _literal_dicts(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level ``NAME = {...}`` dict literals: ``{NAME: [its string values]}``."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            values = [v.value for v in node.value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            for t in targets:
                if isinstance(t, ast.Name) and len(values) == len(node.value.values):
                    out[t.id] = values
    return out


def _patterns(arg: ast.AST, dicts: dict[str, list[str]]) -> list[str]:
    """The module names (regular expressions) a name argument of ``import_module`` can take."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [re.escape(arg.value)]
    if isinstance(arg, ast.IfExp):
        return _patterns(arg.body, dicts) + _patterns(arg.orelse, dicts)
    if isinstance(arg, ast.JoinedStr):
        out = [""]
        for part in arg.values:
            if isinstance(part, ast.Constant):
                out = [o + re.escape(str(part.value)) for o in out]
                continue
            v = part.value
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id in dicts:
                out = [o + re.escape(x) for o in out for x in dicts[v.value.id]]
            else:
                out = [o + r"[A-Za-z_]\w*" for o in out]  # one name
        return out
    return []


def dynamic_imports(tree: ast.Module, package: str, modules: set[str]) -> set[str]:
    """The modules ``importlib.import_module`` / ``__import__`` calls name (module docstring)."""
    dicts = _literal_dicts(tree)
    out = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        f = node.func
        fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if fname not in ("import_module", "__import__"):
            continue
        relative = len(node.args) > 1 or any(k.arg == "package" for k in node.keywords)
        for pat in _patterns(node.args[0], dicts):
            if relative and pat.startswith(r"\."):
                pat = re.escape(package) + pat
            out |= {m for m in modules if re.fullmatch(pat, m)}
    return out


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports (``from .x import y`` names module
    ``x.y`` when that is a module, else ``x``), by statement or by name."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # a name inside a module: the module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out | (dynamic_imports(tree, package, modules) - {name})


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


def test_imports_follow_a_module_loaded_by_name():
    modules = {"p", "p.a", "p.b", "p.c.d", "p.lazy"}
    tree = ast.parse(
        "import importlib\nLAZY = {'x': 'a', 'y': 'c.d'}\n"
        "def f(k, m):\n    importlib.import_module(f'.{LAZY[k]}', __name__)\n"
        "    importlib.import_module(f'p.{m}')\n    __import__('p.lazy')\n"
    )
    assert dynamic_imports(tree, "p", modules) == {"p.a", "p.c.d", "p.b", "p.lazy"}
    assert dynamic_imports(ast.parse("import importlib\nimportlib.import_module(name)\n"), "p", modules) == set()
    g = graph()  # the package's own: the lazy names of the root, the catalogue's loaders
    assert {"fedpl_core.runs.runner", "fedpl_core.fl.engine_config"} <= g["fedpl_core"]


def test_the_top_level_holds_only_the_package_files():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


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
    return [
        f"{m} ({LAYERS[layer(m)][0]}) -> {d} ({LAYERS[layer(d)][0]})"
        for m, deps in sorted(g.items())
        for d in sorted(deps)
        if layer(d) > layer(m)
    ]


def test_every_module_has_a_layer_and_imports_only_downward():
    g = graph()
    assert not [m for m in g if layer(m) is None], (
        "a module of no layer: add it to LAYERS and the table of docs/architecture.md"
    )
    up = upward_imports(g)
    assert not up, "imports that go up a layer: " + "; ".join(up)
    # the check can fail: a planted import from the data layer up into the runner
    assert upward_imports({"fedpl_core.data.sources": {"fedpl_core.runs.runner"}})


def test_a_circle_through_a_module_loaded_by_name_is_found(tmp_path):
    """The circle the data layer had: the named sources loading two studies by name, the
    studies importing the sources (``importlib`` edges count)."""
    modules = {"p.sources", "p.study"}
    g = {
        "p.sources": dynamic_imports(
            ast.parse("import importlib\nfor m in ('study',):\n    importlib.import_module(f'p.{m}')\n"), "p", modules
        ),
        "p.study": {"p.sources"},
    }
    assert circles(g) == [["p.sources", "p.study"]]


def test_the_architecture_page_names_every_room_and_module():
    """docs/architecture.md shows the layers as folders and names each module in its room's row
    (a method family's module and a publisher's loader are named as a kind: "one module a ...")."""
    from fedpl_core.methods import METHODS, available_methods

    available_methods()  # every method module imported
    page = (ROOT / "docs" / "architecture.md").read_text()
    families = {c.__module__ for c in METHODS.values()}
    missing = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE)
        if len(rel.parts) == 1 or p.stem == "__init__":
            continue
        folder = "/".join(rel.parts[:-1]) + "/"
        if rel.parts[0] == "studies" and len(rel.parts) == 3:  # a paper's package, named in the studies row
            folder = rel.parts[1] + "/"
        if f"`{folder}`" not in page:
            missing.append(folder)
        elif (
            module_name(p) not in families
            and rel.parts[:2] != ("data", "loaders")
            and not (rel.parts[0] == "studies" and len(rel.parts) == 3)
            and f"`{p.name}`" not in page
        ):
            missing.append(str(rel))
    assert not missing, f"docs/architecture.md does not name: {sorted(set(missing))}"
