"""Cases a probe of new bad inputs found, fixed in the shared layers: integers written beyond
what a float holds, schedules that would never end, a plugin that exits or names itself with a
trailing newline or replaces the catalogue's builder, and a misspelt ``$FEDPL_KEEP_STALE``."""

from __future__ import annotations

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability_cli import one_error_line  # noqa: E402

from fedpl_core.apps.cli import main  # noqa: E402
from fedpl_core.base.validation import ConfigError  # noqa: E402
from fedpl_core.fl.engine_config import EngineConfig  # noqa: E402
from fedpl_core.runs.experiment_config import ExperimentConfig  # noqa: E402


def run_main(capsys, *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    return rc, capsys.readouterr().err


# ------------------------------------------------------------------ integers and schedules
def test_a_seed_keeps_every_digit():
    """``9007199254740993`` read through a float became ``...992``: another seed with the same run."""
    a, b = ExperimentConfig(seed="9007199254740993"), ExperimentConfig(seed="9007199254740992")
    assert a.seed == 9007199254740993 and a.run_id() != b.run_id()
    assert ExperimentConfig(seed="1e3").seed == 1000 and ExperimentConfig(seed="1_000").seed == 1000
    with pytest.raises(ConfigError, match=r"^seed '1e17' is written as a float beyond 2\*\*53"):
        ExperimentConfig(seed="1e17")


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("--rounds", "1e308", "rounds '1e308' is written as a float beyond 2**53"),
        ("--rounds", "1000001", "rounds 1000001 is beyond 100,000"),
        ("--local-epochs", "1e9", "local_epochs 1000000000.0 is beyond 10,000"),
    ],
)
def test_a_schedule_that_would_not_end_is_one_line_before_any_work(capsys, flag, value, says):
    rc, err = run_main(capsys, "run", flag, value, "--n-train", "64", "--n-test", "32")
    assert rc == 2 and says in one_error_line(err)


def test_the_schedule_bound_holds_from_python_and_papermill():
    from fedpl_core.studies.parameters import PARAMETERS

    with pytest.raises(ConfigError, match="rounds 200000 is beyond 100,000"):
        EngineConfig(rounds=200_000)
    with pytest.raises(ConfigError, match="rounds must be at most 100,000"):
        PARAMETERS["rounds"]("200000", "rounds")
    assert EngineConfig(rounds=500, local_epochs=5).rounds == 500


# ------------------------------------------------------------------ plugins
@pytest.fixture
def plugin(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FEDPL_PLUGINS", "")
    names = iter(f"plug_{uuid.uuid4().hex[:10]}" for _ in range(9))
    return lambda source: (lambda n: ((tmp_path / f"{n}.py").write_text(source), n)[1])(next(names))


@pytest.mark.parametrize("code", ["0", "'bye'", "None"])
def test_a_plugin_that_exits_while_importing_is_one_line_naming_it(capsys, plugin, code):
    name = plugin(f"import sys\nsys.exit({code})\n")
    rc, err = run_main(capsys, "--plugin", name, "methods")
    assert rc == 2 and f"plugin {name!r} called sys.exit(" in one_error_line(err)


@pytest.mark.parametrize("kind, line", [("method", "class Mine(FedAvg):\n    name = {n!r}\n"), ("source", "")])
def test_a_name_with_a_trailing_newline_is_no_file_name(capsys, plugin, kind, line):
    """``re.match`` with ``$`` lets ``"evil\\n"`` through: the result file's name held a newline."""
    from fedpl_core.data.sources import SOURCES
    from fedpl_core.methods import METHODS

    src = (
        "from fedpl_core.methods import register\nfrom fedpl_core.methods.fedavg import FedAvg\n\n@register\n"
        + line.format(n="evil\n")
        if kind == "method"
        else "from fedpl_core.data.sources import register_source\n\n@register_source('evil\\n')\ndef f(*a, **k): ...\n"
    )
    rc, err = run_main(capsys, "--plugin", plugin(src), "methods")
    assert rc == 2 and "name 'evil\\n' cannot be registered" in one_error_line(err)
    assert "evil\n" not in METHODS and "evil\n" not in SOURCES


def test_a_plugin_cannot_replace_the_builder_of_the_catalogues_data_sets(capsys, plugin):
    from fedpl_core.data.sources.base import FALLBACK

    before = dict(FALLBACK)
    src = (
        "from fedpl_core.data.sources.base import register_fallback_source\n\n"
        "@register_fallback_source\ndef f(*a, **k): ...\n"
    )
    name = plugin(src)
    rc, err = run_main(capsys, "--plugin", name, "methods")
    assert rc == 2 and f"plugin {name!r} replaces the builder of the catalogue's data sets" in one_error_line(err)
    assert FALLBACK == before


# ------------------------------------------------------------------ the environment
def test_a_misspelt_keep_stale_is_refused_not_read_as_no(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("FEDPL_KEEP_STALE", "maybe")
    rc, err = run_main(capsys, "run", "--results-dir", str(tmp_path), "--rounds", "1", "--n-train", "64")
    assert rc == 2 and "$FEDPL_KEEP_STALE must be a boolean (true/false), got 'maybe'" in one_error_line(err)
    from fedpl_core.runs.provenance import keep_stale_default

    monkeypatch.setenv("FEDPL_KEEP_STALE", "off")
    assert keep_stale_default(None) is False


def test_a_notebook_name_is_matched_whole():
    """``$`` matches before a trailing newline: ``'a.ipynb\\n'`` had passed as a plain name."""
    from fedpl_core.report.sanitize import UnsafeInput, check_name

    assert check_name("00_a.ipynb") == "00_a.ipynb"
    with pytest.raises(UnsafeInput, match="is not plain"):
        check_name("00_a.ipynb\n")
