"""A generation's posting lists as numpy arrays (global document numbers, weights), read a block
at a time and kept per generation within a bound: what word_scores.py scores and phrases.py
matches from."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
from whoosh import columns
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher, _lenfield
from whoosh.reading import IndexReader, TermNotFound
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.whoosh.posting_blocks import Block, all_postings, blocks, postings
from searchsvc.backends.whoosh.posting_blocks import Postings as BlockPostings
from searchsvc.backends.whoosh.segment_words import GenerationWords, SegmentWords

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.integer]  # document numbers (int32 as cached, int64 as computed)
PostingIds = npt.NDArray[np.int32]
PostingWeights = npt.NDArray[np.float32]
# Postings kept per generation and process, 8 bytes each (int32 document numbers, float32 weights:
# Whoosh's own types), ~128 MB at most. Phrases read the unstemmed fields' lists of common words
# too (`"of the"`), so at 300,000 papers half as many would evict the lists sentences reread.
CACHED_POSTINGS = 16_000_000
# A word's whole posting list is read (and cached) for its weights in some papers when these may
# be in more than 1/_WHOLE_LIST_ABOVE of its blocks of postings: a block costs as much to read for
# one paper as for all of its 128, and a word that common is soon asked for again. Fewer papers:
# the blocks holding them are read alone, uncached.
_POSTINGS_PER_BLOCK = 128
_WHOLE_LIST_ABOVE = 4
# Blocks decoded for the postings of a few papers (`at`: a phrase's positions), kept per generation
# and process: a common word's are read again by most phrases (`"the"` beside a rarer word, whose
# pairs no segment holds: schema.PAIRED_ABOVE). About 9 KB each decoded, so ~74 MB at most: 300
# phrases on the ACL records had a p50 of 6.7 ms and a p95 of 21.3 ms with 8,192, 7.6 and 25.4 ms
# with 2,048 (docs/performance.md, "Rebuilds").
CACHED_BLOCKS = 8192
# Block headers of the posting lists `at` reads, kept so that the blocks holding some papers are
# found without stepping through the headers before them (a common word's run to ~120 blocks a
# segment of the ACL records, 1,200 at 300,000 papers): 48 bytes a block, ~5 MB at most.
CACHED_HEADERS = 100_000
# A word's document frequency in one segment, kept for phrases, which ask it for every word and
# segment (schema.PAIRED_ABOVE): Whoosh's term table answers in ~90 µs. ~200 bytes each, ~4 MB.
CACHED_FREQUENCIES = 20_000


_NO_IDS = np.empty(0, dtype=np.int64)

Placement = tuple[tuple[str, int, int], ...]  # (segment id, first document, documents) of each segment


class Held(NamedTuple):
    """A word's postings in some papers: documents (global, ascending), weights, values (bytes or None)."""

    docs: Ints
    weights: npt.NDArray[np.floating]
    values: list[Any]


