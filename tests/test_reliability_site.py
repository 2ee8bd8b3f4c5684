"""The documentation site and the run record under hostile or damaged input: a run record is
read against its schema (nothing it holds reaches a page unchecked, and a bad one is one line,
never a traceback); the banner is escaped; math cannot make a ``javascript:`` link (the site's
MathJax loads ``ui/safe``, and the sanitiser refuses such math); the builder deletes and
replaces only what it made, and never writes through a link planted in a previous site; a
stale result is counted however its warning is worded, and a run that kept stale results does
not claim today's code made them."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from fedpl_core.report import docs as D
from fedpl_core.report import record as R
from fedpl_core.report.docs import DocsError, build_docs, main, stage
from fedpl_core.report.sanitize import banner_html, unsafe_tex_links
from fedpl_core.runs.results import stale_message

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")


def notebook(markdown="# A", outputs=None):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
    code = nbformat.v4.new_code_cell("x")
    code.outputs = outputs or [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    nb.cells.append(code)
    return nb


sys.path.insert(0, str(Path(__file__).parent))
from test_docs import write  # noqa: E402  (the site builder's tests share their notebooks' writer)


def site_text(html: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in html.rglob("*.html"))


def good_record() -> dict:
    fp = "0123456789abcdef"
    return {
        "commit": "f432e1e0b4ad4fcced39b59e97166d7672a2f287",
        "dirty": False,
        "profile": "cpu",
        "date": "2026-11-28T09:11:21+00:00",
        "cpus": 2,
        "numeric_platform": "torch",
        "code_fingerprint": fp,
        "code": {"fedpl_core/__init__.py": "f59573553ee9e632", "notebooks/00_a.ipynb": "0" * 16},
        "notebooks": {"00_a": {"code_fingerprint": fp, "profile": "cpu", "seconds": 1.0, "status": "ok"}},
        "invocations": [{"date": "2026-11-28T09:11:21+00:00", "notebooks": ["00_a"], "seconds": 1.0}],
    }


# ------------------------------------------------------------------ the run record's schema
HOSTILE = {
    "code_fingerprint": lambda r: r.update(code_fingerprint="<img src=x onerror=alert(1)>"),
    "profile": lambda r: r.update(profile="<script>alert(2)</script>"),
    "notebook name": lambda r: r["notebooks"].update({"<svg onload=alert(3)>": r["notebooks"]["00_a"]}),
    "code path": lambda r: r["code"].update({"<b>x</b>.py": "0" * 16}),
    "entry fingerprint": lambda r: r["notebooks"]["00_a"].update(code_fingerprint="<i>x</i>"),
    "no code": lambda r: r.update(code={}),
    "code missing": lambda r: r.pop("code"),
    "fingerprint missing": lambda r: r.pop("code_fingerprint"),
    "commit a number": lambda r: r.update(commit=5),
    "commit not hex": lambda r: r.update(commit="<b>"),
    "dirty text": lambda r: r.update(dirty="yes"),
    "date not ISO": lambda r: r.update(date="yesterday <script>"),
    "notebooks a list": lambda r: r.update(notebooks=["00_a"]),
    "entry a number": lambda r: r["notebooks"].update({"00_a": 5}),
    "seconds text": lambda r: r["notebooks"]["00_a"].update(seconds="1"),
    "invocations a mapping": lambda r: r.update(invocations={}),
    "invocation notebook name": lambda r: r["invocations"][0].update(notebooks=["<svg>"]),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_record_of_the_wrong_form_is_refused_in_one_line_naming_the_file(tmp_path, kind):
    rec = good_record()
    HOSTILE[kind](rec)
    (tmp_path / R.RECORD).write_text(json.dumps(rec))
    with pytest.raises(R.RecordError) as e:
        R.read_record(tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"run record {tmp_path / R.RECORD}") and "\n" not in msg


def test_the_committed_record_and_a_written_one_have_the_form(tmp_path):
    assert R.read_record(ROOT / "reports") is not None
    assert R.read_record(tmp_path) is None  # no record: none
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {"rounds": 2})])
    assert R.read_record(tmp_path)["notebooks"]["00_a"]["parameters"] == {"rounds": 2}
    (tmp_path / R.RECORD).write_text('{"code": {}}')  # a damaged record is replaced by the next run
    R.write_record(tmp_path, "cpu", [("00_b", 1.0, "ok", {})])
    assert list(R.read_record(tmp_path)["notebooks"]) == ["00_b"]


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"code": {}}', '{"code": {"a": 1}, "commit": 5}'])
def test_the_site_builder_says_a_bad_record_in_one_line_before_writing(tmp_path, capsys, content):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    (nbs / R.RECORD).write_text(content)
    code = main(["--notebooks", str(nbs), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"fedpl: error: run record {nbs / R.RECORD}") and "\n" not in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_record_that_is_a_link_or_a_device_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / R.RECORD)
    with pytest.raises(R.RecordError, match="symbolic link"):
        R.read_record(tmp_path)


def test_a_hostile_record_puts_no_markup_on_any_page(tmp_path, tiny_docs, capsys):
    """The user's report: script in the record's fingerprint, profile and a notebook's name."""
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    rec = good_record()
    for kind in ("code_fingerprint", "profile", "notebook name"):
        HOSTILE[kind](rec)
    (nbs / R.RECORD).write_text(json.dumps(rec))
    code = main(["--notebooks", str(nbs), "--out", str(tmp_path / "out"), "--docs", str(tiny_docs)])
    assert code == 2 and "run record" in capsys.readouterr().err
    assert not (tmp_path / "out" / "html").exists()


