"""TeX math shown as MathML (web/math_html.py): rendered, sanitised, and never markup of the source's."""

from __future__ import annotations

import re
from html import escape
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from searchsvc.backends.analysis import words
from searchsvc.core.tex import plain, reading
from searchsvc.ingest.arxiv_atom import read_arxiv_atom
from searchsvc.web import math_html
from searchsvc.web.math_html import MAX_MATH_CHARS, mathml, shown, tex_html
from tests.helpers.fuzzing import FUZZ
from tests.helpers.paths import SOURCE_SAMPLES

SAFE_ELEMENTS = {"math", "mrow", "mi", "mn", "mo", "mtext", "msub", "msup", "msubsup", "mfrac", "msqrt", "mark"}
SAFE_ATTRIBUTES = {"display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "form"}
# The sanitiser's allow-list: presentation only, no event handler, link, style or namespace.
ALLOWED_ATTRIBUTES = math_html.MATHML_ATTRIBUTES


class _Tags(HTMLParser):
    """Every element and attribute of a piece of HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.add(tag)
        self.attributes.update(name for name, _value in attrs)


def _tags(html: str) -> _Tags:
    found = _Tags()
    found.feed(html)
    found.close()
    return found


def test_math_in_a_title_is_mathml() -> None:
    html = tex_html(r"Sorting in $O(n \log n)$ time with \emph{few} comparisons")
    assert html.startswith('Sorting in <math display="inline"><mrow><mi>O</mi>')
    assert html.endswith("</math> time with few comparisons")
    assert "$" not in html and "\\" not in html
    thin = '<mspace width="0.1667em"></mspace>'  # a function's name set apart, as TeX sets \log
    assert f"<mi>n</mi>{thin}<mi>log</mi>{thin}<mi>n</mi>" in html


HOSTILE = [
    r"$\text{<script>alert(1)</script>}$",
    r"$\href{javascript:alert(1)}{x}$",
    r"$\mathrm{<img src=x onerror=alert(1)>}$",
    r"<img src=x onerror=alert(1)> $x$ <script>alert(1)</script>",
    r"$<img src=x onerror=alert(1)>$",
    r"$\operatorname{<b onmouseover=alert(1)>}$",
    r'$\mathrm{"><svg onload=alert(1)>}$',
    r"$a < b & c > d$",
    r"$\begin{matrix} a$ and $\begin{foo}$",
    "unbalanced $x <b>",
    r"$\unknowncommand{<i>}$",
    "$" + "{" * 5000 + "x" + "}" * 5000 + "$",
    "$" + "x^" * 3000 + "y$",
    "$" + "\\frac{" * 200 + "$",
    "$" + "a" * (MAX_MATH_CHARS + 1) + "$",
]


@pytest.mark.parametrize("source", HOSTILE)
def test_nothing_a_source_writes_becomes_markup(source: str) -> None:
    html = tex_html(source)
    found = _tags(html)
    assert found.elements <= SAFE_ELEMENTS | {"mspace", "mover", "munder", "mtable", "mtr", "mtd", "mstyle"}, html
    assert found.attributes <= SAFE_ATTRIBUTES, html
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "href" not in html.lower()


@pytest.mark.parametrize(
    "source",
    [r"$\begin{matrix} a$", "$" + "{" * 100 + "x" + "}" * 100 + "$", "$" + "a" * (MAX_MATH_CHARS + 1) + "$"],
)
def test_math_that_cannot_or_may_not_be_rendered_is_its_escaped_tex(source: str) -> None:
    assert tex_html(source) == escape(source, quote=True)


def test_text_latex2mathml_passes_through_is_escaped_or_refused() -> None:
    assert mathml(r"\text{<script>alert(1)</script>}") is None  # an element outside the allow-list
    rendered = mathml(r"a < b & c")
    assert rendered is not None and "&lt;" in rendered and "&amp;" in rendered
    rendered = mathml(r"\href{javascript:alert(1)}{x}")
    assert rendered is not None and "javascript" not in rendered


def test_query_words_beside_math_stay_marked() -> None:
    source = r"The $\mathrm{softmax}$ of a \emph{neural} net in $O(n)$"
    highlighted = escape(reading(source)).replace("neural", "<mark>neural</mark>").replace("net", "<mark>net</mark>")
    html = shown(highlighted, source)
    assert html.startswith('The <math display="inline">')
    assert "of a <mark>neural</mark> <mark>net</mark> in <math" in html and html.endswith("</math>")


def test_a_mark_inside_math_is_dropped_with_the_math_rendered() -> None:
    source = r"The $\mathrm{softmax}$ layer"
    highlighted = escape(reading(source)).replace("softmax", "<mark>softmax</mark>")
    html = shown(highlighted, source)
    assert "<mark>" not in html and html.count("<math") == 1 and html.endswith("</math> layer")


def test_a_snippet_cutting_through_math_shows_the_cut_runs_words() -> None:
    source = r"We sort in $O(n \log n)$ time and then in $\mathcal{O}(n)$ time"
    read = escape(reading(source))
    head = read[read.index("log") :]  # starts inside the first run
    html = shown("… " + head, source)
    assert html.startswith("… log n) time and then in <math")
    tail = read[: read.index("\\") if "\\" in read else read.index("log")]  # ends inside the first run
    assert shown(tail + " …", source) == "We sort in O(n  …"


def test_marks_of_two_fragments_are_not_taken_for_one_run() -> None:
    source = r"$a$ one $b$ two $c$"
    read = reading(source)
    # A highlight joining the start of the first run to the end of the last: no run's words between.
    joined = read[:2] + " … " + read[-2:]
    assert "<math" not in shown(escape(joined), source)


def test_the_real_arxiv_samples_math_is_shown_as_math_and_read_as_its_words() -> None:
    """0710.2073 in tests/data/sources/arxiv-api.atom: `$σ$-model` in its title, `$\\sigma$-model` in its abstract."""
    papers = list(read_arxiv_atom(SOURCE_SAMPLES / "arxiv-api.atom", lambda message: None))
    (paper,) = [paper for paper in papers if "Alday-Maldacena" in paper.title]
    assert "$σ$-model" in paper.title and r"$\sigma$-model" in paper.abstract
    assert plain(paper.title).startswith("On coincidence of Alday-Maldacena-regularized σ-model and")
    assert plain(paper.abstract).startswith("For the σ-model and Nambu-Goto actions")
    for text in (paper.title, paper.abstract):
        html = tex_html(text)
        assert html.count("<math") == 1 and "<mi>σ</mi>" in html and "$" not in html and "\\" not in html


# Pieces of TeX, right and wrong, and of markup, to build soup from.
TEX_PIECES = [
    "$", "$$", "\\(", "\\)", "\\[", "\\]", "{", "}", "\\", "_", "^", "%", "&", "#", "~", "--", " ", "x", "n",
    "\\mathrm{", "\\ell", "\\log", "\\frac{", "\\text{", "\\href{", "\\emph{", "\\'e", "\\begin{matrix}",
    "\\end{matrix}", "\\left(", "\\right)", "\\sqrt", "\\unknown", "<script>", "</script>", "<img onerror=x>",
    "javascript:", '"', "'", "\ue800", "\uec00", "<mark>", "&amp;",
]  # fmt: skip
tex_soup = st.lists(st.sampled_from(TEX_PIECES), max_size=60).map("".join) | st.text(max_size=300)


def test_the_allow_list_holds_no_event_link_style_or_namespace() -> None:
    risky = {"href", "src", "style", "xmlns", "xlink:href", "class", "id", "actiontype", "definitionurl"}
    assert not ALLOWED_ATTRIBUTES & risky and not any(name.startswith("on") for name in ALLOWED_ATTRIBUTES)
    assert not math_html.MATHML_ELEMENTS & {"maction", "semantics", "annotation", "annotation-xml", "script", "a"}


@pytest.mark.reliability
@FUZZ
@given(tex_soup)
def test_any_text_is_read_and_shown_without_error_or_markup(source: str) -> None:
    read = {word.lower() for word in words(plain(source))}
    # The source's words outside control sequences: a control word, or a control symbol such as the `\\` of `\\sqrt`.
    written = re.sub(r"\\(?:[A-Za-z]+|.)", " ", source, flags=re.DOTALL)
    assert not read & {"mathrm", "ell", "frac", "emph", "href", "begin", "end", "unknown", "sqrt"} - {
        word.lower() for word in words(written)
    }
    html = tex_html(source)
    found = _tags(html)
    allowed = SAFE_ELEMENTS | {"mspace", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mroot"}
    assert found.elements <= allowed, html
    assert found.attributes <= ALLOWED_ATTRIBUTES, html
    assert shown(escape(reading(source)), source) == html  # a highlight without marks is the whole text
    marked = shown(escape(reading(source)).replace("x", "<mark>x</mark>"), source)
    assert _tags(marked).elements <= allowed
