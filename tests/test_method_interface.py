"""The method interface (issue 26): ``Method``'s overridable hooks are the documented list
(``fedpl_core.methods.base.HOOKS``, described once, in call order, in base.py's module
docstring); no registered method overrides anything else; the harness calls those hooks
and no other method of a method (configuration it reads from the blocks aside)."""

import inspect
import re
from pathlib import Path

import fedpl_core
from fedpl_core.methods import METHODS, Method, available_methods, base

PKG = Path(fedpl_core.__file__).parent
HARNESS = ["fl/site.py", "fl/simulation.py", "fl/evaluation.py", "fl/server.py", "fl/batched.py", "apps/flower.py"]
#: the method's configuration the harness may call (blocks, not hooks; see base.py's docstring)
CONFIG_CALLS = {"clients_block", "warmup"}  # blocks the harness calls: configuration, not hooks


def overridable(cls) -> set[str]:
    """Public methods a subclass of ``cls`` could override (no class methods, properties or data)."""
    out = set()
    for name, v in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(inspect.getattr_static(cls, name), (classmethod, property)):
            continue
        if inspect.isfunction(v):
            out.add(name)
    return out


def test_the_hooks_are_the_documented_list_in_call_order():
    assert len(base.HOOKS) <= 10 and len(set(base.HOOKS)) == len(base.HOOKS)
    assert overridable(Method) == set(base.HOOKS)
    doc = base.__doc__
    where = [doc.find(f"``{h}(") for h in base.HOOKS]
    assert all(i >= 0 for i in where), [h for h, i in zip(base.HOOKS, where) if i < 0]
    assert where == sorted(where)  # in call order
    for i, h in enumerate(base.HOOKS, 1):  # documented once: one numbered entry per hook, in that order
        assert re.findall(rf"^\s+(\d+)\. ``{h}\(", doc, flags=re.M) == [str(i)], h


def test_no_registered_method_overrides_anything_but_a_hook():
    names = available_methods()
    assert len(names) >= 41
    hooks = set(base.HOOKS)
    public = {n for n in dir(Method) if not n.startswith("_")}
    for name in names:
        cls = METHODS[name]
        for c in cls.__mro__:
            if c in (Method, object) or not isinstance(c, type):
                continue
            for attr, v in vars(c).items():
                if attr in public and attr not in hooks and callable(v) and not isinstance(v, type):
                    raise AssertionError(f"{name}: {c.__name__}.{attr} overrides Method.{attr}, not a hook")


def test_the_harness_calls_the_documented_hooks_only():
    called = set()
    for rel in HARNESS:
        src = (PKG / rel).read_text()
        name = (
            r"(?:method|m|self\.method)" if rel == "fl/site.py" else r"(?:method|self\.method)"
        )  # site.py: m = method
        for m in re.finditer(rf"(?<![\w.]){name}\.(\w+)\(", src):
            called.add(m.group(1))
    assert called - set(base.HOOKS) <= CONFIG_CALLS, called - set(base.HOOKS) - CONFIG_CALLS
    # every hook but the loss (which local_train calls) is called by the harness
    assert set(base.HOOKS) - {"loss"} <= called


