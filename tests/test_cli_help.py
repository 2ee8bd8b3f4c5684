"""The command line's help, ``methods`` and ``report`` (issue 25, section 6): help comes
from the config fields' docstrings with their defaults, lists come from the registries."""

from __future__ import annotations

import argparse
import dataclasses
import re

import numpy as np
import pytest

from fedpl_core import __version__
from fedpl_core import partitions as P
from fedpl_core.apps import cli
from fedpl_core.base.validation import field_docs
from fedpl_core.data.base import ImageDataset
from fedpl_core.data.sources import known_sources
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.methods import METHODS, available_methods
from fedpl_core.partitions import ClientSpec, Partition
from fedpl_core.runs.experiment_config import ExperimentConfig


def subparser(name: str) -> argparse.ArgumentParser:
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def options(name: str) -> dict[str, argparse.Action]:
    return {s: a for a in subparser(name)._actions for s in a.option_strings}


def run_main(capsys, *args):
    """``(exit status, stdout, stderr)`` of the CLI in this process."""
    capsys.readouterr()
    try:
        rc = cli.main(list(args))
    except SystemExit as e:  # argparse: --help, --version, bad choices
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# ------------------------------------------------------------------ field docstrings
@pytest.mark.parametrize("cls", [ExperimentConfig, EngineConfig])
def test_every_config_field_has_a_docstring(cls):
    docs = field_docs(cls)
    assert list(docs) == [f.name for f in dataclasses.fields(cls)]
    assert all(len(d) > 10 for d in docs.values()), [k for k, d in docs.items() if len(d) <= 10]
    assert all("\n" not in d and "  " not in d for d in docs.values())  # joined to one line


def test_field_docs_reads_the_string_after_each_field_only():
    @dataclasses.dataclass
    class C:
        """Class docstring."""

        a: int = 1
        """Doc of a,
        on two lines."""
        b: int = 2
        # a comment is no docstring
        c: str = "x"

    assert field_docs(C) == {"a": "Doc of a, on two lines.", "b": "", "c": ""}


# ------------------------------------------------------------------ run --help
def test_run_help_has_every_field_with_its_doc_and_default(capsys):
    rc, out, _ = run_main(capsys, "run", "--help")
    assert rc == 0
    opts = options("run")
    for name, cls, f in cli.config_fields():
        action = opts[flag(name)]
        assert flag(name) in out
        assert field_docs(cls)[name] in action.help.replace("%%", "%")
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if not (default is None and "(default:" in field_docs(cls)[name]):
            assert action.help.endswith(f"(default: {cli._default_text(default)})"), (name, action.help)
    assert not {f.name for f in dataclasses.fields(EngineConfig)} - {"seed"} - {a.dest for a in opts.values()}
    assert opts["--rounds"].help.endswith("(default: 20)")
    assert opts["--progress"].help.endswith("(default: true)")
    assert opts["--patience"].help.endswith("(default: none)")


def test_literal_fields_and_model_have_choices(capsys):
    opts = options("run")
    assert opts["--optimizer"].choices == ("adam", "adamw", "sgd")
    assert opts["--augment"].choices == ("none", "flip", "shift", "flip_shift", "flip_affine")
    assert "resnet18" in opts["--model"].choices
    rc, _, err = run_main(capsys, "run", "--optimizer", "nope")
    assert rc == 2 and "invalid choice: 'nope'" in err


def test_dataset_help_names_every_registered_source():
    text = " ".join(options("run")["--dataset"].help.split())
    sources = known_sources()
    assert {"synthetic-ich", "rsna_ich", "fedpsl", "surgical-noniid", "surgical-ablation"} <= set(sources)
    for s in sources:
        assert re.search(rf"(^|[ ,]){re.escape(s)}[,.]", text), s
    text = options("run")["--partition"].help
    assert all(p in text for p in P.LABEL_SETS) and "shared_classes_split" in text


