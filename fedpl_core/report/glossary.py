"""The glossary: every acronym and short name the pages use, defined once.

:data:`TERMS` is the one place each term is defined: its expansion, one or two plain sentences,
where it comes from (a paper, a field) and the other ways the pages write it.  Everything else is
made from it:

* ``docs/glossary.md``, the glossary page, is :func:`glossary_markdown` (a test checks that the
  committed page is current; ``python -m fedpl_core.report.glossary --write`` rewrites it);
* the site links the first use of each term on every page to its entry
  (:mod:`fedpl_core.report.sphinx_glossary`, a Sphinx extension);
* :func:`link_terms_markdown` does the same in a Markdown string, for text read on GitHub.

Each term is a level-2 heading of the page, so its anchor is the heading's slug as GitHub makes
it (:func:`github_slug`: lower case, punctuation other than ``-`` and ``_`` dropped, each space a
``-``, and ``-1``, ``-2``, ... after a slug already used on the page).  MyST makes the same
anchors on the site (``myst_heading_anchors``), and the extension adds any that is missing, so
``glossary.md#fl--sa`` finds "FL + SA" on GitHub and on the site alike.  :func:`anchors` gives
every term's anchor.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The page, relative to the checkout, and the command that writes it.
DOCS_PAGE = "docs/glossary.md"
COMMAND = "python -m fedpl_core.report.glossary --write"


@dataclass(frozen=True)
class Term:
    """One glossary entry: ``name`` as the pages write it, its ``expansion`` (what the letters
    stand for, or a short gloss), ``definition`` (plain sentences), ``source`` (the paper or field
    it comes from) and ``aliases``, the other spellings that stand for it in the text."""

    name: str
    expansion: str
    definition: str
    source: str
    aliases: tuple[str, ...] = ()


def _terms(*entries: Term) -> dict[str, Term]:
    return {t.name: t for t in entries}


#: Every term, in the order of the page (alphabetical, ignoring case).
TERMS: dict[str, Term] = _terms(
    Term(
        "AUC",
        "area under the curve",
        "FedLSM's and FedMLP's name for AUROC.",
        "FedLSM, FedMLP",
    ),
    Term(
        "AUROC",
        "area under the receiver operating characteristic curve",
        "The chance that a random positive image of a class scores above a random negative one: "
        "0.5 is chance, 1 is perfect. The papers' main metric, per class and averaged over the "
        "classes (mean AUROC); a difference is given in points, AUROC x 100.",
        "statistics",
    ),
    Term(
        "AWPA",
        "adaptive weighted proxy aggregation",
        "FedLSM's server step (Eq. 7). The encoder is averaged as in FedAvg; each class's head row "
        "(its proxy) is averaged with weights from each client's count of that class in its labels "
        "and pseudo-labels, recomputed every round.",
        "FedLSM",
    ),
    Term(
        "BCE",
        "binary cross-entropy",
        "The loss of a multi-label classifier: one yes-or-no term per class.",
        "machine learning",
    ),
    Term(
        "CheXpert",
        "the CheXpert chest X-ray data set",
        "A chest X-ray data set from Stanford Hospital. Surgical Aggregation's non-IID experiments "
        "pair 13 of its classes with NIH's 14 (7 shared).",
        "data set",
    ),
    Term(
        "CI",
        "confidence interval",
        "Here the 95 % interval of a paired difference over seeds.",
        "statistics",
    ),
    Term(
        "CR",
        "consistency regularisation",
        "FedMLP's term that keeps the local model's outputs close to the global model's on the "
        "classes that still have no label (a mean squared error).",
        "FedMLP",
    ),
    Term(
        "CXR",
        "chest X-ray",
        "FedMLP's chest X-ray task (its Table 2): the eight most frequent classes of NIH ChestX-ray14.",
        "FedMLP",
    ),
    Term(
        "F1",
        "F1 score",
        "The harmonic mean of precision and recall at a decision threshold.",
        "statistics",
    ),
    Term(
        "FedAvg",
        "federated averaging",
        "The basic federated method (McMahan et al., 2017): each client trains the global model on "
        "its own data, and the server averages the clients' weights, each weighted by its number "
        "of images. As a baseline it treats every missing label as a negative. FedPSL writes it "
        "FedAVG.",
        "McMahan et al., 2017",
        ("FedAVG",),
    ),
    Term(
        "FedAvg*",
        "FedAvg with task-dependent aggregation",
        "FedLSM's name for FedAvg trained with the partial loss and aggregated with FedPSL's TDMA; "
        "the star marks a baseline given TDMA. It is FedPSL without TADL.",
        "FedLSM",
        ("FedAvg\\*",),
    ),
    Term(
        "FedAvg-PL",
        "FedAvg with the partial loss",
        "FedAvg whose clients train on the classes they label only: the unknown labels add nothing "
        "to the loss. FedMLP's name; FedLSM's FedAvg row is this method.",
        "FedMLP",
    ),
    Term(
        "FedBN",
        "federated batch normalisation",
        "FedAvg with local batch normalisation: each client keeps its own BatchNorm layers (Li et al., 2021).",
        "Surgical Aggregation",
    ),
    Term(
        "FedBN+",
        "FedBN with pre-trained statistics",
        "FedBN whose global model keeps pre-trained batch-normalisation statistics; one of the "
        "encoder strategies of Surgical Aggregation.",
        "Surgical Aggregation",
    ),
    Term(
        "FedLSM",
        "federated learning for label set mismatch",
        "The method of 'Scale Federated Learning for Label Set Mismatch in Medical Image "
        "Classification' (MICCAI 2023). UE splits each client's images by the global model's "
        "uncertainty; the confident ones are pseudo-labelled by a teacher model, UDE mixes the "
        "uncertain ones in, and AWPA aggregates the head.",
        "FedLSM",
    ),
    Term(
        "FedMLP",
        "federated multi-label learning with partial annotation",
        "The method of 'Federated Multi-Label Medical Image Classification under Task "
        "Heterogeneity' (MICCAI 2024). A warm-up with the WPC loss, then MLD tags missing labels "
        "from class prototypes, with ST setting how many and CR on the classes still unlabelled.",
        "FedMLP",
    ),
    Term(
        "FedProx",
        "federated proximal optimisation",
        "FedAvg with a proximal term that keeps each client's weights near the global model's "
        "(Li et al., 2020). A baseline of FedPSL, with mu = 0.001.",
        "Li et al., 2020",
    ),
    Term(
        "FedPSL",
        "federated partially supervised learning",
        "The method of 'Federated Partially Supervised Learning with Limited Decentralized Medical "
        "Images' (IEEE TMI): TDMA on the server and TADL on the clients. FedLSM's tables call it "
        "FPSL.",
        "FedPSL",
        ("FPSL",),
    ),
    Term(
        "FixMatch",
        "a semi-supervised method",
        "A semi-supervised method (Sohn et al., 2020): a confident prediction on a weakly "
        "augmented image becomes the pseudo-label of a strongly augmented view of it. FedPSL "
        "compares it, trained centrally, with IML.",
        "Sohn et al., 2020",
    ),
    Term(
        "FL",
        "federated learning",
        "Several clients (here, hospitals) train one model together by sending model weights, never "
        "images, to a server that aggregates them. In Surgical Aggregation's tables, FL alone is the "
        "plain baseline: FedAvg with every missing label taken as a negative.",
        "Surgical Aggregation",
    ),
    Term(
        "FL + PL",
        "federated learning with the partial loss",
        "Surgical Aggregation's baseline that drops the classes a client does not label from its "
        "loss (the paper's Eq. 4) and averages every head row over all clients.",
        "Surgical Aggregation",
    ),
    Term(
        "FL + SA",
        "federated learning with surgical aggregation",
        "Surgical Aggregation's method, named with its encoder strategy where it matters, e.g. FL + SA (FedBN+).",
        "Surgical Aggregation",
    ),
    Term(
        "HAM10000",
        "Human Against Machine with 10,000 training images",
        "Dermatoscopic images of seven skin-lesion classes, also released as ISIC 2018's Task 3: "
        "FedLSM's single-label task (its Task 2).",
        "data set",
    ),
    Term(
        "Holm p",
        "Holm's adjusted p-value",
        "A p-value corrected for the number of claims tested for one paper (Holm's step-down "
        "method), so that the chance of any false verdict among them stays within 5 %.",
        "statistics",
        ("Holm's adjusted p",),
    ),
    Term(
        "ICH",
        "intracranial haemorrhage",
        "FedMLP's head CT task (its Table 1): five haemorrhage subtypes, from the RSNA data set.",
        "FedMLP",
    ),
    Term(
        "IID",
        "independent and identically distributed",
        "A split in which every client's images follow the same distribution.",
        "statistics",
    ),
    Term(
        "IML",
        "ignore missing labels",
        "FedPSL's centralised baseline: every client's images pooled and trained on their labelled "
        "classes only, with no pre-training, pseudo-labels or regularisation.",
        "FedPSL",
    ),
    Term(
        "label set mismatch",
        "clients that identify different classes",
        "FedLSM's setting: each client identifies a subset of the classes, and together they cover "
        "all of them; a client's other classes are unknown.",
        "FedLSM",
        ("label-set mismatch",),
    ),
    Term(
        "MDE",
        "minimum detectable effect",
        "The smallest difference a test detects with 80 % power, at the seeds used and the spread the run measured.",
        "statistics",
    ),
    Term(
        "MLD",
        "missing-label detection",
        "FedMLP's second stage. Each class has two prototypes, the mean feature of its negatives and "
        "of its positives, averaged over the clients that label it; the unlabelled entries closest "
        "to one of them are tagged 0 or 1 for good.",
        "FedMLP",
    ),
    Term(
        "NIH",
        "NIH ChestX-ray14",
        "The US National Institutes of Health's chest X-ray data set: 112,120 frontal images with "
        "14 disease labels. FedPSL, FedLSM, Surgical Aggregation and FedMLP all use it.",
        "data set",
    ),
    Term(
        "non-IID",
        "not independent and identically distributed",
        "A split in which the clients' data differ. Surgical Aggregation's non-IID experiments pair "
        "two data sets with different classes, NIH and CheXpert.",
        "statistics",
        ("Non-IID",),
    ),
    Term(
        "Oracle",
        "the upper bound",
        "FedPSL's reference: the same model trained centrally on all the images with every label.",
        "FedPSL",
    ),
    Term(
        "partial labels",
        "labels known for some classes only",
        "Each client annotates only some of the classes; an image's labels for the others are unknown, not negative.",
        "all four papers",
        ("partial label", "partially labelled"),
    ),
    Term(
        "partial loss",
        "a loss over the labelled classes only",
        "A client's loss that covers only the classes it labels; its unknown labels add nothing.",
        "Surgical Aggregation, FedMLP",
    ),
    Term(
        "pseudo-label",
        "a label the model gives",
        "A label the model gives to an entry that has none, used in training as if it were a label.",
        "machine learning",
        ("pseudo-labels", "pseudo labels", "pseudo label"),
    ),
    Term(
        "SA",
        "surgical aggregation",
        "Surgical Aggregation's server step: the encoder is averaged by any strategy (FedAvg, FedBN, "
        "FedBN+), and each class's head weights only over the clients that have the class (a "
        "single client's weights where the class is unique to it).",
        "Surgical Aggregation",
    ),
    Term(
        "ST",
        "self-adaptive threshold",
        "FedMLP's rule for how many unlabelled entries MLD tags each round: a share that grows with "
        "the class's learning degree, the share of the model's outputs for the class outside "
        "0.3 to 0.7.",
        "FedMLP",
    ),
    Term(
        "TADL",
        "task-agnostic decoupling learning",
        "FedPSL's client step (Algorithm 1): each batch is split in two halves; the head trains on "
        "one, and the encoder is meta-updated on the other, to curb over-fitting.",
        "FedPSL",
    ),
    Term(
        "TDMA",
        "task-dependent model aggregation",
        "FedPSL's server step (Eq. 9). The encoder is averaged as in FedAvg, but each class's head "
        "row only over the clients that label the class, weighted by their numbers of labelled "
        "images of it.",
        "FedPSL",
    ),
    Term(
        "UDE",
        "uncertain data enhancing",
        "FedLSM's MixUp of a client's most confident images with its most uncertain ones, so that "
        "images too uncertain to pseudo-label still train the model.",
        "FedLSM",
    ),
    Term(
        "UE",
        "uncertainty estimation",
        "FedLSM's first step: the global model's entropy on each local image splits the client's "
        "data into confident, middle and uncertain parts.",
        "FedLSM",
    ),
    Term(
        "w/o",
        "without",
        "An ablation's row with one component removed, e.g. FedLSM w/o AWPA.",
        "the papers' tables",
    ),
    Term(
        "wBCE",
        "weighted binary cross-entropy",
        "FedPSL's loss: BCE over the labelled classes only, each class's positives weighted by its "
        "ratio of negatives to positives. FedAvg (wBCE) is FedAvg trained with it.",
        "FedPSL",
        ("weighted BCE", "weighted-BCE"),
    ),
    Term(
        "WPC",
        "weighted partial-class loss",
        "FedMLP's warm-up loss (Eq. 4): BCE over the client's labelled classes only, on "
        "logit-adjusted probabilities that use each class's positive rate.",
        "FedMLP",
    ),
)

_PAGE_HEAD = (
    "# Glossary\n\n"
    "The acronyms and short names of these pages, each with the paper or field it comes from. "
    "On every page of the site, the first use of a term links to its entry here.\n"
)


def _escape(text: str) -> str:
    """``text`` with the characters Markdown reads as emphasis escaped."""
    return re.sub(r"([*_\\`])", r"\\\1", text)


def glossary_markdown() -> str:
    """The glossary page (``docs/glossary.md``), made from :data:`TERMS`: one level-2 heading per
    term, then its expansion and source, its definition and its other spellings."""
    parts = [_PAGE_HEAD]
    for t in TERMS.values():
        body = f"**{_escape(t.expansion[:1].upper() + t.expansion[1:])}** ({t.source}). {t.definition}"
        shown = [_plain(a) for a in t.aliases if _plain(a) not in (t.name, _swapcase_first(t.name))]
        if shown:
            body += " Also written " + ", ".join(_escape(a) for a in shown) + "."
        parts.append(f"## {_escape(t.name)}\n\n{body}\n")
    return "\n".join(parts)


def _swapcase_first(text: str) -> str:
    return text[:1].swapcase() + text[1:]


def _plain(form: str) -> str:
    """A spelling as it reads (``FedAvg\\*`` -> ``FedAvg*``)."""
    return re.sub(r"\\(.)", r"\1", form)


def github_slug(heading: str, used: set[str] | None = None) -> str:
    """The anchor GitHub (and MyST: ``myst_parser.slugs``, what ``myst_heading_anchors`` uses)
    gives a heading whose text reads ``heading``: lower case, every character but letters, digits,
    spaces, ``-`` and ``_`` dropped, each space a ``-``; with ``used`` (the slugs of the headings
    above it on the page, updated), ``-1``, ``-2``, ... after a slug already used.

    >>> github_slug("FL + SA"), github_slug("FedBN+"), github_slug("non-IID")
    ('fl--sa', 'fedbn', 'non-iid')
    """
    from myst_parser.slugs import github_slugify, unique_slug

    slug = github_slugify(heading.strip())
    if used is None:
        return slug
    slug = unique_slug(slug, used)
    used.add(slug)
    return slug


def anchors() -> dict[str, str]:
    """``{term: anchor}``: each term's anchor on the glossary page (the slugs of the page's
    headings in order, the page's title included)."""
    used: set[str] = set()
    github_slug("Glossary", used)
    return {name: github_slug(name, used) for name in TERMS}