# ------------------------------------------------------------ one registry, one place per fact
def test_the_method_modules_are_discovered_and_every_class_is_registered_by_its_decorator():
    """Every module of the package is imported (no list of them); a registered class carries
    ``@register`` in its own module (one mechanism: no registration loop or call)."""
    import ast

    from fedpl_core.methods import registry

    files = sorted(p.stem for p in (PKG / "methods").glob("*.py") if not p.stem.startswith("_"))
    assert [m.rsplit(".", 1)[1] for m in registry.method_modules()] == files
    import sys

    available_methods()
    assert all(m in sys.modules for m in registry.method_modules())
    decorated = set()
    for path in sorted((PKG / "methods").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(d, ast.Name) and d.id == "register" for d in node.decorator_list
            ):
                decorated.add(f"fedpl_core.methods.{path.stem}.{node.name}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "register":
                raise AssertionError(f"{path.name}:{node.lineno}: register() called, not used as @register")
    builtin = {n: c for n, c in METHODS.items() if c.__module__.startswith("fedpl_core.methods.")}
    assert {f"{c.__module__}.{c.__qualname__}" for c in builtin.values()} == decorated


def test_registering_two_classes_under_one_name_is_refused():
    import pytest

    from fedpl_core.methods import DuplicateMethodError, FedAvg, register

    class Impostor(FedAvg):
        """Another class under FedAvg's name."""

        name = "fedavg"

    with pytest.raises(DuplicateMethodError, match=r"'fedavg' is taken by fedpl_core\.methods\.fedavg\.FedAvg"):
        register(Impostor)
    assert METHODS["fedavg"] is FedAvg
    assert register(FedAvg) is FedAvg and METHODS["fedavg"] is FedAvg  # the same class again: nothing happens

    def define():
        class Again(FedAvg):
            """Defined at one place, twice (a notebook cell run again)."""

            name = "again_for_the_registry_test"

        return Again

    try:
        first, second = register(define()), define()
        assert (
            first is not second and register(second) is second and METHODS[second.name] is second
        )  # the newer replaces it
    finally:
        METHODS.pop("again_for_the_registry_test", None)
    with pytest.raises(ValueError, match="a name of its own"):
        register(type("NoName", (FedAvg,), {"__doc__": "x"}))


def test_the_facts_of_a_method_are_its_class_attributes():
    """Training cost (inherited), ablation (a class's own), personalised evaluation and
    batchability are read from the class or the instance, nowhere else."""
    from fedpl_core.methods import FedAvg, ablation_methods, batchable_methods, get_method

    assert ablation_methods() == ["fedlsm_no_awpa", "fedlsm_no_ude", "fedlsm_no_ue", "fedpsl_tadl", "fedpsl_tdma"]
    for name in available_methods():
        cls = METHODS[name]
        assert cls.train_cost >= 1.0 and isinstance(vars(cls).get("ablation", False), bool), name
    assert METHODS["moon_star"].train_cost == METHODS["moon"].train_cost > 1  # a variant costs its parent's

    class Variant(METHODS["fedpsl_tdma"]):
        """A user's variant of an ablation is not an ablation."""

        name = "variant_of_an_ablation"

    assert not Variant.ablation and Variant.train_cost == METHODS["fedpsl_tdma"].train_cost
    personal = [n for n in available_methods() if get_method(n).evaluation == "personalised"]
    assert personal == ["fedbn", "local", "pfl"]
    assert get_method("fedavg", bn_policy="local").evaluation == "personalised"
    # batchability: the one rule on the method (Method.batchable / why_not_batchable)
    assert FedAvg().batchable and FedAvg().why_not_batchable is None
    assert "client steps of its own (receive, loss)" in get_method("fedprox").why_not_batchable
    assert get_method("fedavg", bn_policy="local").why_not_batchable == "arrays that stay on the clients"
    assert get_method("pfl").why_not_batchable == "arrays that stay on the clients"
    assert get_method("fedavg", warmup_epochs=1).why_not_batchable == "the head warm-up"
    assert batchable_methods() == [n for n in available_methods() if get_method(n).batchable]


# ------------------------------------------------------------ annotated hooks
def _method_signatures() -> dict[str, tuple[list[str], str]]:
    """``{hook: (its parameters' annotations after self, its return annotation)}`` as
    ``Method`` declares them in base.py (source text)."""
    import ast

    tree = ast.parse((PKG / "methods" / "base.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Method")
    out = {}
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in base.HOOKS:
            params = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            out[fn.name] = (
                [ast.unparse(p.annotation) for p in params[1:] if p.annotation is not None],
                ast.unparse(fn.returns) if fn.returns is not None else "",
            )
    return out


def hook_annotation_problems(
    source: str, module: str = "<source>", method_classes: frozenset[str] | set[str] = frozenset()
) -> list[str]:
    """``module:Class.hook: ...`` for every definition, in a class of ``source``, of a name in
    ``base.HOOKS`` whose parameters (``self`` aside) or return lack an annotation; for the
    classes named in ``method_classes`` (a ``Method`` subclass or a mixin of one), also for
    annotations other than ``Method``'s own (base.py's spelling)."""
    import ast

    expected = _method_signatures()
    problems = []
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in base.HOOKS):
                continue
            a = fn.args
            params = (a.posonlyargs + a.args)[1:] + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p is not None]
            missing = [p.arg for p in params if p.annotation is None] + (["return"] if fn.returns is None else [])
            where = f"{module}:{cls.name}.{fn.name}"
            if missing:
                problems.append(f"{where}: no annotation for {', '.join(missing)}")
            elif cls.name in method_classes:
                got = ([ast.unparse(p.annotation) for p in params], ast.unparse(fn.returns))
                if got != expected[fn.name]:
                    problems.append(f"{where}: annotated {got}, Method declares {expected[fn.name]}")
    return problems


def test_every_hook_override_is_annotated_as_method_declares_it():
    """Every override of a hook in ``fedpl_core/methods/`` (read as source, not imported) carries
    ``Method``'s parameter and return annotations, so the type checker (``python -m mypy``,
    pyproject.toml) holds the hooks' bodies to the engine's types."""
    import ast

    available_methods()
    in_methods = {f"{c.__module__}.{c.__qualname__}" for cls in METHODS.values() for c in cls.__mro__}
    problems, checked = [], 0
    for path in sorted((PKG / "methods").rglob("*.py")):
        module = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
        source = path.read_text()
        names = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)}
        problems += hook_annotation_problems(source, module, {n for n in names if f"{module}.{n}" in in_methods})
        checked += sum(
            isinstance(f, ast.FunctionDef) and f.name in base.HOOKS
            for c in ast.walk(ast.parse(source))
            if isinstance(c, ast.ClassDef)
            for f in c.body
        )
    assert checked >= 85, checked  # Method's 10 and the methods' overrides: the scan saw the package
    assert not problems, "\n".join(problems)


def test_the_annotation_check_names_a_planted_unannotated_hook():
    planted = """
class Planted(Method):
    def loss(self, ctx, logits, features, batch):
        return logits.sum()

    def receive(self, ctx: ClientContext, payload) -> None:
        super().receive(ctx, payload)

    def payload(self, server: Server, client_id: str) -> dict[str, Any]:
        return {}

    def aggregate(self, server: Server, updates: list[ClientUpdate]) -> None:
        pass

    def helper(self, x):
        return x


class Block:
    def init_client(self, method, ctx) -> None:
        pass
"""
    assert hook_annotation_problems(planted, "planted", {"Planted"}) == [
        "planted:Planted.loss: no annotation for ctx, logits, features, batch, return",
        "planted:Planted.receive: no annotation for payload",
        "planted:Planted.payload: annotated (['Server', 'str'], 'dict[str, Any]'), "
        "Method declares (['Server', 'int'], 'dict[str, Any]')",
        "planted:Block.init_client: no annotation for method, ctx",
    ]
    fixed = planted.replace(
        "def loss(self, ctx, logits, features, batch):",
        "def loss(self, ctx: ClientContext, logits: torch.Tensor, features: torch.Tensor, "
        "batch: Batch) -> torch.Tensor:",
    )
    assert "planted:Planted.loss" not in " ".join(hook_annotation_problems(fixed, "planted", {"Planted"}))
