"""Plain-word queries matched and scored over whole posting lists at once, with numpy.

Most searches are a few plain words or a pasted sentence: a group of `WordInFields`
clauses with the coordination bonus. Whoosh scores them one document at a time through a
tree of Python matchers, which for a pasted sentence means most of the collection
(docs/performance.md, "Figures behind the code"). Here each word's postings are read as arrays (and kept per
generation, bounded), and the same arithmetic as `_BM25FMatcher`, `_Coordination` and
`_Rounded` (backends/bm25f.py) runs over every matching paper at once. Any other query (phrases, wildcards,
NOT, fields) goes through Whoosh unchanged. The two paths are tested to give the same
results (tests/unit/backends/whoosh/test_word_scores.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from whoosh import query
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
from whoosh.query import Query
from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.whoosh.facets import Mask
from searchsvc.backends.whoosh.querying import CompiledQuery, CoordinatedOr, Weighted, WordInFields, idf

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
# Whoosh's Or preloads its matches instead of building a tree of unions in segments of up
# to this many documents, and the preloaded matcher hides its terms from the coordination
# count: nested ORs of more than two words stay on Whoosh's path in such segments.
_OR_TREE_ABOVE = 5000
CACHED_POSTINGS = 8_000_000  # postings kept per generation and process: 16 bytes each, ~128 MB at most


@dataclass(frozen=True)
class WordsPlan:
    words: tuple[WordInFields, ...]  # every word occurrence the score adds up
    coordination: float | None  # the bonus's scale, when the words are a group
    required: Query | None  # what a paper must match for the first tier: words under AND and OR


def plan(compiled: CompiledQuery, searcher: Searcher) -> WordsPlan | None:
    """The query as words to score with numpy, or None if it needs Whoosh's matchers."""
    if not isinstance(compiled.scored, Weighted):
        return None
    # By the size of the collection, not of its segments: an update's small segment must not
    # change how a query is scored (a rebuild's segments are all above the bound, or it has one).
    small_segments = searcher.doc_count() <= _OR_TREE_ABOVE
    top = compiled.scored.child
    coordination = None
    if isinstance(top, CoordinatedOr) and len(top.subqueries) > 1:
        coordination = top.scale
        parts = top.subqueries
    else:
        parts = [top]
    words: list[WordInFields] = []
    for part in parts:
        found = _words_of_or(part, small_segments)
        if found is None:
            return None
        words.extend(found)
    if compiled.required is not None and not _only_words(compiled.required):
        return None
    return WordsPlan(tuple(words), coordination, compiled.required)


def _words_of_or(q: Query, small_segments: bool) -> list[WordInFields] | None:
    if isinstance(q, WordInFields):
        return [q]
    if type(q) is query.Or and all(isinstance(sub, WordInFields) for sub in q.subqueries):
        if len(q.subqueries) > 2 and small_segments:
            return None
        return list(q.subqueries)
    return None


def _only_words(q: Query) -> bool:
    """Whether `q` is words combined by AND and OR (only which papers match it counts)."""
    if isinstance(q, WordInFields):
        return True
    return isinstance(q, query.And | query.Or) and all(_only_words(sub) for sub in q.subqueries)


def _docs(q: Query, postings: Postings) -> Mask:
    """The papers matching `q`, a query of which `_only_words` holds."""
    if isinstance(q, WordInFields):
        mask = np.zeros(postings.doc_count, dtype=bool)
        for field in q.fields:
            mask[postings.get(field, q.text.encode("utf-8"))[0]] = True
        return mask
    masks = [_docs(sub, postings) for sub in q.subqueries]
    combine = np.logical_and if isinstance(q, query.And) else np.logical_or
    return combine.reduce(masks) if masks else np.zeros(postings.doc_count, dtype=bool)


