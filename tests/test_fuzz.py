"""Property-based fuzzing of the query parser and every query endpoint (hypothesis).

The property: any string or parameter soup gets an answer (200) or a clear 400 error with a
message, never a 500 or a traceback, in bounded time: every search runs under the service's
own time limit (`search_time_limit_ms`), past which it would answer 503, so "200 or 400" also
says no example ran past it, without the test reading a clock. CI runs a fixed number of examples from a fixed seed
(`derandomize`), so a run is reproducible; SEARCHSVC_FUZZ_EXAMPLES=5000 fuzzes longer.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchsvc.core.errors import QuerySyntaxError
from searchsvc.core.query import parse

pytestmark = pytest.mark.reliability

EXAMPLES = int(os.environ.get("SEARCHSVC_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,  # a fixed seed: the same examples every run
    deadline=None,  # speed is the benchmarks' business; boundedness comes from the named limits
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# Pieces of query syntax, right and wrong, to build operator soup from.
SYNTAX = [
    "AND", "OR", "NOT", "and", "(", ")", "((", '"', "'", "-", "+", "*", "?", "~", "^2", ":", "::", "\\",
    "title:", "abstract:", "author:", "subject:", "year:", "id:", "colour:", "year:2019", "year:2019..",
    "year:..2020", "year:2018-2020", "year:99999999999999999999", "year:-5", "a*", "e*", "*x", "embed*",
    "embedding", "tables", "Naumov", "cs.LG", "memory-efficient", "Results:", "[", "]", "{", "}", "<", ">",
    "\x00", "\x1b[31m", "\u202e", "\ufeff", "\ud7ff", "é", "日本語", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", " ", "\t", "\n",
]  # fmt: skip
soup = st.lists(st.sampled_from(SYNTAX), max_size=40).map(" ".join) | st.lists(
    st.sampled_from(SYNTAX), max_size=60
).map("".join)
queries = st.one_of(
    st.text(max_size=200),
    soup,
    st.text(alphabet=st.characters(codec="utf-8"), min_size=400, max_size=10_000),  # past the length limit
    st.just("(" * 300 + "a" + ")" * 300),
)
numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["0", "-1", "1e9", "NaN", "inf", "0x10", "١٢", " 5 ", "", "9" * 400]),
    st.text(max_size=20),
)
PARAMETERS = {
    "q": queries,
    "subject": st.text(max_size=120),
    "author": st.text(max_size=220),
    "year_from": numbers,
    "year_to": numbers,
    "sort": st.one_of(st.sampled_from(["relevance", "newest", "oldest"]), st.text(max_size=10)),
    "page": numbers,
    "per_page": numbers,
    "prefix": st.text(max_size=150),
    "limit": numbers,
    "format": st.one_of(st.sampled_from(["bibtex", "csv", "jsonl"]), st.text(max_size=10)),
    "colour": st.text(max_size=10),  # not a parameter of any endpoint
}
# A query string: any parameters, each possibly repeated.
query_strings = st.lists(
    st.sampled_from(sorted(PARAMETERS)).flatmap(lambda name: st.tuples(st.just(name), PARAMETERS[name])),
    max_size=8,
)


@FUZZ
@given(queries)
def test_parser_answers_or_explains(text: str) -> None:
    try:
        parse(text)
    except QuerySyntaxError as error:
        assert error.message.startswith(error.label)
        column = error.details["column"]
        assert isinstance(column, int) and 1 <= column <= len(text) + 1, (text, column)


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
