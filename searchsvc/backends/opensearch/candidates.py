"""A search's tiers as the core ranking policy asks for them: places in lexical order.

Each ask is one search of one tier: the page's places, or with ranking by meaning the tier's
first `fusion.CANDIDATES`, with their vectors. For plain words the lexical order is BM25F's,
as on Whoosh: a page ending at place p is decided by the cluster's first `pool_size(p)` places,
scored again (`word_rescoring.POOL` for the first pages). The pool is first asked for its
documents' ids only (and what orders ties, and what BM25F reads of each), and then the page's
documents in full: highlighting the whole pool of 300 had made a first page cost twice as much
(docs/scaling.md), and page 31 costs no more highlights than page 1. Past `rescore_limit` places
a page keeps the cluster's choice of documents, scored and ordered by BM25F among themselves.
The candidates of a fusion (a tier's first 100, with vectors) come unhighlighted: only the
page's ten are shown, and `marked` highlights those in one more request (highlighting all 100
had cost more than fetching them). What comes first is decided by core.ranking.
"""

from __future__ import annotations

import json

import numpy as np

from searchsvc.backends.opensearch import nearest
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.search_bodies import HIGHLIGHT, SOURCE, Plan, page
from searchsvc.backends.opensearch.vectors import vectors_of
from searchsvc.backends.opensearch.word_rescoring import LENGTH_FIELDS, MARGIN, POOL, WordRescorer, doc_key
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.paper import catalogue_tie
from searchsvc.core.ranking import LAST_TIER, NO_WORDS, Candidates, Nearest