class Postings:
    """Posting lists of one generation as arrays (global document numbers, weights), cached."""

    def __init__(self, searcher: Searcher, limit: int = CACHED_POSTINGS) -> None:
        self._searcher = searcher
        self._reader = searcher.reader()
        self._leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        self._cache: OrderedDict[tuple[str, bytes], tuple[Ints, Floats]] = OrderedDict()
        self._cached = 0
        self._limit = limit
        self._lengths: dict[str, Floats] = {}
        self.doc_count = self._reader.doc_count_all()
        self._lock = threading.Lock()  # a generation is shared by the threads of a process

    def get(self, field: str, text: bytes) -> tuple[Ints, Floats]:
        key = (field, text)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
            found = self._read(field, text)
            self._cache[key] = found
            self._cached += len(found[0])
            while self._cached > self._limit and len(self._cache) > 1:
                _, (ids, _) = self._cache.popitem(last=False)
                self._cached -= len(ids)
            return found

    def _read(self, field: str, text: bytes) -> tuple[Ints, Floats]:
        ids: list[Ints] = []
        weights: list[Floats] = []
        for reader, offset in self._leaves:
            if (field, text) not in reader:
                continue
            m = reader.postings(field, text)  # deleted documents too: the caller masks them (live_statistics)
            while m.is_active():
                if hasattr(m, "_read_ids"):  # whoosh3 posting blocks: a block at a time
                    m._read_ids()
                    m._read_weights()
                    ids.append(np.asarray(m._ids, dtype=np.int64)[m._i :] + offset)
                    weights.append(np.asarray(m._weights, dtype=np.float64)[m._i :])
                    m._next_block()
                else:
                    ids.append(np.array([m.id() + offset], dtype=np.int64))
                    weights.append(np.array([m.weight()], dtype=np.float64))
                    m.next()
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        return np.concatenate(ids), np.concatenate(weights)

    def lengths(self, field: str) -> Floats:
        """Each document's length in `field` as Whoosh stores it (one byte, decoded)."""
        found = self._lengths.get(field)
        if found is None:
            parts = [_lengths(reader, field) for reader, _ in self._leaves]
            found = self._lengths[field] = np.concatenate(parts) if parts else np.empty(0)
        return found


def _lengths(reader: IndexReader, field: str) -> Floats:
    """One segment's field lengths: its length column read at once, else document by document."""
    count = reader.doc_count_all()
    perdoc = getattr(reader, "_perdoc", None)
    if perdoc is not None and perdoc.has_column(_lenfield(field)):
        column = perdoc.column_reader(_lenfield(field), LENGTHS_COLUMN)
        return bm25f.length_of_byte(np.fromiter(column, dtype=np.int64, count=count))
    return np.array([reader.doc_field_length(d, field, 0) or 0 for d in range(count)], dtype=np.float64)


@dataclass
class Scored:
    matched: Mask  # papers matching any word
    scores: Floats  # document number → score (0 where not matched)
    all_words: Mask | None  # papers matching every required word


def score(words_plan: WordsPlan, postings: Postings, searcher: Searcher, check: Callable[[], None]) -> Scored:
    """The plan's matches and scores, as Whoosh's matchers would compute them."""
    n = postings.doc_count
    total = np.zeros(n, dtype=np.float64)
    matching = np.zeros(n, dtype=np.int64)
    matched = np.zeros(n, dtype=bool)
    term_count = 0
    for word in words_plan.words:
        check()
        text = word.text.encode("utf-8")
        frequency = np.zeros(n, dtype=np.float64)
        hit = np.zeros(n, dtype=bool)
        for field, weight in word.fields.items():
            ids, tf = postings.get(field, text)
            if not len(ids) or not searcher.doc_frequency(field, text):  # only in an update's deleted papers
                continue
            term_count += 1
            norm = bm25f.length_norm(postings.lengths(field)[ids], searcher.avg_field_length(field), field)
            frequency[ids] += weight * tf / norm
            hit[ids] = True
            matching[ids] += 1
        if not hit.any():
            continue
        total[hit] += bm25f.saturated(frequency[hit], word.boost * idf(searcher, tuple(word.fields), text))
        matched |= hit
    if words_plan.coordination is not None:
        total[matched] = bm25f.coordinated(total[matched], matching[matched], term_count, words_plan.coordination)
    scores = bm25f.rounded(total)
    all_words = None if words_plan.required is None else matched & _docs(words_plan.required, postings)
    return Scored(matched, scores, all_words)


def top(scores: Floats, tier: Mask, rank: Ints, low: int, high: int) -> list[tuple[int, float]]:
    """Places [low, high) of `tier` by score, ties by `rank` (each document's place in catalogue order)."""
    candidates = np.flatnonzero(tier)
    if len(candidates) > high:
        kth = np.partition(-scores[candidates], high - 1)[high - 1]
        candidates = candidates[-scores[candidates] <= kth]
    order = np.lexsort((rank[candidates], -scores[candidates]))[low:high]
    return [(int(d), float(scores[d])) for d in candidates[order]]
