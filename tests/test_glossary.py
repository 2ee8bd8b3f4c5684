"""The glossary (fedpl_core.report.glossary): every acronym the findings use is defined, the
committed page is the one the module makes, its anchors are GitHub's, the site links the first use
of each term on a page and only that one (fedpl_core.report.sphinx_glossary), and
link_terms_markdown does the same in Markdown, leaving code and links alone."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fedpl_core.report import glossary as G

ROOT = Path(__file__).resolve().parent.parent

#: A token that reads as an acronym or a method's short name: two capitals or more
#: ("TDMA", "wBCE", "FedAvg", "CheXpert", "HAM10000"), or a capitalised name with a star or plus
#: ("FedAvg*", "FedBN+").
ACRONYM = re.compile(r"(?<![\w/.\-])(?:[\w\-]*[A-Z][\w\-]*[A-Z][\w\-]*[*+]?|[A-Z][\w\-]*[*+])")
#: Tokens of that form that need no entry: Roman numerals (a paper's Table II), the numeric
#: platform the runs record, a disease named in full, and hardware.
NOT_ACRONYMS = re.compile(r"[IVX]+|AVX\d*|COVID-19|CPU|GPU")
#: Markdown emphasis (``*MDE*``, ``**opposite**``), read as its text; a name's own star
#: (``FedAvg*``) cannot open one.
EMPHASIS = re.compile(r"(?<![\w\\*])(\*{1,2})(?=\S)(.+?)(?<=\S)\1(?![\w*])")


#: A Markdown link, ``[text](target "title")``: read as its text.
LINK = re.compile(r'\[([^\]]*)\]\((?:[^()"\s]+)(?:\s+"[^"]*")?\)')


def undefined(text: str) -> list[str]:
    """The acronym-like tokens of ``text`` that are not a glossary term, once every term's
    spellings ("FL + SA", "FedAvg-PL") are taken out, and each link read as its text."""
    text = LINK.sub(r"\1", text)
    text = EMPHASIS.sub(r"\2", text)
    rest = G.term_pattern().sub(" ", text)
    return sorted({t for t in ACRONYM.findall(rest) if not NOT_ACRONYMS.fullmatch(t)})


def readme_findings() -> str:
    text = (ROOT / "README.md").read_text()
    start, end = text.index("<!-- findings: generated"), text.index("<!-- findings: end -->")
    return text[start:end]


def test_the_check_finds_an_undefined_acronym():
    assert undefined("Table 9: XYZ above FedFoo* and FedBar+, with TDMA, FL + SA and FedAvg-PL") == [
        "FedBar+",
        "FedFoo*",
        "XYZ",
    ]
    assert undefined("FL + SA (FedBN+) above FL + PL in AUROC, non-IID, Table IV, COVID-19") == []
    assert undefined("*MDE* and **FedAvg*** but *XYZ*") == ["XYZ"]
    assert undefined('[NIH](glossary.md#nih "NIH ChestX-ray14") and [XYZ](x.md)') == ["XYZ"]


def test_every_acronym_of_the_readme_findings_is_defined():
    assert undefined(readme_findings()) == []


def test_every_acronym_of_the_findings_page_is_defined():
    """The page's claims, mechanisms and explanations (made from the studies' claims)."""
    text = (ROOT / "docs" / "findings.md").read_text()
    assert undefined(text) == []


def test_the_committed_glossary_page_is_generated():
    page = ROOT / G.DOCS_PAGE
    assert page.read_text() == G.glossary_markdown(), f"{G.DOCS_PAGE} is not current: run `{G.COMMAND}`"


def test_each_term_has_an_expansion_a_definition_and_a_source():
    for name, t in G.TERMS.items():
        assert t.name == name and t.expansion and t.source, name
        assert t.definition.endswith(".") and t.definition[:1].isupper(), name
    assert list(G.TERMS) == sorted(G.TERMS, key=str.lower), "the page is in alphabetical order"


def test_every_spelling_stands_for_one_term():
    seen: dict[str, str] = {}
    for t in G.TERMS.values():
        for form in (t.name, *t.aliases):
            plain = form.replace("\\", "")
            assert seen.setdefault(plain, t.name) == t.name, f"{plain!r} stands for {seen[plain]} and {t.name}"


def test_the_anchors_are_githubs_heading_slugs():
    """GitHub (and MyST) slug a heading: lower case, punctuation but - and _ dropped, spaces as -,
    and -1, -2, ... after a slug already on the page (the title's included)."""
    a = G.anchors()
    assert a["TDMA"] == "tdma" and a["FL + SA"] == "fl--sa" and a["FL + PL"] == "fl--pl"
    assert a["FedAvg"] == "fedavg" and a["FedAvg*"] == "fedavg-1"
    assert a["FedBN"] == "fedbn" and a["FedBN+"] == "fedbn-1"
    assert a["non-IID"] == "non-iid" and a["Holm p"] == "holm-p" and a["w/o"] == "wo"
    assert len(set(a.values())) == len(a) and "glossary" not in a.values()
    headings = re.findall(r"^## (.+)$", G.glossary_markdown(), re.M)
    assert [h.replace("\\", "") for h in headings] == list(G.TERMS)


# -- the Sphinx extension -------------------------------------------------------------------------

PAGE = """# TDMA and FedAvg

FedPSL's TDMA is not FedAvg*, and TDMA again; `FedAvg` in code. FL + SA above FL + PL and FL
(FedBN+). [FedProx](https://example.com) is a link; FedProx later. $UDE$ in math.

Non-IID data, and non-IID again.

```python
TADL = 1
```
"""


def notebook(text: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# A notebook\n\n" + text},
                {
                    "cell_type": "code",
                    "id": "b",
                    "metadata": {},
                    "execution_count": 1,
                    "outputs": [],
                    "source": "TDMA = 2",
                },
            ],
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def build(tmp_path: Path, anchors: int = 3) -> Path:
    """A small site: a page, a notebook and the glossary, built strictly (-W); its HTML folder."""
    pytest.importorskip("myst_nb")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["myst_nb", "fedpl_core.report.sphinx_glossary"]\n'
        f"myst_heading_anchors = {anchors}\n"
        'myst_enable_extensions = ["dollarmath"]\n'
        'nb_execution_mode = "off"\n'
        'exclude_patterns = ["_build"]\n'
    )
    (src / "index.md").write_text("# Site\n\n```{toctree}\npage\nnb\nglossary\n```\n\nNothing to link.\n")
    (src / "page.md").write_text(PAGE)
    (src / "nb.ipynb").write_text(notebook("TADL twice: TADL."))
    (src / "glossary.md").write_text(G.glossary_markdown())
    out = tmp_path / "html"
    r = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", "-E", str(src), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    return out


