import json
import subprocess
import sys

import pandas as pd
import pytest

from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.report.tables import paired_ttest, pivot_mean_std, stars, summarize, to_latex, to_markdown
from fedpl_core.runs import runner as R
from fedpl_core.runs.build import build_simulation
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.runner import run
from fedpl_core.runs.study import result_rows, run_many

TINY = dict(
    dataset="synthetic-cxr",
    classes=["Cardiomegaly", "Effusion", "Pneumothorax"],
    image_size=28,
    n_train=240,
    n_test=120,
    num_clients=3,
    model_kwargs={"width": 8},
)


def tiny(**kw):
    kw.setdefault("engine", EngineConfig(rounds=2, batch_size=32, progress=False))
    return ExperimentConfig(**{**TINY, **kw})


def test_run_writes_result_atomically_and_skips_finished_runs(tmp_path, monkeypatch):
    cfg = tiny(method="fedavg_pl")
    res = run(cfg, tmp_path)
    out = tmp_path / f"{cfg.run_id()}.json"
    assert out.is_file() and not list(tmp_path.glob(".*tmp")) and not list(tmp_path.glob("*.ckpt"))
    saved = json.loads(out.read_text())
    assert saved["final"]["auroc_mean"] == res.final["auroc_mean"]
    assert len(saved["history"]) == 2 and len(saved["final"]["auroc_per_class"]) == 3

    def boom(*a, **k):
        raise AssertionError("a finished run must not be re-run")

    monkeypatch.setattr(R, "build_simulation", boom)  # where run calls it
    again = run(cfg, tmp_path)
    assert again.final == res.final


def test_interrupted_run_resumes_from_checkpoint(tmp_path):
    cfg = tiny(method="fedavg", engine=EngineConfig(rounds=3, batch_size=32, progress=False, checkpoint_every=1))
    full = run(cfg)  # no results dir: in memory
    sim = build_simulation(cfg, checkpoint_path=tmp_path / f"{cfg.run_id()}.ckpt")
    sim.run(rounds=1)  # interrupted after one round
    resumed = run(cfg, tmp_path)
    assert [h["auroc_mean"] for h in resumed.history] == [h["auroc_mean"] for h in full.history]


def test_run_many_is_tidy_and_uses_identical_data(tmp_path):
    df = run_many(
        tiny(),
        ["fedavg", ("prox", {"method": "fedprox", "method_kwargs": {"mu": 0.0}})],
        seeds=[0, 1],
        results_dir=tmp_path,
        progress=False,
    )
    assert len(df) == 2 * 2  # methods x seeds; no "best" rows: the default selection needs validation splits
    assert set(df["label"]) == {"fedavg", "prox"} and set(df["which"]) == {"final"}
    final = df[df.which == "final"].set_index(["label", "seed"])["auroc_mean"]
    # FedProx with mu=0 is FedAvg: identical data, partition and seed give identical numbers
    assert final[("fedavg", 0)] == final[("prox", 0)]
    assert final[("fedavg", 0)] != final[("fedavg", 1)]
    assert {"auroc:Cardiomegaly", "auroc:Effusion"} <= set(df.columns)


