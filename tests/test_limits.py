"""The limits that bound a search's work: terms per query and time per search."""

from __future__ import annotations

import itertools

import pytest
from conftest import app_for
from flask.testing import FlaskClient

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.deadline import CHECK_EVERY, Deadline
from searchsvc.core.errors import SearchTimedOut

pytestmark = pytest.mark.reliability


def test_a_query_with_more_terms_than_the_limit_is_a_400(client: FlaskClient, seed_backend: WhooshBackend) -> None:
    limit = seed_backend.settings.max_query_terms
    words = [f"w{number}" for number in range(limit + 1)]  # short: under the query length limit
    assert client.get("/api/search", query_string={"q": " ".join(words[:limit])}).status_code == 200
    response = client.get("/api/search", query_string={"q": " ".join(words)})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["code"] == "query_too_broad" and f"at most {limit}" in error["message"]


def test_phrases_and_wildcards_count_as_terms(seed_backend: WhooshBackend) -> None:
    client = app_for(seed_backend.settings.index_dir, max_query_terms=3).test_client()
    assert client.get("/api/search", query_string={"q": '"embedding tables" graph* training'}).status_code == 200
    assert client.get("/api/search", query_string={"q": '"embedding tables" graph* training memory'}).status_code == 400


def test_a_search_past_its_time_limit_is_a_clear_503(seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    client = app_for(seed_backend.settings.index_dir, search_time_limit_ms=10).test_client()
    # A clock a second later at every look: each stage of a search finds its 10 ms long gone.
    monkeypatch.setattr(Deadline.__init__, "__defaults__", (itertools.count(0.0, 1.0).__next__,))
    for path in (
        "/api/search?q=embedding",
        "/api/search?q=",
        "/api/facets/author?q=embedding",
        "/api/export?format=csv",
    ):
        response = client.get(path)
        assert response.status_code == 503, (path, response.data[:200])
        error = response.get_json()["error"]
        assert error["code"] == "search_timeout" and "narrow it" in error["message"]
    page = client.get("/?q=embedding")
    html = page.get_data(as_text=True)
    assert page.status_code == 503 and "took longer than its limit" in html and 'role="alert"' in html
    assert 'value="embedding"' in html  # the form is still filled in


def test_the_clock_is_checked_inside_long_loops() -> None:
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    seen = 0
    with pytest.raises(SearchTimedOut):
        for _ in deadline.bounded(range(10 * CHECK_EVERY)):
            seen += 1
            now[0] += 0.001  # a millisecond a document: the limit passes at document 1000
    assert seen == CHECK_EVERY - 1  # stopped at the first look at the clock after the limit


def test_scoring_checks_the_clock_and_otherwise_ranks_as_whoosh(
    seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whoosh import query

    from searchsvc.backends.whoosh import deadline_collectors as bounded

    monkeypatch.setattr(bounded, "CHECK_EVERY", 1)
    searcher = seed_backend._generations.get().searcher
    anything = query.Or([query.Term("abstract", "model"), query.Term("abstract", "train")])
    allowed = {0, 2, 3, 5, 8, 13, 21}
    expected = searcher.search(anything, limit=5, filter=allowed).top_n
    assert bounded.top_scored(searcher, anything, 5, Deadline(60_000), filter=allowed) == expected
    assert all(docnum in allowed for _, docnum in expected) and expected

    now = [0.0]
    expired = Deadline(1000, clock=lambda: now[0])
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        bounded.top_scored(searcher, anything, 5, expired)
