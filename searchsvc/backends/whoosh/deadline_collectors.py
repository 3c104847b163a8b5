"""Whoosh scoring under the per-search deadline: the clock is checked every few thousand documents."""

from __future__ import annotations

from typing import Any

import numpy as np
from whoosh import collectors
from whoosh.query import Query
from whoosh.searching import Searcher

from searchsvc.core.deadline import CHECK_EVERY, Deadline


def all_scored(searcher: Searcher, scored: Query, deadline: Deadline) -> tuple[np.ndarray, np.ndarray]:
    """Every document `scored` matches and its score, in one pass of Whoosh's matchers.

    One pass gives both the match set (for the count and the facets) and the ranking:
    asking Whoosh for the matches and then for the top N ran the query twice.
    """
    docs: list[int] = []
    scores: list[float] = []
    seen = 0
    for leaf, offset in searcher.leaf_searchers():
        matcher = scored.matcher(leaf, leaf.context())
        while matcher.is_active():
            docs.append(offset + matcher.id())
            scores.append(matcher.score())
            seen += 1
            if seen % CHECK_EVERY == 0:
                deadline.check()
            matcher.next()
    return np.array(docs, dtype=np.int64), np.array(scores, dtype=np.float64)


class _DeadlineCollector(collectors.WrappingCollector):
    """Like whoosh's TimeLimitCollector, without its timer thread and SIGALRM handler."""

    def __init__(self, child: collectors.Collector, deadline: Deadline) -> None:
        super().__init__(child)
        self.deadline = deadline
        self.collected = 0

    def collect(self, sub_docnum: int) -> Any:
        self.collected += 1
        if self.collected % CHECK_EVERY == 0:
            self.deadline.check()
        return self.child.collect(sub_docnum)


def top_scored(searcher: Searcher, scored: Query, limit: int, deadline: Deadline) -> list[tuple[float, int]]:
    """The `limit` best (score, docnum) pairs, as `searcher.search(...).top_n`, within the deadline."""
    collector = _DeadlineCollector(searcher.collector(limit=limit), deadline)
    searcher.search_with_collector(scored, collector)
    return collector.results().top_n
