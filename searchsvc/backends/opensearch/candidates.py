"""A search's tiers as the core ranking policy asks for them: places in lexical order.

Each ask is one search of one tier: the page's places, or with ranking by meaning the tier's
first `fusion.CANDIDATES`, with their vectors. For plain words the lexical order is BM25F's,
as on Whoosh: the tier's first `word_rescoring.POOL` places are fetched and scored again.
What comes first is decided by core.ranking.
"""

from __future__ import annotations

import numpy as np

from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.search_bodies import Plan, page
from searchsvc.backends.opensearch.vectors import vectors_of
from searchsvc.backends.opensearch.word_rescoring import POOL, WordRescorer
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.paper import catalogue_key
from searchsvc.core.ranking import LAST_TIER, Candidates


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
    ) -> None:
        self._searches = searches
        self._plan = plan
        self._highlight = highlight
        self._timeout = timeout
        self._rescorers = (typed, widened)  # the first tiers by the words as typed; the last by all searched
        self._rescored: dict[int, set[tuple[str, str]]] = {}  # per tier, the documents BM25F scored

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[Dsl]:
        rescorer = self._rescorers[tier == LAST_TIER]
        rescored = rescorer is not None and low < POOL
        fetch_low, fetch_high = (0, max(high, POOL)) if rescored else (low, high)
        body = {
            "query": self._plan.tier_query(tier),
            "post_filter": self._plan.post_filter,
            "track_total_hits": False,
            **self._timeout,
            **page("relevance", fetch_low, fetch_high - fetch_low, self._highlight, with_vectors),
        }
        docs = self._searches.search(body)["hits"]["hits"]
        scores = np.array([doc["_score"] for doc in docs], dtype=np.float64)
        if rescorer is not None and rescored:
            docs, scores = self._rescored_head(tier, docs, scores, rescorer)
        docs, scores = docs[low - fetch_low : high - fetch_low], scores[low - fetch_low : high - fetch_low]
        vectors = vectors_of(doc["_source"] for doc in docs) if with_vectors else None
        return Candidates(docs, scores, catalogue_ranks(docs), vectors)

    def lexical_parts(self, tier: int, docs: list[Dsl]) -> list[LexicalParts | None]:
        """The words' parts of the lexical scores `candidates` gave `docs` in `tier` (one request): None
        for a document the cluster scored (a query not of plain words, a place past the pool)."""
        rescorer = self._rescorers[tier == LAST_TIER]
        scored = self._rescored.get(tier, set())
        rescored = [doc for doc in docs if _key(doc) in scored]
        if rescorer is None or not rescored:
            return [None] * len(docs)
        parts = iter(self._searches.asked(lambda: rescorer.parts(rescored)))
        return [next(parts) if _key(doc) in scored else None for doc in docs]

    def _rescored_head(
        self, tier: int, docs: list[Dsl], scores: np.ndarray, rescorer: WordRescorer
    ) -> tuple[list[Dsl], np.ndarray]:
        """The first POOL documents by BM25F, ties in catalogue order; the rest as the cluster ranked them."""
        head = docs[:POOL]
        new = self._searches.asked(lambda: rescorer.scores(head))
        self._rescored.setdefault(tier, set()).update(_key(doc) for doc in head)
        order = np.lexsort((catalogue_ranks(head), -new))
        return [head[i] for i in order] + docs[POOL:], np.concatenate([new[order], scores[POOL:]])


def _key(doc: Dsl) -> tuple[str, str]:
    return doc["_index"], doc["_id"]


def catalogue_ranks(docs: list[Dsl]) -> np.ndarray:
    """Each document's place in catalogue order (newest first, then id) among `docs`."""
    sources = [doc["_source"] for doc in docs]
    order = sorted(range(len(docs)), key=lambda i: catalogue_key(sources[i].get("year"), sources[i]["id"]))
    ranks = np.empty(len(docs), dtype=np.int64)
    ranks[order] = np.arange(len(docs))
    return ranks
