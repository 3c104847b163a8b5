"""Typo tolerance, exact first (issue #33, item 2), on both engines: a word no paper holds also
matches the words a typo away, and the papers only those find rank after every exact match."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

RECORDS = [
    {"id": "both", "title": "Quantization of neural networks", "year": 2020},
    {"id": "networks", "title": "Networks of networks", "abstract": "Graphs all the way down.", "year": 2021},
    {"id": "signal", "title": "Quantization in signal processing", "year": 2022},
    {"id": "greece", "title": "Elections in Greece", "year": 2019},
    {"id": "greener", "title": "Greener data centres", "year": 2019},
    {"id": "model", "title": "A model of 20211 cells", "abstract": "Cells, modelled.", "year": 2018},
]


@pytest.fixture(scope="module")
def typos_app(factory):  # type: ignore[no-untyped-def]
    return factory.publish_records(RECORDS, semantic_ranking=False)


@pytest.fixture
def search(typos_app):  # type: ignore[no-untyped-def]
    client = typos_app.test_client()
    return lambda **params: client.get("/api/search", query_string={"per_page": 100, **params}).json


def ids(document: dict) -> list[str]:
    return [hit["id"] for hit in document["results"]]


def test_a_misspelt_word_finds_what_the_right_spelling_finds(search) -> None:  # type: ignore[no-untyped-def]
    typo, right = search(q="quantizaton"), search(q="quantization")
    assert ids(typo) == ids(right) and set(ids(typo)) == {"signal", "both"}
    assert [hit["score"] for hit in typo["results"]] == [hit["score"] for hit in right["results"]]
    assert typo["suggestion"] == "quantization"  # "did you mean" still offers the correction
    assert typo["facets"]["year"] == right["facets"]["year"]
    assert "<mark>Quantization</mark>" in typo["results"][0]["highlights"]["title"]
    assert typo["typos"] == [{"typed": "quantizaton", "matched": ["quantization"]}] and right["typos"] == []
    assert search(q="quantizaton", exact="true")["total"] == 0  # only as typed
    assert search(q='"quantizaton"')["total"] == 0  # quoted: exactly this word


def test_exact_matches_come_before_every_paper_found_only_through_a_typo(search) -> None:  # type: ignore[no-untyped-def]
    found = search(q="quantizaton networks")
    assert set(ids(found)) == set(ids(search(q="quantization networks"))) == {"both", "networks", "signal"}
    # "both" and "networks" hold the typed "networks", ranked by it alone; "signal" only the meant word: last.
    assert set(ids(found)[:2]) == {"both", "networks"} and ids(found)[2] == "signal"
    typed = search(q="quantizaton networks", exact="true")
    assert [hit["score"] for hit in found["results"][:2]] == [hit["score"] for hit in typed["results"]]
    assert found["suggestion"] == "quantization networks"
    newest = search(q="quantizaton networks", sort="newest")
    assert ids(newest) == ["signal", "networks", "both"]  # the same papers, browsed by date


def test_a_word_some_paper_holds_is_never_respelled(search) -> None:  # type: ignore[no-untyped-def]
    assert ids(search(q="greece")) == ["greece"]  # not "greener" (Meilisearch #1358)
    assert ids(search(q="greeece")) == ["greece"]  # one edit from "greece", three from "greener"


@pytest.mark.parametrize(
    "q",
    [
        "modl",  # four letters
        "20212",  # a number
        '"quantizaton"',  # quoted: exactly this word
        "author:quantizaton",  # names are not respelled
        "-quantizaton",  # nor excluded words
    ],
)
def test_what_typo_tolerance_leaves_alone(search, q: str) -> None:  # type: ignore[no-untyped-def]
    found = search(q=q)
    assert found["total"] == (len(RECORDS) if q.startswith("-") else 0), ids(found)


def test_typo_tolerance_can_be_turned_off(factory) -> None:  # type: ignore[no-untyped-def]
    client = factory.publish_records(RECORDS, semantic_ranking=False, typo_tolerance=False).test_client()
    found = client.get("/api/search", query_string={"q": "quantizaton"}).json
    assert found["total"] == 0 and found["suggestion"] == "quantization"


def test_on_the_seeds_misspellings_find_the_papers_of_the_right_spelling(client: FlaskClient) -> None:
    def answer(q: str) -> list[tuple[str, float]]:
        found = client.get("/api/search", query_string={"q": q, "per_page": 100}).json
        return [(hit["id"], hit["score"]) for hit in found["results"]]

    def papers(q: str) -> set[str]:
        return {paper for paper, _ in answer(q)}

    assert answer("recomendation") == answer("recommendation") != []  # ranked by meaning as the word meant
    assert papers("embeding tables") == papers("embedding tables") != set()
    typo = [paper for paper, _ in answer("embedding tabels")]
    assert set(typo) == papers("embedding tables")
    exact = papers("embedding")
    assert typo[: len(exact)] and set(typo[: len(exact)]) == exact  # every paper with the typed word first


def test_an_export_holds_what_the_page_ranks(search, typos_app) -> None:  # type: ignore[no-untyped-def]
    exported = typos_app.test_client().get("/api/export", query_string={"q": "quantizaton networks", "format": "jsonl"})
    assert [line.split('"id": "')[1].split('"')[0] for line in exported.text.splitlines()] == ids(
        search(q="quantizaton networks")
    )


def test_the_page_says_what_a_misspelt_word_matched_and_links_the_search_as_typed(typos_app) -> None:  # type: ignore[no-untyped-def]
    page = typos_app.test_client().get("/", query_string={"q": "quantizaton networks", "year_from": 2020}).text
    assert "Also matched <q>quantizaton</q> as quantization.</span>" in page
    assert "Papers found only this way come after every paper with the words as typed." in page
    assert 'href="/?q=quantizaton+networks&amp;year_from=2020&amp;exact=true"' in page
    assert "Also matched" not in typos_app.test_client().get("/", query_string={"q": "quantization"}).text