class Postings:
    """Posting lists of one generation as arrays (global document numbers, weights), cached.

    Whoosh stores a weight as a float32 (a word's frequency, times 1.0 here): kept as one, it is
    exact, and products with the field weights (4.0, 1.0) are too.

    A re-open takes the lists the generation before had cached: a segment's postings never change
    (deleted papers are masked by the caller), so a list is moved to the new document numbers on
    its first use, with only the new segments read. Read again, the common words of a pasted
    sentence took a worker's first searches after every change at 300,000 papers 2x as long."""

    def __init__(
        self,
        searcher: Searcher,
        limit: int = CACHED_POSTINGS,
        previous: Postings | None = None,
        directory: Path | None = None,
        word_papers: Callable[[str], int] | None = None,
    ) -> None:
        """`directory`: the generation's folder, where its segments' word sequences are (segment_words);
        `word_papers`: a word's papers in the unstemmed fields, each field and segment added up (the
        generation's vocabulary), which no one segment's field can exceed."""
        self._searcher = searcher
        self._reader = searcher.reader()
        self.leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]  # (segment, first doc)
        self._placement: Placement = tuple(
            (_segment_id(reader), offset, reader.doc_count_all()) for reader, offset in self.leaves
        )
        # Each list with the placement its document numbers are of (a previous generation's until used).
        self._cache: OrderedDict[tuple[str, bytes], tuple[PostingIds, PostingWeights, Placement]] = OrderedDict()
        self._cached = 0
        # Keyed by segment id, field, term (and a block's position): a segment's never change.
        self._blocks: _Recent[tuple[str, str, bytes, int], BlockPostings] = _Recent(CACHED_BLOCKS)
        self._headers: _Recent[tuple[str, str, bytes], npt.NDArray[np.int64]] = _Recent(CACHED_HEADERS, len)
        self._frequencies: _Recent[tuple[str, str, bytes], int] = _Recent(CACHED_FREQUENCIES)
        self._lock = threading.Lock()  # a generation is shared by the threads of a process
        if previous is not None:
            with previous._lock:
                self._cache, self._cached = OrderedDict(previous._cache), previous._cached
            self._blocks, self._headers = previous._blocks.copy(), previous._headers.copy()
            self._frequencies = previous._frequencies.copy()
        self._words: GenerationWords | None = None
        if directory is not None:
            self._words = GenerationWords(directory, previous._words if previous else None)
        self._word_papers = word_papers
        self._limit = limit
        self._lengths: dict[str, Floats] = {}
        self.doc_count = self._reader.doc_count_all()
        self.schema = self._reader.schema

    def get(self, field: str, text: bytes) -> tuple[PostingIds, PostingWeights]:
        key = (field, text)
        with self._lock:
            found = self._recent(key)
            if found is not None:
                return found
            found = self._read(field, text)
            self._keep(key, found)
            return found

    def _keep(self, key: tuple[str, bytes], found: tuple[PostingIds, PostingWeights]) -> None:
        """Cache `found`, the least recently used going past the limit (the caller holds the lock)."""
        self._cache[key] = (*found, self._placement)
        self._cached += len(found[0])
        while self._cached > self._limit and len(self._cache) > 1:
            _, (ids, _, _) = self._cache.popitem(last=False)
            self._cached -= len(ids)

    def _recent(self, key: tuple[str, bytes]) -> tuple[PostingIds, PostingWeights] | None:
        """The cached list, made the most recently used (the caller holds the lock)."""
        found = self._cache.get(key)
        if found is None:
            return None
        ids, weights, placement = found
        if placement == self._placement:
            self._cache.move_to_end(key)
            return ids, weights
        del self._cache[key]
        self._cached -= len(ids)
        moved = self._moved(key, ids, weights, placement)
        self._keep(key, moved)
        return moved

    def _moved(
        self, key: tuple[str, bytes], ids: PostingIds, weights: PostingWeights, placement: Placement
    ) -> tuple[PostingIds, PostingWeights]:
        """A list cached with another generation's `placement`, in this one's document numbers: the
        postings of the segments both hold moved, those of the others read."""
        before = {segment: start for segment, start, _ in placement if segment}
        moved_ids: list[Ints] = []
        moved_weights: list[npt.NDArray[np.floating]] = []
        for (reader, offset), (segment, _, count) in zip(self.leaves, self._placement, strict=True):
            if segment in before:
                start = before[segment]
                low, high = np.searchsorted(ids, (start, start + count))
                moved_ids.append(ids[low:high].astype(np.int64) - start + offset)
                moved_weights.append(weights[low:high])
            else:
                self._read_leaf(reader, offset, *key, moved_ids, moved_weights)
        return _joined(moved_ids, moved_weights)

    def _read(self, field: str, text: bytes) -> tuple[PostingIds, PostingWeights]:
        ids: list[Ints] = []
        weights: list[npt.NDArray[np.floating]] = []
        for reader, offset in self.leaves:
            self._read_leaf(reader, offset, field, text, ids, weights)
        return _joined(ids, weights)

    def frequency_in(self, reader: IndexReader, field: str, text: bytes) -> int:
        """How many papers of one segment (of `leaves`) hold `text`, deleted ones included, kept."""
        key = (_segment_id(reader), field, text)
        found = self._frequencies.get(key)
        if found is None:
            found = reader.doc_frequency(field, text)
            if key[0]:  # a reader of no one segment has no id to key it by
                self._frequencies.keep(key, found)
        return found

    def papers_at_most(self, text: bytes) -> int | None:
        """At least as many papers as hold the unstemmed word `text` in any one segment's field, from
        a table in memory (no term lookup); None where there is none."""
        return None if self._word_papers is None else self._word_papers(text.decode("utf-8"))

    def sequences(self, reader: IndexReader, field: str) -> SegmentWords | None:
        """One segment's (of `leaves`) word sequences of `field`, if it has them."""
        segment = _segment_id(reader)
        if self._words is None or not segment:
            return None
        return self._words.of(segment, field, reader.doc_count_all())

    def in_segment(self, reader: IndexReader, offset: int, field: str, text: bytes) -> Ints:
        """The papers (global document numbers) of one segment (of `leaves`) holding `text`, for a
        word known to be in few of them: its blocks kept decoded (`CACHED_BLOCKS`), as `at` reads
        them next for the word's positions."""
        segment = _segment_id(reader)
        matcher = _Matcher(reader, field, text)
        headers = self._headers_of(matcher, segment)
        if headers is None:
            if (field, text) not in reader:
                return _NO_IDS
            return np.array(list(reader.postings(field, text).all_ids()), dtype=np.int64) + offset
        found = [
            self._decoded(matcher, Block(*row), (segment, field, text, int(row[0]))).ids for row in headers.tolist()
        ]
        return np.concatenate(found) + offset if found else _NO_IDS

    @staticmethod
    def _read_leaf(
        reader: IndexReader,
        offset: int,
        field: str,
        text: bytes,
        ids: list[Ints],
        weights: list[npt.NDArray[np.floating]],
    ) -> None:
        """Append one segment's postings of `text` to `ids` and `weights`."""
        try:  # one lookup of the term, not two (`in`)
            m = reader.postings(field, text)  # deleted documents too: the caller masks them (live_statistics)
        except TermNotFound:
            return
        if isinstance(m, W3LeafMatcher):  # whoosh3 posting blocks: a block at a time
            for found in all_postings(m):
                ids.append(found.ids + offset)
                weights.append(found.weights)
            return
        while m.is_active():
            ids.append(np.array([m.id() + offset], dtype=np.int64))
            weights.append(np.array([m.weight()], dtype=np.float64))
            m.next()

    def weights_at(self, field: str, text: bytes, docs: Ints, check: Callable[[], None]) -> npt.NDArray[np.floating]:
        """`text`'s weights (its frequency) in `docs` (papers holding it, ascending), for a phrase's
        matches: from the cached posting list, else from the blocks holding them if they are few
        (`_WHOLE_LIST_ABOVE`), else from the whole list, then cached."""
        with self._lock:
            found = self._recent((field, text))
        if found is None:
            blocks = self._reader.doc_frequency(field, text) / _POSTINGS_PER_BLOCK
            if len(docs) * _WHOLE_LIST_ABOVE < blocks:
                return self.at(field, text, docs, check).weights
            found = self.get(field, text)
        ids, weights = found
        return weights[np.searchsorted(ids, docs)]

    def at(self, field: str, text: bytes, docs: Ints, check: Callable[[], None]) -> Held:
        """`text`'s postings in those of `docs` (ascending) that hold it: their documents, weights and
        values, read from the posting blocks holding them only (`CACHED_BLOCKS`, `CACHED_HEADERS`);
        the clock read between blocks."""
        found_docs: list[Ints] = []
        found_weights: list[npt.NDArray[np.floating]] = []
        found_values: list[Any] = []
        for (reader, offset), (segment, _, _) in zip(self.leaves, self._placement, strict=True):
            local = docs[(docs >= offset) & (docs < offset + reader.doc_count_all())] - offset
            if not len(local):
                continue
            matcher = _Matcher(reader, field, text)
            headers = self._headers_of(matcher, segment)
            if headers is None:  # not whoosh3 posting blocks, or no segment id: a posting at a time
                if (field, text) in reader:
                    _one_at_a_time(
                        reader.postings(field, text), local, offset, check, found_docs, found_weights, found_values
                    )
                continue
            holding = np.searchsorted(
                headers[:, 1], local
            )  # each paper's block: the first whose largest is not below it
            for index in np.unique(holding[holding < len(headers)]).tolist():
                check()
                row = headers[index].tolist()
                block = self._decoded(matcher, Block(*row), (segment, field, text, row[0]))
                wanted = local[holding == index]
                places = np.minimum(np.searchsorted(block.ids, wanted), len(block.ids) - 1)
                places = places[block.ids[places] == wanted]
                found_docs.append(block.ids[places] + offset)
                found_weights.append(block.weights[places])
                found_values.extend(map(block.values.__getitem__, places.tolist()))
        if not found_docs:
            return Held(_NO_IDS, np.empty(0), [])
        return Held(np.concatenate(found_docs), np.concatenate(found_weights), found_values)

    def _headers_of(self, matcher: _Matcher, segment: str) -> npt.NDArray[np.int64] | None:
        """The blocks of the matcher's posting list (rows of Block's fields), kept; None where it has
        no whoosh3 blocks (or the reader no segment id to key them by), or no such term. Read through
        `matcher`, which then reads the blocks too: a term's lookup costs ~20 µs a read."""
        key = (segment, matcher.field, matcher.text)
        found = self._headers.get(key)
        if found is not None:
            return found
        if not segment:
            return None
        try:
            m = matcher.get()
        except TermNotFound:
            return None
        if not isinstance(m, W3LeafMatcher):
            return None
        found = np.array([tuple(block) for block in blocks(m)], dtype=np.int64).reshape(-1, len(Block._fields))
        self._headers.keep(key, found)
        return found

    def _decoded(self, matcher: _Matcher, block: Block, key: tuple[str, str, bytes, int]) -> BlockPostings:
        """`block`'s postings, decoded once while they stay among the CACHED_BLOCKS last used."""
        found = self._blocks.get(key)
        if found is None:
            found = postings(matcher.get(), block)
            self._blocks.keep(key, found)
        return found

    def lengths(self, field: str) -> Floats:
        """Each document's length in `field` as Whoosh stores it (one byte, decoded)."""
        found = self._lengths.get(field)
        if found is None:
            parts = [_lengths(reader, field) for reader, _ in self.leaves]
            found = self._lengths[field] = np.concatenate(parts) if parts else np.empty(0)
        return found


Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