def test_the_banner_is_escaped_on_every_page(tmp_path, tiny_docs, monkeypatch):
    """Whatever the banner says, the theme's announcement shows it as text."""
    assert banner_html('<img src=x onerror="a">') == "&lt;img src=x onerror=&quot;a&quot;&gt;"
    monkeypatch.setattr(R, "describe", lambda rec: 'Results <script>alert(1)</script> <img src=x onerror="alert(2)">')
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    index = build_docs(nbs, tmp_path / "out", docs=tiny_docs, figures=tmp_path / "none")
    for page in (index, index.parent / "notebooks" / "00_a.html"):
        text = page.read_text()
        assert "Results &lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "<script>alert(1)" not in text and "<img src=x" not in text


def test_the_banner_of_a_valid_record_reads_as_the_record_says(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    R.write_record(nbs, "cpu", [("00_a", 1.0, "ok", {})])
    index = build_docs(nbs, tmp_path / "out", docs=tiny_docs, figures=tmp_path / "none")
    head = index.read_text().split('<aside class="announcement-content">')[1].split("</aside>")[0]
    assert "Results from commit" in head and "cpu profile" in head and "<" not in head.strip()


# ------------------------------------------------------------------ math links
def test_the_sites_mathjax_loads_its_safe_extension_from_the_site(tmp_path, tiny_docs):
    conf: dict = {}
    exec((ROOT / "docs" / "conf.py").read_text(), {"__file__": str(tmp_path / "conf.py")}, conf)
    assert "ui/safe" in conf["mathjax3_config"]["loader"]["load"]
    assert conf["mathjax3_config"]["options"]["safeOptions"]["safeProtocols"]["javascript"] is False
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook("# A\n\n$x^2$\n"))
    index = build_docs(nbs, tmp_path / "out", docs=tiny_docs, figures=tmp_path / "none")
    static = index.parent / "_static" / "mathjax"
    assert (static / "ui" / "safe.js").is_file() and (static / "tex-chtml.js").is_file()  # served, offline
    page = (index.parent / "notebooks" / "00_a.html").read_text()
    assert '"loader": {"load": ["ui/safe"]}' in page and "mathjax/tex-chtml.js" in page


def test_math_that_links_anywhere_but_http_is_refused():
    assert unsafe_tex_links(r"\href{javascript:alert(1)}{x}") == ["javascript:alert(1)"]
    assert unsafe_tex_links(r"\url{ JavaScript:alert(1)}") and unsafe_tex_links(r"\href{data:text/html,x}{y}")
    assert unsafe_tex_links(r"\def\h{\href}\h{javascript:alert(1)}{x}")  # a link made by a macro
    assert not unsafe_tex_links(r"\href{https://arxiv.org}{x} + \url{http://a.org} + \href{#eq}{y} + \hrefx")


