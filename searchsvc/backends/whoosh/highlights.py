"""Highlights as safe HTML: every character of stored text escaped, matched words in <mark>.

The same highlights as Whoosh's `highlight()` gives with its ContextFragmenter (abstracts) or
WholeFragmenter (titles), BasicFragmentScorer and a formatter that escapes everything (Whoosh's
HtmlFormatter leaves quotes unescaped and returns '' when nothing matched, which tempts a
fallback to raw stored text), computed in one pass over plain numbers. Whoosh's passes a Token
object through four generators per word: 0.5 ms an abstract, half a phrase search's time on the
ACL records (docs/performance.md). Its fragmenter's rules, quirks included, are ported line by
line, and tests/unit/backends/whoosh/test_highlights.py holds both to the same output.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from operator import itemgetter
from typing import NamedTuple

from whoosh.highlight import DEFAULT_CHARLIMIT

from searchsvc.backends.analysis import folded, word_pattern
from searchsvc.backends.whoosh.schema import stem
from searchsvc.core.text import ELLIPSIS, SNIPPET_CHARS, opening

SNIPPET_FRAGMENTS = 2
_FRAGMENT_CHARS = SNIPPET_CHARS // SNIPPET_FRAGMENTS  # ContextFragmenter's maxchars
_SURROUND = 40  # characters of context before the first match of a fragment and after its last
_BETWEEN = f" {ELLIPSIS} "

_stem = lru_cache(maxsize=50_000)(stem)

Span = tuple[int, int]  # a word's first character and the one after its last


@dataclass(frozen=True)
class MatchedWords:
    """What to mark: stemmed words (from plain query words) and unstemmed ones (phrases, wildcards)."""

    stemmed: frozenset[str] = frozenset()
    exact: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.stemmed or self.exact)

    _judged: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def marked(self, written: list[str]) -> list[bool]:
        """Whether each word (as written) is marked: folded as the unstemmed fields fold it, it is
        one of `exact`, or stemmed as the text fields stem it, one of `stemmed`. Each distinct word
        is judged once: a page's abstracts repeat most of theirs."""
        judged = self._judged
        for word in set(written).difference(judged):
            word_folded = folded(word)
            judged[word] = word_folded in self.exact or _stem(word_folded) in self.stemmed
        return list(map(judged.__getitem__, written))


class _Fragment(NamedTuple):
    start: int
    end: int
    matches: list[Span]


def highlight_title(title: str, words: MatchedWords) -> str:
    """The whole title (its reading, `core.tex`, as indexed), escaped, with matched words marked."""
    matches = [span for span, marked in _words(title, words)[0] if marked] if words else []
    return _formatted(title, [_Fragment(0, len(title), matches)]) if matches else escape(title, quote=True)


def highlight_abstract(abstract: str, words: MatchedWords) -> str:
    """Up to two escaped fragments around matches, or the escaped opening of the abstract (its reading)."""
    fragments = _best(_context_fragments(abstract, *_words(abstract, words))) if words else []
    return _formatted(abstract, fragments) if fragments else escape(opening(abstract), quote=True)


def _words(text: str, words: MatchedWords) -> tuple[list[tuple[Span, bool]], int | None]:
    """Each word of `text` (analysis.WORD_PATTERN's) ending within DEFAULT_CHARLIMIT, and whether
    it is marked; and the end of the first word past it (Whoosh ends a last fragment there), if any.
    Spans and words are listed by the regular expression engine, each distinct word judged once."""
    pattern = word_pattern(text)
    spans = [match.span() for match in pattern.finditer(text)]
    written = pattern.findall(text)
    tokens = list(zip(spans, words.marked(written), strict=True))
    if spans and spans[-1][1] > DEFAULT_CHARLIMIT:
        within = bisect_right(spans, DEFAULT_CHARLIMIT, key=itemgetter(1))
        return tokens[:within], spans[within][1]
    return tokens, None


def _context_fragments(text: str, tokens: list[tuple[Span, bool]], cut: int | None) -> list[_Fragment]:
    """Whoosh's ContextFragmenter.fragment_tokens (maxchars _FRAGMENT_CHARS, surround _SURROUND),
    line by line: a fragment starts up to _SURROUND characters before a match and ends
    _SURROUND after the last, within _FRAGMENT_CHARS of words. As there, a match that would pass
    the limit ends the fragment unmarked, and a fragment may end with no match (scored 0: dropped)."""
    fragments = []
    first: int | None = None
    firsts: deque[int] = deque()  # starts of the unmatched words just before: the context
    countdown = -1  # characters left before the fragment ends; below 0 outside a fragment
    matches: list[Span] = []
    end = 0
    length = 0  # the fragment's characters (of words) so far
    for (start, end), marked in tokens:
        size = end - start
        if countdown < 0 and not marked:
            firsts.append(start)
            while firsts and end - firsts[0] > _SURROUND:
                firsts.popleft()
        elif length + size > _FRAGMENT_CHARS:
            countdown = 0
        elif marked:
            countdown = _SURROUND
            if first is None:
                if firsts:
                    first = firsts[0]
                else:
                    first = start
                    countdown += _SURROUND
            matches.append((start, end))
        if countdown >= 0:
            length += size
            countdown -= size
            if countdown <= 0:
                fragments.append(_fragment(text, matches, first, end))
                matches, firsts, first, length = [], deque(), None, 0
    if matches:
        fragments.append(_fragment(text, matches, first, end if cut is None else cut))
    return fragments


def _fragment(text: str, matches: list[Span], start: int | None, end: int) -> _Fragment:
    """Whoosh's mkfrag: a fragment with no start begins at its first match (or the text's start)."""
    if start is None:
        start = matches[0][0] if matches else 0
    return _Fragment(max(0, start), min(len(text), end), matches)


def _best(fragments: list[_Fragment]) -> list[_Fragment]:
    """The SNIPPET_FRAGMENTS with most matches in text order, as Whoosh's top_fragments chooses with
    BasicFragmentScorer (100 per match, every match being of one marked "term"; ties to the later
    fragment, as heapq.nlargest compares Fragments by their start) and minscore 1."""
    scored = sorted(((len(f.matches), f.start, f) for f in fragments if f.matches), reverse=True, key=lambda s: s[:2])
    return sorted((f for _, _, f in scored[:SNIPPET_FRAGMENTS]), key=lambda f: f.start)


def _formatted(text: str, fragments: list[_Fragment]) -> str:
    """Fragments escaped with matches marked, joined by ellipses, with one at each end where words
    were cut off (fragments start and end at words, so leading or trailing punctuation, such as the
    `<` of stored markup, is kept rather than replaced by an ellipsis); '' for none."""
    if not fragments:
        return ""
    head, tail = text[: fragments[0].start], text[fragments[-1].end :]
    before = ELLIPSIS if _has_words(head) else escape(head, quote=True)
    after = ELLIPSIS if _has_words(tail) else escape(tail, quote=True)
    return before + _BETWEEN.join(_marked(text, fragment) for fragment in fragments) + after


def _marked(text: str, fragment: _Fragment) -> str:
    """One fragment escaped, its matches in <mark> (Whoosh's Formatter.format_fragment)."""
    output = []
    index = fragment.start
    for start, end in fragment.matches:  # words in order, never overlapping
        if start < index:
            continue
        if start > index:
            output.append(escape(text[index:start], quote=True))
        output.append(f"<mark>{escape(text[start:end], quote=True)}</mark>")
        index = end
    output.append(escape(text[index : fragment.end], quote=True))
    return "".join(output)


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)
