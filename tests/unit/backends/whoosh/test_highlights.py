"""Our highlights are Whoosh's `highlight()` with the same fragmenter, scorer and an escaping
formatter, character for character: on real abstracts and titles, and on texts made to reach its
fragmenter's corners (long words, sentences past the fragment's size, text past its char limit)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from html import escape
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.analysis import Filter, Token
from whoosh.highlight import ContextFragmenter, Formatter, Fragment, WholeFragmenter, get_text, highlight

from searchsvc.backends.whoosh.highlights import (
    _FRAGMENT_CHARS,
    _SURROUND,
    SNIPPET_FRAGMENTS,
    MatchedWords,
    highlight_abstract,
    highlight_title,
)
from searchsvc.backends.whoosh.schema import stem, unstemmed_analyzer
from searchsvc.core.text import ELLIPSIS, opening
from tests.helpers.paths import SHARED_ACL

_MATCH = "\x00match"


class _Marking(Filter):
    """Renames each word the query matches to _MATCH: the one term Whoosh's highlighter looks for."""

    def __init__(self, words: MatchedWords) -> None:
        self.words = words

    def __call__(self, tokens: Iterator[Token]) -> Iterator[Token]:
        for token in tokens:
            if token.text in self.words.exact or stem(token.text) in self.words.stemmed:
                token.text = _MATCH
            yield token


class _EscapingFormatter(Formatter):
    """Whoosh's Formatter, escaping everything, with an ellipsis where words were cut off."""

    between = f" {ELLIPSIS} "

    def _text(self, text: str) -> str:
        return escape(text, quote=True)

    def format_token(self, text: str, token: object, replace: bool = False) -> str:
        return f"<mark>{escape(get_text(text, token, replace), quote=True)}</mark>"

    def format(self, fragments: list[Fragment], replace: bool = False) -> str:
        if not fragments:
            return ""
        text = fragments[0].text
        head, tail = text[: fragments[0].startchar], text[fragments[-1].endchar :]
        before = ELLIPSIS if any(c.isalnum() for c in head) else self._text(head)
        after = ELLIPSIS if any(c.isalnum() for c in tail) else self._text(tail)
        return before + super().format(fragments, replace) + after


def _whoosh_title(title: str, words: MatchedWords) -> str:
    analyzer = unstemmed_analyzer() | _Marking(words)
    marked = highlight(title, {_MATCH}, analyzer, WholeFragmenter(), _EscapingFormatter()) if words else ""
    return marked or escape(title, quote=True)


def _whoosh_abstract(abstract: str, words: MatchedWords) -> str:
    analyzer = unstemmed_analyzer() | _Marking(words)
    fragmenter = ContextFragmenter(maxchars=_FRAGMENT_CHARS, surround=_SURROUND)
    formatter = _EscapingFormatter()
    marked = highlight(abstract, {_MATCH}, analyzer, fragmenter, formatter, top=SNIPPET_FRAGMENTS) if words else ""
    return marked or escape(opening(abstract), quote=True)


def _words_of(text: str, chosen: random.Random) -> MatchedWords:
    """A few of the text's own words (some stemmed, some exact) and a word it lacks."""
    written = [token.text for token in unstemmed_analyzer()(text)]
    picked = chosen.sample(written, min(len(written), chosen.randint(1, 4)))
    half = len(picked) // 2
    return MatchedWords(frozenset([stem(w) for w in picked[:half]] + ["zzzabsent"]), frozenset(picked[half:]))


def _acl_records(count: int) -> list[dict[str, str]]:
    if not SHARED_ACL.exists():
        pytest.skip(f"{SHARED_ACL} is not here")
    with SHARED_ACL.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in islice(lines, count)]


def test_real_titles_and_abstracts_are_highlighted_as_whoosh_does() -> None:
    chosen = random.Random(7)
    records = _acl_records(1500)
    compared = 0
    for record in records:
        title, abstract = record.get("title") or "", record.get("abstract") or ""
        for words in (_words_of(abstract or title, chosen), _words_of(title, chosen), MatchedWords()):
            assert highlight_abstract(abstract, words) == _whoosh_abstract(abstract, words)
            assert highlight_title(title, words) == _whoosh_title(title, words)
            compared += 1
    assert compared >= 4500


_PIECES = st.sampled_from(
    ["model", "models", "Modèle", "the", "of", "neural", "a" * 130, "x.y", "3.5", "<b>", '"q"', "&", ". ", "... ", "! "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=120), st.randoms(use_true_random=False))
def test_made_up_texts_are_highlighted_as_whoosh_does(pieces: list[str], chosen: random.Random) -> None:
    text = " ".join(pieces)
    words = _words_of(text, chosen) if text.strip() else MatchedWords(frozenset({"model"}))
    assert highlight_abstract(text, words) == _whoosh_abstract(text, words)
    assert highlight_title(text, words) == _whoosh_title(text, words)


def test_text_past_whooshs_char_limit_is_highlighted_as_whoosh_does() -> None:
    words = MatchedWords(frozenset({stem("model")}), frozenset({"neural"}))
    for filler in (3276, 3277, 3278):  # matches straddling the 32,768th character
        text = "padding " * filler + "a neural model here. " * 30
        assert highlight_abstract(text, words) == _whoosh_abstract(text, words)
        assert highlight_title(text, words) == _whoosh_title(text, words)
    # A match ending just within the limit, the next word past it: Whoosh ends the fragment there.
    text = "p" * (32_768 - 12) + " model " + "unreached words"
    assert "unreached" in _whoosh_abstract(text, words)
    assert highlight_abstract(text, words) == _whoosh_abstract(text, words)


def test_every_character_is_escaped_and_matches_are_marked() -> None:
    words = MatchedWords(frozenset({stem("model")}))
    assert (
        highlight_title('<b>Models</b> & "you"', words)
        == "&lt;b&gt;<mark>Models</mark>&lt;/b&gt; &amp; &quot;you&quot;"
    )
    assert highlight_abstract("No match <here>", words) == "No match &lt;here&gt;"
