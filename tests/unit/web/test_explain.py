"""`explain=true` on /api/search (issue #32, "Why this result") on the Whoosh seeds: each hit's score
taken apart, the parts adding up to the score shown. Both engines alike: tests/contract/test_both_backends_agree.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.helpers.apps import error_of
from tests.helpers.explanations import assert_adds_up


def _results(client: FlaskClient, **params: object) -> list[dict]:
    response = client.get("/api/search", query_string=params)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json["results"]


def test_without_explain_no_hit_has_an_explanation(client: FlaskClient) -> None:
    answer = client.get("/api/search", query_string={"q": "embedding"}).json
    assert answer["query"]["explain"] is False
    assert answer["results"] and all(hit["explanation"] is None for hit in answer["results"])


@pytest.mark.parametrize("value", ["maybe", "2", ""])
def test_a_bad_explain_is_a_400_naming_the_field(client: FlaskClient, value: str) -> None:
    error = error_of(client, f"/api/search?q=embedding&explain={value}", 400)
    assert list(error["details"]) == ["explain"]


@pytest.mark.parametrize("params", [{"q": "embedding", "sort": "newest"}, {"q": ""}, {"q": "", "sort": "cited"}])
def test_only_a_query_ranked_by_relevance_is_explained(client: FlaskClient, params: dict) -> None:
    hits = _results(client, explain="true", **params)
    assert hits and all(hit["explanation"] is None for hit in hits)


@pytest.mark.parametrize(
    "q",
    [
        "embedding table compression",
        "memory-efficient recommendation",
        "compostional embedings",
        "deep learning recommendation models",
    ],
)
def test_plain_words_are_taken_apart_by_word_and_field(client: FlaskClient, q: str) -> None:
    hits = _results(client, q=q, explain="true", per_page=30)
    assert hits
    for hit in hits:
        explanation = hit["explanation"]
        assert_adds_up(hit)
        assert abs(explanation["other"]) <= 0.000001  # plain words: the words explain it all
        assert explanation["words"] and explanation["meaning"] is not None
        assert all(set(word["fields"]) == {"title", "abstract"} for word in explanation["words"])
    tiers = [hit["explanation"]["tier"] for hit in hits]
    assert tiers == sorted(tiers)
    first = hits[0]["explanation"]
    assert first["similarity_rank"] >= 1 and first["best_lexical"] >= first["lexical"]


@pytest.mark.parametrize("q", ['"embedding tables"', "embed*", "author:naumov training", "-embedding"])
def test_a_query_not_of_plain_words_is_explained_as_a_whole(client: FlaskClient, q: str) -> None:
    hits = _results(client, q=q, explain="true")
    assert hits
    page = client.get("/", query_string={"q": q})
    assert page.status_code == 200 and page.get_data(as_text=True).count('<details class="why">') == len(hits)
    for hit in hits:
        assert_adds_up(hit)
        assert hit["explanation"]["words"] == [] and hit["explanation"]["other"] == hit["explanation"]["lexical"]


def test_ranked_by_words_alone_the_lexical_score_is_the_score(seed_app_with: Callable[..., Flask]) -> None:
    hits = _results(seed_app_with(semantic_ranking=False).test_client(), q="embedding compression", explain="1")
    assert hits
    for hit in hits:
        assert_adds_up(hit)
        assert hit["explanation"]["meaning"] is None and hit["explanation"]["similarity_rank"] is None


def test_the_page_shows_why_each_result_is_there_closed_and_escaped(client: FlaskClient) -> None:
    page = client.get("/", query_string={"q": "memory-efficient recommendation"}).get_data(as_text=True)
    assert page.count('<details class="why">') == page.count('<li class="hit">') > 0
    assert '<details class="why" open' not in page
    # Each word as the query wrote it; a word of two index words beside each of them.
    assert "memory-efficient: memori" in page and "memory-efficient: effici" in page
    assert ">recommendation<" in page and "Bonus for matching more of the words" in page
    assert "Phrases, wildcards" not in page  # plain words explain it all
    phrase = client.get("/", query_string={"q": '"embedding tables"'}).get_data(as_text=True)
    assert phrase.count("Phrases, wildcards, names and other clauses") == phrase.count('<li class="hit">') > 0
    browsing = client.get("/", query_string={"q": "embedding", "sort": "newest"}).get_data(as_text=True)
    assert 'class="why"' not in browsing