def surface_forms() -> dict[str, str]:
    """``{spelling as it reads: term}``: each term's name, its aliases, and for a term that starts
    in lower case the same with a capital (a sentence's first word)."""
    forms: dict[str, str] = {}
    for t in TERMS.values():
        for form in (t.name, *t.aliases):
            form = _plain(form)
            forms.setdefault(form, t.name)
            if form[:1].islower():
                forms.setdefault(form[:1].upper() + form[1:], t.name)
    return forms


def term_pattern(forms: Iterable[str] | None = None) -> re.Pattern[str]:
    """The regular expression of the spellings ``forms`` (default: :func:`surface_forms`), the
    longest first, each a whole word: not inside a longer word, name or path (no letter, digit,
    ``*``, ``+``, ``/``, ``.``, ``-`` or ``_`` joined to it, but for a sentence's full stop)."""
    forms = sorted(surface_forms() if forms is None else forms, key=lambda f: (-len(f), f))
    alternation = "|".join(re.escape(f) for f in forms)
    return re.compile(rf"(?<![\w*+/.\-])(?:{alternation})(?![\w*+/\-]|\.\w)")


# -- Markdown -------------------------------------------------------------------------------------

#: What :func:`link_terms_markdown` leaves as it is: fenced code, inline code, links and images
#: (inline or reference), autolinks, HTML tags and comments, headings, bare URLs and math.
_PROTECTED = re.compile(
    r"""
      ^[ ]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}(?P=fence)[^\n]*$|\Z)   # fenced code
    | (?P<ticks>`+).+?(?P=ticks)                                                  # inline code
    | !?\[(?:[^\[\]\n]|\[[^\]\n]*\])*\](?:\([^)\n]*\)|\[[^\]\n]*\])?              # links, images
    | <!--.*?-->                                                                   # comments
    | <[^>\n]+>                                                                    # HTML, autolinks
    | ^[ ]{0,3}\#{1,6}[ ][^\n]*$                                                   # headings
    | https?://\S+                                                                 # bare URLs
    | \$\$.*?\$\$ | \$[^$\n]+\$                                                    # math
    | ^\(\S+\)=$                                                                   # MyST targets
    """,
    re.MULTILINE | re.DOTALL | re.VERBOSE,
)