def _one(_value: object) -> int:
    return 1


class _Recent(Generic[Key, Value]):
    """Values kept by key, the least recently used dropped once their sizes (one each unless
    `size` says) pass `limit`; shared by a process's threads."""

    def __init__(self, limit: int, size: Callable[[Value], int] = _one) -> None:
        self.limit = limit
        self._size = size
        self._kept: OrderedDict[Key, Value] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: Key) -> Value | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def keep(self, key: Key, value: Value) -> None:
        with self._lock:
            if key in self._kept:
                return
            self._kept[key] = value
            self._total += self._size(value)
            while self._total > self.limit and len(self._kept) > 1:
                _, dropped = self._kept.popitem(last=False)
                self._total -= self._size(dropped)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._total = 0

    def copy(self) -> _Recent[Key, Value]:
        """The same values, kept apart from here on (a re-opened generation's)."""
        made: _Recent[Key, Value] = _Recent(self.limit, self._size)
        with self._lock:
            made._kept, made._total = OrderedDict(self._kept), self._total
        return made


class _Matcher:
    """A term's Whoosh matcher in one segment, made only when a block must be read from its file."""

    __slots__ = ("_reader", "field", "text", "_made")

    def __init__(self, reader: IndexReader, field: str, text: bytes) -> None:
        self._reader, self.field, self.text = reader, field, text
        self._made: W3LeafMatcher | None = None

    def get(self) -> W3LeafMatcher:
        """The matcher (TermNotFound where the segment has no such term)."""
        if self._made is None:
            self._made = self._reader.postings(self.field, self.text)  # deleted documents too, as _read
        return self._made


