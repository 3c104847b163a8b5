"""Highlights as safe HTML: every character of stored text escaped, matches wrapped in <mark>.

Whoosh's HtmlFormatter leaves quotes unescaped and returns '' when nothing matched, which
tempts a fallback to raw stored text; this formatter escapes everything itself and the
fallbacks below escape too.
"""

from __future__ import annotations

from collections.abc import Collection
from html import escape

from whoosh.analysis import Analyzer
from whoosh.highlight import ContextFragmenter, Formatter, Fragment, WholeFragmenter, get_text, highlight

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


def highlight_title(title: str, terms: Collection[str], analyzer: Analyzer) -> str:
    """The whole title, escaped, with matched words marked."""
    marked = highlight(title, terms, analyzer, WholeFragmenter(), _FORMATTER) if terms else ""
    return marked or escape(title, quote=True)


def highlight_abstract(abstract: str, terms: Collection[str], analyzer: Analyzer) -> str:
    """Up to two escaped fragments around matches, or the escaped opening of the abstract."""
    fragmenter = ContextFragmenter(maxchars=SNIPPET_CHARS // SNIPPET_FRAGMENTS, surround=40)
    marked = highlight(abstract, terms, analyzer, fragmenter, _FORMATTER, top=SNIPPET_FRAGMENTS) if terms else ""
    return marked or escape(opening(abstract, SNIPPET_CHARS), quote=True)


def opening(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, cut at a word boundary."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",.;:") + _ELLIPSIS
