"""The limits that bound a search's work, through the API and the page: terms per query and time per search.

The clock inside long loops: tests/unit/core/test_deadline.py and
tests/unit/backends/whoosh/test_deadline_collectors.py."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.deadline import Deadline

pytestmark = pytest.mark.reliability


def test_a_query_with_more_terms_than_the_limit_is_a_400(client: FlaskClient, seed_backend: WhooshBackend) -> None:
    limit = seed_backend.settings.max_query_terms
    words = [f"w{number}" for number in range(limit + 1)]  # short: under the query length limit
    assert client.get("/api/search", query_string={"q": " ".join(words[:limit])}).status_code == 200
    response = client.get("/api/search", query_string={"q": " ".join(words)})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["code"] == "query_too_broad" and f"at most {limit}" in error["message"]


def test_phrases_and_wildcards_count_as_terms(seed_app_with: Callable[..., Flask]) -> None:
    client = seed_app_with(max_query_terms=3).test_client()
    assert client.get("/api/search", query_string={"q": '"embedding tables" graph* training'}).status_code == 200
    assert client.get("/api/search", query_string={"q": '"embedding tables" graph* training memory'}).status_code == 400


def test_a_search_past_its_time_limit_is_a_clear_503(
    seed_app_with: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = seed_app_with(search_time_limit_ms=10).test_client()
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
