"""Highlights as safe HTML: every character of stored text escaped, matches wrapped in <mark>.

Whoosh's HtmlFormatter leaves quotes unescaped and returns '' when nothing matched, which
tempts a fallback to raw stored text; this formatter escapes everything itself and the
fallbacks below escape too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from whoosh.analysis import Analyzer, Filter, Token
from whoosh.highlight import ContextFragmenter, Formatter, Fragment, WholeFragmenter, get_text, highlight

from searchsvc.backends.whoosh.schema import stem, unstemmed_analyzer

SNIPPET_CHARS = 240  # the abstract snippet: about three lines of a result list
SNIPPET_FRAGMENTS = 2
_ELLIPSIS = "…"


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
_MATCH = "\x00match"  # the one "term" the highlighter looks for; _Matches marks tokens with it


@dataclass(frozen=True)
class MatchedWords:
    """What to mark: stemmed words (from plain query words) and unstemmed ones (phrases, wildcards)."""

    stemmed: frozenset[str] = frozenset()
    exact: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.stemmed or self.exact)

    def analyzer(self) -> Analyzer:
        """Unstemmed words of the text, each renamed to _MATCH if it matches either set."""
        return unstemmed_analyzer() | _Matches(self)


class _Matches(Filter):
    def __init__(self, words: MatchedWords) -> None:
        self.words = words

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        for token in tokens:
            word = token.text
            if word in self.words.exact or _stem(word) in self.words.stemmed:
                token.text = _MATCH
            yield token


_stem = lru_cache(maxsize=50_000)(stem)


def highlight_title(title: str, words: MatchedWords) -> str:
    """The whole title, escaped, with matched words marked."""
    marked = highlight(title, {_MATCH}, words.analyzer(), WholeFragmenter(), _FORMATTER) if words else ""
    return marked or escape(title, quote=True)


def highlight_abstract(abstract: str, words: MatchedWords) -> str:
    """Up to two escaped fragments around matches, or the escaped opening of the abstract."""
    fragmenter = ContextFragmenter(maxchars=SNIPPET_CHARS // SNIPPET_FRAGMENTS, surround=40)
    marked = (
        highlight(abstract, {_MATCH}, words.analyzer(), fragmenter, _FORMATTER, top=SNIPPET_FRAGMENTS) if words else ""
    )
    return marked or escape(opening(abstract, SNIPPET_CHARS), quote=True)


def opening(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, cut at a word boundary."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",.;:") + _ELLIPSIS
