"""The documentation site (``make docs``, :mod:`fedpl_core.report.docs`): bad input gets one
line and exit status 2 before anything is written; a site built from someone else's notebooks
runs no script and reads no local file into its pages; a strict build fails on a broken link;
the committed site builds without a warning; every page says which code made its results."""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from fedpl_core.report import record as R
from fedpl_core.report.docs import DocsError, build_docs, main
from fedpl_core.report.sanitize import check_name, clean_html, neutralise_myst, safe_url, sanitise_notebook

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")


def notebook(cells, outputs=None):
    nb = nbformat.v4.new_notebook()
    for kind, src in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code:
        nb.cells.append(nbformat.v4.new_code_cell("x"))
        code = nb.cells[-1:]
    code[0].outputs = outputs or [nbformat.v4.new_output("stream", name="stdout", text="42\n")]
    return nb


def write(folder: Path, name: str, nb) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "fedpl_core.report.docs", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


# ------------------------------------------------------------------ bad input: one line, exit 2
def bad_inputs(tmp: Path):
    """(name, --notebooks, --out) of each bad input; each made in ``tmp``."""
    ok = tmp / "ok"
    write(ok, "00_a.ipynb", notebook([("md", "# A")]))
    (tmp / "empty").mkdir()
    write(tmp / "unexecuted", "00_u.ipynb", nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]))
    (tmp / "a_file").write_text("x")
    (tmp / "notjson").mkdir()
    (tmp / "notjson" / "00_n.ipynb").write_text("{not json")
    (tmp / "schema").mkdir()
    (tmp / "schema" / "00_s.ipynb").write_text(
        json.dumps({"cells": "no", "nbformat": 4, "nbformat_minor": 5, "metadata": {}})
    )
    (tmp / "dirnb" / "00_x.ipynb").mkdir(parents=True)
    (tmp / "link").mkdir()
    os.symlink("/etc/passwd", tmp / "link" / "00_passwd.ipynb")
    write(tmp / "js", "javascript:alert(document.domain).ipynb", notebook([("md", "# J")]))
    (tmp / "out_file").write_text("x")
    return [
        ("missing folder", tmp / "nowhere", tmp / "o1"),
        ("empty folder", tmp / "empty", tmp / "o2"),
        ("unexecuted", tmp / "unexecuted", tmp / "o3"),
        ("a file", tmp / "a_file", tmp / "o4"),
        ("not JSON", tmp / "notjson", tmp / "o5"),
        ("not a notebook", tmp / "schema", tmp / "o6"),
        ("a folder named .ipynb", tmp / "dirnb", tmp / "o7"),
        ("a link to /etc/passwd", tmp / "link", tmp / "o8"),
        ("a javascript: name", tmp / "js", tmp / "o9"),
        ("--out is a file", ok, tmp / "out_file"),
    ]