def term_links(html: str) -> list[tuple[str, str]]:
    """(href, text) of each link the extension made."""
    return re.findall(r'<a class="fedpl-term reference internal" href="([^"]+)" title="[^"]*">([^<]+)</a>', html)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build(tmp_path_factory.mktemp("site"))


def test_the_site_links_the_first_use_of_each_term_only(site):
    html = (site / "page.html").read_text()
    links = term_links(html)
    assert links == [
        ("glossary.html#fedpsl", "FedPSL"),
        ("glossary.html#tdma", "TDMA"),
        ("glossary.html#fedavg-1", "FedAvg*"),
        ("glossary.html#fl--sa", "FL + SA"),
        ("glossary.html#fl--pl", "FL + PL"),
        ("glossary.html#fl", "FL"),
        ("glossary.html#fedbn-1", "FedBN+"),
        ("glossary.html#fedprox", "FedProx"),
        ("glossary.html#non-iid", "Non-IID"),
    ], links
    # the heading's TDMA and FedAvg, the code's FedAvg and TADL, the math and the existing link stay
    assert 'href="https://example.com">FedProx</a>' in html
    assert re.search(r"<h1>TDMA and FedAvg", html)
    assert 'title="task-dependent model aggregation"' in html


def test_a_notebook_page_is_linked_alike(site):
    html = (site / "nb.html").read_text()
    assert term_links(html) == [("glossary.html#tadl", "TADL")]


def test_the_glossary_page_links_nothing_and_has_every_anchor(site):
    html = (site / "glossary.html").read_text()
    assert term_links(html) == []
    for anchor in G.anchors().values():
        assert f'id="{anchor}"' in html, anchor
    assert term_links((site / "index.html").read_text()) == []


def test_the_extension_adds_the_anchors_myst_does_not_make(tmp_path):
    html = (build(tmp_path, anchors=0) / "glossary.html").read_text()
    for anchor in ("fedavg-1", "fl--sa", "fedbn-1", "tdma"):
        assert f'id="{anchor}"' in html, anchor


# -- Markdown -------------------------------------------------------------------------------------


def test_markdown_links_the_first_use_of_each_term():
    out = G.link_terms_markdown("TDMA lifts FedAvg; TDMA again, and FedAvg* too.", target="g.md")
    assert out == (
        '[TDMA](g.md#tdma "task-dependent model aggregation") lifts [FedAvg](g.md#fedavg "federated averaging"); '
        'TDMA again, and [FedAvg\\*](g.md#fedavg-1 "FedAvg with task-dependent aggregation") too.'
    )


def test_markdown_leaves_code_links_headings_and_comments_alone():
    text = (
        "# TDMA heading\n\n"
        "<!-- TDMA in a comment -->\n"
        "`TDMA` in code and [TDMA](other.md) linked.\n\n"
        "```\nTDMA in a block\n```\n\n"
        "Then TDMA, FL + SA and FedAvg\\* in the text.\n"
    )
    out = G.link_terms_markdown(text)
    kept, rest = out.split("Then ")
    assert kept == text.split("Then ")[0]
    assert rest == (
        '[TDMA](docs/glossary.md#tdma "task-dependent model aggregation"), '
        '[FL + SA](docs/glossary.md#fl--sa "federated learning with surgical aggregation") and '
        '[FedAvg\\*](docs/glossary.md#fedavg-1 "FedAvg with task-dependent aggregation") in the text.\n'
    )


def test_markdown_matches_whole_words_only():
    text = "TDMAX, xTDMA, FedAvg-FixMatch*, fedpl_core/FedAvg, NIH's"
    assert G.link_terms_markdown(text) == text.replace("NIH", '[NIH](docs/glossary.md#nih "NIH ChestX-ray14")')


def test_markdown_shares_seen_terms_between_strings():
    seen: set[str] = set()
    first = G.link_terms_markdown("TDMA", seen=seen)
    assert first.startswith("[TDMA](") and seen == {"TDMA"}
    assert G.link_terms_markdown("TDMA and MLD", seen=seen).startswith("TDMA and [MLD](")
    assert seen == {"TDMA", "MLD"}


def test_the_readme_findings_link_each_term_once():
    """The generated block (fedpl_core.report.findings.readme_block) links each term's first use."""
    out = readme_findings()
    linked = re.findall(r"\]\(docs/glossary\.md#([\w-]+) ", out)
    assert len(linked) == len(set(linked)) and {"tdma", "fedavg-1", "fl--sa", "wbce", "mld"} <= set(linked)
    assert set(linked) <= set(G.anchors().values())