HOSTILE_MATH = {
    "inline": "# M\n\n$\\href{javascript:alert(1)}{x}$\n",
    "block": "# M\n\n$$\\url{javascript:alert(1)}$$\n",
    "raw HTML": '# M\n\n<div class="math">\\(\\href{javascript:alert(1)}{x}\\)</div>\n',  # one raw HTML block
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_MATH))
def test_a_notebook_with_a_javascript_math_link_fails_the_strict_build_and_is_shown_as_text(tmp_path, tiny_docs, kind):
    nbs = tmp_path / "nbs"
    write(nbs, "00_m.ipynb", notebook(HOSTILE_MATH[kind]))
    with pytest.raises(DocsError, match="math link"):
        build_docs(nbs, tmp_path / "strict", docs=tiny_docs, figures=tmp_path / "none")
    index = build_docs(nbs, tmp_path / "loose", docs=tiny_docs, figures=tmp_path / "none", strict=False)
    page = (index.parent / "notebooks" / "00_m.html").read_text()
    body = page.split('<article role="main"')[1]
    assert r"\(\href{javascript" not in body and r"\[\url{javascript" not in body  # no math MathJax would typeset
    assert 'class="math' not in body or "javascript" not in body.split('class="math')[1].split("</")[0]


def test_a_latex_output_with_a_javascript_link_is_not_typeset(tmp_path, tiny_docs):
    out = nbformat.v4.new_output(
        "display_data", data={"text/latex": "$\\href{javascript:alert(1)}{x}$", "text/plain": "x"}
    )
    nbs = tmp_path / "nbs"
    write(nbs, "00_l.ipynb", notebook("# L", outputs=[out]))
    with pytest.raises(DocsError, match="math link"):
        build_docs(nbs, tmp_path / "strict", docs=tiny_docs, figures=tmp_path / "none")


