"""TeX in titles and abstracts: its math runs, and the plain reading that both engines index.

arXiv (Atom and OAI) and BibTeX keep TeX: `$O(n \\log n)$`, `$\\mathrm{softmax}$`, `\\emph{x}`,
`\\'e`. Indexed as written, command names become words (`mathrm`, `ell_1`). The reading turns
text commands into their text and each math run into its words (`O(n log n)`, `softmax`, `l1`:
scripts joined to their base and math letters as plain ones, so `\\ell_1` is the `l1` readers
type), and marks where each math run was with private-use characters that no tokenizer reads as
a word. Pages find the k-th math run of the source again by its mark and show it as MathML
(`web/math_html.py`); the marks pass through either engine's highlighter, so a snippet that cuts
a run is known.

A text without a backslash or a `$` is not TeX and is its own reading: `~` and `--` in a CSV
or OpenAlex abstract mean themselves.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text, get_default_latex_context_db

# The k-th math run of a text starts with chr(MATH_START + k) and ends with MATH_END. Runs after
# the MAX_MATH_RUNS-th are read as text. (ingest/bibtex.py uses U+E000.. inside its decoding only.)
MATH_START = 0xE800
MAX_MATH_RUNS = 1024
MATH_END = chr(MATH_START + MAX_MATH_RUNS)
_MARKS = re.compile(f"[{chr(MATH_START)}-{MATH_END}]")
# A math run longer than this is text: the pattern tries this far from each opening, so a 20,000-character
# abstract of unclosed `\(` costs 0.15 s, not seconds (pages render no longer run: web/math_html.py).
MAX_RUN_CHARS = 1000
# Braces nested deeper than this are not given to pylatexenc, whose parser recurses on them.
MAX_DEPTH = 24
# Math between `$$…$$`, `\[…\]` (display) or `$…$`, `\(…\)` (inline). A single `$` opens before a
# non-space and closes after one, not before a digit (pandoc's rule): "$5 and $10" is no math.
_RUN = re.compile(
    rf"(?<!\\)\$\$(?P<dd>[^$]{{1,{MAX_RUN_CHARS}}}?)(?<!\\)\$\$"
    rf"|\\\[(?P<bracket>.{{1,{MAX_RUN_CHARS}}}?)\\\]"
    rf"|(?<!\\)\$(?P<d>[^\s$](?:[^$]{{0,{MAX_RUN_CHARS}}}?[^\s$\\])?)\$(?!\d)"
    rf"|\\\((?P<paren>.{{1,{MAX_RUN_CHARS}}}?)\\\)",
    re.DOTALL,
)
_DISPLAY_GROUPS = ("dd", "bracket")
# Characters TeX reads specially that sources write for themselves: "50% of", "A & B", "#1".
_LITERAL_SPECIAL = re.compile(r"(?<!\\)([%&#])")
_LONE_DOLLAR = re.compile(r"(?<!\\)\$")
_COMMAND = re.compile(r"\\(?:[A-Za-z]+\*?|.)")  # the fallback: command names dropped
_SCRIPT = re.compile(r"\s*[_^]\s*")
_SPACES = re.compile(r"\s+")
# pylatexenc logs a warning for each command it cannot substitute; the reading then goes on
# without it (`_decoded`), as a rebuild must not log a line per odd abstract.
_library_log = logging.getLogger("pylatexenc")
_library_log.addHandler(logging.NullHandler())
_library_log.propagate = False
# Each command pylatexenc reads as a fixed text and that takes no argument (`\\alpha` → α, `\\log` → log,
# `\\leq` → ≤), from its own table: `_symbols_read` reads runs of them as it would.
_SYMBOLS = {
    spec.macroname: spec.simplify_repl
    for spec in get_default_latex_context_db().iter_macro_specs()
    if isinstance(getattr(spec, "simplify_repl", None), str) and "%" not in spec.simplify_repl and spec.discard
}
_SYMBOLS_RUN = re.compile(r"(?:\\[A-Za-z]+|[A-Za-z0-9 \t\n+\-=*/().,<>|^_{}\[\]:;!?])*")
_COMMAND_NAME = re.compile(r"\\([A-Za-z]+)")
_SYMBOL = re.compile(r"\\([A-Za-z]+)(?![A-Za-z])(?:[ \t\n]*(?=\\))?")  # pylatexenc drops spaces before a command
_BLANK = re.compile("[ \t\n]")
_TEXT = LatexNodes2Text(math_mode="text", strict_latex_spaces="based-on-source")  # "\\log n" keeps its space
# What pylatexenc does to a text without commands or braces, done without it (it costs a millisecond
# a run): most text between math runs is such.
_TYPOGRAPHY = (("---", "\u2014"), ("--", "\u2013"), ("``", "\u201c"), ("''", "\u201d"), ("~", " "))


@dataclass(frozen=True)
class Run:
    """A stretch of a text: math (the TeX between its delimiters) or text, with `source` as written."""

    tex: str
    math: bool
    source: str
    display: bool = False


def is_tex(text: str) -> bool:
    return "\\" in text or "$" in text


def runs(text: str) -> list[Run]:
    """The text's math runs (at most MAX_MATH_RUNS) and the text between them."""
    found: list[Run] = []
    at = 0
    for match in _RUN.finditer(text):
        if sum(run.math for run in found) == MAX_MATH_RUNS:
            break
        if match.start() > at:
            found.append(Run(text[at : match.start()], False, text[at : match.start()]))
        group = next(name for name, value in match.groupdict().items() if value is not None)
        found.append(Run(match[group], True, match[0], group in _DISPLAY_GROUPS))
        at = match.end()
    if at < len(text):
        found.append(Run(text[at:], False, text[at:]))
    return found


