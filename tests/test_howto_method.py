"""The how-to page "How to add your own method (a plugin) and run it in a notebook"
(``docs/howto_method.md``) and its example, ``examples/trimmed_mean.py``: the page shows the
file as it is; the plugin registers its method; the engine calls the method's ``aggregate``,
which computes the trimmed mean (checked against a hand computation, and against FedAvg where
they must differ); the page's command lines and its Python block run as shown."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

from test_reliability import tiny  # noqa: E402

from fedpl_core.base.validation import ConfigError  # noqa: E402
from fedpl_core.fl.federation import ClientUpdate  # noqa: E402
from fedpl_core.methods import METHODS, Method, get_method  # noqa: E402
from fedpl_core.methods.fedavg import FedAvg  # noqa: E402
from fedpl_core.nn.aggregation import weighted_average  # noqa: E402
from fedpl_core.runs.build import build_simulation  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "howto_method.md"
EXAMPLE = ROOT / "examples" / "trimmed_mean.py"
PLUGIN = "examples.trimmed_mean"


def block_after(marker: str, lang: str) -> str:
    """The text of the first ```lang block of the page after the comment line ``% marker``."""
    text = PAGE.read_text(encoding="utf-8")
    assert f"\n% {marker}" in text, f"the page has no '% {marker}' comment"
    rest = text.split(f"\n% {marker}", 1)[1]
    return rest.split(f"```{lang}\n", 1)[1].split("\n```", 1)[0] + "\n"


def commands(block: str) -> list[str]:
    """The command lines of a bash block (continuation lines joined, comments dropped)."""
    out, cur = [], ""
    for line in block.splitlines():
        if line.lstrip().startswith("#"):
            continue
        line = line.split("  # ")[0].rstrip()
        cur += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            if cur.strip():
                out.append(cur.strip())
            cur = ""
    return out


@pytest.fixture
def plugin(monkeypatch):
    """The example loaded as the page loads it (``load_plugins``), the checkout's root on the
    path; afterwards the registry, the plugin list and ``$FEDPL_PLUGINS`` are as they were."""
    from fedpl_core.base import plugins

    monkeypatch.setenv(plugins.ENV, "")
    monkeypatch.syspath_prepend(str(ROOT))
    methods, loaded = dict(METHODS), list(plugins._loaded)
    for m in (PLUGIN, "examples"):
        sys.modules.pop(m, None)
    assert "trimmed_mean" not in METHODS
    plugins.load_plugins([PLUGIN])
    yield sys.modules[PLUGIN]
    for k in set(METHODS) - set(methods):
        del METHODS[k]
    plugins._loaded[:] = loaded
    for m in (PLUGIN, "examples"):
        sys.modules.pop(m, None)


# ------------------------------------------------------------------ the page shows the file
def test_the_page_shows_the_example_file_as_it_is():
    """The site may not read files into its pages (``file_insertion_enabled`` is off), so the
    page holds a copy of the file: it must be the file, character for character."""
    text = PAGE.read_text(encoding="utf-8")
    named = re.search(r"^% example: (\S+)", text, re.M)
    assert named and (ROOT / named.group(1)) == EXAMPLE and EXAMPLE.is_file()
    assert block_after("example:", "python") == EXAMPLE.read_text(encoding="utf-8")


def test_the_page_is_in_the_guide_and_linked_from_where_a_reader_looks():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    guide = index.split(":caption: Guide", 1)[1].split("```", 1)[0].split()
    assert "howto_method" in guide and "glossary" in guide
    start = index.split("**Where to start.**", 1)[1].split("```", 1)[0]
    assert "(howto_method.md)" in start
    for page in ("methods.md", "notebooks.md"):
        assert "(howto_method.md)" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
    assert PAGE.read_text(encoding="utf-8").startswith("# How to add your own method (a plugin)")


# ------------------------------------------------------------------ the plugin and its hook
def test_the_plugin_registers_a_method_with_its_own_aggregate(plugin):
    m = get_method("trimmed_mean", trim=2)
    assert type(m) is plugin.TrimmedMean and m.trim == 2
    assert type(m).aggregate is not Method.aggregate and type(m).aggregate is not FedAvg.aggregate
    with pytest.raises(ConfigError, match="option trim must be a whole number >=0"):
        get_method("trimmed_mean", trim=-1)
    with pytest.raises(ConfigError, match="option trim"):
        get_method("trimmed_mean", trim=1.5)


def _update(k, w, n=10):
    return ClientUpdate(k, {"w": torch.tensor(w), "bn.num_batches_tracked": torch.tensor(k + 3)}, n)


def test_aggregate_is_the_trimmed_mean_of_hand_made_updates(plugin):
    # five clients, two entries; the last client is far off in the first entry
    updates = [_update(k, w) for k, w in enumerate([[0.0, 5.0], [1.0, 4.0], [2.0, 3.0], [3.0, 2.0], [100.0, 1.0]])]
    kept = torch.tensor([9.0])  # an array no client sends (it stays on the clients): left as it is
    server = SimpleNamespace(global_state={"bn.running_mean": kept})
    get_method("trimmed_mean", trim=1).aggregate(server, updates)
    assert server.global_state["bn.running_mean"] is kept
    # by hand: drop the largest and the smallest of each entry, average the three left
    assert server.global_state["w"].tolist() == [2.0, 3.0]  # (1+2+3)/3, (4+3+2)/3
    assert server.global_state["bn.num_batches_tracked"].item() == 7  # the largest, as FedAvg
    fedavg = SimpleNamespace(global_state={})
    get_method("fedavg", weighting="uniform").aggregate(fedavg, updates)
    assert fedavg.global_state["w"][0].item() == pytest.approx(21.2)  # the outlier pulls FedAvg's mean

    get_method("trimmed_mean", trim=0).aggregate(server, updates)  # no trimming: the plain mean
    assert torch.allclose(server.global_state["w"], fedavg.global_state["w"])
    get_method("trimmed_mean", trim=5).aggregate(server, updates)  # more than there is: the median
    assert server.global_state["w"].tolist() == [2.0, 3.0]
    get_method("trimmed_mean", trim=1).aggregate(server, updates[:2])  # two clients: nothing to drop
    assert server.global_state["w"].tolist() == [0.5, 4.5]


