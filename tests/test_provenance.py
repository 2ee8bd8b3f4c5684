"""Results record their provenance and the fingerprint of their code; a cached result of
other code is stale: recomputed with one warning, or kept on request (issue 25, section 2)."""

import json
import warnings

import pytest

from fedpl_core.apps.cli import build_parser
from fedpl_core.fl.engine_config import EngineConfig
from fedpl_core.runs import provenance as P
from fedpl_core.runs.experiment_config import ExperimentConfig
from fedpl_core.runs.results import StaleResultWarning
from fedpl_core.runs.runner import run
from fedpl_core.runs.schema import ResultFileError, parse_result, read_result
from fedpl_core.runs.study import run_many

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
    kw.setdefault("engine", EngineConfig(rounds=1, batch_size=32, progress=False))
    return ExperimentConfig(**{**TINY, **kw})


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv(P.KEEP_STALE_ENV, raising=False)


def stale_warnings(rec):
    return [w for w in rec if issubclass(w.category, StaleResultWarning)]


def change_code(monkeypatch, module="fedpl_core.engine"):
    """Pretend ``module``'s source changed since the cached results were written."""
    orig = P.code_hashes
    monkeypatch.setattr(P, "code_hashes", lambda cfg: {**orig(cfg), module: "0" * 16})


def test_result_records_provenance(tmp_path):
    cfg = tiny()
    res = run(cfg, tmp_path)
    d = json.loads((tmp_path / f"{cfg.run_id()}.json").read_text())
    p = d["provenance"]
    assert p == res.provenance
    for k in ("package_version", "python", "torch", "numpy", "device", "date", "host", "code_fingerprint"):
        assert isinstance(p[k], str) and p[k], k
    assert p["device"] == "cpu"
    assert p["date"].endswith("+00:00")
    assert isinstance(p["seconds"], float) and p["seconds"] == d["timings"]["total_s"]
    assert p["git_commit"] is None or len(p["git_commit"]) == 40
    assert p["git_dirty"] in (None, True, False)
    assert p["code_fingerprint"] == P.code_fingerprint(cfg)
    engine = {k.split(":")[0] for k in P.ENGINE_ROOTS}
    assert engine <= set(p["code"])
    assert {"fedpl_core.methods.fedavg", "fedpl_core.methods.base"} <= set(p["code"])  # the method's classes
    assert not {m for m in p["code"] if m.startswith(P.NOT_FINGERPRINTED)}
    # loaded from the cache: the same result, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = run(cfg, tmp_path)
    assert again.provenance == p


def test_method_mro_classes_are_fingerprinted():
    units = P.run_units(tiny(method="fedlsm"))
    assert {"fedpl_core.methods.fedlsm:FedLSM", "fedpl_core.methods.base:Method"} <= set(units)
    assert P.code_fingerprint(tiny(method="fedlsm")) != P.code_fingerprint(tiny(method="fedavg"))


def test_changed_code_redoes_the_run_with_one_warning(tmp_path, monkeypatch):
    cfg = tiny()
    first = run(cfg, tmp_path)
    change_code(monkeypatch)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = run(cfg, tmp_path)
    w = stale_warnings(rec)
    assert len(w) == 1
    assert "1 of 1" in str(w[0].message) and "engine" in str(w[0].message) and "recomputed" in str(w[0].message)
    assert res.provenance["code_fingerprint"] != first.provenance["code_fingerprint"]
    assert res.provenance["code_fingerprint"] == P.code_fingerprint(cfg)
    saved = json.loads((tmp_path / f"{cfg.run_id()}.json").read_text())
    assert saved["provenance"]["code_fingerprint"] == res.provenance["code_fingerprint"]
    assert res.final["auroc_mean"] == first.final["auroc_mean"]  # same code really: same numbers


@pytest.mark.parametrize("how", ["argument", "env"])
def test_keep_stale_reuses_with_a_warning(tmp_path, monkeypatch, how):
    cfg = tiny()
    first = run(cfg, tmp_path)
    change_code(monkeypatch)
    kw = {"keep_stale": True} if how == "argument" else {}
    if how == "env":
        monkeypatch.setenv(P.KEEP_STALE_ENV, "1")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = run(cfg, tmp_path, **kw)
    w = stale_warnings(rec)
    assert len(w) == 1 and "kept" in str(w[0].message)
    assert res.provenance == first.provenance  # the cached file, as it is


