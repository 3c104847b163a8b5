"""Plain words on OpenSearch scored by BM25F (backends/bm25f.py), as the Whoosh backend scores them.

The cluster blends per-field BM25 scores (`cross_fields`), which ranks differently from
BM25F; with the best candidates then reordered by meaning, the two engines' results drifted
apart by up to 0.02 nDCG@10 (docs/scaling.md). So for a query of plain words the cluster
only finds candidates: the first `POOL` places of a tier in its own order are scored again
here, with the Whoosh backend's arithmetic, and reordered; a deeper page grows the pool
(candidates.pool_size).

What BM25F reads of each paper, each query word's count in each field and the field's length,
comes with the search that finds the pool: a named query per (field, word) on the `counts`
subfield, whose similarity scores a word by its count, answered with each hit's named scores,
and the `length` subfields' doc values. Term vectors, which re-analysed 300 papers' text on
every search, had cost more than the search itself (docs/performance.md). One more request
analyses the query's words with the index's own analyzer (term vectors of artificial
documents); the word statistics (papers per word and field, total field lengths) ride on the
search's first request as a global aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from opensearchpy import OpenSearch

from searchsvc.backends import bm25f
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.mapping import COUNTS, LENGTH, TEXT_FIELDS
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.query import Also, Group, Node, Respelled, Word, searched_fields

POOL = 300  # a tier's first places rescored: Whoosh's best 100 are among the cluster's best 300
MARGIN = 3  # so a page ending at place p is decided by the cluster's first MARGIN × p (candidates.pool_size)
_STATISTICS = "bm25f"  # the global aggregation holding the word statistics
LENGTH_FIELDS = [f"{field}.{LENGTH}" for field in TEXT_FIELDS]  # each field's count of ranked words
_COUNTED_MARK = LENGTH_FIELDS[0]  # in a hit's fields when `counting` asked for them (every paper has a title)
_NO_VECTOR_DETAIL = {"positions": False, "offsets": False, "payloads": False, "field_statistics": False}


@dataclass(frozen=True)
class ScoredWord:
    """One analysed word and the fields it is searched in (a `WordInFields` on Whoosh)."""

    term: str
    fields: tuple[str, ...]
    shown: str  # the word as an explanation names it (bm25f.shown_word)


@dataclass(frozen=True)
class PlainWords:
    """A query of plain words as typed: each word's text and fields, and whether they are a
    group (words side by side, which earn the coordination bonus)."""

    typed: tuple[tuple[str, tuple[str, ...]], ...]
    grouped: bool


def plain_words(tree: Node | None) -> PlainWords | None:
    """The query as plain words of title and abstract, or None if it is anything else
    (phrases, wildcards, NOT, OR, author or subject clauses keep the cluster's scores)."""
    if tree is None:
        return None
    nodes = [_plain(node) for node in (tree.nodes if isinstance(tree, Group) else (tree,))]
    if not all(isinstance(node, Word) and node.field in (None, *TEXT_FIELDS) for node in nodes):
        return None
    typed = tuple((node.text, searched_fields(node.field)) for node in nodes if isinstance(node, Word))
    return PlainWords(typed, grouped=isinstance(tree, Group))


def _plain(node: Node) -> Node:
    """A respelled word, or other forms of one word each, as one word of several parts (any of them)."""
    if isinstance(node, Respelled):
        return node.searched
    if isinstance(node, Also) and node.words is not None and not node.phrases:
        return node.words
    return node


def analysed(words: PlainWords, client: OpenSearch, index: str) -> list[ScoredWord]:
    """The words the query scores, in order: each typed word analysed by the index's ranked
    analyzer into its stemmed parts (`memory-efficient` is two), a repeated part once per word."""
    docs = [{"doc": {fields[0]: text}, "fields": [fields[0]], **_NO_VECTOR_DETAIL} for text, fields in words.typed]
    answers = client.mtermvectors(index=index, body={"docs": docs})["docs"]
    scored: list[ScoredWord] = []
    for (text, fields), answer in zip(words.typed, answers, strict=True):
        terms = answer.get("term_vectors", {}).get(fields[0], {}).get("terms", {})
        # The order only moves bits that are rounded off.
        scored.extend(ScoredWord(term, fields, bm25f.shown_word(text, term, len(terms))) for term in terms)
    return scored


def statistics_aggs(words: list[ScoredWord]) -> Dsl:
    """Papers per (word, field), the collection's size and its total field lengths, over every paper."""
    checks = {f"{field}:{word.term}": {"term": {field: word.term}} for word in words for field in word.fields}
    lengths = {field: {"sum": {"field": f"{field}.{LENGTH}"}} for field in TEXT_FIELDS}
    return {_STATISTICS: {"global": {}, "aggs": {"papers": {"filters": {"filters": checks}}, **lengths}}}


@dataclass(frozen=True)
class WordStatistics:
    papers: int
    frequency: dict[tuple[str, str], int]  # (field, term) → papers holding it
    average_length: dict[str, float]


def statistics(aggregations: Dsl) -> WordStatistics | None:
    """The statistics `statistics_aggs` asked for; None from an index built before mapping
    version 4, which has no length subfields (it ranks by the cluster's scores until rebuilt)."""
    found = aggregations[_STATISTICS]
    papers = int(found["doc_count"])
    if papers and not found[TEXT_FIELDS[0]]["value"]:
        return None
    frequency = {}
    for key, bucket in found["papers"]["buckets"].items():
        field, term = key.split(":", 1)
        frequency[(field, term)] = int(bucket["doc_count"])
    average = {field: float(found[field]["value"]) / (papers or 1) for field in TEXT_FIELDS}
    return WordStatistics(papers, frequency, average)


@dataclass(frozen=True)
class Counted:
    """What BM25F reads of one paper: each query word's count per field, and each field's length."""

    counts: dict[str, dict[str, int]]  # field → term → count (the query's terms only)
    lengths: dict[str, int]  # field → its count of ranked words


class WordRescorer:
    """BM25F scores of hit documents for one query's words."""

    def __init__(self, words: list[ScoredWord], grouped: bool, stats: WordStatistics, searches: AliasSearches) -> None:
        self._words = words
        self._coordination = bm25f.COORDINATION if grouped and len(words) > 1 else None
        self._stats = stats
        self._searches = searches
        self._read: dict[tuple[str, str], Counted] = {}  # by document: what BM25F reads of it

    def counting(self, body: Dsl) -> Dsl:
        """`body` asking also for what `scores` reads of each hit: the words' named queries beside its
        post filter (which leaves the hits as they were) and the fields' lengths. Search it with
        named scores (`AliasSearches.search`'s `named_scores`)."""
        kept = [body["post_filter"]] if body.get("post_filter") else []
        counting = {"bool": {"filter": kept, "should": self.named_counts(), "minimum_should_match": 0}}
        return {**body, "post_filter": counting, "docvalue_fields": LENGTH_FIELDS}

    def named_counts(self) -> list[Dsl]:
        """A named query per word and field whose named score is the word's count there: what
        `scores` reads of a hit searched with them (and LENGTH_FIELDS) and named scores."""
        return [
            {"term": {f"{field}.{COUNTS}": {"value": term, "_name": f"{field}:{term}"}}}
            for field, term in sorted({(field, word.term) for word in self._words for field in word.fields})
        ]

    def scores(self, docs: list[Dsl]) -> np.ndarray:
        """Each document's BM25F score, from what `counting` asked of it (asked now if it was not)."""
        if not docs:
            return np.empty(0)
        frequencies, term_count = self._frequencies(self._counted(docs))
        n = len(docs)
        total = np.zeros(n)
        matching = np.zeros(n, dtype=np.int64)
        matched = np.zeros(n, dtype=bool)
        for word, in_fields in zip(self._words, frequencies, strict=True):
            frequency = np.zeros(n)
            for part in in_fields.values():
                frequency += part
                matching += part > 0
            hit = frequency > 0
            if not hit.any():
                continue
            total[hit] += bm25f.saturated(frequency[hit], self._scale(word))
            matched |= hit
        if self._coordination is not None:
            total[matched] = bm25f.coordinated(total[matched], matching[matched], term_count, self._coordination)
        return bm25f.rounded(total)

    def parts(self, docs: list[Dsl]) -> list[LexicalParts]:
        """Each document's score taken apart by word and field (core.explanation), as `scores` scores it."""
        if not docs:
            return []
        frequencies, term_count = self._frequencies(self._counted(docs))
        scales = [self._scale(word) for word in self._words]
        return [
            bm25f.word_parts(
                [
                    (word.shown, scale, {field: float(part[row]) for field, part in in_fields.items()})
                    for word, scale, in_fields in zip(self._words, scales, frequencies, strict=True)
                ],
                self._coordination,
                term_count,
            )
            for row in range(len(docs))
        ]

    def _counted(self, docs: list[Dsl]) -> list[Counted]:
        """What BM25F reads of each document: from its hit where `counting` asked for it, else kept
        from before (`parts` after `scores`), else asked for the rest in one search."""
        for doc in docs:
            if doc_key(doc) not in self._read and _COUNTED_MARK in doc.get("fields", {}):
                self._read[doc_key(doc)] = _counted(doc)
        missing = [doc for doc in docs if doc_key(doc) not in self._read]
        if missing:
            body = {"query": {"ids": {"values": [doc["_id"] for doc in missing]}}, "size": len(missing)}
            indexes = sorted({doc["_index"] for doc in missing})
            asked = {**self.counting(body), "_source": False}
            answer = self._searches.search(asked, scored=False, named_scores=True, index=",".join(indexes))
            for doc in answer["hits"]["hits"]:
                self._read[doc_key(doc)] = _counted(doc)
        nothing = Counted({}, {})  # a document removed since: no words, so no score
        return [self._read.get(doc_key(doc), nothing) for doc in docs]

    def _frequencies(self, counted: list[Counted]) -> tuple[list[dict[str, np.ndarray]], int]:
        """Each word's weighed, normalised frequency in each of its fields for each document (0 in a
        field no paper has it in), and the query's (word, field) pairs in the index."""
        n = len(counted)
        lengths = {
            field: bm25f.stored_lengths([paper.lengths.get(field, 0) for paper in counted]) for field in TEXT_FIELDS
        }
        found: list[dict[str, np.ndarray]] = []
        term_count = 0
        for word in self._words:
            in_fields = {}
            for field in word.fields:
                in_fields[field] = np.zeros(n)
                if not self._stats.frequency.get((field, word.term)):
                    continue
                term_count += 1
                tf = np.array([paper.counts.get(field, {}).get(word.term, 0) for paper in counted], dtype=np.float64)
                norm = bm25f.length_norm(lengths[field], self._stats.average_length[field], field)
                in_fields[field] = bm25f.FIELD_WEIGHTS[field] * tf / norm
            found.append(in_fields)
        return found, term_count

    def _scale(self, word: ScoredWord) -> float:
        """A word's idf, from the field where it is commonest."""
        return bm25f.idf(
            self._stats.papers, max(self._stats.frequency.get((field, word.term), 0) for field in word.fields)
        )


def doc_key(doc: Dsl) -> tuple[str, str]:
    """What tells a hit document apart: its index and id."""
    return doc["_index"], doc["_id"]


def _counted(hit: Dsl) -> Counted:
    """What a hit of a `counting` search says of its paper: the named scores are the words' counts."""
    counts: dict[str, dict[str, int]] = {}
    for name, score in (hit.get("matched_queries") or {}).items():
        field, _, term = name.partition(":")
        if field in TEXT_FIELDS:  # not another named query of the search (candidates.py's tiers)
            counts.setdefault(field, {})[term] = round(score)
    fields = hit.get("fields", {})
    lengths = {field: int(fields.get(f"{field}.{LENGTH}", [0])[0]) for field in TEXT_FIELDS}
    return Counted(counts, lengths)
