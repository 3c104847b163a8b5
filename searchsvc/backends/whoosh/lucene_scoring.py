"""How Whoosh scores our queries: Lucene's BM25, BM25F for plain words, and scores that do not
depend on how the papers fell into segments.

Plain words search title and abstract as one BM25F score (WordInFields): a word's
occurrences in each field are weighed, normalised by that field's length and summed before
they saturate, so a word found in both fields does not count twice as a word in one.
Everything else (phrases, wildcard words, one-field words) scores Lucene's BM25 per field
(LuceneBM25), on the same scale. Both use Lucene's idf, which gives words in most papers
almost nothing; Whoosh's own idf adds 1 to every word, and on pasted sentences the common
words then outvote the rare ones (docs/relevance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from math import floor
from typing import Any

from whoosh import matching, query, scoring
from whoosh.matching import Matcher
from whoosh.query import Query
from whoosh.query.wrappers import WrappingQuery
from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.analysis import K1
from searchsvc.backends.bm25f import SCORE_SCALE, field_b


def idf(searcher: Searcher, fields: Iterator[str] | tuple[str, ...], text: bytes) -> float:
    """Lucene's BM25 idf, from the word's document frequency in the field where it is commonest."""
    top = searcher.get_parent()  # statistics of the whole index, not of one segment
    frequency = max((top.doc_frequency(field, text) for field in fields), default=0)
    return bm25f.idf(top.doc_count(), frequency)  # live papers only (live_statistics.LiveSearcher)


def _length_norm(searcher: Searcher, field: str) -> Callable[[int], float]:
    """Document number → BM25's length normalisation of `field` (1 for a field of average length)."""
    average = searcher.get_parent().avg_field_length(field)
    length = searcher.reader().doc_field_length
    return lambda docnum: bm25f.length_norm(length(docnum, field, 0), average, field)


class LuceneBM25(scoring.WeightingModel):
    """BM25 of one field as Lucene scores it, with this schema's per-field b."""

    def supports_block_quality(self) -> bool:
        return True

    def scorer(self, searcher: Searcher, fieldname: str, text: bytes, qf: int = 1) -> scoring.BaseScorer:
        if not searcher.schema[fieldname].scorable:
            return scoring.WeightScorer.for_(searcher, fieldname, text)
        return _LuceneBM25Scorer(searcher, fieldname, text)


class _LuceneBM25Scorer(scoring.WeightLengthScorer):
    def __init__(self, searcher: Searcher, fieldname: str, text: bytes) -> None:
        self.idf = idf(searcher, (fieldname,), text)
        self.b = field_b(fieldname)
        self.avgfl = searcher.get_parent().avg_field_length(fieldname) or 1.0
        self.setup(searcher, fieldname, text)

    def _score(self, weight: float, length: float) -> float:
        return self.idf * weight * (K1 + 1) / (weight + K1 * (1 - self.b + self.b * length / self.avgfl))


WEIGHTING = LuceneBM25()


# Segments ---------------------------------------------------------------------------
#
# A parallel build writes several segments (indexing.py), and Whoosh builds matchers per
# segment. Two things would then depend on how the papers fell into segments: the
# coordination bonus, which counts the query's terms present in the segment, and the order
# in which sub-scores are added (trees ordered by per-segment sizes), which moves the last
# bits of a score. CoordinatedOr counts terms over every segment, and Weighted rounds the
# final score far below what ranking can tell apart, so results do not depend on the layout.


class CoordinatedOr(query.Or):
    """`Or` with Whoosh's coordination bonus, counting the query's terms in the whole index."""

    def normalize(self) -> Query:
        """As `Or(..., scale=...).normalize()`: nested ORs of every kind merge into this one."""
        plain = query.Or(self.subqueries, boost=self.boost, minmatch=self.minmatch, scale=self.scale).normalize()
        if type(plain) is not query.Or:
            return plain
        return CoordinatedOr(plain.subqueries, boost=plain.boost, minmatch=plain.minmatch, scale=plain.scale)

    def _matcher(self, subs: list[Query], searcher: Searcher, context: Any) -> Matcher:
        m = _union(subs, searcher, context)
        if not any(m.term_matchers()):
            return m
        return _Coordination(m, self.scale, self._term_count(searcher, context))

    def _term_count(self, searcher: Searcher, context: Any) -> int:
        """Term matchers the query has in the index: per term, the most any segment has."""
        parent = searcher.get_parent()
        cache = self.__dict__.setdefault("_term_counts", {})
        key = id(parent)
        if key not in cache:
            most: dict[Any, int] = {}
            for leaf, _ in parent.leaf_searchers():
                counted: dict[Any, int] = {}
                for m in _union(self.subqueries, leaf, context).term_matchers():
                    if parent.doc_frequency(*m.term()):  # not a term only an update's deleted papers hold
                        counted[m.term()] = counted.get(m.term(), 0) + 1
                for term, n in counted.items():
                    most[term] = max(most.get(term, 0), n)
            cache[key] = sum(most.values())
        return cache[key]


