"""A run's code fingerprint is the code that computes it (fedpl_core.runs.provenance).

Each edit is made on a copy of the package and read with a :class:`CodeIndex` of that copy,
with the roots of the live runs: the fingerprint of a run must stay the same after an edit
that changes nothing it computes with, and must move after one that does.

* docstrings, comments and formatting (every module rewritten), a study's tables, figures and
  captions, a new method in a module of its own: every run of the cpu profile stays valid;
* FedAvg's aggregation (the ``plain`` head rule) edited: exactly the runs of the methods that
  hold it move, not those of the methods with a row-wise head;
* soundness: a tiny run of every method (and of every data source) is traced, and every unit
  of package code it executes, outside the modules that never change numbers, is in its
  fingerprint.
"""

import ast
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability_methods import NAMES, config  # noqa: E402

from fedpl_core.methods import get_method  # noqa: E402
from fedpl_core.methods.blocks import FedAvgHead  # noqa: E402
from fedpl_core.runs import provenance as P  # noqa: E402
from fedpl_core.runs.code_index import CodeIndex, module_digests  # noqa: E402
from fedpl_core.runs.runner import run  # noqa: E402

PKG = Path(P.__file__).resolve().parents[1]


def copy_package(tmp_path: Path) -> Path:
    dst = tmp_path / "fedpl_core"
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.json"))
    return dst


def index_of(root: Path) -> CodeIndex:
    return CodeIndex({"fedpl_core": root}, exclude=P.NOT_FINGERPRINTED)


def fingerprints(index: CodeIndex, roots_by_run: dict[str, tuple[str, ...]]) -> dict[str, dict[str, str]]:
    memo: dict[tuple[str, ...], dict[str, str]] = {}
    out = {}
    for rid, roots in roots_by_run.items():
        if roots not in memo:
            memo[roots] = module_digests(index.closure(roots))
        out[rid] = memo[roots]
    return out


def tiny_runs() -> dict[str, tuple[str, ...]]:
    """One tiny run of every registered method: ``{method: its roots}``."""
    return {name: tuple(P.run_roots(config(name))) for name in NAMES}


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    """Every run of the six notebooks' cpu profile: ``{run id: its roots}``."""
    from test_profile_runs import profile_configs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        configs = profile_configs(str(tmp_path_factory.mktemp("results")), "cpu")
    runs = {cfg.run_id(): cfg for cfgs in configs.values() for cfg in cfgs}
    return {rid: tuple(P.run_roots(cfg)) for rid, cfg in runs.items()}


def rewrite(root: Path, transform) -> int:
    """Apply ``transform(tree) -> tree`` to every module under ``root``, written back as
    ``ast.unparse`` (comments and formatting gone); returns the number of files."""
    n = 0
    for p in sorted(root.rglob("*.py")):
        tree = transform(ast.parse(p.read_text()))
        p.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n")
        n += 1
    return n