def _one_at_a_time(
    m: Any,
    local: Ints,
    offset: int,
    check: Callable[[], None],
    docs: list[Ints],
    weights: list[npt.NDArray[np.floating]],
    values: list[Any],
) -> None:
    """`Postings.at` through any Whoosh matcher, a posting at a time: appends to the three lists."""
    for doc in local.tolist():
        check()
        m.skip_to(doc)
        if not m.is_active():
            return
        if m.id() == doc:
            docs.append(np.array([doc + offset], dtype=np.int64))
            weights.append(np.array([m.weight()], dtype=np.float64))
            values.append(m.value())


def _joined(ids: list[Ints], weights: list[npt.NDArray[np.floating]]) -> tuple[PostingIds, PostingWeights]:
    if not ids:
        return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
    return np.concatenate(ids).astype(np.int32), np.concatenate(weights).astype(np.float32)


def _segment_id(reader: IndexReader) -> str:
    """The segment's id ("" for a reader of no one segment: its lists are never moved)."""
    segment = getattr(reader, "segment", None)
    return str(segment().segment_id()) if callable(segment) else ""


def _lengths(reader: IndexReader, field: str) -> Floats:
    """One segment's field lengths: its length column read at once, else document by document."""
    count = reader.doc_count_all()
    perdoc = getattr(reader, "_perdoc", None)
    if perdoc is not None and perdoc.has_column(_lenfield(field)):
        column = perdoc.column_reader(_lenfield(field), LENGTHS_COLUMN)
        if isinstance(column, columns.NumericColumn.Reader) and column._fixedlen == 1:
            # One byte per document, back to back; those past the last written are 0 (the default).
            # Read as one string: iterating the column reads 300,000 papers in 1.5 s.
            codes = np.zeros(count, dtype=np.int64)
            written = min(column._count, count)
            codes[:written] = np.frombuffer(column._dbfile.get(column._basepos, written), dtype=np.uint8)
            return bm25f.length_of_byte(codes)
        return bm25f.length_of_byte(np.fromiter(column, dtype=np.int64, count=count))
    return np.array([reader.doc_field_length(d, field, 0) or 0 for d in range(count)], dtype=np.float64)
