"""Property-based fuzzing of every query endpoint and the search page (hypothesis; the parser alone:
tests/unit/core/test_query_fuzz.py).

The property: any string or parameter soup gets an answer (200) or a clear 400 error with a
message, never a 500 or a traceback, in bounded time: every search runs under the service's
own time limit (`search_time_limit_ms`), past which it would answer 503, so "200 or 400" also
says no example ran past it, without the test reading a clock. CI runs a fixed number of examples from a fixed seed
(`derandomize`, tests/helpers/fuzzing.py), so a run is reproducible; SEARCHSVC_FUZZ_EXAMPLES=5000 fuzzes longer.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.fuzzing import FUZZ, query_strings

pytestmark = pytest.mark.reliability

ENDPOINTS = ["/api/search", "/api/facets/author", "/api/facets/year", "/api/export"]


@FUZZ
@given(st.sampled_from(ENDPOINTS), query_strings)
def test_api_answers_or_explains(seed_app: Flask, path: str, params: list[tuple[str, str]]) -> None:
    response = seed_app.test_client().get(path, query_string=params)
    assert response.status_code in (200, 400), (path, params, response.status_code, response.data[:300])
    if response.status_code == 400:
        body: Any = response.get_json()
        assert body["error"]["code"] in ("invalid_parameters", "query_syntax", "query_too_broad")
        assert body["error"]["message"]
    elif path == "/api/search":
        document = response.get_json()
        assert 0 <= len(document["results"]) <= document["per_page"] <= 100
        assert document["total"] >= len(document["results"])


@FUZZ
@given(query_strings)
def test_search_page_answers_or_explains(seed_app: Flask, params: list[tuple[str, str]]) -> None:
    response = seed_app.test_client().get("/", query_string=params)
    assert response.status_code in (200, 400), (params, response.status_code)
    html = response.get_data(as_text=True)
    assert response.mimetype == "text/html" and "Traceback" not in html
    if response.status_code == 400:
        assert 'role="alert"' in html
