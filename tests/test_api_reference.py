"""The API reference and the site as a reader sees them: attribute docstrings shown whole, no
path of the machine that built the site, tables in the notebooks' outputs styled, and a build
log without other libraries' messages.

One build of the real site (``python -m fedpl_core.report.docs``, as ``make docs`` runs it) serves
every test here.
"""

from __future__ import annotations

import ast
import builtins
import html
import importlib
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built as ``make docs`` builds it, with matplotlib's font cache made afresh (so a
    library that logs while the site is built has something to say): its folder and the build's
    standard error."""
    tmp = tmp_path_factory.mktemp("api")
    out = tmp / "site"
    mpl = tmp / "mplconfig"
    mpl.mkdir()
    env = {**os.environ, "MPLCONFIGDIR": str(mpl)}
    run = subprocess.run(
        [sys.executable, "-m", "fedpl_core.report.docs", "--notebooks", str(ROOT / "reports"), "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return out, run.stderr


@pytest.fixture(scope="module")
def api(site):
    return (site[0] / "html" / "api.html").read_text(encoding="utf-8")


class _Fields(HTMLParser):
    """The field-list entries of a page (``<dt>Type:</dt><dd>...</dd>``) as (name, text) pairs."""

    def __init__(self):
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._where: str | None = None
        self._name = self._body = ""
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if self._where == "dd":
            self._depth += tag == "dd"
        elif tag == "dt" and cls.startswith("field-"):
            self._where, self._name = "dt", ""
        elif tag == "dd" and cls.startswith("field-"):
            self._where, self._body, self._depth = "dd", "", 0

    def handle_endtag(self, tag):
        if self._where == "dt" and tag == "dt":
            self._where = None
        elif self._where == "dd" and tag == "dd":
            if self._depth:
                self._depth -= 1
            else:
                self.fields.append((self._name.strip().rstrip(":").strip(), " ".join(self._body.split())))
                self._where = None

    def handle_data(self, data):
        if self._where == "dt":
            self._name += data
        elif self._where == "dd":
            self._body += data


def fields(page: str) -> list[tuple[str, str]]:
    parser = _Fields()
    parser.feed(page)
    return parser.fields


def is_type(text: str) -> bool:
    """Whether ``text`` is a Python type expression whose every name is a type: a builtin one
    (``int``, ``list[str]``, ``str | None``) or a dotted name that imports (``numpy.ndarray``)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False

    def dotted(node) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            head = dotted(node.value)
            return f"{head}.{node.attr}" if head else None
        return None

    def resolves(name: str) -> bool:
        parts = name.split(".")
        if len(parts) == 1:
            return isinstance(getattr(builtins, name, None), type)
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for part in parts[cut:]:
                obj = getattr(obj, part, None)
            return isinstance(obj, type)
        return False

    def ok(node) -> bool:
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.BinOp):
            return isinstance(node.op, ast.BitOr) and ok(node.left) and ok(node.right)
        if isinstance(node, ast.Subscript):
            return ok(node.value) and ok(node.slice)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(ok(e) for e in node.elts)
        name = dotted(node)
        return name is not None and resolves(name)

    return ok(tree)


def test_the_type_check_tells_a_type_from_words():
    assert is_type("numpy.ndarray | None") and is_type("list[str]") and is_type("str | os.PathLike | None")
    assert is_type("dict[str, int]")
    assert not is_type("Data source") and not is_type("reset") and not is_type("Network")
    assert not is_type('Options of the data source\'s loader, e.g. {"skip_missing"')


def plain(text: str) -> str:
    """Page text with the typographic quotes Sphinx writes (smartquotes) made plain again."""
    return text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}))


def test_every_type_field_of_the_api_reference_is_a_type(api):
    """napoleon reads an attribute docstring's first line as ``type: description``; the package's
    are plain sentences, so a "Type" field holding words means a docstring cut at its first colon."""
    types = [body for name, body in fields(api) if name.lower() == "type"]
    assert types, "no Type field at all: the Attributes: sections of the class docstrings are no longer read"
    assert "numpy.ndarray" in types  # ImageDataset's Attributes: section, as napoleon writes it
    words = sorted({body for body in types if not is_type(body)})
    assert not words, f"Type fields that are not types (a docstring cut at a colon): {words[:8]}"