def link_terms_markdown(text: str, target: str = DOCS_PAGE, seen: set[str] | None = None) -> str:
    """``text`` (Markdown) with the first use of each glossary term linked to its entry on the page
    ``target`` (``[TDMA](docs/glossary.md#tdma "task-dependent model aggregation")``).

    Code (fenced or inline), links and images, HTML, headings, URLs and math are left as they are.
    ``seen``: the terms already linked (by name; the set is updated), so that several strings of
    one page link each term once.
    """
    seen = set() if seen is None else seen
    forms = surface_forms()
    escaped = {f.replace("*", "\\*"): t for f, t in forms.items() if "*" in f}
    pattern = term_pattern([*forms, *escaped])
    forms = {**forms, **escaped}
    where = anchors()

    def link(m: re.Match[str]) -> str:
        name = forms[m.group(0)]
        if name in seen:
            return m.group(0)
        seen.add(name)
        title = TERMS[name].expansion.replace('"', "'")
        return f'[{_escape(_plain(m.group(0)))}]({target}#{where[name]} "{title}")'

    out, last = [], 0
    for m in _PROTECTED.finditer(text):
        out += [pattern.sub(link, text[last : m.start()]), m.group(0)]
        last = m.end()
    out.append(pattern.sub(link, text[last:]))
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m fedpl_core.report.glossary [--write]``: print the glossary page, or write it to
    ``docs/glossary.md``."""
    p = argparse.ArgumentParser(prog="python -m fedpl_core.report.glossary", description=main.__doc__)
    p.add_argument("--write", action="store_true", help=f"write the page to {DOCS_PAGE}")
    a = p.parse_args(argv)
    page = glossary_markdown()
    if a.write:
        (ROOT / DOCS_PAGE).write_text(page)
        print(f"wrote {DOCS_PAGE} ({len(TERMS)} terms)")
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