def test_top_level_help_and_version(capsys):
    rc, out, _ = run_main(capsys, "--help")
    assert rc == 0 and "`" not in out and ":func:" not in out
    for cmd in ("run", "grid", "report", "reproduce", "methods"):
        assert cmd in out
    rc, out, _ = run_main(capsys, "--version")
    assert rc == 0 and out.strip() == f"fedpl_core {__version__}"


def test_none_sets_an_optional_field():
    args = cli.build_parser().parse_args(
        ["run", "--patience", "none", "--split", "NULL", "--selection", "none", "--partition", "iid"]
    )
    cfg = cli.config_from_args(args)
    assert cfg.engine.patience is None and cfg.split is None and cfg.engine.selection is None


# ------------------------------------------------------------------ report --help, grid
def test_report_takes_only_data_and_partition_flags(capsys):
    opts = options("report")
    assert {
        "--dataset",
        "--data-root",
        "--classes",
        "--partition",
        "--num-clients",
        "--split",
        "--seed",
        "--figure",
        "--config",
    } <= set(opts)
    assert not {"--rounds", "--method", "--model", "--lr", "--device", "--method-kwargs"} & set(opts)
    rc, out, _ = run_main(capsys, "report", "--help")
    assert rc == 0 and "--rounds" not in out and "--lr" not in out
    assert "under figures/" not in out  # a relative --figure goes to figures_dir(), which need not be figures/
    rc, _, err = run_main(capsys, "report", "--rounds", "1")
    assert rc == 2 and "unrecognized arguments: --rounds 1" in err


@pytest.fixture
def grid_config(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "classes: [Effusion, Pneumothorax, Nodule]\nimage_size: 28\nn_train: 200\nn_test: 100\n"
        "num_clients: 3\nmodel_kwargs: {width: 4}\nengine: {rounds: 3, lr: 0.002, progress: false}\n"
    )
    return f


def test_grid_takes_the_field_overrides_of_run(grid_config):
    p = cli.build_parser()
    base = cli.config_from_args(p.parse_args(["grid", str(grid_config), "--methods", "fedavg"]))
    assert base == ExperimentConfig.from_file(grid_config)
    cfg = cli.config_from_args(
        p.parse_args(
            [
                "grid",
                str(grid_config),
                "--methods",
                "fedavg",
                "--rounds",
                "1",
                "--num-clients",
                "2",
                "--optimizer",
                "sgd",
            ]
        )
    )
    assert (cfg.engine.rounds, cfg.num_clients, cfg.engine.optimizer) == (1, 2, "sgd")
    assert cfg.engine.lr == 0.002 and cfg.n_train == 200  # the rest from the file
    grid_flags = set(options("grid"))
    for name, _, _ in cli.config_fields():
        assert (flag(name) in grid_flags) == (name not in cli.GRID_OWN), name


def test_grid_override_reaches_the_runs(capsys, grid_config, tmp_path):
    rc, out, err = run_main(
        capsys,
        "grid",
        str(grid_config),
        "--methods",
        "fedavg",
        "--rounds",
        "1",
        "--backend",
        "serial",
        "--results-dir",
        str(tmp_path / "res"),
    )
    assert rc == 0, err
    import json

    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "res").glob("*.json")]
    assert result["config"]["engine"]["rounds"] == 1 and len(result["history"]) == 1


def test_grid_backend_has_choices(capsys, grid_config):
    assert options("grid")["--backend"].choices == ("serial", "process", "threads", "ray")
    rc, _, err = run_main(capsys, "grid", str(grid_config), "--methods", "fedavg", "--backend", "nope")
    assert rc == 2 and "invalid choice: 'nope'" in err


