"""A cached result is read back against one schema: its rounds are its config's, its
per-class lists hold one value per class, its class names are its data's, each count,
time and share has its type and range, and the file is parsed within bounds.

Before, each of these was read back as a valid result: rounds after the run's last
(``final.round`` 999 of a 2-round run), repeated, missing or out of order; more records
than rounds; an evaluation where the run evaluates none; a per-class list of 9 values
for 3 classes (``per_class()`` then raised); class names swapped or named twice (a wrong
per-class table); ``timings.total_s`` -100; ``n_defined`` 1e30, a float, or more than the
classes; ``n_classes`` that is not the number of classes; a string as a method's logged
number; a key given twice in a mapping; a file of any size or node count, and invalid
JSON or one running out of memory was not a ResultFileError.  Each refused case below
failed on the code before (it raised nothing, or not that); a negative ``eval_time``, a
``pl/`` share over 1 and a file nested thousands of levels deep were refused before too,
and stay so."""

from __future__ import annotations

import copy
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import tiny  # noqa: E402

from fedpl_core.data import synthetic  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs import schema as R  # noqa: E402
from fedpl_core.runs.results import final_record
from fedpl_core.runs.runner import run  # noqa: E402
from fedpl_core.runs.schema import ResultFileError, expected_classes, parse_result, read_result  # noqa: E402


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One tiny real run (2 rounds, 3 classes, a best round): its config and its file's JSON."""
    cfg = tiny(engine=EngineConfig(rounds=2, batch_size=32, progress=False, selection="auroc_mean"))
    out = tmp_path_factory.mktemp("schema")
    run(cfg, out)
    return cfg, json.loads((out / f"{cfg.run_id()}.json").read_text())


@pytest.fixture
def d(made):
    """A fresh copy of the valid result to edit."""
    return copy.deepcopy(made[1])


def parse(made, d, own_config=True):
    cfg = made[0]
    return parse_result(json.dumps(d), cfg.run_id(), cfg.to_dict() if own_config else None)


def relink(d, edit):
    """Apply ``edit`` to the history, then make ``final`` and ``best`` its records again (as
    the engine would have), so that only the edited property is wrong."""
    best_at = next((i for i, h in enumerate(d["history"]) if h == d["best"]), None)
    edit(d["history"])
    d["final"] = copy.deepcopy(final_record(d["history"]))
    if best_at is not None:
        d["best"] = copy.deepcopy(d["history"][min(best_at, len(d["history"]) - 1)])
    return d


def refused(made, d, needle, own_config=True):
    with pytest.raises(ResultFileError) as e:
        parse(made, d, own_config)
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_the_valid_result_passes(made, d, tmp_path):
    cfg = made[0]
    res = parse(made, d)
    assert [h["round"] for h in res.history] == [1, 2] and res.class_names == cfg.classes
    assert res.per_class().shape[0] == len(cfg.classes)
    f = tmp_path / f"{cfg.run_id()}.json"
    f.write_text(json.dumps(d))
    assert read_result(f, cfg.to_dict()).final == res.final


# ----------------------------------------------------------------------------- rounds
def _set_round(i, r):
    return lambda h: h[i].__setitem__("round", r)


ROUNDS = {
    "final_round_999": (_set_round(1, 999), "history[1].round is 999, after the run's last round (2)"),
    "repeated_round": (_set_round(1, 1), "history[1].round is 1, after round 1: not in order"),
    "out_of_order": (lambda h: h.reverse(), "history[0].round is 2: the history has no record of round 1"),
    "extra_record": (lambda h: h.append({**h[-1], "round": 3}), "history holds 3 records for a run of 2 rounds"),
    "missing_round": (_set_round(0, 2), "history[0].round is 2: the history has no record of round 1"),
    "ends_early": (lambda h: h.pop(), "history ends at round 1 of 2, and the run has no patience to stop early"),
    "no_evaluation": (
        lambda h: [h[0].pop(k) for k in list(h[0]) if k not in ("round", "train_loss", "train_time")],
        "history[0] (round 1) holds no evaluation; the run evaluates every 1 round(s) and the last",
    ),
}


@pytest.mark.parametrize("case", list(ROUNDS))
def test_rounds_must_be_the_configs(made, d, case):
    edit, needle = ROUNDS[case]
    refused(made, relink(d, edit), needle)


