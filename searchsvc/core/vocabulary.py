"""An index's words arranged once, so "did you mean" compares a word only with its few near neighbours.

Walking an edit-distance automaton over the whole word list at query time costs more the
longer the word and the more words a query has: a 500-letter word held a worker for 15 s
(docs/reliability.md). Here the words are grouped once per generation by first letter (which
the spelling rule trusts) and length. A lookup reads only the groups of its first letter and a
length within MAX_EDITS, drops with one numpy pass the words whose letters differ too much to
be near, and computes the edit distance only for the few left.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from searchsvc.core.edits import MAX_EDITS, edit_distance

_SIGNATURE_BITS = 32
# One edit changes at most two bits of a word's letter signature (a substitution clears one
# letter's bit and sets another's; an insertion or deletion one; a swap none).
_BITS_PER_EDIT = 2


def signature(word: str) -> int:
    """The set of the word's letters, as bits (letters share a bit modulo 32, which only lets more through)."""
    bits = 0
    for char in word:
        bits |= 1 << (ord(char) % _SIGNATURE_BITS)
    return bits


@dataclass(frozen=True)
class _Group:
    """The words of one first letter and one length, concatenated, with their papers and signatures."""

    length: int
    text: str
    papers: npt.NDArray[np.int32]
    signatures: npt.NDArray[np.uint32]

    def near(self, word: str, bits: int, edits: int) -> list[tuple[str, int]]:
        """(word, papers) of this group within `edits` of `word`, whose signature is `bits`."""
        changed = np.bitwise_count(self.signatures ^ np.uint32(bits))
        found = []
        for i in np.flatnonzero(changed <= _BITS_PER_EDIT * edits).tolist():
            candidate = self.text[i * self.length : (i + 1) * self.length]
            if edit_distance(word, candidate) <= edits:
                found.append((candidate, int(self.papers[i])))
        return found


def _group(length: int, papers_by_word: dict[str, int]) -> _Group:
    words = sorted(papers_by_word)
    return _Group(
        length=length,
        text="".join(words),
        papers=np.array([papers_by_word[word] for word in words], dtype=np.int32),
        signatures=np.array([signature(word) for word in words], dtype=np.uint32),
    )


def _stored_group(length: int, text: str, papers: list[int], signatures: list[int]) -> _Group:
    return _Group(length, text, np.array(papers, dtype=np.int32), np.array(signatures, dtype=np.uint32))


class Vocabulary:
    """Words with the number of papers holding each, looked up by exact word or by nearness."""

    def __init__(self, groups: dict[tuple[str, int], _Group]) -> None:
        self._groups = groups
        self.size = sum(len(group.papers) for group in groups.values())

    @classmethod
    def of(cls, words: Iterable[tuple[str, int]]) -> Vocabulary:
        """From (word, papers) pairs; a word given more than once (from several fields) adds up."""
        grouped: dict[tuple[str, int], dict[str, int]] = {}
        for word, papers in words:
            if word:
                group = grouped.setdefault((word[0], len(word)), {})
                group[word] = group.get(word, 0) + papers
        return cls({key: _group(key[1], papers_by_word) for key, papers_by_word in grouped.items()})

    def save(self, path: Path) -> None:
        """Write it as one JSON document, which `load` reads far faster than an index's word list."""
        groups = [
            [first, length, group.text, group.papers.tolist(), group.signatures.tolist()]
            for (first, length), group in self._groups.items()
        ]
        path.write_text(json.dumps(groups, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        groups = json.loads(path.read_text(encoding="utf-8"))
        return cls({(first, length): _stored_group(length, *rest) for first, length, *rest in groups})

    def papers(self, word: str) -> int:
        """How many papers hold `word` (0 if none does)."""
        group = self._groups.get((word[:1], len(word)))
        if group is None:
            return 0
        i = _find(group, word)
        return 0 if i is None else int(group.papers[i])

    def items(self) -> Iterator[tuple[str, int]]:
        """Every (word, papers), in no particular order."""
        for group in self._groups.values():
            size = group.length
            for i, papers in enumerate(group.papers.tolist()):
                yield group.text[i * size : (i + 1) * size], papers

    def near(self, word: str, edits: int = MAX_EDITS) -> list[tuple[str, int]]:
        """(word, papers) of every word with `word`'s first letter within `edits` of it (itself included)."""
        bits = signature(word)
        found: list[tuple[str, int]] = []
        for length in range(max(len(word) - edits, 1), len(word) + edits + 1):
            group = self._groups.get((word[:1], length))
            if group is not None:
                found.extend(group.near(word, bits, edits))
        return found


def _find(group: _Group, word: str) -> int | None:
    """`word`'s place in the group's sorted words (binary search over the concatenated text)."""
    low, high = 0, len(group.papers)
    size = group.length
    while low < high:
        middle = (low + high) // 2
        candidate = group.text[middle * size : (middle + 1) * size]
        if candidate == word:
            return middle
        if candidate < word:
            low = middle + 1
        else:
            high = middle
    return None