class TierCandidates:
    """Candidates of `plan`'s tiers (hit documents, highlighted if `highlight`), rescored by BM25F
    when the query is plain words: the first tiers by the words as typed, the last by all it searched."""

    def __init__(
        self,
        searches: AliasSearches,
        plan: Plan,
        highlight: bool,
        timeout: Dsl,
        typed: WordRescorer | None,
        widened: WordRescorer | None,
        rescore_limit: int,
    ) -> None:
        self._searches = searches
        self._plan = plan
        self._highlight = highlight
        self._timeout = timeout
        self._rescorers = (typed, widened)  # the first tiers by the words as typed; the last by all searched
        self._rescored: dict[int, set[tuple[str, str]]] = {}  # per tier, the documents BM25F scored
        self._unmarked: dict[tuple[str, str], int] = {}  # documents fetched unhighlighted, with their tier
        self._wordless: set[tuple[str, str]] = set()  # documents found by meaning alone (NO_WORDS)
        self._limit = rescore_limit

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[Dsl]:
        rescorer = self._rescorers[tier == LAST_TIER]
        if rescorer is None or high > self._limit:
            return self._cluster_chosen(tier, low, high, with_vectors, rescorer)
        return self._pooled(tier, low, high, with_vectors, rescorer, pool_size(high, self._limit))

    def _pooled(
        self, tier: int, low: int, high: int, with_vectors: bool, rescorer: WordRescorer, pool: int
    ) -> Candidates[Dsl]:
        """Places [low, high) of the tier's first `pool` places rescored: their ids (and what orders
        ties) first, then only the places' documents in full, highlighted."""
        light = self._search(tier, 0, pool, False, False, rescorer, source=_TIE_FIELDS)
        scores = np.array([doc["_score"] for doc in light], dtype=np.float64)
        ordered, scores = self._rescored_head(tier, light, scores, rescorer, head=pool)
        docs, kept = self._in_full(tier, ordered[low:high], with_vectors)
        scores = scores[low:high][kept]
        vectors = vectors_of(doc["_source"] for doc in docs) if with_vectors else None
        return Candidates(docs, scores, catalogue_ties(docs), vectors, keys=[doc_key(doc) for doc in docs])

    def _cluster_chosen(
        self, tier: int, low: int, high: int, with_vectors: bool, rescorer: WordRescorer | None
    ) -> Candidates[Dsl]:
        """Places [low, high) as the cluster chose them: past `rescore_limit`, the page's own
        documents scored by BM25F and ordered among themselves (a query of plain words), so their
        scores are on the first pages' scale; otherwise in the cluster's order and scores."""
        docs = self._search(tier, low, high, with_vectors, self._marks(with_vectors), rescorer)
        self._unmarked_of(tier, docs, with_vectors)
        scores = np.array([doc["_score"] for doc in docs], dtype=np.float64)
        if rescorer is not None:
            docs, scores = self._rescored_head(tier, docs, scores, rescorer, head=len(docs))
        vectors = vectors_of(doc["_source"] for doc in docs) if with_vectors else None
        return Candidates(docs, scores, catalogue_ties(docs), vectors, keys=[doc_key(doc) for doc in docs])

    def _search(
        self,
        tier: int,
        start: int,
        end: int,
        with_vectors: bool,
        highlight: bool,
        rescorer: WordRescorer | None,
        source: list[str] | None = None,
    ) -> list[Dsl]:
        """Places [start, end) of the tier in the cluster's order; with `rescorer`, each with what it reads."""
        body: Dsl = {
            "query": self._plan.tier_query(tier),
            "post_filter": self._plan.post_filter,
            "track_total_hits": False,
            **self._timeout,
            **page("relevance", start, end - start, highlight, with_vectors),
        }
        if source is not None:
            body["_source"] = source
        if rescorer is not None:
            body = rescorer.counting(body)
        docs: list[Dsl] = self._searches.search(body, named_scores=rescorer is not None)["hits"]["hits"]
        return docs

    def _in_full(self, tier: int, wanted: list[Dsl], with_vectors: bool) -> tuple[list[Dsl], np.ndarray]:
        """The `wanted` documents (of `_pooled`'s light search) in full, highlighted as a page is, in that
        order, and which of them were found (a write between the two requests may have removed one)."""
        if not wanted:
            return [], np.zeros(0, dtype=bool)
        ids = [doc["_id"] for doc in wanted]
        body = {**self._of_tier(tier, ids), **page("relevance", 0, len(ids), self._marks(with_vectors), with_vectors)}
        # Their order and scores are the pool's: this search's scores are not read.
        hits = self._searches.search(body, scored=False)["hits"]["hits"]
        found = {doc_key(doc): doc for doc in self._unmarked_of(tier, hits, with_vectors)}
        kept = np.array([doc_key(doc) in found for doc in wanted], dtype=bool)
        return [found[doc_key(doc)] for doc in wanted if doc_key(doc) in found], kept

    def _marks(self, with_vectors: bool) -> bool:
        """Whether a fetch highlights its documents: a page's yes, a fusion's candidates (with vectors)
        not, `marked` highlights the few shown."""
        return self._highlight and not with_vectors

    def _unmarked_of(self, tier: int, docs: list[Dsl], with_vectors: bool) -> list[Dsl]:
        """`docs`, noted with their tier for `marked` if their fetch left highlights to it."""
        if self._highlight and not self._marks(with_vectors):
            self._unmarked.update((doc_key(doc), tier) for doc in docs)
        return docs

    def _of_tier(self, tier: int, ids: list[str]) -> Dsl:
        """A search of the documents `ids` by the tier's query (what its highlights mark)."""
        query = {"bool": {"must": self._plan.tier_query(tier), "filter": {"ids": {"values": ids}}}}
        return {"query": query, "track_total_hits": False, **self._timeout}

    def marked(self, docs: list[Dsl]) -> list[Dsl]:
        """`docs` with their highlights: those a fusion's fetch left unmarked asked for now, by the
        query of the tier each came from (one request for all tiers)."""
        by_tier: dict[int, list[str]] = {}
        for doc in docs:
            if doc_key(doc) in self._unmarked and "highlight" not in doc:
                by_tier.setdefault(self._unmarked[doc_key(doc)], []).append(doc["_id"])
        if not by_tier:
            return docs
        bodies = [
            {**self._of_tier(tier, ids), "size": len(ids), "_source": False, "highlight": HIGHLIGHT}
            for tier, ids in by_tier.items()
        ]
        marks = {
            doc_key(doc): doc.get("highlight", {})
            for answer in self._searches.msearch(bodies, scored=False)
            for doc in answer["hits"]["hits"]
        }
        return [{**doc, "highlight": marks[doc_key(doc)]} if doc_key(doc) in marks else doc for doc in docs]

    def nearest(self, query: np.ndarray, count: int) -> Nearest[Dsl]:
        """The `count` papers nearest `query` that the filters let through (nearest.py), each with
        the tier it is in and its lexical score there, as `candidates` scores that tier."""
        body = nearest.body(self._plan.post_filter, query, count, self._timeout)
        found = self._searches.search(body, scored=False)["hits"]["hits"]
        docs, vectors, _similarity = nearest.nearest_first(found, catalogue_ties(found), query, count)
        tiers, scores = self._placed(docs)
        return Nearest(docs, [doc_key(doc) for doc in docs], tiers, scores, catalogue_ties(docs), vectors)

    def _placed(self, docs: list[Dsl]) -> tuple[np.ndarray, np.ndarray]:
        """Each document's tier (the first whose query finds it; NO_WORDS if none does) and its
        lexical score there (BM25F for plain words, else the cluster's), in one search of the
        documents: each tier's query named (its named score is the cluster's score there), beside
        what each rescorer reads; noted for `marked` and `lexical_parts`."""
        tiers = np.full(len(docs), NO_WORDS, dtype=np.int64)
        scores = np.zeros(len(docs), dtype=np.float64)
        if not docs:
            return tiers, scores
        row_of = {doc["_id"]: row for row, doc in enumerate(docs)}
        named = [
            {"bool": {"must": self._plan.tier_query(tier), "_name": _tier_name(tier)}} for tier in range(LAST_TIER + 1)
        ]
        counts = {json.dumps(query, sort_keys=True): query for r in self._rescorers if r for query in r.named_counts()}
        query = {"bool": {"filter": {"ids": {"values": list(row_of)}}, "should": named, "minimum_should_match": 0}}
        body = {
            "query": query,
            "post_filter": {"bool": {"should": list(counts.values()), "minimum_should_match": 0}},
            "docvalue_fields": LENGTH_FIELDS,
            "size": len(row_of),
            "_source": False,
            "track_total_hits": False,
            **self._timeout,
        }
        by_cluster = any(rescorer is None for rescorer in self._rescorers)
        hits = self._searches.search(body, scored=by_cluster, named_scores=True)["hits"]["hits"]
        found: dict[int, list[Dsl]] = {}
        for hit in hits:
            matched = hit.get("matched_queries") or {}
            tier = next((tier for tier in range(LAST_TIER + 1) if _tier_name(tier) in matched), None)
            if tier is None:
                continue
            row = row_of[hit["_id"]]
            tiers[row] = tier
            scores[row] = matched[_tier_name(tier)]
            found.setdefault(tier, []).append(hit)
        for tier, in_tier in found.items():
            rows = [row_of[hit["_id"]] for hit in in_tier]
            self._unmarked_of(tier, [docs[row] for row in rows], with_vectors=True)
            rescorer = self._rescorers[tier == LAST_TIER]
            if rescorer is not None:
                scores[rows] = rescorer.scores(in_tier)
                self._rescored.setdefault(tier, set()).update(doc_key(hit) for hit in in_tier)
        self._wordless.update(doc_key(doc) for doc, tier in zip(docs, tiers, strict=True) if tier == NO_WORDS)
        return tiers, scores

    def lexical_parts(self, tier: int, docs: list[Dsl]) -> list[LexicalParts | None]:
        """The words' parts of the lexical scores `candidates` gave `docs` in `tier` (one request): None
        for a document the cluster scored (a query not of plain words). A document found by meaning
        alone, holding none of the words, is taken apart as one of the tier's: each word's part 0."""
        rescorer = self._rescorers[tier == LAST_TIER]
        scored = self._rescored.get(tier, set()) | self._wordless
        rescored = [doc for doc in docs if doc_key(doc) in scored]
        if rescorer is None or not rescored:
            return [None] * len(docs)
        parts = iter(self._searches.asked(lambda: rescorer.parts(rescored)))
        return [next(parts) if doc_key(doc) in scored else None for doc in docs]

    def _rescored_head(
        self, tier: int, docs: list[Dsl], scores: np.ndarray, rescorer: WordRescorer, head: int
    ) -> tuple[list[Dsl], np.ndarray]:
        """The first `head` documents by BM25F, ties in catalogue order; the rest as the cluster ranked them."""
        head_docs = docs[:head]
        new = self._searches.asked(lambda: rescorer.scores(head_docs))
        self._rescored.setdefault(tier, set()).update(doc_key(doc) for doc in head_docs)
        order = np.lexsort((catalogue_ties(head_docs), -new))
        return [head_docs[i] for i in order] + docs[head:], np.concatenate([new[order], scores[head:]])


# What the light search of a pool asks of each document: what orders ties (catalogue_ties).
_TIE_FIELDS = ["id", "year"]
assert set(_TIE_FIELDS) <= set(SOURCE)


def _tier_name(tier: int) -> str:
    """The name of a tier's query among a search's named queries (no field's: word_rescoring reads those)."""
    return f"tier {tier}"


def pool_size(high: int, limit: int) -> int:
    """The cluster's first places rescored to decide a page ending at place `high` (at most
    `limit`, the `rescore_limit` setting): MARGIN times as many, at least POOL, at most `limit`."""
    return max(POOL, min(MARGIN * high, limit))


def catalogue_ties(docs: list[Dsl]) -> np.ndarray:
    """Each document's catalogue order (newest first, then id) as a string that sorts alike
    (core.paper.catalogue_tie), comparable across the requests of one search."""
    sources = [doc["_source"] for doc in docs]
    return np.array([catalogue_tie(source.get("year"), source["id"]) for source in sources], dtype=np.str_)
