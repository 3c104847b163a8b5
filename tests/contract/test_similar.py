"""More like these (issue #33, item 4), on both engines: `similar:` in the query language and
`/api/similar`, ranking by the liked papers' mean vector minus a share of the unliked ones'."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.helpers.apps import error_of


def first_id(client: FlaskClient, q: str) -> str:
    return str(client.get("/api/search", query_string={"q": q}).json["results"][0]["id"])


def ids(document: dict) -> list[str]:
    return [hit["id"] for hit in document["results"]]


def test_papers_like_one_leave_it_out_and_rank_the_rest(client: FlaskClient) -> None:
    checkpointing = first_id(client, "checkpointing")
    document = client.get("/api/similar", query_string={"id": checkpointing, "per_page": 100}).json
    everything = client.get("/api/search?per_page=1").json["total"]
    assert document["total"] == everything - 1 == len(document["results"])
    assert checkpointing not in ids(document)
    scores = [hit["score"] for hit in document["results"]]
    assert scores == sorted(scores, reverse=True)
    # The query language says the same, and the paper page's related papers are its first ones.
    same = client.get("/api/search", query_string={"q": f'similar:"{checkpointing}"', "per_page": 100}).json
    assert ids(same) == ids(document)
    related = client.get(f"/api/papers/{checkpointing}/related").json["results"]
    assert [hit["id"] for hit in related] == ids(document)[: len(related)]
    assert sum(value["count"] for value in document["facets"]["year"]) == document["total"]


def test_unliked_papers_push_what_resembles_them_down(client: FlaskClient) -> None:
    checkpointing = first_id(client, "checkpointing")
    compositional = first_id(client, "compositional embeddings")
    liked = ids(client.get("/api/similar", query_string={"id": checkpointing, "per_page": 100}).json)
    nearest_to_unliked = ids(client.get("/api/similar", query_string={"id": compositional}).json)[0]
    unliking = client.get(
        "/api/similar", query_string={"id": checkpointing, "not": compositional, "per_page": 100}
    ).json
    assert compositional not in ids(unliking) and len(ids(unliking)) == len(liked) - 1
    assert ids(unliking).index(nearest_to_unliked) > liked.index(nearest_to_unliked)
    both = ids(client.get("/api/similar", query_string=[("id", checkpointing), ("id", compositional)]).json)
    assert not {checkpointing, compositional} & set(both)


def test_the_rest_of_the_query_and_the_filters_narrow_what_is_ranked(client: FlaskClient) -> None:
    checkpointing = first_id(client, "checkpointing")
    filtered = client.get("/api/similar", query_string={"id": checkpointing, "year_from": 2023, "per_page": 100}).json
    assert filtered["results"] and all(hit["year"] >= 2023 for hit in filtered["results"])
    assert filtered["total"] == client.get("/api/search?year_from=2023").json["total"] - (
        client.get(f"/api/papers/{checkpointing}").json["year"] >= 2023
    )
    assert all(value["selected"] == (value["value"] >= 2023) for value in filtered["facets"]["year"])
    worded = client.get("/api/search", query_string={"q": f'similar:"{checkpointing}" embedding', "per_page": 100}).json
    embedding = client.get("/api/search", query_string={"q": "embedding", "per_page": 100}).json
    assert set(ids(worded)) == set(ids(embedding)) - {checkpointing}
    assert ids(worded) != ids(embedding)  # ranked by likeness, not by the word


def test_similar_clauses_that_cannot_be_answered_are_clear_400s(client: FlaskClient) -> None:
    checkpointing = first_id(client, "checkpointing")
    assert "no-such-paper" in error_of(client, '/api/search?q=similar:"no-such-paper"', 400)["message"]
    inside_or = error_of(client, f'/api/search?q=embedding OR similar:"{checkpointing}"', 400)
    assert "cannot be inside OR" in inside_or["message"] and inside_or["details"]["column"] == 22  # its id
    assert "needs a similar:" in error_of(client, f'/api/search?q=-similar:"{checkpointing}"', 400)["message"]
    assert set(error_of(client, "/api/similar?not=x", 400)["details"]) == {"id"}
    assert set(error_of(client, "/api/similar?id=bad id", 400)["details"]) == {"id"}
    facets = error_of(client, f'/api/facets/author?q=similar:"{checkpointing}"', 400)
    assert "cannot narrow facet values" in facets["message"]