# ------------------------------------------------------------------ methods
def test_methods_grouped_by_paper_each_method_once(capsys):
    text = cli.methods_text(width=100)
    headings = [ln for ln in text.splitlines() if ln and not ln.startswith(" ")]
    for paper in ("Common baselines", "FedPSL", "FedLSM", "Surgical Aggregation", "FedMLP"):
        assert sum(h.startswith(paper) for h in headings) == 1, paper
    assert "Other methods" not in headings  # every registered method belongs to a paper (methods/papers.py)
    names = [ln.split()[0] for ln in text.splitlines() if re.match(r"  \S", ln)]
    assert sorted(names) == available_methods()
    assert "`" not in text and ":func:" not in text and ":class:" not in text and "**" not in text
    assert "[single-label only]" in text.split("fedrs", 1)[1].split("\n  fedpu", 1)[0]
    rc, out, _ = run_main(capsys, "methods")
    assert rc == 0 and out.strip() == cli.methods_text().strip()


def test_every_method_description_is_one_complete_sentence():
    from fedpl_core.methods.catalog import first_sentence

    for name in available_methods():
        s = first_sentence(METHODS[name].__doc__)
        assert s.endswith("."), (name, s)
        assert s.count("(") == s.count(")"), (name, s)


def test_first_sentence_and_plain():
    from fedpl_core.methods.catalog import first_sentence, plain

    doc = """FedAvg (McMahan et al. 2017): ``x``; see :func:`~fedpl_core.fl.views.weak_view`,
    Eq. 7 and Sec. VII-C ("a. b").  Second sentence.

    More."""
    assert first_sentence(doc) == 'FedAvg (McMahan et al. 2017): x; see weak_view, Eq. 7 and Sec. VII-C ("a. b").'
    assert plain(":class:`Partition` and **[choice]** and FixMatch\\*") == "Partition and [choice] and FixMatch*"


# ------------------------------------------------------------------ report
def tiny():
    y = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 1], [1, 1, 1]], dtype=np.float32)
    ds = ImageDataset(np.zeros((4, 1, 8, 8), np.uint8), y, ["a", "b", "c"])
    part = Partition(
        [ClientSpec([0, 1], [True, True, False], "H1"), ClientSpec([2, 3], [False, True, True], "H2")],
        ["a", "b", "c"],
        "tiny",
    )
    return ds, part


def test_label_report_tells_not_annotated_from_zero():
    ds, part = tiny()
    rep = P.label_report(part, ds, sizes_row=True, unannotated="n/a")
    # H1 annotates a (2 positives) and b (0 positives: annotated, none), not c
    assert rep["H1"].tolist() == [2, 0, "n/a", 2]
    assert rep["H2"].tolist() == ["n/a", 2, 2, 2]
    assert P.label_report(part, ds)["H1"].tolist() == [2, 0, 0]  # the default keeps integer zeros


def test_report_labels_train_and_test_and_marks_unannotated(capsys, tmp_path, monkeypatch):
    from fedpl_core.runs.build import build_partition, load_data

    monkeypatch.setenv("FEDPL_FIGURES", str(tmp_path / "figures"))
    args = [
        "--partition",
        "label_set_mismatch",
        "--num-clients",
        "5",
        "--n-train",
        "300",
        "--n-test",
        "300",
        "--image-size",
        "28",
        "--classes",
        "Effusion,Pneumothorax,Nodule,Hernia,Mass",
        "--partition-kwargs",
        '{"classes_per_client": 2, "seed": 523}',
        "--progress",
        "false",
    ]
    rc, out, err = run_main(capsys, "report", *args)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("train: ") and "300 images" in lines[0]
    assert lines[1].startswith("test: ") and "300 images" in lines[1]
    rows = {
        cells[0]: cells[1:]
        for cells in ([c.strip() for c in ln.strip("|").split("|")] for ln in lines if ln.startswith("|"))
    }
    cfg = cli.config_from_args(cli.build_parser().parse_args(["report", *args]))
    part = build_partition(cfg, load_data(cfg).train)
    zeros = 0
    for j, cls in enumerate(part.class_names):
        for k, cell in enumerate(rows[cls]):
            assert (cell == cli.UNANNOTATED) == (not part.masks[k, j]), (cls, k, cell)
            zeros += cell == "0"
    assert zeros >= 1  # an annotated class without positives shows 0, not n/a
    assert (tmp_path / "figures" / "partition_report.png").is_file()