def test_run_many_in_worker_processes_gives_the_serial_numbers(tmp_path):
    """workers=2: the uncached runs go to two spawned processes with one torch thread each;
    the numbers equal a serial run with one thread, and a cached run is not redone."""
    import torch

    methods = ["fedavg", "fedavg_pl"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = run_many(tiny(), methods, seeds=[0, 1], progress=False)
    finally:
        torch.set_num_threads(threads)
    run(tiny(method="fedavg", seed=0), tmp_path)  # one run cached beforehand
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.json")}
    par = run_many(tiny(), methods, seeds=[0, 1], results_dir=tmp_path, progress=False, workers=2)
    assert par["auroc_mean"].tolist() == serial["auroc_mean"].tolist()
    assert len(list(tmp_path.glob("*.json"))) == 4
    assert all(tmp_path.joinpath(n).stat().st_mtime_ns == t for n, t in before.items())  # not rewritten
    with pytest.raises(ValueError, match="workers"):
        run_many(tiny(), methods, workers=0)


def test_best_rows_come_from_validation_selection_never_the_test_set(tmp_path):
    cfg = tiny(method="fedavg", engine=EngineConfig(rounds=3, batch_size=32, progress=False, client_val_fraction=0.2))
    res = run(cfg)
    vals = [h["val_loss"] for h in res.history]
    assert res.best["val_loss"] == min(vals) and res.best["round"] == 1 + vals.index(min(vals))
    rows = pd.DataFrame(result_rows(res))
    assert set(rows["which"]) == {"final", "best"}


def test_config_from_json_and_yaml(tmp_path):
    d = {"method": "fedprox", "method_kwargs": {"mu": 0.1}, "rounds": 7, "engine": {"lr": 0.01}}
    (tmp_path / "c.json").write_text(json.dumps(d))
    (tmp_path / "c.yaml").write_text("method: fedprox\nmethod_kwargs: {mu: 0.1}\nrounds: 7\nengine:\n  lr: 0.01\n")
    for f in ("c.json", "c.yaml"):
        cfg = ExperimentConfig.from_file(tmp_path / f)
        assert cfg.method == "fedprox" and cfg.method_kwargs == {"mu": 0.1}
        assert cfg.engine.rounds == 7 and cfg.engine.lr == 0.01
    with pytest.raises(ValueError, match="unknown config key"):
        ExperimentConfig.from_dict({"methd": "fedavg"})


def test_summaries_and_tests_match_hand_computation():
    df = pd.DataFrame(
        {
            "setting": ["s"] * 4,
            "label": ["a", "a", "b", "b"],
            "which": ["final"] * 4,
            "auroc_mean": [0.80, 0.90, 0.70, 0.70],
        }
    )
    s = summarize(df)
    # mean 85.00, sample std sqrt(((80-85)^2 + (90-85)^2) / 1) = 7.07
    assert s.loc[("s", "a"), "auroc_mean"] == "85.00 ± 7.07"
    assert s.loc[("s", "b"), "auroc_mean"] == "70.00 ± 0.00"
    table = pivot_mean_std(df)
    assert table.loc["a", "s"] == "85.00 ± 7.07"
    assert "| a        | 85.00 ± 7.07 |" in to_markdown(table) and to_markdown(table).startswith("| method ")
    assert r"$\pm$" in to_latex(table)
    t, p = paired_ttest([1.0, 2.0, 3.0], [1.5, 2.0, 3.5])
    # differences -0.5, 0, -0.5: mean -1/3, sd 0.2887, t = -1/3 / (0.2887 / sqrt 3) = -2.0
    assert abs(t + 2.0) < 1e-9 and 0.18 < p < 0.19
    assert stars(0.0005) == "***" and stars(0.004) == "**" and stars(0.03) == "*" and stars(0.2) == ""


def cli(*args):
    return subprocess.run([sys.executable, "-m", "fedpl_core", *args], capture_output=True, text=True)


def test_cli_run_writes_results_json(tmp_path):
    out = tmp_path / "r.json"
    p = cli(
        "run",
        "--method",
        "fedavg_pl",
        "--classes",
        "Cardiomegaly,Effusion,Pneumothorax",
        "--image-size",
        "28",
        "--n-train",
        "240",
        "--n-test",
        "120",
        "--num-clients",
        "3",
        "--rounds",
        "1",
        "--model-kwargs",
        '{"width": 8}',
        "--progress",
        "false",
        "--out",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    for k in ("auroc_mean", "auroc_per_class", "map", "bacc"):
        assert k in r["final"]
    assert len(r["history"]) == 1 and r["config"]["method"] == "fedavg_pl"


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--method", "fedmagic"], "unknown method 'fedmagic'"),
        (["--dataset", "nih", "--data-root", "/no/such/folder"], "does not exist"),
        (["--classes", "Effusion,Unicornitis"], "Unicornitis"),
        (["--partition", "mystery"], "unknown partition"),
    ],
)
def test_cli_bad_input_is_one_line_error(args, needle):
    p = cli("run", "--rounds", "1", "--n-train", "100", "--n-test", "50", "--image-size", "28", *args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fedpl: error:") and needle in lines[0], p.stderr


def test_one_seed_shows_the_mean_without_a_spread():
    from fedpl_core.report.tables import fmt_mean_std

    df = pd.DataFrame(
        {"setting": ["s"] * 3, "label": ["a", "b", "b"], "which": ["final"] * 3, "auroc_mean": [0.80, 0.70, 0.72]}
    )
    s = summarize(df)
    assert s.loc[("s", "a"), "auroc_mean"] == "80.00" and s.loc[("s", "a"), "n"] == 1
    assert s.loc[("s", "b"), "auroc_mean"] == "71.00 ± 1.41"  # sample sd of 70, 72
    assert fmt_mean_std(0.5, float("nan"), 3) == "0.500"


def test_the_runner_layers_import_only_downward():
    """fedpl_core/runs: data_checks < options < experiment_config < build < code_index < provenance <
    results < schema < runner < grid < study.  Each module imports only the ones before it, at module level or inside a
    function, and nothing that imports the runner (studies, apps, the package root)."""
    import ast
    from pathlib import Path

    import fedpl_core

    root = Path(fedpl_core.__file__).parent
    order = [
        "data_checks",
        "options",
        "experiment_config",
        "build",
        "code_index",
        "provenance",
        "results",
        "schema",
        "runner",
        "grid",
        "study",
    ]
    assert sorted(p.stem for p in (root / "runs").glob("*.py")) == sorted(order + ["__init__"])
    for i, name in enumerate(order):
        nodes = list(ast.walk(ast.parse((root / "runs" / f"{name}.py").read_text())))
        here = {n.module or a.name for n in nodes if isinstance(n, ast.ImportFrom) and n.level == 1 for a in n.names}
        assert here <= set(order[:i]), f"runs/{name}.py imports runs/{sorted(here - set(order[:i]))}"
        above = {n.module or a.name for n in nodes if isinstance(n, ast.ImportFrom) and n.level == 2 for a in n.names}
        above |= {
            a.name for n in nodes if isinstance(n, ast.Import) for a in n.names if a.name.startswith("fedpl_core")
        }
        assert not {m.split(".")[0] for m in above} & {"studies", "apps", "fedpl_core", "__version__"}, (name, above)
    assert not (root / "experiments.py").exists()  # no facade: each name is imported from its home
    assert "import" not in (root / "runs" / "__init__.py").read_text().split('"""')[-1]
