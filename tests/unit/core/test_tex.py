"""The plain reading of TeX that both engines index (core.tex)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.analysis import words
from searchsvc.core import tex
from searchsvc.core.tex import MATH_END, MATH_START, math_words, plain, reading, run_number, runs, unmarked


def _words(text: str) -> list[str]:
    return [word.lower() for word in words(text)]


@pytest.mark.parametrize(
    ("source", "read"),
    [
        (r"Sorting in $O(n \log n)$ time", "Sorting in O(n log n) time"),
        (r"the $\mathrm{softmax}$ layer", "the softmax layer"),
        (r"an $\ell_1$ penalty", "an l1 penalty"),
        (r"\emph{robust} and \textbf{fast}", "robust and fast"),
        (r"na\"ive r\'esum\'es -- x~y", "naïve résumés – x y"),
        (r"$\alpha$-stable in $\mathbb{R}^n$", "α-stable in Rn"),
        (r"$$\sum_i x_i$$ and \(a+b\) and \[c\]", "∑i xi and a+b and c"),
        ("50% of A & B #1 $x$", "50% of A & B #1 x"),
    ],
)
def test_the_reading_is_the_words_of_the_tex(source: str, read: str) -> None:
    assert plain(source) == read


@pytest.mark.parametrize(
    "source",
    [
        "no TeX at all ~ -- here",  # not TeX: ~ and -- mean themselves
        "costs $5 and $10",  # pandoc's rule: no math
        "unbalanced $x",
        "an escaped \\$5",
    ],
)
def test_text_without_math_keeps_its_dollars_and_its_words(source: str) -> None:
    assert _words(plain(source)) == _words(source.replace("\\$", "$"))


COMMANDS = [
    r"$\mathrm{softmax}$",
    r"$\ell_1$",
    r"\emph{x}",
    r"\textbf{x}",
    r"$\frac{\partial L}{\partial x}$",
    r"$\mathcal{O}(n)$",
    r"$\operatorname{argmax}_x$",
    r"\begin{itemize} x",
    r"$\begin{matrix} a$",
    r"\unknowncommand{x} y",
    r"$\href{javascript:alert(1)}{x}$",
    "{" * 500 + r"\mathrm{x}" + "}" * 500,  # deeper than pylatexenc may go: read without it
    r"\frac{" * 300,
]


@pytest.mark.parametrize("source", COMMANDS)
def test_no_command_name_becomes_a_word(source: str) -> None:
    words = _words(plain(source))
    names = {name.lower() for name in re.findall(r"\\([A-Za-z]+)", source)}
    assert not names & set(words), words
    assert "ell_1" not in words and "\\" not in plain(source)


def test_math_runs_are_marked_by_number_and_found_again() -> None:
    source = r"a $x$ b $\mathrm{y}$ c"
    read = reading(source)
    assert read == f"a {chr(MATH_START)}x{MATH_END} b {chr(MATH_START + 1)}y{MATH_END} c"
    assert [run_number(char) for char in read if run_number(char) is not None] == [0, 1]
    assert [run.tex for run in runs(source) if run.math] == ["x", r"\mathrm{y}"]
    assert unmarked(read) == "a x b y c"


def test_marks_a_source_writes_itself_are_dropped() -> None:
    assert reading(f"a{chr(MATH_START + 3)}b{MATH_END}c") == "abc"


@pytest.mark.parametrize("opening", ["$a ", "$$", "\\(", "\\[", "\\begin{x}"])
def test_a_longest_abstract_of_unclosed_math_is_read(opening: str) -> None:
    text = (opening * 20_000)[:20_000]  # max_abstract_chars: each opening is tried MAX_RUN_CHARS far at most
    assert "\\" not in plain(text)


def test_a_math_runs_words_join_scripts_to_their_base_in_plain_letters() -> None:
    assert math_words(r"x_{ij}^2") == "xij2"
    assert math_words(r"\mathcal{O}(n) \ell_1") == "O(n) l1"  # not 𝒪, which one engine counts as two characters


_PIECES = [
    *(r"\alpha", r"\log", r"\ell", r"\leq", r"\infty", r"\cdot", r"\sum", r"\beta", r"\quad", r"\in", r"\mathrm"),
    *(" ", "\n", "x", "n", "N", "1", "2", "_", "^", "{", "}", "(", ")", "=", "+", "-", ",", "|", "<", ".", "!"),
]


@settings(max_examples=5000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_a_run_of_symbols_is_read_as_pylatexenc_reads_it(written: str) -> None:
    """math_words reads runs of symbols (`x^{2}`, `n \\log n`) itself: exactly as pylatexenc does."""
    assert tex.math_words.__wrapped__(written) == _by_pylatexenc(written)


def _by_pylatexenc(written: str) -> str:
    """math_words before it read symbols itself: every run through pylatexenc."""
    read = tex._decoded(written)
    return unicodedata.normalize("NFKC", tex._SCRIPT.sub("", tex._SPACES.sub(" ", read).strip()))


def test_common_runs_are_read_without_pylatexenc() -> None:
    for run in ("N=1000", "x^{2}", r"\alpha=0.1", r"O(n \log n)", r"\ell_1", "10^{-3}"):
        assert tex._symbols_read(run) is not None, run
    assert tex._symbols_read(r"\mathrm{softmax}") is None  # a command with an argument: pylatexenc's