def test_old_result_without_provenance_is_stale(tmp_path):
    cfg = tiny()
    run(cfg, tmp_path)
    f = tmp_path / f"{cfg.run_id()}.json"
    d = json.loads(f.read_text())
    del d["provenance"]
    f.write_text(json.dumps(d))
    old = read_result(f)  # still readable
    assert old.provenance == {}
    with pytest.warns(StaleResultWarning, match="kept"):
        kept = run(cfg, tmp_path, keep_stale=True)
    assert kept.provenance == {}
    with pytest.warns(StaleResultWarning, match="before results recorded their code"):
        redone = run(cfg, tmp_path)
    assert redone.provenance["code_fingerprint"] == P.code_fingerprint(cfg)
    assert "provenance" in json.loads(f.read_text())


def test_bad_provenance_is_a_corrupt_file():
    with pytest.raises(ResultFileError, match="provenance"):
        parse_result(
            json.dumps(
                {
                    "config": {"method": "fedavg", "seed": 0},
                    "history": [{"round": 1}],
                    "final": {"round": 1},
                    "best": {},
                    "class_names": ["a"],
                    "timings": {"total_s": 1.0},
                    "provenance": [1],
                }
            )
        )


def test_grid_warns_once_for_all_stale_results(tmp_path, monkeypatch):
    base = tiny()
    run_many(base, ["fedavg"], seeds=[0, 1], results_dir=tmp_path, progress=False)
    change_code(monkeypatch, "fedpl_core.nn.losses")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run_many(base, ["fedavg"], seeds=[0, 1], results_dir=tmp_path, progress=False, keep_stale=True)
    w = stale_warnings(rec)
    assert len(w) == 1 and "2 of 2" in str(w[0].message) and "kept" in str(w[0].message)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        run_many(base, ["fedavg"], seeds=[0, 1], results_dir=tmp_path, progress=False)
    w = stale_warnings(rec)
    assert len(w) == 1 and "2 of 2" in str(w[0].message) and "recomputed" in str(w[0].message)
    for s in (0, 1):
        saved = json.loads((tmp_path / f"{base.replace(seed=s).run_id()}.json").read_text())
        assert saved["provenance"]["code_fingerprint"] == P.code_fingerprint(base)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleResultWarning)
        run_many(base, ["fedavg"], seeds=[0, 1], results_dir=tmp_path, progress=False)  # fresh now


def test_cli_keep_stale_flag():
    p = build_parser()
    assert p.parse_args(["grid", "c.yaml", "--methods", "fedavg", "--keep-stale"]).keep_stale is True
    assert p.parse_args(["grid", "c.yaml", "--methods", "fedavg"]).keep_stale is None
    assert p.parse_args(["run", "--keep-stale"]).keep_stale is True
    assert p.parse_args(["run"]).keep_stale is None


def test_check_cache_tells_current_stale_and_unreadable_results_apart(tmp_path, capsys):
    """``tools/check_cache.py`` applies the runner's own staleness test to a cache: a result of
    today's code is current, one whose fingerprint another code made is stale (its changed
    modules named), a broken file is unreadable, and a JSON file that is no run's result is
    skipped; its exit status is 0 only when every result is current."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "check_cache", Path(__file__).resolve().parent.parent / "tools" / "check_cache.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    cache = tmp_path / "results"
    run_many(tiny(), [("FedAvg", {"method": "fedavg"})], [0], str(cache), progress=False)
    (cache / "table.json").write_text('{"rows": []}')  # not a run's result
    assert tool.check(cache) == (1, {}, [])
    assert tool.main([str(cache)]) == 0

    (path,) = [p for p in cache.rglob("*.json") if p.name != "table.json"]
    d = json.loads(path.read_text())
    d["provenance"]["code_fingerprint"] = "0" * 16
    d["provenance"]["code"]["fedpl_core.fl.server"] = "0" * 16
    path.write_text(json.dumps(d))
    (cache / "broken.json").write_text("{")
    current, stale, unreadable = tool.check(cache)
    assert current == 0 and list(stale.values()) == [1] and "fl.server" in next(iter(stale))
    assert len(unreadable) == 1 and "broken.json" in unreadable[0]
    assert tool.main([str(cache)]) == 1
    assert "0 current, 1 stale, 1 unreadable" in capsys.readouterr().out