def described(api: str, cls: type, member: str) -> str:
    """The text of the description of ``cls.member`` on the API reference."""
    head = (
        f'<span class="pre">{cls.__module__}.</span></span>'
        f'<span class="sig-name descname"><span class="pre">{cls.__name__}<'
    )
    assert head in api, f"{cls.__name__} is not on the page"
    entry = api[api.index(head) + len(head) :]
    name = f'<span class="sig-name descname"><span class="pre">{member}</span></span>'
    assert name in entry, f"{cls.__name__}.{member} is not on the page"
    entry = entry[entry.index(name) :]
    body = entry[entry.index("</dt>") : entry.index("</dd>")]
    return " ".join(plain(html.unescape(re.sub(r"<[^>]+>", " ", body))).split())


def test_a_field_docstring_shows_its_whole_sentence(api):
    from fedpl_core.runs.experiment_config import ExperimentConfig

    shown = described(api, ExperimentConfig, "dataset_kwargs")
    assert shown == """Options of the data source's loader, e.g. {"skip_missing": true}."""


def first_words(text: str, n: int = 6) -> list[str]:
    """The first ``n`` words of reST or of page text, without markup (roles, literals)."""
    text = re.sub(r":[\w:]+:`~?([^`<]*)[^`]*`", r"\1", plain(text)).replace("`", "")
    return re.findall(r"[\w'\"-]+", text)[:n]


def test_every_config_field_reads_as_its_docstring(api):
    """Each field of the config classes is shown from the first word of its docstring (a cut at
    a colon starts it after the colon)."""
    from fedpl_core.base.validation import field_docs
    from fedpl_core.fl.engine_config import EngineConfig
    from fedpl_core.runs.experiment_config import ExperimentConfig

    checked = 0
    for cls in (ExperimentConfig, EngineConfig):
        for name, doc in field_docs(cls).items():
            shown = described(api, cls, name)
            assert first_words(shown) == first_words(doc), f"{cls.__name__}.{name}: {shown[:120]}"
            checked += 1
    assert checked > 40


def test_no_path_of_the_build_machine_on_the_api_reference(site, api):
    out, _ = site
    text = html.unescape(re.sub(r"<[^>]+>", "", api))
    for path in (str(ROOT), str(out), str(Path(out).resolve())):
        assert path not in text and path not in api, f"{path} is on the page"
    assert "PosixPath(" not in text


def test_defaults_are_shown_as_written(api):
    text = html.unescape(re.sub(r"<[^>]+>", "", api))
    assert "build_docs(notebooks=ROOT / 'reports'" in " ".join(text.split())


def test_the_notebooks_tables_are_styled(site):
    out, _ = site
    page = (out / "html" / "notebooks" / "01_fedpsl.html").read_text(encoding="utf-8")
    assert 'class="dataframe"' in page  # the sanitised notebooks keep pandas' table class
    link = re.search(r'<link rel="stylesheet" type="text/css" href="\.\./_static/fedpl\.css(\?[^"]*)?"', page)
    assert link, "the notebook pages do not load the site's styles"
    css = (out / "html" / "_static" / "fedpl.css").read_text()
    rule = re.search(r"\.cell_output table th,\s*\.cell_output table td\s*\{([^}]*)\}", css)
    assert rule and "border:" in rule.group(1) and "padding:" in rule.group(1) and "text-align: right" in rule.group(1)


def test_the_build_log_holds_no_other_librarys_messages(site):
    """Sphinx's warnings have their own handler; matplotlib, say, must not add an INFO line."""
    _, err = site
    lines = [ln for ln in err.splitlines() if ln.strip()]
    stray = [ln for ln in lines if re.search(r"\bINFO\b|fontManager|^# \d{4}-", ln)]
    assert not stray, f"other libraries' messages in the build log: {stray}"