class EditDocstrings(ast.NodeTransformer):
    """Every docstring and bare string statement reworded."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            for s in body if isinstance(body, list) else []:
                if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                    s.value.value = "Reworded. " + s.value.value[::-1]
        return node


class EditStrings(ast.NodeTransformer):
    """Every string constant changed (captions, titles, sentences, table headings)."""

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value:
            return ast.copy_location(ast.Constant(node.value + " (edited)"), node)
        return node


def test_docstrings_comments_and_formatting_leave_every_cpu_run_valid(tmp_path, cpu_runs):
    before = fingerprints(index_of(PKG), cpu_runs)
    root = copy_package(tmp_path)
    assert rewrite(root, EditDocstrings().visit) > 80
    after = fingerprints(index_of(root), cpu_runs)
    assert len(cpu_runs) > 800  # the distinct runs of the six notebooks
    assert after == before


def test_a_studys_tables_figures_and_captions_leave_every_cpu_run_valid(tmp_path, cpu_runs):
    before = fingerprints(index_of(PKG), cpu_runs)
    root = copy_package(tmp_path)
    for folder in ("studies", "report"):
        rewrite(root / folder, EditStrings().visit)
        for p in (root / folder).rglob("*.py"):  # and new code in every such module
            p.write_text(p.read_text() + "\n\ndef new_table(df):\n    return df.head(3)\n")
    assert fingerprints(index_of(root), cpu_runs) == before


def test_a_new_method_in_a_module_of_its_own_leaves_every_cpu_run_valid(tmp_path, cpu_runs):
    before = fingerprints(index_of(PKG), cpu_runs)
    root = copy_package(tmp_path)
    (root / "methods" / "fedavg_server_lr.py").write_text(
        '"""FedAvg with a server learning rate."""\n'
        "from . import register\nfrom .fedavg import FedAvg\nfrom .blocks import FedAvgHead\n\n\n"
        "@register\nclass FedAvgServerLR(FedAvg):\n"
        '    name = "fedavg_server_lr"\n    server_lr = 0.5\n\n'
        "    def aggregate(self, server, updates):\n"
        "        FedAvgHead()(self, server, updates)\n"
    )
    assert fingerprints(index_of(root), cpu_runs) == before


def test_editing_fedavgs_aggregation_moves_exactly_the_runs_of_the_methods_that_hold_it(tmp_path):
    runs = tiny_runs()
    before = fingerprints(index_of(PKG), runs)
    root = copy_package(tmp_path)
    blocks = root / "methods" / "blocks.py"
    text = blocks.read_text()
    old = "server.global_state.update(weighted_average([u.state for u in updates], method.weights(updates)))"
    assert text.count(old) == 1
    blocks.write_text(text.replace(old, "server.global_state.update(weighted_average([u.state for u in updates]))"))
    after = fingerprints(index_of(root), runs)
    moved = {m for m in runs if after[m] != before[m]}
    holders = {m for m in runs if isinstance(get_method(m).head_block, FedAvgHead)}
    assert moved == holders
    assert {"fedavg", "fedavg_pl", "fedprox"} <= moved
    assert not {"fedpsl", "fedpsl_tdma", "fedlsm", "fedavg_star"} & moved  # row-wise heads (TDMA, AWPA)
    assert set(after["fedavg"]) == set(before["fedavg"])  # the same modules, one digest moved
    assert [m for m in after["fedavg"] if after["fedavg"][m] != before["fedavg"][m]] == ["fedpl_core.methods.blocks"]


def test_a_change_in_the_arithmetic_moves_every_run(tmp_path):
    runs = tiny_runs()
    before = fingerprints(index_of(PKG), runs)
    root = copy_package(tmp_path)
    agg = root / "nn" / "aggregation.py"
    text = agg.read_text()
    assert "acc.add_(t, alpha=wi)" in text
    agg.write_text(text.replace("acc.add_(t, alpha=wi)", "acc.add_(t, alpha=2 * wi)"))
    after = fingerprints(index_of(root), runs)
    assert all(after[m] != before[m] for m in runs)


# ------------------------------------------------------------ soundness: what a run executes
def executed_units(cfg) -> set[str]:
    """The units of package code a run of ``cfg`` executes (traced), outside the modules
    that are never fingerprinted."""
    index = P.code_index()
    codes: set = set()
    inside = [0]  # the depth of fingerprinting calls: the code they run computes nothing of the run
    own = {str(Path(P.__file__).resolve()), str(PKG / "runs" / "code_index.py")}

    def profile(frame, event, arg):
        mine = event in ("call", "return") and frame.f_code.co_filename in own
        if event == "call":
            if mine:
                inside[0] += 1
            elif not inside[0]:
                codes.add(frame.f_code)
        elif event == "return" and mine:
            inside[0] -= 1

    from fedpl_core.data import sources

    sources._load.cache_clear()  # the data are built inside the trace
    sys.setprofile(profile)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(cfg)
    finally:
        sys.setprofile(None)
    out = set()
    for code in codes:
        path = Path(code.co_filename)
        if not path.is_relative_to(PKG) or code.co_name == "<module>":
            continue
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not index.followed(module):
            continue
        key = index.unit_at(module, code.co_firstlineno)
        if key is not None:
            out.add(key)
    return out


def soundness(cfg) -> list[str]:
    units = P.run_units(cfg)
    return sorted(executed_units(cfg) - set(units))


@pytest.mark.parametrize("name", NAMES)
def test_the_fingerprint_holds_all_the_code_a_methods_run_executes(name):
    cfg = config(name, client_val_fraction=0.2, client_fraction=0.5, augment="flip_shift", optimizer_state="keep")
    missing = soundness(cfg)
    assert not missing, f"{name}: executed but not in the fingerprint: {missing}"


def source_configs():
    from fedpl_core.studies import fedpsl, surgical

    s = surgical.settings("smoke")
    yield (
        "fedpsl IV",
        fedpsl.config("IV", pool=40, test_pos=8, test_neg=8, image_size=28, engine=config("fedavg").engine),
    )
    yield "surgical ablation", surgical.ablation_config(s).replace(method="fedavg_pl", engine=config("fedavg").engine)
    yield (
        "surgical non-IID",
        surgical.noniid_config(s, True).replace(method="fedavg_pl", engine=config("fedavg").engine),
    )
    yield "synthetic ICH", config("fedavg").replace(dataset="synthetic-ich", classes=None)


@pytest.mark.parametrize("label,cfg", list(source_configs()), ids=lambda v: v if isinstance(v, str) else "")
def test_the_fingerprint_holds_all_the_code_a_data_source_executes(label, cfg):
    missing = soundness(cfg)
    assert not missing, f"{label}: executed but not in the fingerprint: {missing}"
    assert any(k.startswith("fedpl_core.data.sources.") for k in P.run_units(cfg))


def test_the_trace_sees_a_unit_the_fingerprint_leaves_out(monkeypatch):
    """The soundness check can fail: with the method's blocks left out of the roots, the
    FedAvg aggregation a FedAvg run executes is missing."""
    monkeypatch.setattr(P, "_method_roots", lambda cfg: {"fedpl_core.methods.fedavg:FedAvg"})
    assert "fedpl_core.methods.blocks:FedAvgHead" in soundness(config("fedavg"))