def test_the_engine_calls_the_plugins_aggregate(plugin):
    """One round of a tiny federation: the global model the engine ends the round with is, array
    by array, the median (trim 1 of 3 clients) of what the clients sent, computed here with
    numpy, and not FedAvg's mean of it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny partition leaves a class without positives on a client
        sim = build_simulation(tiny(method="trimmed_mean", method_kwargs={"trim": 1}))
    assert len(sim.sites) == 3
    sent = []
    engine_aggregate = sim.server.aggregate

    def record(updates):
        sent.append(updates)
        engine_aggregate(updates)

    sim.server.aggregate = record
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sim.step()
    (updates,) = sent
    assert len(updates) == 3
    got = sim.server.global_state
    fedavg = weighted_average([u.state for u in updates], [u.num_samples for u in updates])
    differs = 0
    for key in updates[0].state:
        values = np.stack([u.state[key].numpy() for u in updates])
        if values.dtype.kind == "f":
            expect = np.sort(values, axis=0)[1]  # the middle one of three
            np.testing.assert_array_equal(got[key].numpy(), expect, err_msg=key)
            differs += not torch.allclose(got[key], fedavg[key])
        else:
            np.testing.assert_array_equal(got[key].numpy(), values.max(axis=0), err_msg=key)
    assert differs > 0  # the median is not FedAvg's mean


# ------------------------------------------------------------------ the page's commands
def _env():
    """The environment without a plugin of its own and without ``PYTHONPATH``: ``examples`` is
    found from the working directory (the checkout's root), as a reader's command finds it."""
    return {k: v for k, v in os.environ.items() if k not in ("FEDPL_PLUGINS", "PYTHONPATH")}


def test_the_command_lines_of_the_page_run():
    cmds = commands(block_after("howto-commands: tested", "bash"))
    assert len(cmds) == 2 and all(c.startswith(f"python -m fedpl_core --plugin {PLUGIN} ") for c in cmds)
    out = []
    for cmd in cmds:
        p = subprocess.run(
            [sys.executable, *shlex.split(cmd)[1:], *(["--progress", "false"] if " run " in cmd else [])],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, f"{cmd}\n{p.stderr}"
        out.append(p.stdout)
    listing = out[0].split("Other methods", 1)[1]
    said = "FedAvg's clients; a trimmed mean of each entry on the server."  # the docstring's first sentence
    flat = " ".join(listing.split())  # the listing wraps to the terminal's width
    assert re.search(r"\btrimmed_mean " + re.escape(said), flat)
    assert re.match(r"trimmed_mean: final auroc_mean=0\.\d{4} .* after 3 rounds", out[1].strip().splitlines()[-1])


def test_the_python_block_of_the_page_runs(tmp_path):
    """The block as a script, from the checkout's root: one row per method."""
    script = tmp_path / "howto.py"
    script.write_text(block_after("howto-python: tested", "python"))
    p = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = [ln for ln in p.stdout.splitlines() if re.search(r"\b0\.\d+$", ln)]
    assert len(rows) == 2 and "fedavg" in rows[0] and "trimmed mean, trim=2" in rows[1], p.stdout


# ------------------------------------------------------------------ the site's search
#: the pages a search for "add method" or "plugin" also finds, built with the how-to
SEARCH_PAGES = ("howto_method", "methods", "notebooks", "usage", "reliability", "changelog")


@pytest.fixture(scope="module")
def search_site(tmp_path_factory):
    """The how-to and the pages that compete with it in a search, built by Sphinx with the
    site's configuration (a small site: the full one needs the executed notebooks)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("html")
    for name in ("conf.py", "docutils.conf"):
        (src / name).write_bytes((ROOT / "docs" / name).read_bytes())
    if (ROOT / "docs" / "_static").is_dir():
        shutil.copytree(ROOT / "docs" / "_static", src / "_static")
    for page in SEARCH_PAGES:
        (src / f"{page}.md").write_text((ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8"), encoding="utf-8")
    (src / "index.md").write_text("# fedpl\n\n```{toctree}\n" + "\n".join(SEARCH_PAGES) + "\n```\n")
    p = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "1", str(src), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return out


def test_the_search_index_makes_the_page_the_main_entry_of_add_method_and_plugin(search_site):
    index = json.loads((search_site / "searchindex.js").read_text().split("(", 1)[1].rsplit(")", 1)[0])
    page = index["docnames"].index("howto_method")
    for entry in ("add method", "add a method", "plugin"):
        assert [page, "index-0", True] in index["indexentries"][entry], entry  # True: a main entry


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium (headless) to run the site's search")
@pytest.mark.parametrize("query", ["add method", "add a method", "plugin"])
def test_the_sites_search_lists_the_page_first(search_site, query):
    """Sphinx's own search script, run by a browser on the built page: the first result."""
    url = (search_site / "search.html").as_uri() + "?q=" + query.replace(" ", "+")
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    results = re.findall(r'<ul role="list" class="search">\s*<li[^>]*><a href="([^"#]+)', dom)
    assert results, dom[-2000:]
    assert results[0] == "howto_method.html"
