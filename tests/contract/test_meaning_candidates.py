"""Papers found by meaning (`meaning_candidates`, issue #32 item 2), on each engine: a paper that
answers a query in other words joins its results within the request's filters, counted in the
total but not in facets, and is never shown once removed. Both engines side by side, the same
papers in the same places: tests/contract/test_both_backends_agree.py."""

from __future__ import annotations

from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.operations import update
from tests.helpers.backends import BackendFactory

QUERY = "heart attack treatment"


def _record(paper_id: str, year: int, title: str, abstract: str) -> dict[str, object]:
    return {"id": paper_id, "title": title, "abstract": abstract, "year": year, "categories": [], "authors": []}


# A paper about QUERY's subject in none of its words, and papers holding its words about other things.
IN_OTHER_WORDS = _record(
    "infarct", 2019, "Therapy after myocardial infarction", "Cardiac muscle damage and how clinicians manage it."
)
ELSEWHERE = [
    _record("garden", 2021, "Treatment of garden soil", "Soil treatment before planting."),
    _record("water", 2022, "Water treatment plants", "Treatment of drinking water at scale."),
    _record("opening", 2023, "An attack in chess", "A sharp attack on the king."),
]


def _search(client: FlaskClient, q: str, **params: object) -> dict:
    answer = client.get("/api/search", query_string={"q": q, **params})
    assert answer.status_code == 200, answer.get_json()
    return dict(answer.get_json())


def _ids(client: FlaskClient, q: str, **params: object) -> list[str]:
    return [hit["id"] for hit in _search(client, q, **params)["results"]]


def test_a_paper_in_other_words_is_found_by_meaning_within_the_filters(factory: BackendFactory) -> None:
    overrides = factory.published_records([IN_OTHER_WORDS, *ELSEWHERE], meaning_candidates=10)
    by_meaning = create_app(overrides).test_client()
    words_only = create_app({**overrides, "meaning_candidates": 0}).test_client()
    found = _search(words_only, QUERY)
    assert "infarct" not in [hit["id"] for hit in found["results"]] and found["total"] == 3
    found = _search(by_meaning, QUERY)
    assert "infarct" in [hit["id"] for hit in found["results"]] and found["total"] == 4  # counted in the total
    assert sum(value["count"] for value in found["facets"]["year"]) == 3  # facets count what the words find
    explained = {hit["id"]: hit["explanation"] for hit in _search(by_meaning, QUERY, explain="true")["results"]}
    assert explained["infarct"]["lexical"] == 0 and explained["infarct"]["similarity"] > 0
    # Never outside the request's filters, and only for a query that only describes.
    assert _ids(by_meaning, QUERY, year_from=2020) == _ids(words_only, QUERY, year_from=2020)
    assert "infarct" not in _ids(by_meaning, f"{QUERY} -chess")
    update.remove(open_backend(factory.settings(**overrides)), ["infarct"])
    found = _search(by_meaning, QUERY)
    assert "infarct" not in [hit["id"] for hit in found["results"]] and found["total"] == 3  # removed: never shown
