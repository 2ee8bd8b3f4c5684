"""The method interface (issue 26): ``Method``'s overridable hooks are the documented list
(``fedpl_core.methods.base.HOOKS``, described once, in call order, in base.py's module
docstring); no registered method overrides anything else; the harness calls those hooks
and no other method of a method (configuration it reads from the blocks aside)."""
import inspect
import re
from pathlib import Path

import fedpl_core
from fedpl_core.methods import METHODS, Method, available_methods
from fedpl_core.methods import base

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
        name = r"(?:method|m|self\.method)" if rel == "fl/site.py" else r"(?:method|self\.method)"  # site.py: m = method
        for m in re.finditer(rf"(?<![\w.]){name}\.(\w+)\(", src):
            called.add(m.group(1))
    assert called - set(base.HOOKS) <= CONFIG_CALLS, called - set(base.HOOKS) - CONFIG_CALLS
    # every hook but the loss (which local_train calls) is called by the harness
    assert set(base.HOOKS) - {"loss"} <= called