# ------------------------------------------------------------------ a fast start, plugins
def test_the_method_index_is_the_live_registrys():
    """``methods`` reads names, display names, papers, tasks and first sentences from the
    generated index (no torch); the live registry is the one place they live, and the
    committed index is what it generates now."""
    from fedpl_core.methods import catalog

    live = catalog.index()
    assert cli.method_index() == live, f"fedpl_core/methods/index.json is not current: run `{catalog.COMMAND}`"
    assert sorted(live["methods"]) == available_methods()
    assert cli.methods_text(width=100, index=cli.method_index()) == cli.methods_text(
        width=100, index=cli.live_method_index()
    )


def test_a_method_registered_anywhere_joins_the_live_index_and_its_papers_group():
    """A registered class appears in the live index with its own docstring, the tasks it
    inherits and its own paper (none: "Other methods"); the built-in index leaves a
    class from outside the package out."""
    from fedpl_core.methods import register
    from fedpl_core.methods.fedrs import FedRS

    class Mine(FedRS):
        """My method (a test).  More."""

        name = "mine_for_the_index"

    register(Mine)
    try:
        index = cli.live_method_index()
        assert index["methods"]["mine_for_the_index"] == {
            "class": Mine.__qualname__,
            "module": __name__,
            "display_name": "",
            "paper": "",
            "tasks": ["multiclass"],
            "summary": "My method (a test).",
        }  # tasks inherited from FedRS, its paper not
        assert "mine_for_the_index" not in cli.live_method_index(plugins=False)["methods"]
        text = cli.methods_text(width=100, index=index)
        assert "mine_for_the_index" in text.split("Other methods", 1)[1]
    finally:
        METHODS.pop("mine_for_the_index", None)


def test_the_index_is_found_without_the_package_and_falls_back_to_the_registry(tmp_path):
    assert cli.METHOD_INDEX.is_file() and cli.METHOD_INDEX.parent.name == "methods"
    assert cli.method_index(tmp_path / "missing.json") == cli.live_method_index(plugins=False)


def _python(args, cwd=None, env=None):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(cli.__file__).resolve().parent.parent
    e = {k: v for k, v in os.environ.items() if k != "FEDPL_PLUGINS"}
    e.update(PYTHONPATH=str(root), **(env or {}))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=300)


