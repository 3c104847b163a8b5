"""A page's hits: stored papers with highlights as safe HTML (every character of stored text
escaped, matches wrapped in <mark>).

Whoosh's HtmlFormatter leaves quotes unescaped and returns '' when nothing matched, which
tempts a fallback to raw stored text; this formatter escapes everything itself and the
fallbacks below escape too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Any

from whoosh.analysis import Analyzer, Token, Tokenizer
from whoosh.analysis.tokenizers import default_pattern
from whoosh.highlight import ContextFragmenter, Formatter, Fragment, WholeFragmenter, get_text, highlight
from whoosh.support.charset import accent_map

from searchsvc.backends.whoosh.generation_cache import OpenGeneration
from searchsvc.backends.whoosh.schema import stem
from searchsvc.core.deadline import Deadline
from searchsvc.core.model import Hit
from searchsvc.core.paper import Paper
from searchsvc.core.tex import reading
from searchsvc.core.text import ELLIPSIS as _ELLIPSIS
from searchsvc.core.text import SNIPPET_CHARS, opening

SNIPPET_FRAGMENTS = 2


class MarkFormatter(Formatter):
    """Escapes all text and wraps matched tokens in <mark>."""

    between = f" {_ELLIPSIS} "

    def _text(self, text: str) -> str:
        return escape(text, quote=True)

    def format_token(self, text: str, token: object, replace: bool = False) -> str:
        return f"<mark>{escape(get_text(text, token, replace), quote=True)}</mark>"

    def format(self, fragments: list[Fragment], replace: bool = False) -> str:
        """Fragments joined by ellipses, with one at each end where words were cut off.

        Fragments start and end at words, so leading or trailing punctuation (such as the
        `<` of stored markup) is kept rather than replaced by an ellipsis.
        """
        if not fragments:
            return ""
        text = fragments[0].text
        head, tail = text[: fragments[0].startchar], text[fragments[-1].endchar :]
        before = _ELLIPSIS if _has_words(head) else self._text(head)
        after = _ELLIPSIS if _has_words(tail) else self._text(tail)
        return before + super().format(fragments, replace) + after


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


_FORMATTER = MarkFormatter()
_MATCH = "\x00match"  # the one "term" the highlighter looks for; _MarkingTokenizer marks tokens with it


@dataclass(frozen=True)
class MatchedWords:
    """What to mark: stemmed words (from plain query words) and unstemmed ones (phrases, wildcards)."""

    stemmed: frozenset[str] = frozenset()
    exact: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.stemmed or self.exact)

    def analyzer(self) -> Analyzer:
        """Unstemmed words of the text, each renamed to _MATCH if it matches either set."""
        return _MarkingTokenizer(self)


class _MarkingTokenizer(Tokenizer):
    """`unstemmed_analyzer() | <rename matches>` in one pass, the same tokens at a third of the cost.

    The four-stage generator chain was measured slower (docs/performance.md, "Figures behind the code").
    """

    def __init__(self, words: MatchedWords) -> None:
        self.words = words

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        exact, stemmed = self.words.exact, self.words.stemmed
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, match in enumerate(default_pattern.finditer(value)):
            word = match.group(0).lower().translate(accent_map)
            token.text = _MATCH if word in exact or _stem(word) in stemmed else word
            token.boost = 1.0
            token.stopped = False
            if positions:
                token.pos = start_pos + pos
            if chars:
                token.startchar = start_char + match.start()
                token.endchar = start_char + match.end()
            yield token


_stem = lru_cache(maxsize=50_000)(stem)


def highlight_title(title: str, words: MatchedWords) -> str:
    """The whole title (its reading, `core.tex`, as indexed), escaped, with matched words marked."""
    marked = highlight(title, {_MATCH}, words.analyzer(), WholeFragmenter(), _FORMATTER) if words else ""
    return marked or escape(title, quote=True)


def highlight_abstract(abstract: str, words: MatchedWords) -> str:
    """Up to two escaped fragments around matches, or the escaped opening of the abstract (its reading)."""
    fragmenter = ContextFragmenter(maxchars=SNIPPET_CHARS // SNIPPET_FRAGMENTS, surround=40)
    marked = (
        highlight(abstract, {_MATCH}, words.analyzer(), fragmenter, _FORMATTER, top=SNIPPET_FRAGMENTS) if words else ""
    )
    return marked or escape(opening(abstract), quote=True)


def hits_of(
    gen: OpenGeneration, ranked: list[tuple[int, float | None]], words: MatchedWords, deadline: Deadline
) -> list[Hit]:
    """The papers of `ranked`, highlighted: up to max_per_page abstracts, so the clock is read
    before each and after the last."""
    hits = []
    for docnum, score in ranked:
        deadline.check()
        paper = Paper.from_stored(gen.searcher.stored_fields(docnum))
        hits.append(
            Hit.of(
                paper,
                score,
                highlight_title(reading(paper.title), words),
                highlight_abstract(reading(paper.abstract), words),
            )
        )
    deadline.check()
    return hits
