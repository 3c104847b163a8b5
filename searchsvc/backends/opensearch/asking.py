"""Searches of the published alias, answered in full or not at all.

Every search reads scores from the whole index's word statistics and refuses partial answers;
one whose shards did not all answer (a node died mid-search) is asked again, since the copies
that remain answer the next time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from opensearchpy import OpenSearch

from searchsvc.backends.opensearch.cluster import PartialAnswer, check_response, cluster_errors
from searchsvc.backends.opensearch.querying import Dsl

T = TypeVar("T")
# Scores from the whole index's word statistics, not each shard's: with per-shard statistics
# the same paper scores differently depending on its shard, and small indexes rank at random.
SEARCH_TYPE = "dfs_query_then_fetch"
# For a search whose scores nothing reads: the statistics round trip gathers every word a prefix or
# a regular expression matches, which tripled a suggestion's word sample (docs/decisions.md).
UNSCORED = "query_then_fetch"
_WHOLE_ANSWERS = {"allow_partial_search_results": "false"}  # a search missing shards is an error
_RETRIES = 2
_RETRY_PAUSE = 0.1  # seconds, times the attempt


class AliasSearches:
    """Searches, counts and multi-searches of `alias`, retried on partial answers."""

    def __init__(self, client: OpenSearch, alias: str, where: str, check: Callable[[], None]) -> None:
        self.client = client
        self.alias = alias
        self.where = where
        self.check = check  # raises IndexUnavailable when the alias names an index that cannot be searched

    def search(
        self, body: Dsl, scored: bool = True, named_scores: bool = False, index: str | None = None
    ) -> dict[str, Any]:
        """The answer to `body`; unless `scored`, without the whole index's word statistics (for
        aggregations, totals and samples of constant-score matches, whose scores nothing reads);
        with `named_scores`, each hit's named queries with their scores; of `index` (names, comma
        separated) instead of the alias, for documents a search of it found before."""
        search_type = SEARCH_TYPE if scored else UNSCORED
        params = {**_WHOLE_ANSWERS, **({"include_named_queries_score": "true"} if named_scores else {})}
        return self.asked(
            lambda: check_response(
                self.client.search(index=index or self.alias, body=body, search_type=search_type, params=params)
            )
        )

    def msearch(self, bodies: list[Dsl], scored: bool = True) -> list[dict[str, Any]]:
        """The answers to several searches sent in one request, in order (`scored` as for `search`)."""
        lines: list[Dsl] = []
        for body in bodies:
            lines += [{"search_type": SEARCH_TYPE if scored else UNSCORED, "allow_partial_search_results": False}, body]

        def ask() -> list[dict[str, Any]]:
            responses = self.client.msearch(index=self.alias, body=lines)["responses"]
            return [check_response(response) for response in responses]

        return self.asked(ask)

    def count(self, query: Dsl) -> int:
        return int(self.asked(lambda: self.client.count(index=self.alias, body={"query": query}))["count"])

    def asked(self, ask: Callable[[], T]) -> T:
        """`ask()`'s answer; asked again when part of the index did not answer."""
        for attempt in range(_RETRIES + 1):
            try:
                with cluster_errors(self.where):
                    self.check()
                    return ask()
            except PartialAnswer:
                if attempt == _RETRIES:
                    raise
                time.sleep(_RETRY_PAUSE * (attempt + 1))
        raise AssertionError("unreachable")