def test_help_and_methods_import_neither_torch_nor_scipy():
    """``--help``, ``reproduce --help`` and ``methods`` answer without importing torch, scipy
    or the methods (they took 4-12 s when the package imported them)."""
    code = (
        "import sys\nfrom fedpl_core.apps import cli\n"
        "for argv in (['--help'], ['reproduce', '--help'], ['methods']):\n"
        "    assert cli.main(argv) == 0, argv\n"
        "heavy = sorted(m for m in ('torch', 'scipy', 'fedpl_core.methods', 'pandas') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    out = _python(["-c", code])
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout, out.stdout[-300:]


def test_reproduce_help_says_where_each_way_writes(capsys):
    rc, out, _ = run_main(capsys, "reproduce", "--help")
    text = " ".join(out.split())
    assert rc == 0 and "outputs/notebooks" in text and "make reproduce" in text and "reports" in text
    assert options("reproduce")["--output"].default == cli.REPRODUCE_OUTPUT == "outputs/notebooks"


PLUGIN = '''
"""A user's plugin: one method and one data source, registered on import."""
from fedpl_core.data.sources import register_source
from fedpl_core.methods import register
from fedpl_core.methods.fedavg import FedAvg


@register
class MyFedAvg(FedAvg):
    """FedAvg under another name, from a user's plugin."""

    name = "my_fedavg"


@register_source("my-source")
def my_source(name, data_root, classes, image_size, n_train, n_test, data_seed, **kw):
    from fedpl_core.data.sources import SOURCES

    return SOURCES["synthetic-cxr"]("synthetic-cxr", None, classes, image_size, n_train, n_test, data_seed)
'''

METHOD_ONLY = '''
from fedpl_core.methods import register
from fedpl_core.methods.fedavg import FedAvg


@register
class SpawnedFedAvg(FedAvg):
    """FedAvg that only a plugin registers."""

    name = "spawned_fedavg"
'''


@pytest.fixture
def plugin_dir(tmp_path):
    (tmp_path / "myplug.py").write_text(PLUGIN)
    (tmp_path / "methodplug.py").write_text(METHOD_ONLY)
    return tmp_path


def test_plugin_on_the_command_line_registers_a_method_and_a_data_source(plugin_dir):
    out = _python(["-m", "fedpl_core", "--plugin", "myplug", "methods"], cwd=plugin_dir)
    assert out.returncode == 0, out.stderr
    assert "Other methods" in out.stdout and "my_fedavg" in out.stdout.split("Other methods", 1)[1]
    out = _python(
        [
            "-m",
            "fedpl_core",
            "--plugin",
            "myplug",
            "run",
            "--method",
            "my_fedavg",
            "--dataset",
            "my-source",
            "--classes",
            "Effusion,Nodule",
            "--n-train",
            "60",
            "--n-test",
            "40",
            "--image-size",
            "28",
            "--num-clients",
            "2",
            "--rounds",
            "1",
            "--model-kwargs",
            '{"width": 4}',
            "--progress",
            "false",
        ],
        cwd=plugin_dir,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("my_fedavg: final auroc_mean=")
    assert "my-source" in _python(["-m", "fedpl_core", "--plugin", "myplug", "run", "--help"], cwd=plugin_dir).stdout


@pytest.mark.parametrize(
    "name, says",
    [
        ("nosuchplugin", "plugin 'nosuchplugin': no module named 'nosuchplugin'"),
        ("my plug", "plugin 'my plug' is not a module name"),
    ],
)
def test_a_bad_plugin_is_one_line_and_status_2(plugin_dir, name, says):
    out = _python(["-m", "fedpl_core", "--plugin", name, "methods"], cwd=plugin_dir)
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"fedpl: error: {says}")


@pytest.fixture
def forget_plugins():
    """Leave the registries and the plugin list as they were."""
    import sys

    from fedpl_core.base import plugins
    from fedpl_core.data.sources.base import SOURCES

    methods, sources, loaded = dict(METHODS), dict(SOURCES), list(plugins._loaded)
    yield
    for d, before in ((METHODS, methods), (SOURCES, sources)):
        for k in set(d) - set(before):
            del d[k]
    plugins._loaded[:] = loaded
    for m in ("myplug", "methodplug"):
        sys.modules.pop(m, None)


def test_a_spawned_grid_worker_finds_a_plugin_method(plugin_dir, monkeypatch, tmp_path, forget_plugins):
    """A plugin's method reaches a worker process started with spawn (a fresh interpreter:
    nothing of the driver's registry), through ``$FEDPL_PLUGINS``."""
    from fedpl_core.base.plugins import ENV, load_plugins
    from fedpl_core.runs import grid
    from fedpl_core.runs.experiment_config import ExperimentConfig
    from fedpl_core.runs.study import run_many

    monkeypatch.setenv(ENV, "")
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.setattr(grid, "start_method", lambda: "spawn")
    grid.shutdown_pools()
    assert load_plugins(["methodplug"]) == ["methodplug"]
    import os

    assert os.environ[ENV] == "methodplug"
    cfg = ExperimentConfig(
        dataset="synthetic-cxr",
        classes=["Effusion", "Nodule"],
        image_size=28,
        n_train=60,
        n_test=40,
        num_clients=2,
        model_kwargs={"width": 4},
        engine={"rounds": 1, "progress": False},
    )
    try:
        df = run_many(
            cfg,
            ["spawned_fedavg"],
            seeds=[0],
            results_dir=tmp_path / "res",
            progress=False,
            workers=2,
            backend="process",
            retries=0,
        )
    finally:
        grid.shutdown_pools()
    assert list(df["label"].unique()) == ["spawned_fedavg"] and len(df[df["which"] == "final"]) == 1