def _union(subs: list[Query], searcher: Searcher, context: Any) -> Matcher:
    """The binary tree of unions `Or` builds when it has a coordination bonus."""
    plain = query.Or(subs)
    plain.matcher_type = query.Or.DEFAULT_MATCHER
    return plain.matcher(searcher, context)


class _Coordination(matching.CoordMatcher):
    def __init__(self, child: Matcher, scale: float, term_count: int) -> None:
        super().__init__(child, scale=scale)
        self._termcount = term_count

    def _replacement(self, newchild: Matcher) -> Matcher:
        return _Coordination(newchild, self._scale, self._termcount)


class _Rounded(matching.WrappingMatcher):
    """Scores rounded to 1/SCORE_SCALE, so sums added in another order tie as they should.

    As bm25f.rounded, one score at a time.
    """

    def _replacement(self, newchild: Matcher) -> Matcher:
        return _Rounded(newchild)

    def score(self) -> float:
        return floor(self.child.score() * SCORE_SCALE + 0.5) / SCORE_SCALE


class Weighted(WrappingQuery):
    """Scores its query with WEIGHTING whatever the searcher's own weighting is."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Weighted) and self.child == other.child

    def __hash__(self) -> int:
        return hash((Weighted, self.child))

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        context = searcher.context() if context is None else context
        if context.weighting is None:  # only which papers match counts (docs_for_query)
            return self.child.matcher(searcher, context)
        return _Rounded(self.child.matcher(searcher, context.set(weighting=WEIGHTING)))


class WordInFields(query.Query):
    """One analysed word in several fields, scored as one BM25F score."""

    def __init__(self, text: str, fields: dict[str, float], boost: float = 1.0, shown: str | None = None) -> None:
        self.text = text
        self.fields = fields  # field → weight of an occurrence in it
        self.boost = boost
        self.shown = text if shown is None else shown  # the word as an explanation names it (bm25f.shown_word)

    # Equality is identity: a word typed twice is two clauses and counts twice, as in Lucene
    # (Or.normalize would drop equal clauses).
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"WordInFields({self.text!r}, {self.fields!r}, boost={self.boost})"

    def is_leaf(self) -> bool:
        return True

    def field(self) -> None:
        return None  # several fields

    def has_terms(self) -> bool:
        return True

    def terms(self, phrases: bool = False) -> Iterator[tuple[str, str]]:
        for field in self.fields:
            yield field, self.text

    def estimate_size(self, ixreader: IndexReader) -> int:
        return sum(ixreader.doc_frequency(field, self.text.encode("utf-8")) for field in self.fields)

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        reader = searcher.reader()
        text = self.text.encode("utf-8")
        postings = [
            (reader.postings(field, text), weight, _length_norm(searcher, field))
            for field, weight in self.fields.items()
            if (field, text) in reader
        ]
        if not postings:
            return matching.NullMatcher()
        return _BM25FMatcher(postings, self.boost * idf(searcher, tuple(self.fields), text))


class _BM25FMatcher(Matcher):
    """The union of one word's postings in several fields, scored by BM25F.

    The current document and the postings still active are kept, not recomputed on every
    call: a collector asks for `id()` several times per document.
    """

    def __init__(self, postings: list[tuple[Matcher, float, Callable[[int], float]]], scale: float) -> None:
        self._postings = postings
        self._scale = scale  # boost × idf
        self._current: int | None = None
        self._settle()

    def _settle(self) -> None:
        self._postings = [entry for entry in self._postings if entry[0].is_active()]
        self._current = min((m.id() for m, _, _ in self._postings), default=None)

    def is_active(self) -> bool:
        return self._current is not None

    def id(self) -> int:
        assert self._current is not None
        return self._current

    def next(self) -> None:
        current = self._current
        for m, _, _ in self._postings:
            if m.id() == current:
                m.next()
        self._settle()

    def skip_to(self, target: int) -> None:
        for m, _, _ in self._postings:
            if m.id() < target:
                m.skip_to(target)
        self._settle()

    def weight(self) -> float:
        current = self._current
        return sum(m.weight() for m, _, _ in self._postings if m.id() == current)

    def score(self) -> float:
        current = self._current
        assert current is not None
        frequency = 0.0
        for m, weight, norm in self._postings:
            if m.id() == current:
                frequency += weight * m.weight() / norm(current)
        return float(bm25f.saturated(frequency, self._scale))

    def supports_block_quality(self) -> bool:
        return False

    def max_quality(self) -> float:
        return self._scale * (K1 + 1)

    def replace(self, minquality: float = 0) -> Matcher:
        return self if self._postings else matching.NullMatcher()

    def copy(self) -> Matcher:
        return _BM25FMatcher([(m.copy(), weight, norm) for m, weight, norm in self._postings], self._scale)

    def term_matchers(self) -> Iterator[Matcher]:
        for m, _, _ in self._postings:
            yield from m.term_matchers()

    def children(self) -> list[Matcher]:
        return [m for m, _, _ in self._postings]
