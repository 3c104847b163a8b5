"""Whoosh scoring under the per-search deadline: the clock is checked every few thousand documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from whoosh import collectors
from whoosh.matching import Matcher
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
    for docnum, matcher in _walk(searcher, scored, deadline, scoring=True):
        docs.append(docnum)
        scores.append(matcher.score())
    return np.array(docs, dtype=np.int64), np.array(scores, dtype=np.float64)


def all_matching(searcher: Searcher, wanted: Query, deadline: Deadline) -> np.ndarray:
    """Every document `wanted` matches, unscored: `searcher.docs_for_query` under the deadline."""
    found = [docnum for docnum, _ in _walk(searcher, wanted, deadline, scoring=False)]
    return np.array(found, dtype=np.int64)


def _walk(searcher: Searcher, wanted: Query, deadline: Deadline, scoring: bool) -> Iterator[tuple[int, Matcher]]:
    """(document number, matcher on it) for each match, segment by segment, the clock read every CHECK_EVERY."""
    seen = 0
    for leaf, offset in searcher.leaf_searchers():
        deadline.check()
        matcher = wanted.matcher(leaf, leaf.context() if scoring else leaf.boolean_context())
        while matcher.is_active():
            yield offset + matcher.id(), matcher
            seen += 1
            if seen % CHECK_EVERY == 0:
                deadline.check()
            matcher.next()


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


def top_scored(
    searcher: Searcher, scored: Query, limit: int, deadline: Deadline, leave_out: set[int] | None = None
) -> list[tuple[float, int]]:
    """The `limit` best (score, docnum) pairs, as `searcher.search(...).top_n`, within the deadline;
    none of `leave_out` (an update's deleted documents)."""
    collector = _DeadlineCollector(searcher.collector(limit=limit, mask=leave_out or None), deadline)
    searcher.search_with_collector(scored, collector)
    return collector.results().top_n