# ------------------------------------------------------------------ what the builder deletes and writes
def test_the_builder_never_deletes_a_src_or_html_it_did_not_make(tmp_path, tiny_docs, capsys):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    for name in ("src", "html"):
        proj = tmp_path / f"proj_{name}"
        (proj / name / "mypkg").mkdir(parents=True)
        (proj / name / "mypkg" / "important.py").write_text("KEEP = 1\n")
        code = main(["--notebooks", str(nbs), "--out", str(proj), "--docs", str(tiny_docs)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith("fedpl: error: --out") and "not made by the site builder" in err, err
        assert "\n" not in err and (proj / name / "mypkg" / "important.py").read_text() == "KEEP = 1\n"
        assert sorted(p.name for p in proj.iterdir()) == [name]  # nothing written
    proj = tmp_path / "proj_warnings"
    proj.mkdir()
    (proj / "warnings.txt").write_text("my notes\n")
    assert main(["--notebooks", str(nbs), "--out", str(proj), "--docs", str(tiny_docs)]) == 2
    assert (proj / "warnings.txt").read_text() == "my notes\n"
    with pytest.raises(DocsError, match="exists"):
        stage(tiny_docs, [nbs / "00_a.ipynb"], None, tmp_path / "proj_src" / "src", "b")
    assert (tmp_path / "proj_src" / "src" / "mypkg" / "important.py").is_file()


def test_a_site_it_made_is_rebuilt_in_place(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    out = tmp_path / "out"
    build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    assert (out / "src" / D.MARK).is_file() and (out / "html" / D.MARK).is_file()
    write(nbs, "01_b.ipynb", notebook("# B"))
    index = build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    assert (index.parent / "notebooks" / "01_b.html").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["html", "src", "warnings.txt"]  # no private folder left


def test_a_site_built_before_marks_existed_is_rebuilt(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    out = tmp_path / "out"
    build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    (out / "src" / D.MARK).unlink()
    (out / "html" / D.MARK).unlink()
    build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")


def test_links_planted_anywhere_in_a_previous_site_are_never_written_through(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    out = tmp_path / "out"
    build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "dir").mkdir(parents=True)
    victims = {
        "html/index.html": elsewhere / "victim_index",
        "html/notebooks/00_a.html": elsewhere / "victim_deep",
        "src/notebooks/00_a.ipynb": elsewhere / "victim_src",
        "src/findings.md": elsewhere / "victim_findings",
    }
    for rel, victim in victims.items():
        victim.write_text("VICTIM\n")
        (out / rel).unlink()
        os.symlink(victim, out / rel)
    shutil.rmtree(out / "html" / "_static")
    os.symlink(elsewhere / "dir", out / "html" / "_static")  # a sub-folder link
    index = build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    assert all(v.read_text() == "VICTIM\n" for v in victims.values())
    assert list((elsewhere / "dir").iterdir()) == []
    links = [p for p in out.rglob("*") if p.is_symlink()]
    assert not links and index.is_file() and not index.is_symlink()


def test_a_link_at_the_top_of_the_site_is_refused(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    (tmp_path / "elsewhere").mkdir()
    for name in ("html", "src"):
        out = tmp_path / f"out_{name}"
        out.mkdir()
        os.symlink(tmp_path / "elsewhere", out / name)
        with pytest.raises(DocsError, match="is a link"):
            build_docs(nbs, out, docs=tiny_docs, figures=tmp_path / "none")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_docs_page_that_is_a_link_is_not_published(tmp_path, tiny_docs):
    secret = tmp_path / "secret.md"
    secret.write_text("# TOP-SECRET\n")
    os.symlink(secret, tiny_docs / "secret.md")
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    index = build_docs(nbs, tmp_path / "out", docs=tiny_docs, figures=tmp_path / "none", strict=False)
    assert "TOP-SECRET" not in site_text(index.parent) and not (tmp_path / "out" / "src" / "secret.md").exists()


# ------------------------------------------------------------------ stale results
def stale_notebook(folder: Path, name: str, *messages: str) -> Path:
    text = [f"x.py:1: StaleResultWarning: {m}\n" for m in messages]
    outs = [nbformat.v4.new_output("stream", name="stderr", text=t) for t in text]
    return write(folder, name, notebook(outputs=outs))


@pytest.mark.parametrize("n", [1, 3])
def test_every_stale_result_is_counted_however_the_warning_words_it(tmp_path, n):
    stale = [(f"run{i}", "made by other code") for i in range(n)]
    kept, recomputed = stale_message(stale, 10, True), stale_message(stale, 10, False)
    assert (" is stale" if n == 1 else " are stale") in kept
    assert R.count_stale(kept) == (n, n) and R.count_stale(recomputed) == (n, 0)
    nb = stale_notebook(tmp_path, "00_a.ipynb", kept, recomputed)
    assert R.stale_warnings(nb) == 2 * n and R.stale_counts(nb) == (2 * n, n)


def test_a_warning_in_an_outputs_text_and_html_forms_counts_once(tmp_path):
    msg = stale_message([("r", "why")], 4, True)
    out = nbformat.v4.new_output("display_data", data={"text/plain": msg, "text/html": f"<pre>{msg}</pre>"})
    assert R.stale_counts(write(tmp_path, "00_a.ipynb", notebook(outputs=[out]))) == (1, 1)


def test_a_run_that_kept_stale_results_does_not_claim_todays_code(tmp_path, monkeypatch):
    monkeypatch.delenv("FEDPL_KEEP_STALE", raising=False)
    kept = stale_message([("r1", "made by other code"), ("r2", "made by other code")], 9, True)
    stale_notebook(tmp_path, "00_a.ipynb", kept)
    stale_notebook(tmp_path, "01_b.ipynb")
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {}), ("01_b", 1.0, "ok", {})])
    rec = R.read_record(tmp_path)
    a, b = rec["notebooks"]["00_a"], rec["notebooks"]["01_b"]
    assert a["kept_stale"] == 2 and a["code_fingerprint"] is None
    assert "kept_stale" not in b and b["code_fingerprint"] == rec["code_fingerprint"]
    text = R.describe(rec)
    assert "Today's code is the same" not in text and "Stale cached results were kept in 00_a (2 result(s))" in text


def test_keep_stale_withholds_the_fingerprint_even_when_no_warning_is_shown(tmp_path, monkeypatch):
    stale_notebook(tmp_path, "00_a.ipynb")
    monkeypatch.setenv("FEDPL_KEEP_STALE", "1")
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {})])
    rec = R.read_record(tmp_path)
    assert rec["notebooks"]["00_a"]["kept_stale"] is True and rec["notebooks"]["00_a"]["code_fingerprint"] is None
    assert rec["invocations"][-1]["kept_stale"] is True
    assert "Today's code is the same" not in R.describe(rec) and "kept in 00_a:" in R.describe(rec)
    monkeypatch.delenv("FEDPL_KEEP_STALE")
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {})])  # run again without: today's code made it
    assert R.describe(R.read_record(tmp_path)).endswith("Today's code is the same.")


def test_the_command_line_site_build_says_a_bad_record_in_one_line(tmp_path):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook())
    (nbs / R.RECORD).write_text('{"code": {}}')
    r = subprocess.run(
        [sys.executable, "-m", "fedpl_core.report.docs", "--notebooks", str(nbs), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.strip().startswith("fedpl: error: run record") and r.stderr.count("\n") == 1