def test_an_evaluation_off_the_schedule_is_refused(made, d):
    d["config"]["engine"]["eval_every"] = 2  # round 1 is not due, yet it holds an evaluation
    refused(made, d, "history[0] (round 1) holds an evaluation; the run evaluates every 2 round(s)", own_config=False)


def test_an_early_stop_is_a_valid_end(made, d):
    """With patience, a run may end before its last round, after a record of its selection
    key (``train_loss`` is in every record: a round that was not evaluated, too)."""
    d["config"]["engine"]["patience"] = 1
    relink(d, lambda h: h.pop())
    assert [h["round"] for h in parse(made, d, own_config=False).history] == [1]
    for rec in (d["history"][0], d["final"], d["best"]):
        rec.pop("auroc_mean")  # the selection key
    refused(made, d, "history ends at round 1 of 2 on a record without auroc_mean", own_config=False)


def test_an_early_stop_on_a_round_that_was_not_evaluated_is_read_back(tmp_path):
    """Selection on train_loss stops after round 2, which eval_every=3 does not evaluate."""
    cfg = tiny(
        engine=EngineConfig(
            rounds=4,
            eval_every=3,
            patience=1,
            selection="train_loss",
            selection_mode="max",
            batch_size=32,
            progress=False,
        )
    )
    first = run(cfg, tmp_path)
    assert first is not None
    assert [h["round"] for h in first.history] == [1, 2] and "eval_time" not in first.history[-1]
    assert read_result(tmp_path / f"{cfg.run_id()}.json", cfg.to_dict()).history == first.history


# ----------------------------------------------------------------------- class lists
def test_a_per_class_list_has_one_value_per_class(made, d):
    relink(d, lambda h: h[-1].__setitem__("auroc_per_class", [0.5] * 9))
    refused(made, d, "history[1].auroc_per_class holds 9 values for 3 classes")


def test_n_positives_has_one_count_per_class(made, d):
    d["history"][0]["n_positives"] = d["history"][0]["n_positives"] + [4]
    refused(made, d, "history[0].n_positives holds 4 values for 3 classes")


def test_swapped_class_names_are_refused(made, d):
    names = d["class_names"]
    d["class_names"] = [names[1], names[0], *names[2:]]
    refused(made, d, f"history[0].class_names[0] is {names[0]!r}, where class_names[0] is {names[1]!r}")


def test_class_names_swapped_everywhere_are_not_the_datas(made, d):
    names = d["class_names"]
    swapped = [names[1], names[0], *names[2:]]
    d["class_names"] = swapped
    for rec in [*d["history"], d["final"], d["best"]]:
        rec["class_names"] = swapped
    refused(made, d, f"class_names[0] is {names[1]!r}, where its data (synthetic-cxr, the config's classes) has")


def test_a_class_named_twice_is_refused(made, d):
    d["class_names"][2] = d["class_names"][0]
    refused(made, d, f"class_names names {d['class_names'][0]!r} twice")


def test_a_class_the_model_lacks_is_refused(made, d):
    d["history"][0]["class_names"] = d["history"][0]["class_names"][:2] + ["Hernia"]
    refused(made, d, "history[0].class_names names 'Hernia', not a class of the model")


def test_the_classes_a_config_says():
    """The classes a stored config says without building the data; None where it does not."""
    assert expected_classes({"dataset": "synthetic-cxr", "classes": None}) == synthetic.NIH14
    assert expected_classes({"dataset": "synthetic-skin", "classes": ["NV", "MEL"]}) == ["NV", "MEL"]
    assert expected_classes({"dataset": "synthetic-ich", "classes": None}) == synthetic.ICH_CLASSES
    assert expected_classes({"dataset": "tb", "classes": None}) == ["Tuberculosis"]
    assert expected_classes({"dataset": "nih", "classes": ["Mass"]}) == ["Mass"]
    assert expected_classes({"dataset": "nih", "classes": None}) is None  # the files say them
    assert expected_classes({"dataset": "fedpsl", "classes": None}) is None  # its tables fix them
    assert expected_classes({"dataset": "someone-elses", "classes": ["a"]}) is None  # a plugin's source
    with pytest.raises(ResultFileError, match="config.classes names 'a' twice"):
        expected_classes({"dataset": "synthetic-cxr", "classes": ["a", "a"]})


# ------------------------------------------------------------- counts, times, numbers
def _final(**values):
    def edit(d):
        for rec in (d["history"][-1], d["final"], *([d["best"]] if d["best"] == d["history"][-1] else [])):
            rec.update(values)
        return d

    return edit