def reading(text: str) -> str:
    """What the engines index for `text`: text commands as text, math as its words between marks."""
    text = _MARKS.sub("", text)
    if not is_tex(text):
        return text
    parts = []
    number = 0
    for run in runs(text):
        if run.math:
            parts.append(f"{chr(MATH_START + number)}{math_words(run.tex)}{MATH_END}")
            number += 1
        else:
            parts.append(text_words(run.tex))
    return "".join(parts)


def plain(text: str) -> str:
    """The reading without its marks: a text for places that cannot hold math (a page's <title>)."""
    return unmarked(reading(text))


def unmarked(text: str) -> str:
    return _MARKS.sub("", text)


def run_number(char: str) -> int | None:
    """k if `char` starts the k-th math run of a reading."""
    number = ord(char) - MATH_START
    return number if 0 <= number < MAX_MATH_RUNS else None


@lru_cache(maxsize=4096)
def math_words(tex: str) -> str:
    """A math run's words: `O(n \\log n)` → `O(n log n)`, `\\ell_1` → `l1`, `\\mathrm{softmax}` → `softmax`.

    Math letters are the letters they style (NFKC: `ℓ` → `l`, `\\mathcal{O}`'s `𝒪` → `O`, `ℝ` → `R`):
    readers type `l1`, and the engines fold such letters differently (Lucene counts `𝒪` as two
    characters, Whoosh as one; Lucene folds `ℓ`, Whoosh does not), which would part their scores."""
    read = _symbols_read(tex)
    return unicodedata.normalize(
        "NFKC", _SCRIPT.sub("", _SPACES.sub(" ", _decoded(tex) if read is None else read).strip())
    )


def _symbols_read(tex: str) -> str | None:
    """What pylatexenc reads in a math run of symbols (`N=1000`, `x^{2}`, `\\alpha=0.1`, `n \\log n`:
    most runs of arXiv abstracts), read here in microseconds instead of its tenth of a millisecond a
    run, which made reading an arXiv collection's math the largest part of indexing it; None for any
    other run. Where pylatexenc reads otherwise than by its table (spaces beside braces, `--`, a blank
    line) pylatexenc reads it; tests/unit/core/test_tex.py compares the two on random runs."""
    if "--" in tex or "\n\n" in tex or not _SYMBOLS_RUN.fullmatch(tex):
        return None
    if ("{" in tex or "}" in tex) and _BLANK.search(tex):
        return None
    if any(name not in _SYMBOLS for name in _COMMAND_NAME.findall(tex)):
        return None
    return _SYMBOL.sub(lambda found: _SYMBOLS[found[1]], tex).replace("{", "").replace("}", "")


def text_words(tex: str) -> str:
    """Text commands as their text (`\\emph{x}` → `x`, `\\'e` → `é`, `--` → `–`), on one line."""
    if "\\" not in tex and "{" not in tex and "}" not in tex:
        for written, meant in _TYPOGRAPHY:
            tex = tex.replace(written, meant)
        return _SPACES.sub(" ", tex)
    return _SPACES.sub(" ", _decoded(_LONE_DOLLAR.sub(r"\\$", tex)))


def _decoded(tex: str) -> str:
    """pylatexenc's text of `tex`; without the commands' names when pylatexenc cannot read it."""
    escaped = _LITERAL_SPECIAL.sub(r"\\\1", tex)
    if escaped.count("{") <= MAX_DEPTH or _depth(escaped) <= MAX_DEPTH:
        try:
            return str(_TEXT.latex_to_text(escaped))
        except Exception:  # noqa: BLE001 -- a third-party parser on any text: a failure means "read it plainly"
            pass
    return _COMMAND.sub(" ", tex).replace("{", "").replace("}", "")


def _depth(tex: str) -> int:
    """How deep braces nest (an unopened `}` counts for nothing)."""
    deepest = depth = 0
    for char in tex:
        if char == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif char == "}":
            depth = max(depth - 1, 0)
    return deepest
