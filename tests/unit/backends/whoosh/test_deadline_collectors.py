"""Whoosh's scoring under a search's time limit: it checks the clock and otherwise ranks as Whoosh does."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import SearchTimedOut

pytestmark = pytest.mark.reliability


def test_scoring_checks_the_clock_and_otherwise_ranks_as_whoosh(
    seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whoosh import query

    from searchsvc.backends.whoosh import deadline_collectors as bounded

    monkeypatch.setattr(bounded, "CHECK_EVERY", 1)
    searcher = seed_backend._generations.get().searcher
    anything = query.Or([query.Term("abstract", "model"), query.Term("abstract", "train")])
    expected = searcher.search(anything, limit=5).top_n
    assert len(expected) == 5 and bounded.top_scored(searcher, anything, 5, Deadline(60_000)) == expected
    docs, scores = bounded.all_scored(searcher, anything, Deadline(60_000))
    assert sorted(zip(-scores, docs, strict=True))[:5] == sorted((-score, docnum) for score, docnum in expected)

    now = [0.0]
    expired = Deadline(1000, clock=lambda: now[0])
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        bounded.top_scored(searcher, anything, 5, expired)
    with pytest.raises(SearchTimedOut):
        bounded.all_scored(searcher, anything, expired)
