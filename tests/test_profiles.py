"""Profiles are declared one way: each study's ``PROFILES`` table (smoke / cpu / full rows of
named fields) and :func:`fedpl_core.profiles.apply_parameters`, which applies a notebook's
parameters to a row; every notebook's parameters cell has the same names."""
import importlib
import re
from pathlib import Path

import nbformat
import pytest

from fedpl_core.config import ConfigError
from fedpl_core.profiles import (NOTEBOOK_PARAMETERS, PROFILES, ROW_FIELDS, apply_parameters, check_table,
                                 fields_of)

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ["introduction", "fedpsl", "fedlsm", "surgical", "fedmlp", "benchmark"]
#: study -> the notebook that applies its table
NOTEBOOKS = {"introduction": "00_introduction", "fedpsl": "01_fedpsl", "fedlsm": "02_fedlsm",
             "surgical": "03_surgical_aggregation", "fedmlp": "04_fedmlp", "benchmark": "05_benchmark"}
EXTRAS = {"data_root", "data_roots", "first_order", "pretrained", "exclude"}


def _study(name):
    return importlib.import_module(f"fedpl_core.studies.{name}")


def _plain(v) -> bool:
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))


@pytest.mark.parametrize("name", STUDIES)
def test_every_study_declares_its_profiles_in_one_table(name):
    table = _study(name).PROFILES
    assert list(table) == list(PROFILES) == ["smoke", "cpu", "full"]
    check_table(table)
    for profile, row in table.items():
        assert set(ROW_FIELDS) <= set(row), (name, profile)
        assert all(_plain(v) for v in row.values()), f"{name}.PROFILES[{profile!r}]: plain values only"
        settings_cls = getattr(_study(name), "Settings", None)
        if settings_cls is not None:  # every field of the table is a field of the study's settings
            fields_of(settings_cls, row)


@pytest.mark.parametrize("name", STUDIES)
def test_apply_parameters_overrides_rounds_lr_and_seeds_and_keeps_the_rest(name):
    table = _study(name).PROFILES
    row = apply_parameters(table, "smoke", seeds="[3, 4]", rounds="5", lr="0.02", data_seed=1, device="cpu")
    assert (row["seeds"], row["rounds"], row["lr"], row["data_seed"], row["device"], row["profile"]) == \
        ([3, 4], 5, 0.02, 1, "cpu", "smoke")
    assert {k: v for k, v in row.items() if k not in {*ROW_FIELDS, "data_seed", "device", "profile"}} == \
        {k: v for k, v in table["smoke"].items() if k not in ROW_FIELDS}
    same = apply_parameters(table, "cpu", seeds=None, rounds=None, lr=None)  # None: the profile's value
    assert {k: same[k] for k in ROW_FIELDS} == {k: table["cpu"][k] for k in ROW_FIELDS}
    row["seeds"].append(9)  # a copy: the table is never changed
    assert 9 not in table["smoke"]["seeds"]


def test_the_settings_of_every_study_take_the_applied_rounds_lr_and_seeds():
    from fedpl_core.studies import benchmark, fedlsm, fedmlp, fedpsl, surgical

    p = dict(seeds=[7], rounds=3, lr=0.01, data_seed=2, device="cpu")
    s = fedpsl.settings(apply_parameters(fedpsl.PROFILES, "smoke", **p))
    assert (s.seeds, s.engine.rounds, s.engine.lr, s.config().data_seed) == ([7], 3, 0.01, 2)
    assert fedpsl.settings("smoke", **p) == s
    s = fedlsm.settings(apply_parameters(fedlsm.PROFILES, "smoke", **p))
    e = s.config("Task 1").engine
    assert (s.seeds, e.rounds, e.lr, e.device, s.config("Task 2").data_seed) == ([7], 3, 0.01, "cpu", 2)
    s = fedmlp.settings(apply_parameters(fedmlp.PROFILES, "smoke", **p))
    e = s.config("ICH").engine
    assert (s.seeds, e.rounds, e.lr, s.config("CXR").data_seed) == ([7], 3, 0.01, 2)
    s = surgical.settings(apply_parameters(surgical.profiles(), "smoke", **p))
    assert (s.seeds, s.engine().rounds, s.engine().lr, s.seed) == ([7], 3, 0.01, 2)
    for cfg in benchmark.settings(apply_parameters(benchmark.PROFILES, "smoke", **p)).values():
        assert (cfg.engine.rounds, cfg.engine.lr, cfg.engine.eval_every, cfg.data_seed) == (3, 0.01, 3, 2)


