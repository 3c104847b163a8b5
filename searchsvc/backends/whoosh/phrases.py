"""Where a phrase's words stand side by side, found over whole posting lists with numpy.

Whoosh's phrase matcher (SpanNear2) lines up the words' position lists in Python, one paper at
a time, for every paper holding all the words: for `"of the"` that is most of the collection,
and phrases were the slowest kind of search at 300,000 papers (docs/performance.md). Here a
phrase's papers come from its word pairs, indexed as terms (schema.PAIR_FIELDS, as
Elasticsearch's `index_phrases`): for two words one posting list, read as an array
(postings.Postings); for more, the papers holding every pair, and only their positions are
decoded to test the words' adjacency, for all of them at once. A segment holds only the pairs of
words in more than PAIRED_ABOVE of its papers (schema.py): where a word is rarer, the phrase is
looked for in the word sequences of the rarer word's few papers (segment_words.py), or, for a
segment without them, found from its words' positions there. word_scores scores the
matches as Whoosh does; both paths are tested to agree (tests/unit/backends/whoosh/
test_word_scores.py).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from searchsvc.backends.whoosh.schema import PAIR_FIELDS, PAIR_SEPARATOR, PAIRED_ABOVE

if TYPE_CHECKING:
    from whoosh.reading import IndexReader

    from searchsvc.backends.whoosh.postings import Postings

Ints = npt.NDArray[np.integer]  # document numbers (int32 as cached, int64 as computed)
_STRIDE = np.int64(1) << 32  # a position's key is candidate index × _STRIDE + position: above any field's length
_COUNT_BYTES = 4  # a Positions value: the count as a 4-byte integer, then the pickled position deltas
_NONE = np.empty(0, dtype=np.int64)
_SEPARATOR = PAIR_SEPARATOR.encode("utf-8")


def phrase_docs(postings: Postings, field: str, words: Sequence[bytes], check: Callable[[], None]) -> Ints:
    """The papers (global document numbers, ascending) where `words` stand in this order, side by
    side, in `field`: as Whoosh's SpanNear2 with slop 1, ordered, the words' positions p, p+1, …

    Where the field has its word pairs indexed, the papers holding every pair of the phrase are
    the candidates (for two words, the answer); otherwise those holding every word."""
    if len(words) == 1:  # a word alone: where it is
        return postings.get(field, words[0])[0]
    pairs = PAIR_FIELDS.get(field)
    if pairs is None or pairs not in postings.schema:
        holding = [postings.get(field, word)[0] for word in words]
        if any(not len(ids) for ids in holding):
            return _NONE
        return _adjacent(postings, field, words, _intersection(holding), check)
    # Words in PAIRED_ABOVE papers or fewer in all (the vocabulary's count): no segment holds their pairs.
    bounds = {word: postings.papers_at_most(word) for word in words}
    rare = {word: bound for word, bound in bounds.items() if bound is not None and bound <= PAIRED_ABOVE}
    found: list[Ints] = []  # papers holding the phrase: two words, by their pair's postings
    unsure: list[Ints] = []  # candidates whose positions decide
    for reader, offset in postings.leaves:
        check()
        id_lists, all_paired = _pairs_in_segment(postings, reader, offset, field, words, rare)
        candidates = _intersection(id_lists)
        if not len(candidates):
            continue
        if all_paired:
            (found if len(words) == 2 else unsure).append(candidates)
            continue
        # The rarer word's few papers (PAIRED_ABOVE at most, unless the vocabulary misleads).
        sequences = postings.sequences(reader, field) if len(candidates) <= PAIRED_ABOVE else None
        matched = None if sequences is None else sequences.holding(candidates - offset, words)
        if matched is None:
            unsure.append(candidates)
        else:
            found.append(matched + offset)
    if unsure:
        found.append(_adjacent(postings, field, words, np.concatenate(unsure), check))
    return np.sort(np.concatenate(found)) if found else _NONE


def _pairs_in_segment(
    postings: Postings, reader: IndexReader, offset: int, field: str, words: Sequence[bytes], rare: dict[bytes, int]
) -> tuple[list[Ints], bool]:
    """The papers (global numbers) of each pair of the phrase in one segment: the pair's postings
    where the segment holds it, else the rarer word's papers, a superset (none past a pair found
    in none); and whether every pair was held. A word of `rare` costs no lookup of its frequency
    in the segment, whose term table answers in ~90 µs (`Postings.frequency_in` keeps the others)."""
    pairs = PAIR_FIELDS[field]

    def papers(word: bytes) -> int:
        return postings.frequency_in(reader, field, word)

    id_lists: list[Ints] = []
    all_paired = True
    for first, second in zip(words, words[1:], strict=False):
        if first in rare or second in rare:
            rarer = min((word for word in (first, second) if word in rare), key=rare.__getitem__)
        elif min(papers(first), papers(second)) > PAIRED_ABOVE:
            ids = postings.get(pairs, first + _SEPARATOR + second)[0]
            low, high = np.searchsorted(ids, (offset, offset + reader.doc_count_all()))
            id_lists.append(ids[low:high])
            continue
        else:
            rarer = first if papers(first) <= papers(second) else second
            if not papers(rarer):
                return [_NONE], False
        all_paired = False
        id_lists.append(postings.in_segment(reader, offset, field, rarer))
        if not len(id_lists[-1]):
            break
    return id_lists, all_paired


def _intersection(id_lists: Sequence[Ints]) -> Ints:
    return reduce(lambda a, b: np.intersect1d(a, b, assume_unique=True), sorted(id_lists, key=len))


def _adjacent(
    postings: Postings, field: str, words: Sequence[bytes], candidates: Ints, check: Callable[[], None]
) -> Ints:
    """The candidates (ascending) where the words stand side by side, from their positions."""
    decoded: dict[bytes, Ints] = {}
    kept: Ints | None = None
    for offset, word in enumerate(words):
        check()
        if word not in decoded:
            counts, positions = _read_positions(postings, field, word, candidates, check)
            decoded[word] = np.repeat(np.arange(len(candidates), dtype=np.int64) * _STRIDE, counts) + positions
        keys = decoded[word] - offset  # the position the phrase would start at; ascending, as the keys are
        if kept is None:
            kept = keys
        else:
            at = np.minimum(np.searchsorted(keys, kept), len(keys) - 1)
            kept = kept[keys[at] == kept] if len(keys) else _NONE
        if not len(kept):
            return _NONE
    assert kept is not None
    return candidates[np.unique(kept // _STRIDE)]


def _read_positions(
    postings: Postings, field: str, word: bytes, docs: Ints, check: Callable[[], None]
) -> tuple[Ints, Ints]:
    """`word`'s positions in each of `docs` (ascending): how many in each (0 where it is not), and
    all of them in order."""
    held = postings.at(field, word, docs, check)
    count_array = np.zeros(len(docs), dtype=np.int64)
    if not held.values:
        return count_array, _NONE
    found_counts, deltas = _decoded(held.values)
    count_array[np.searchsorted(docs, held.docs)] = found_counts
    positions = np.cumsum(deltas)  # each paper's deltas start from 0: restart the sum
    before = np.concatenate(([0], positions[np.cumsum(found_counts)[:-1] - 1]))
    return count_array, positions - np.repeat(before, found_counts)


def _decoded(values: list[bytes]) -> tuple[Ints, Ints]:
    """Each posting's count of positions and all their deltas in order, from values as Whoosh's
    Positions format writes them (formats.Positions.encode: the count, then the pickled deltas,
    maybe without pickle's final STOP). Unpickling them joined into one list was tried: decoding a
    block's values 2.4x faster changed nothing a phrase search spends (docs/performance.md)."""
    counts: list[int] = []
    deltas: list[int] = []
    for value in values:
        found = pickle.loads(value[_COUNT_BYTES:] if value.endswith(b".") else value[_COUNT_BYTES:] + b".")  # noqa: S301 - Whoosh's own encoding of its own files, which it unpickles too
        counts.append(len(found))
        deltas.extend(found)
    return np.array(counts, dtype=np.int64), np.array(deltas, dtype=np.int64)