def test_every_bad_input_gets_one_line_and_exit_2_before_anything_is_written(tmp_path, capsys):
    for name, nbs, out in bad_inputs(tmp_path):
        code = main(["--notebooks", str(nbs), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, name
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("fedpl: error: "), (name, err)
        assert "Traceback" not in err and "root:" not in err, name  # /etc/passwd's first line is never read
        if name != "--out is a file":
            assert not out.exists(), name


def test_the_command_line_says_the_same(tmp_path):
    r = cli("--notebooks", tmp_path / "nowhere", "--out", tmp_path / "o")
    assert (
        r.returncode == 2 and r.stderr.strip().startswith("fedpl: error: --notebooks") and "\n" not in r.stderr.strip()
    )


def test_an_empty_first_markdown_cell_gets_a_title(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_untitled.ipynb", notebook([("md", ""), ("code", "1")]))
    index = build_docs(nbs, tmp_path / "site", docs=tiny_docs, figures=tmp_path / "none")
    assert "00_untitled" in (index.parent / "notebooks" / "00_untitled.html").read_text()


# ------------------------------------------------------------------ safe from others' notebooks
def test_sanitising_closes_each_way_to_script():
    assert "<script" not in clean_html("<p>a</p><script>alert(1)</script>")
    assert "onerror" not in clean_html('<img src="x.png" onerror="alert(1)">')
    assert "javascript" not in clean_html('<a href="javascript:alert(1)">x</a>')
    assert 'class="dataframe"' in clean_html('<table class="dataframe"><tr><td>1</td></tr></table>')
    assert not safe_url("javascript:alert(1)") and not safe_url(" JaVa\tScript:x") and not safe_url("/etc/passwd")
    assert not safe_url("../../etc/passwd") and not safe_url("data:text/html,<script>") and safe_url("a/b.html#c")
    assert safe_url("data:image/png;base64,AAAA", image=True) and not safe_url("data:image/svg+xml,<svg>", image=True)
    assert "{include}" not in neutralise_myst("```{include} /etc/passwd\n```") and "{download}" not in neutralise_myst(
        "see {download}`/etc/passwd`"
    )
    with pytest.raises(ValueError, match="not plain"):
        check_name("javascript:alert(document.domain).ipynb")
    nb = notebook(
        [("md", "# t")],
        outputs=[
            nbformat.v4.new_output(
                "display_data",
                data={"application/javascript": "alert(1)", "text/plain": "x", "image/svg+xml": "<svg/>"},
            )
        ],
    )
    nb.metadata["mystnb"] = {"execution_mode": "force"}
    nb.cells[1].outputs.append(
        nbformat.v4.new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "runs:   0%|  | 0/30"},
        )
    )
    removed = sanitise_notebook(nb)
    assert len(nb.cells[1].outputs) == 1 and removed["widget output"] == 1
    assert set(nb.cells[1].outputs[0]["data"]) == {"text/plain"} and "mystnb" not in nb.metadata
    assert removed["javascript output"] == 1 and removed["notebook metadata"] == 1


def test_a_site_built_from_hostile_notebooks_runs_no_script_and_reads_no_local_file(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    canary = tmp_path / "executed.txt"
    html_out = nbformat.v4.new_output(
        "display_data", data={"text/html": "<b>ok</b><script>alert(1)</script>", "text/plain": "x"}
    )
    js_out = nbformat.v4.new_output("display_data", data={"application/javascript": "alert(2)", "text/plain": "y"})
    hostile = notebook(
        [
            (
                "md",
                '# Hostile\n\n<script>alert(3)</script>\n\n<img src=x onerror="alert(4)">\n\n'
                "[click](javascript:alert(5))\n\n"
                f"```{{include}} {secret}\n```\n\n{{download}}`{secret}`\n\n![leak](../../secret.txt)\n",
            ),
            ("code", f"open({str(canary)!r}, 'w').write('ran')"),
        ],
        outputs=[html_out, js_out],
    )
    hostile.metadata["mystnb"] = {"execution_mode": "force"}
    write(nbs, "00_hostile.ipynb", hostile)
    index = build_docs(nbs, tmp_path / "site", docs=tiny_docs, figures=tmp_path / "none", strict=False)
    site = index.parent
    pages = "".join(p.read_text(errors="replace") for p in site.rglob("*.html"))
    assert "<b>ok</b>" in pages  # clean HTML stays
    for bad in ("alert(1)", "alert(2)", "alert(3)", "alert(4)", 'href="javascript'):
        assert bad not in pages, bad
    assert "TOP-SECRET-LINE" not in "".join(p.read_text(errors="replace") for p in site.rglob("*") if p.is_file())
    assert not canary.exists()  # the notebook's code did not run


# ------------------------------------------------------------------ strict builds
def test_a_broken_link_fails_the_strict_build_with_one_line(tmp_path, tiny_docs, capsys):
    (tiny_docs / "index.md").write_text(
        "# Front\n\nSee [the guide](no_such_page.md).\n\n```{toctree}\nfindings\nnotebooks/index\n```\n"
    )
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook([("md", "# A")]))
    with pytest.raises(DocsError, match="did not build"):
        build_docs(nbs, tmp_path / "site", docs=tiny_docs, figures=tmp_path / "none")
    code = main(["--notebooks", str(nbs), "--out", str(tmp_path / "site2"), "--docs", str(tiny_docs)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("fedpl: error: the site did not build")


@pytest.mark.slow
def test_the_committed_site_builds_without_a_warning(tmp_path):
    """The real pages and the committed executed notebooks (the build ``make docs`` makes)."""
    index = build_docs(ROOT / "reports", tmp_path / "site")
    html = index.read_text()
    assert "Results from commit" in html or "carry no run record" in html
    assert (index.parent / "findings.html").is_file() and (index.parent / "search.html").is_file()
    assert (index.parent / "_static" / "mathjax" / "tex-chtml.js").is_file()  # math without a CDN
    remote = [
        p.name
        for p in index.parent.rglob("*.html")
        if any(s in p.read_text() for s in ('src="http', "cdn.jsdelivr", "fonts.googleapis"))
    ]
    assert not remote, f"pages that load remote scripts or fonts: {remote}"
    assert not broken_local_links(index.parent)


def broken_local_links(site: Path) -> list[str]:
    """Every ``href`` / ``src`` of the site's pages that names a local file that is not there."""
    import re

    broken = []
    for page in site.rglob("*.html"):
        for url in re.findall(r'(?:href|src)="([^"#?]+)[^"]*"', page.read_text(errors="replace")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("//"):
                continue
            if not (page.parent / url).exists():
                broken.append(f"{page.relative_to(site)} -> {url}")
    return broken


def test_the_link_check_finds_a_missing_file(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html#x">b</a><img src="img/c.png"><a href="https://x.org/y">')
    (tmp_path / "b.html").write_text("")
    assert broken_local_links(tmp_path) == ["a.html -> img/c.png"]


# ------------------------------------------------------------------ the run record
def test_every_page_states_the_code_of_its_results_and_what_changed_since(tmp_path, tiny_docs):
    nbs = tmp_path / "nbs"
    write(nbs, "00_a.ipynb", notebook([("md", "# A")]))
    rec = R.write_record(nbs, "cpu", [("00_a", 12.0, "ok", {})])
    data = json.loads(rec.read_text())
    assert R.compare(data)["same"] is True
    data["code"]["fedpl_core/report/tables.py"] = "0" * 16
    rec.write_text(json.dumps(data))
    index = build_docs(nbs, tmp_path / "site", docs=tiny_docs, figures=tmp_path / "none")
    for page in (index, index.parent / "notebooks" / "00_a.html"):
        text = page.read_text()
        assert f"code fingerprint {data['code_fingerprint']}" in text
        assert "differs in 1 file(s): fedpl_core/report/tables.py" in text


def test_the_record_keeps_each_notebooks_run_and_names_those_made_by_other_code(tmp_path):
    R.write_record(tmp_path, "cpu", [("00_a", 1.0, "ok", {}), ("02_b", 2.0, "ok", {})])
    rec = json.loads((tmp_path / R.RECORD).read_text())
    rec["notebooks"]["02_b"]["code_fingerprint"] = "f" * 16  # as if an earlier commit had made it
    (tmp_path / R.RECORD).write_text(json.dumps(rec))
    R.write_record(tmp_path, "cpu", [("00_a", 3.0, "ok", {"rounds": 2})])
    rec = R.read_record(tmp_path)
    assert rec["notebooks"]["00_a"]["parameters"] == {"rounds": 2} and rec["notebooks"]["02_b"]["seconds"] == 2.0
    assert R.compare(rec)["older"] == ["02_b"] and "Made by older code: 02_b." in R.describe(rec)
    assert [i["notebooks"] for i in rec["invocations"]] == [["00_a", "02_b"], ["00_a"]]
    assert rec["invocations"][0]["seconds_by_notebook"] == {"00_a": 1.0, "02_b": 2.0}


def test_written_results_do_not_make_the_code_dirty(tmp_path):
    import subprocess

    repo = tmp_path / "repo"
    (repo / "fedpl_core").mkdir(parents=True)
    (repo / "reports").mkdir()
    for p in ("fedpl_core/a.py", "reports/r.ipynb"):
        (repo / p).write_text("x\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    (repo / "reports" / "r.ipynb").write_text("changed\n")
    assert R.code_dirty(repo) is False
    (repo / "fedpl_core" / "a.py").write_text("changed\n")
    assert R.code_dirty(repo) is True


def test_a_committed_executed_notebook_holds_no_stale_result_warning():
    nbs = sorted((ROOT / "reports").glob("*.ipynb"))
    assert nbs
    stale = {p.name: n for p in nbs if (n := R.stale_warnings(p))}
    assert not stale, f"committed notebooks rendered from stale cached results: {stale}"


def test_reproduce_refuses_to_write_the_committed_reports_from_stale_results(tmp_path):
    with pytest.raises(ValueError, match="stale"):
        R.check_fresh_target(ROOT / "reports", keep_stale=True)
    R.check_fresh_target(ROOT / "reports", keep_stale=False)
    R.check_fresh_target(tmp_path / "elsewhere", keep_stale=True)


def test_reproduce_refuses_stale_results_for_the_committed_reports_and_bad_parameters_in_one_line():
    env = {**os.environ, "FEDPL_KEEP_STALE": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "fedpl_core", "reproduce", "--notebooks", "00", "--output", "reports"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.strip().startswith("fedpl: error: refusing to write the committed reports")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "fedpl_core",
            "reproduce",
            "--notebooks",
            "00",
            "--output",
            "outputs/x",
            "-p",
            "data roots",
            "{}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and "a parameter name is a Python identifier" in r.stderr and r.stderr.count("\n") == 1


def test_reproduce_reads_parameter_values_as_yaml():
    from fedpl_core.apps.cli import reproduce_parameters

    assert reproduce_parameters([("data_roots", '{"Task 2": data/HAM10000}'), ("rounds", "2")]) == {
        "data_roots": {"Task 2": "data/HAM10000"},
        "rounds": 2,
    }