def test_surgical_full_row_follows_the_data_and_the_weights_and_the_notebook_lr_wins():
    from fedpl_core.studies import surgical

    assert surgical.profiles()["full"] == surgical.PROFILES["full"]
    real = surgical.profiles("/", "true")  # papermill's text is read as a boolean
    assert real["full"]["model"] == "densenet121" and real["full"]["image_size"] == 224
    assert real["full"]["lr"] == 5e-5 and real["full"]["model_kwargs"] == {"pretrained": True}
    assert {k: real[k] for k in ("smoke", "cpu")} == {k: surgical.PROFILES[k] for k in ("smoke", "cpu")}
    st = surgical.settings("full", data_root="/", pretrained=True, lr=1e-4)
    assert (st.lr, st.model, st.normalize, st.calibrate_bn) == (1e-4, "densenet121", "imagenet", False)


@pytest.mark.parametrize("params,error,needle", [
    (dict(round=4), TypeError, "unknown notebook parameter(s) ['round']"),
    (dict(rounds=0), ConfigError, "rounds must be >= 1, got 0"),
    (dict(rounds="many"), ConfigError, "rounds"),
    (dict(lr=0), ConfigError, "lr must be a positive number"),
    (dict(lr="-1e-3"), ConfigError, "lr must be a positive number"),
    (dict(lr="fast"), ConfigError, "lr"),
    (dict(seeds="[0, 0]"), ConfigError, "lists a seed twice"),
    (dict(data_root="/nonexistent/folder"), ConfigError, "data_root: folder not found"),
])
def test_apply_parameters_refuses_an_unknown_parameter_or_a_bad_value(params, error, needle):
    from fedpl_core.studies import fedpsl

    with pytest.raises(error) as e:
        apply_parameters(fedpsl.PROFILES, "cpu", **params)
    assert needle in str(e.value)


def test_apply_parameters_refuses_an_unknown_profile_and_a_table_that_is_not_one():
    with pytest.raises(ValueError, match="unknown profile 'gpu'"):
        apply_parameters(_study("fedpsl").PROFILES, "gpu")
    with pytest.raises(ValueError, match="exactly the rows smoke, cpu, full"):
        apply_parameters({"smoke": {"seeds": [0], "rounds": 1, "lr": 1e-3}}, "smoke")
    with pytest.raises(ValueError, match=r"PROFILES\['cpu'\] lacks lr"):
        check_table({p: {"seeds": [0], "rounds": 1, **({} if p == "cpu" else {"lr": 1.0})} for p in PROFILES})
    with pytest.raises(TypeError, match="has no field"):  # a misspelt field of a table is never ignored
        _study("fedpsl").settings({**apply_parameters(_study("fedpsl").PROFILES, "smoke"), "roundz": 3})


def _cells(nb):
    cells = nbformat.read(ROOT / "notebooks" / f"{nb}.ipynb", as_version=4).cells
    i = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    return cells[i].source, cells[i + 1].source


@pytest.mark.parametrize("name", STUDIES)
def test_every_parameters_cell_has_the_same_names_and_applies_them_one_way(name):
    params, setup = _cells(NOTEBOOKS[name])
    names = re.findall(r"^(\w+) = ", params, flags=re.M)
    assert tuple(names[:len(NOTEBOOK_PARAMETERS)]) == NOTEBOOK_PARAMETERS, names
    assert set(names[len(NOTEBOOK_PARAMETERS):]) <= EXTRAS, names
    call = setup[setup.index("apply_parameters("):]
    call = call[:call.index(")\n")]
    assert "PROFILES" in call or "profiles(" in call
    for k in names[1:]:  # every parameter goes through the one function
        assert f"{k}={k}" in call, (name, k)
    assert "(P_[k] for k in NOTEBOOK_PARAMETERS)" in setup
    assert "pick(" not in setup and "notebook_parameters(" not in setup
    assert not re.search(r"^if rounds|^\s*S\.rounds =|S\.engine = ", setup, flags=re.M)