NUMBERS = {
    "total_s": (lambda d: d["timings"].__setitem__("total_s", -100.0) or d, "timings.total_s is -100.0, below 0"),
    "n_defined_1e30": (_final(n_defined=1e30), "history[1].n_defined is 1e+30, not an integer count"),
    "n_defined_float": (_final(n_defined=3.0), "history[1].n_defined is 3.0, not an integer count"),
    "n_defined_over": (_final(n_defined=4), "history[1].n_defined is 4, outside [0, 3] (its classes)"),
    "n_defined_under": (_final(n_defined=0), "history[1].n_defined is 0, below the 3 classes with an AUROC"),
    "n_classes": (_final(n_classes=9), "history[1].n_classes is 9, for 3 classes"),
    "n_positives": (_final(n_positives=[1, 2.5, 3]), "history[1].n_positives is not a list of counts (integers)"),
    "few_positives": (_final(few_positives=["Hernia"]), "few_positives names 'Hernia', not a class of its evaluation"),
    "eval_time": (_final(eval_time=-1.0), "history[1].eval_time is -1.0, below 0"),
    "log_text": (_final(**{"log/kd_weight": "high"}), "history[1].log/kd_weight is 'high', not a number"),
    "unknown_list": (_final(extra=[1, 2]), "history[1].extra is [1, 2], not a number"),
    "pl_share": (_final(**{"pl/coverage": 1.5}), "history[1].pl/coverage is 1.5, outside [0, 1]"),
    "set_per_class": (
        _final(**{"external/auroc_per_class": [0.5] * 4, "external/class_names": ["Effusion"]}),
        "history[1].external/auroc_per_class holds 4 values for 1 classes",
    ),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_each_count_time_and_number_has_its_type_and_range(made, d, case):
    edit, needle = NUMBERS[case]
    refused(made, edit(d), needle)


def test_losses_and_logged_numbers_may_be_negative(made, d):
    """A method's training loss and its logs have no sign: SimSiam's pre-training loss is a
    negative cosine similarity, FedPU's PU risk is not clamped at 0 (cached FedSSP results
    hold negative training losses)."""
    parse(made, _final(train_loss=-0.004, val_loss=-0.5, **{"log/ssp_loss": -0.004})(d))


# ------------------------------------------------------------------------ the parse
def test_a_key_given_twice_is_refused(made, d):
    text = json.dumps(d)
    text = text.replace('"run_id":', '"run_id": "x", "run_id":', 1)
    with pytest.raises(ResultFileError, match="key 'run_id' is given twice"):
        parse_result(text)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than"),
        ('{"config": ' + "[" * 80 + "]" * 80 + "}", f"nested more than {R.RESULT_MAX_DEPTH} levels deep"),
        ('{"a": ' + "1" * 5000 + "}", "it is not valid JSON"),
        ('{"a": 1', "it is not valid JSON (Expecting"),
    ],
)
def test_the_parse_is_bounded_in_depth_and_says_why_in_one_line(text, needle):
    with pytest.raises(ResultFileError) as e:
        parse_result(text)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_the_parse_is_bounded_in_nodes_and_size(made, d, tmp_path, monkeypatch):
    cfg = made[0]
    f = tmp_path / f"{cfg.run_id()}.json"
    f.write_text(json.dumps(d))
    monkeypatch.setattr(R, "RESULT_MAX_NODES", 100)
    with pytest.raises(ResultFileError, match="it expands to more than 100 values"):
        read_result(f)
    monkeypatch.setattr(R, "RESULT_MAX_BYTES", 1000)
    with pytest.raises(ResultFileError, match="it is over 0 MiB"):
        read_result(f)
    with pytest.raises(ResultFileError, match="it is over"):
        parse_result(json.dumps(d))


def test_running_out_of_memory_while_parsing_is_a_result_file_error(monkeypatch):
    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(R.json, "loads", no_memory)
    with pytest.raises(ResultFileError, match="it is too large to read"):
        parse_result("{}")


def test_the_bounds_hold_the_largest_result_with_room():
    """A result holds its config one level down: the depth bound is above the config's."""
    from fedpl_core.base.config_files import CONFIG_MAX_DEPTH, CONFIG_MAX_NODES

    assert R.RESULT_MAX_DEPTH > CONFIG_MAX_DEPTH and R.RESULT_MAX_NODES > 10 * CONFIG_MAX_NODES
    assert R.RESULT_MAX_BYTES >= 100 * 142_450  # the largest result of the studies, in bytes
