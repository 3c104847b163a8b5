"""The OpenSearch engine's first answer to a search: one request counts the matches, the
all-words tier, each facet and the evidence "did you mean" needs (and, when browsing, fetches
the page itself); the search recipe's further questions are answered from it or by a few more
requests (a tier's candidates: candidates.py)."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from searchsvc.backends.opensearch import search_bodies, spelling, word_rescoring
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.candidates import TierCandidates
from searchsvc.backends.opensearch.facets import facet_listing
from searchsvc.backends.opensearch.hits import hit
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.search_bodies import Plan
from searchsvc.backends.opensearch.texts import paper_of
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.model import FACETS, FacetValue, Hit, SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.core.query import Node
from searchsvc.core.ranking import Candidates, Nearest
from searchsvc.core.spelling import Check
from searchsvc.settings import Settings

Ranked = list[tuple[Dsl, float | None]]  # hit documents with their scores
AskedWords = tuple[list[word_rescoring.ScoredWord], bool]  # a query's plain words, and whether they are a group


class OpenSearchAnswer:
    """The search recipe's `backends.Answer` from the first response (refs are hit documents)."""

    def __init__(
        self,
        searches: AliasSearches,
        settings: Settings,
        request: SearchRequest,
        plan: Plan,
        response: dict[str, Any],
        tiers: TierCandidates,
        checks: list[Check],
    ) -> None:
        self._searches = searches
        self._settings = settings
        self._request = request
        self._plan = plan
        self._response = response
        self._aggs: Dsl = response.get("aggregations", {})
        self._tiers = tiers
        self._checks = checks

    def total(self) -> int:
        return int(self._response["hits"]["total"]["value"])

    def searched(self) -> Node | None:
        return self._plan.tree

    def literal(self) -> int:
        return int(self._aggs["literal"]["doc_count"]) if self._plan.literal else self.total()

    def all_words(self) -> int:
        return int(self._aggs["all_words"]["doc_count"]) if self._plan.first_tier else self.total()

    def meaning_ready(self) -> bool:
        return True  # a tier's candidates carry vectors only when each of them has one

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[Dsl]:
        return self._tiers.candidates(tier, low, high, with_vectors)

    def lexical_parts(self, tier: int, refs: list[Dsl]) -> list[LexicalParts | None]:
        return self._tiers.lexical_parts(tier, refs)

    def nearest(self, query: np.ndarray, count: int) -> Nearest[Dsl] | None:
        return self._tiers.nearest(query, count)

    def page(self) -> list[Dsl]:
        docs: list[Dsl] = self._response["hits"]["hits"]
        return docs

    def hits(self, ranked: Ranked) -> list[Hit]:
        docs = self._tiers.marked([doc for doc, _score in ranked])
        return [hit(doc, score) for doc, (_doc, score) in zip(docs, ranked, strict=True)]

    def papers(self, ranked: Ranked) -> list[Paper]:
        return [paper_of(doc["_source"]) for doc, _score in ranked]

    def facets(self) -> dict[str, list[FacetValue]]:
        limits = self._settings.facet_limits()
        return {name: facet_listing(name, self._aggs, self._request, limits[name]) for name in FACETS}

    def respellings(self) -> dict[Check, str]:
        return spelling.respellings(self._checks, self._response) if self._checks else {}

    def all_words_of(self, request: SearchRequest, tree: Node | None) -> int:
        return self._searches.count(search_bodies.plan(request, tree).finds_all_words())


def ask_word_statistics(
    searches: AliasSearches, client: OpenSearch, alias: str, trees: list[Node | None], aggs: Dsl
) -> list[AskedWords | None]:
    """For each query of plain words (the query searched, and as typed where it was widened): the
    words it scores by BM25F and whether they are a group, with the aggregation of all their
    statistics added to `aggs` (the search's first request)."""
    asked: list[AskedWords | None] = []
    for tree in trees:
        plain = word_rescoring.plain_words(tree)
        words = [] if plain is None else searches.asked(partial(word_rescoring.analysed, plain, client, alias))
        asked.append(None if plain is None or not words else (words, plain.grouped))
    every = [word for found in asked if found is not None for word in found[0]]
    if every:
        aggs.update(word_rescoring.statistics_aggs(every))
    return asked


def word_rescorer(words: AskedWords, aggs: Dsl, searches: AliasSearches) -> word_rescoring.WordRescorer | None:
    """What scores a tier's first places by BM25F, from the statistics the first request counted."""
    stats = word_rescoring.statistics(aggs)
    return None if stats is None else word_rescoring.WordRescorer(*words, stats, searches)
