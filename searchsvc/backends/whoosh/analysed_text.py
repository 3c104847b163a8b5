"""A title or abstract analysed once for the three fields that index it.

The schema's analyzers (schema.py) are chains of Python generators: each word passes through
a tokenizer and three or four filters as a Token object, once for the stemmed field, again
for the unstemmed one and a third time for its word pairs, and Whoosh's formats then group
the tokens by word. Here each text is split once; each distinct word is folded, checked
against the stop words and stemmed once per process (`_WORDS`), and the three fields' terms,
frequencies and encoded positions are made from that one list. The result is what
`field.index(text)` yields for each field, term for term (tests/unit/backends/whoosh/
test_segment_writing.py compares them); queries are still analysed by the schema's analyzers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pickle import dumps

from whoosh.system import pack_uint

from searchsvc.backends.analysis import folded, ranked, words
from searchsvc.backends.whoosh.schema import PAIR_SEPARATOR, stem
from searchsvc.backends.whoosh.term_pool import FOUND_ONCE

# A word as read → (folded: the unstemmed fields' term, stemmed: the ranked fields' term or None
# for a stop word), as the UTF-8 bytes Whoosh indexes. Cleared when full, so it cannot grow with
# the collection.
_WORDS: dict[str, tuple[bytes, bytes | None]] = {}
_WORDS_KEPT = 50_000  # about 16 MB
_SEPARATOR = PAIR_SEPARATOR.encode("utf-8")  # UTF-8 of two words joined is the two words' UTF-8 joined
Item = tuple[bytes, int, float, bytes]  # Whoosh's (term, frequency, weight, encoded value)
_ONCE = pack_uint(1)
# The pickled positions of a word found once, at each of the first positions: most words of a text
# are found once, and a text's items were made a third faster without a pickle call each.
_ONLY_AT = [dumps([position], 2) for position in range(4096)]


class AnalysedText:
    """One text's items for its stemmed field, its unstemmed field and its word pairs field."""

    __slots__ = ("text", "words", "first_kept", "kept")

    def __init__(self, text: str) -> None:
        self.text = text
        known = [_WORDS.get(word) or _learn(word) for word in words(text)]
        self.words = [term for term, _stemmed in known]
        self.kept = [stemmed for _folded, stemmed in known if stemmed is not None]
        # The schema's RankedFilter renumbers: the first kept word keeps its place, the others follow it.
        self.first_kept = next((n for n, (_folded, stemmed) in enumerate(known) if stemmed is not None), 0)

    def stemmed(self) -> list[Item]:
        return _with_positions(self.kept, self.first_kept)

    def exact(self) -> list[Item]:
        return _with_positions(self.words, 0)

    def pairs(self, paired: frozenset[bytes] | None = None) -> list[Item]:
        """The word pairs; with `paired`, only those of two words in it."""
        words = self.words
        counts: dict[bytes, int] = {}
        adjacent: Iterable[tuple[bytes, bytes]] = zip(words, words[1:], strict=False)
        if paired is not None:
            adjacent = ((a, b) for a, b in adjacent if a in paired and b in paired)
        for pair in map(_SEPARATOR.join, adjacent):
            counts[pair] = counts.get(pair, 0) + 1
        return [
            (pair, 1, 1.0, FOUND_ONCE) if count == 1 else (pair, count, float(count), pack_uint(count))
            for pair, count in counts.items()
        ]


class SpellingCounts:
    """In how many texts each word is, by the unstemmed fields' terms, counted cheaply (in C) and
    perhaps too high, never too low: a text's spellings of one word ("Model", "model") count apart."""

    def __init__(self) -> None:
        self._spellings: Counter[str] = Counter()

    def add(self, text: str) -> None:
        self._spellings.update(set(words(text)))

    def above(self, least: int) -> frozenset[bytes]:
        """Every word in more than `least` of the texts, and perhaps a few more."""
        counts: Counter[bytes] = Counter()
        for spelling, count in self._spellings.items():
            known = _WORDS.get(spelling)
            counts[known[0] if known else _folded(spelling)] += count
        return frozenset(word for word, count in counts.items() if count > least)


def _learn(word: str) -> tuple[bytes, bytes | None]:
    if len(_WORDS) >= _WORDS_KEPT:
        _WORDS.clear()
    encoded = _folded(word)
    term = encoded.decode("utf-8")
    stemmed = stem(term) if ranked(term) else None
    _WORDS[word] = known = (
        encoded,
        encoded if stemmed == term else None if stemmed is None else stemmed.encode("utf-8"),
    )
    return known


def _folded(word: str) -> bytes:
    return folded(word).encode("utf-8")


def _with_positions(words: list[bytes], start: int) -> list[Item]:
    """Whoosh's Positions format: each distinct word with its count and its positions as deltas."""
    places: dict[bytes, list[int]] = {}
    for position, word in enumerate(words, start):
        found = places.get(word)
        if found is None:
            places[word] = [position]
        else:
            found.append(position)
    # Each value a bytes object of its own, as Whoosh's are: a block pickles its values as a tuple, and
    # pickle writes an object met twice as a reference to the first, which would change the bytes.
    return [
        (word, 1, 1.0, _ONCE + (_ONLY_AT[found[0]] if found[0] < len(_ONLY_AT) else dumps(found, 2)))
        if len(found) == 1
        else (word, len(found), float(len(found)), pack_uint(len(found)) + dumps(_deltas(found), 2))
        for word, found in places.items()
    ]


def _deltas(positions: list[int]) -> list[int]:
    return [positions[0], *(b - a for a, b in zip(positions, positions[1:], strict=False))]
