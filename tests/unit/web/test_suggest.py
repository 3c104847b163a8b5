"""GET /api/suggest: completions of the query's last word, and clear 400s for bad input."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.helpers.apps import error_of


def test_the_last_word_is_completed_to_words_then_authors(client: FlaskClient) -> None:
    response = client.get("/api/suggest?q=memory+compo")
    assert response.status_code == 200
    document = response.get_json()
    assert document["q"] == "memory compo"
    assert 1 <= len(document["suggestions"]) <= 8
    (chosen,) = [s for s in document["suggestions"] if s["value"] == "compositional"]
    assert chosen == {"text": "memory compositional", "kind": "word", "value": "compositional", "papers": 1}
    counts = [s["papers"] for s in document["suggestions"] if s["kind"] == "word"]
    assert counts == sorted(counts, reverse=True)


def test_author_suggestions_search_the_author(client: FlaskClient) -> None:
    document = client.get("/api/suggest?q=naum").get_json()
    authors = [s for s in document["suggestions"] if s["kind"] == "author"]
    assert authors and authors[0]["text"] == f'author:"{authors[0]["value"]}"'
    search = client.get("/api/search", query_string={"q": authors[0]["text"]}).get_json()
    assert search["total"] == authors[0]["papers"]


def test_nothing_to_complete_is_an_empty_list(client: FlaskClient) -> None:
    for q in ["", "graph ", "zzzzqx", '"open phrase']:
        assert client.get("/api/suggest", query_string={"q": q}).get_json()["suggestions"] == [], q


def test_limit_and_length_are_checked(seed_app_with) -> None:  # type: ignore[no-untyped-def]
    client = seed_app_with(max_query_length=20).test_client()
    assert len(client.get("/api/suggest?q=c&limit=2").get_json()["suggestions"]) == 2
    assert set(error_of(client, "/api/suggest?q=" + "a" * 21, 400)["details"]) == {"q"}
    assert set(error_of(client, "/api/suggest?q=c&limit=9", 400)["details"]) == {"limit"}
    assert set(error_of(client, "/api/suggest?q=c&limit=x", 400)["details"]) == {"limit"}
    assert set(error_of(client, "/api/suggest", 400)["details"]) == {"q"}
    assert set(error_of(client, "/api/suggest?q=a&q=b", 400)["details"]) == {"q"}
