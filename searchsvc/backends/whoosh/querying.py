"""The query tree (searchsvc.core.query) → Whoosh queries on this backend's fields.

Words search the stemmed title and abstract; phrases and wildcards their unstemmed twins,
so `"embedding tables"` does not match "embedded table". Wildcards are expanded here
against the index's own word list, with a bound, because Whoosh's own expansion has none
(`a*` on a large index takes seconds: docs/decisions.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from math import floor
from typing import Any, Literal

from whoosh import matching, query, scoring
from whoosh.matching import Matcher
from whoosh.query import Query, SpanNear2
from whoosh.query.wrappers import WrappingQuery
from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends import bm25f
from searchsvc.backends.analysis import K1, SEARCH_FIELDS
from searchsvc.backends.bm25f import COORDINATION, FIELD_WEIGHTS, SCORE_SCALE, field_b
from searchsvc.backends.whoosh.hits import MatchedWords
from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.core.deadline import CHECK_EVERY, Deadline
from searchsvc.core.errors import QueryTooBroad
from searchsvc.core.query import (
    AllOf,
    Group,
    Node,
    Not,
    Phrase,
    Prefix,
    Word,
    Years,
    either,
    query_error,
    required_words,
    searched_fields,
    split_group,
)

_Parts = Literal["any", "all", "phrase"]


@dataclass(frozen=True)
class CompiledQuery:
    """What a search runs: the scored query and, for a group of words, the all-words tier."""

    scored: Query
    required: Query | None


class QueryCompiler:
    """Translates query trees for one open index generation (and one request's deadline, which phrases check)."""

    def __init__(self, reader: IndexReader, max_wildcard_terms: int, deadline: Deadline | None = None) -> None:
        self._reader = reader
        self._schema = reader.schema
        self._max_wildcard_terms = max_wildcard_terms
        self._deadline = deadline
        self._steps = _Steps(deadline)  # shared by every wildcard word of the query

    def compile(self, node: Node) -> CompiledQuery:
        required = required_words(node)
        return CompiledQuery(
            scored=Weighted(self._query(node, "any").normalize()),
            required=None if required is None else self._query(required, "all").normalize(),
        )

    def _query(self, node: Node, parts: _Parts) -> Query:
        """`parts`: how a word that analyses to several (`memory-efficient`) matches, see _word."""
        if isinstance(node, Word):
            return self._word(node, parts)
        if isinstance(node, Phrase):
            return self._phrase(node)
        if isinstance(node, Prefix):
            return self._prefix(node)
        if isinstance(node, Years):
            return query.NumericRange("year", node.low, node.high)
        if isinstance(node, Not):
            return query.Not(self._query(node.node, "phrase"))
        if isinstance(node, AllOf):
            return query.And([self._query(child, "all") for child in node.nodes])
        if isinstance(node, Group):
            narrowing, describing = split_group(node)
            clauses = [self._query(child, parts) for child in narrowing]
            if describing:
                clauses.append(self._any_of(describing, parts, COORDINATION))
            return clauses[0] if len(clauses) == 1 else query.And(clauses)
        return self._any_of(node.nodes, parts, None)

    def _any_of(self, nodes: tuple[Node, ...], parts: _Parts, scale: float | None) -> Query:
        """OR of the wanted clauses (coordinated when `scale` is set), AND NOT the excluded ones."""
        wanted, excluded = either(nodes)
        kept = [self._query(child, parts) for child in wanted]
        positive: Query | None = None
        if len(kept) > 1:
            positive = query.Or(kept) if scale is None else CoordinatedOr(kept, scale=scale)
        elif kept:
            positive = kept[0]
        if not excluded:
            return positive if positive is not None else query.NullQuery
        negated = _or([self._query(child, "phrase") for child in excluded])
        return query.Not(negated) if positive is None else _AndNot(positive, negated)

    def _word(self, node: Word, parts: _Parts) -> Query:
        """A word of title and abstract is one BM25F word; a hyphenated word is its parts.

        Among words typed side by side the parts are words of the group (`memory-efficient`
        ranks like `memory efficient`, papers with both first): read as a phrase, the
        hyphenated words of pasted sentences missed papers writing them apart or joined
        (docs/relevance.md). `AND` and the all-words tier need every part; `NOT` and quotes
        keep the phrase.
        """
        if node.field == "subject":
            return self._phrase(node)
        if node.field == "author":
            return self._terms("author", node.text)
        fields = searched_fields(node.field)
        words = list(dict.fromkeys(self._schema[fields[0]].process_text(node.text, mode="query")))
        if len(words) > 1 and parts == "phrase":
            return _or([self._terms(field, node.text) for field in fields])
        scored = [WordInFields(word, {field: FIELD_WEIGHTS[field] for field in fields}) for word in words]
        if not scored:
            return query.NullQuery
        if len(scored) == 1:
            return scored[0]
        return query.And(scored) if parts == "all" else query.Or(scored)

    def _phrase(self, node: Phrase | Word) -> Query:
        if node.field in ("author", "subject"):
            return self._terms(node.field, node.text)
        return _or([self._terms(EXACT_FIELDS[field], node.text) for field in searched_fields(node.field)])

    def _terms(self, field: str, text: str) -> Query:
        """One analysed word, or several as a phrase (`memory-efficient`, `"exact words"`)."""
        words = list(self._schema[field].process_text(text, mode="query"))
        boost = FIELD_WEIGHTS.get(field.removesuffix("_exact"), 1.0)
        if not words:
            return query.NullQuery
        if len(words) == 1:
            return query.Term(field, words[0], boost=boost)
        return CheckedPhrase(field, words, self._deadline, boost=boost)

    def _prefix(self, node: Prefix) -> Query:
        if node.field in ("author", "subject"):
            fields = [node.field]
        else:
            fields = [EXACT_FIELDS[field] for field in searched_fields(node.field)]
        expanded: list[Query] = []
        for field in fields:
            if self._deadline is not None:
                self._deadline.check()  # each expansion reads hundreds of words from the term list
            words = list(self._schema[field].process_text(node.text, mode="query"))
            if len(words) != 1:
                raise query_error(f"a wildcard must follow one word, as in embed*: '{node.text}*'", node.start)
            terms = list(islice(self._reader.expand_prefix(field, words[0]), self._max_wildcard_terms + 1))
            if len(terms) > self._max_wildcard_terms:
                raise query_error(
                    f"'{node.text}*' matches more than {self._max_wildcard_terms} different words:"
                    " type more letters before the *",
                    node.start,
                    QueryTooBroad,
                )
            boost = FIELD_WEIGHTS.get(field.removesuffix("_exact"), 1.0)
            expanded.extend(CheckedTerm(field, term, self._steps, boost=boost) for term in terms)
        return query.Or(expanded) if expanded else query.NullQuery


class CheckedPhrase(query.Phrase):
    """A phrase whose matcher reads the clock every CHECK_EVERY papers it looks at.

    Whoosh's phrase matcher passes over, within one call, every paper holding all the words
    but not side by side: for common words that is most of the collection (`"the the"` looks
    at nearly every paper to find a few dozen), longer than a deadline may go unchecked.
    """

    def __init__(self, fieldname: str, words: list[str], deadline: Deadline | None, boost: float = 1.0) -> None:
        super().__init__(fieldname, words, boost=boost)
        self.deadline = deadline

    def normalize(self) -> Query:
        return self  # built with two words or more (_terms); Phrase.normalize would drop the deadline

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        """As Phrase.matcher (ordered, adjacent words), with the clock read while it looks."""
        reader = searcher.reader()
        words = [word.encode("utf-8") for word in self.words]
        if any((self.fieldname, word) not in reader for word in words):
            return matching.NullMatcher()
        terms = [query.Term(self.fieldname, word).matcher(searcher, context) for word in words]
        found = _CheckedSpans(terms, self.deadline)
        return found if self.boost == 1.0 else matching.WrappingMatcher(found, boost=self.boost)


# Papers a phrase looks at between two looks at the clock: each look reads and lines up the
# words' position lists, for common words (`"of the"`) far costlier than one posting step.
_SPANS_PER_CHECK = 16


class _CheckedSpans(SpanNear2.SpanNear2Matcher):
    def __init__(self, terms: list[Matcher], deadline: Deadline | None) -> None:
        self._deadline = deadline
        self._looked = 0
        super().__init__(terms, slop=1, ordered=True, mindist=1)  # looks for the first match already

    def copy(self) -> Matcher:
        return _CheckedSpans([m.copy() for m in self.ms], self._deadline)

    def _get_spans(self) -> list[Any]:
        """Called once per paper holding all the words: where the matcher spends its time."""
        self._looked += 1
        if self._deadline is not None and self._looked % _SPANS_PER_CHECK == 0:
            self._deadline.check()
        return super()._get_spans()


class _Steps:
    """Steps through postings counted across all of a query's wildcard words, so the clock is
    read every CHECK_EVERY steps of them together (each word alone may take only a few)."""

    def __init__(self, deadline: Deadline | None) -> None:
        self.deadline = deadline
        self._count = 0

    def step(self) -> None:
        self._count += 1
        if self.deadline is not None and self._count % CHECK_EVERY == 0:
            self.deadline.check()


class CheckedTerm(query.Term):
    """A word a wildcard expanded to, whose matcher reads the clock as it is built and stepped.

    Four wildcards of 300 words each are 2,400 matchers to build and unions of them to
    intersect: Whoosh returns no match to the collector for seconds while it does that.
    It is still a Term, so ORs flatten and coordinate it exactly as before.
    """

    def __init__(self, fieldname: str, text: str, steps: _Steps, boost: float = 1.0) -> None:
        super().__init__(fieldname, text, boost=boost)
        self.steps = steps

    def __deepcopy__(self, memo: dict[int, Any]) -> CheckedTerm:
        """Whoosh copies every term as it normalizes (`with_boost` deep-copies): the copy must share
        the query's one step count, and copying the count and deadline cost ~50 ms for 1,200 words."""
        return copy.copy(self)  # the other attributes are strings and numbers

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        if self.steps.deadline is not None:
            self.steps.deadline.check()
        found = super().matcher(searcher, context)
        self.steps.step()
        return found if isinstance(found, matching.NullMatcherClass) else _CheckedPostings(found, self.steps)


class _CheckedPostings(matching.WrappingMatcher):
    def __init__(self, child: Matcher, steps: _Steps) -> None:
        super().__init__(child)
        self._steps = steps

    def copy(self) -> Matcher:
        return _CheckedPostings(self.child.copy(), self._steps)

    def _replacement(self, newchild: Matcher) -> Matcher:
        return _CheckedPostings(newchild, self._steps)

    def next(self) -> Any:
        self._steps.step()
        return self.child.next()

    def skip_to(self, id: int) -> Any:
        self._steps.step()
        return self.child.skip_to(id)


def _or(subqueries: list[Query]) -> Query:
    return subqueries[0] if len(subqueries) == 1 else query.Or(subqueries)


def matched_words(compiled: Query) -> MatchedWords:
    """The query's words a highlighter should mark in title and abstract."""
    stemmed, exact = set(), set()
    for field, text in compiled.iter_all_terms(phrases=True):
        word = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        if field in SEARCH_FIELDS:
            stemmed.add(word)
        elif field in EXACT_FIELDS.values():
            exact.add(word)
    return MatchedWords(frozenset(stemmed), frozenset(exact))


# Scoring -------------------------------------------------------------------------
#
# Plain words search title and abstract as one BM25F score (WordInFields): a word's
# occurrences in each field are weighed, normalised by that field's length and summed before
# they saturate, so a word found in both fields does not count twice as a word in one.
# Everything else (phrases, wildcard words, one-field words) scores Lucene's BM25 per field
# (LuceneBM25), on the same scale. Both use Lucene's idf, which gives words in most papers
# almost nothing; Whoosh's own idf adds 1 to every word, and on pasted sentences the common
# words then outvote the rare ones (docs/relevance.md).


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

    def __init__(self, text: str, fields: dict[str, float], boost: float = 1.0) -> None:
        self.text = text
        self.fields = fields  # field → weight of an occurrence in it
        self.boost = boost

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


class _AndNot(query.AndNot):
    """Whoosh's AndNot, with its matcher's first document checked against the excluded ones."""

    def matcher(self, searcher: Searcher, context: Any = None) -> Matcher:
        return _AndNotMatcher(self.a.matcher(searcher, context), self.b.matcher(searcher, searcher.boolean_context()))


class _AndNotMatcher(matching.AndNotMatcher):
    """Whoosh 2.7's AndNotMatcher skips the excluded matcher forward only when the first ids are
    already equal, so a segment's first match passed even when it held the excluded word (in a
    segment whose excluded postings start earlier: `model -vision`, tests/unit/backends/whoosh/
    test_querying.py). Here the first match is looked for as every later one is."""

    def _find_first(self) -> None:
        if self.a.is_active() and self.b.is_active():
            self._find_next()


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
