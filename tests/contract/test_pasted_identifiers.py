"""A query that is one arXiv id or DOI opens that paper, on both engines (issue #33, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings
from tests.helpers.backends import BackendFactory
from tests.helpers.paths import SEEDS
from tests.helpers.records import write_jsonl

COMPOSITIONAL = "Compositional Embeddings Using Complementary Partitions for Memory-Efficient Recommendation Systems"
DOI = "10.1145/3394486.3403059"


@pytest.fixture(scope="module")
def with_identifiers(factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    """The seeds, and the KDD version of one of them with its arXiv id and DOI (as a reference
    manager's export would give it), merged into the seed's paper by title."""
    record = {
        "id": "kdd2020-compositional",
        "title": COMPOSITIONAL,
        "authors": ["Hao-Jun Michael Shi", "Dheevatsa Mudigere", "Maxim Naumov", "Jiyan Yang"],
        "year": 2020,
        "arxiv": "arXiv:1909.02107v3",
        "doi": f"https://doi.org/{DOI}",
    }
    source = write_jsonl(tmp_path_factory.mktemp("identifiers") / "kdd.jsonl", [record])
    return factory.publish([SEEDS, source]).test_client()


@pytest.mark.parametrize(
    ("pasted", "label"),
    [
        (DOI, f"DOI {DOI}"),
        (f"doi:{DOI.upper()}", f"DOI {DOI}"),
        (f"https://dx.doi.org/{DOI}", f"DOI {DOI}"),
        ("arXiv:1909.02107v2", "arXiv:1909.02107"),
        ("https://arxiv.org/abs/1909.02107", "arXiv:1909.02107"),
        ("1909.02107", "arXiv:1909.02107"),
    ],
)
def test_a_pasted_identifier_answers_with_its_paper_alone_and_the_page_opens_it(
    with_identifiers: FlaskClient, pasted: str, label: str
) -> None:
    found = with_identifiers.get("/api/search", query_string={"q": pasted, "year_from": "2030"}).get_json()
    assert found["identifier"] == {"value": label, "found": True}
    assert found["total"] == 1 and found["suggestion"] is None  # the filters aside: that paper was asked for
    (hit,) = found["results"]
    assert hit["title"] == COMPOSITIONAL and hit["matched"] == "identifier"
    assert hit["identifiers"]["arxiv"] == "1909.02107" and hit["identifiers"]["doi"] == DOI
    assert found["facets"]["author"] == [
        {"value": name, "count": 1, "selected": False}
        for name in with_identifiers.get(f"/api/papers/{hit['id']}").get_json()["authors"]
    ]
    page = with_identifiers.get("/", query_string={"q": pasted})
    assert page.status_code == 303
    assert page.location == f"/papers/{hit['id']}"
    assert with_identifiers.get(page.location).status_code == 200


def test_an_identifier_not_in_the_collection_is_searched_as_words_and_said_so(with_identifiers: FlaskClient) -> None:
    for pasted, label in (
        ("10.9999/embedding.tables", "DOI 10.9999/embedding.tables"),
        ("2401.00001", "arXiv:2401.00001"),
    ):
        found = with_identifiers.get("/api/search", query_string={"q": pasted}).get_json()
        assert found["identifier"] == {"value": label, "found": False}
        assert all(hit["matched"] is None for hit in found["results"])
        page = with_identifiers.get("/", query_string={"q": pasted})
        assert page.status_code == 200
        assert f"{label} is not in this collection" in page.get_data(as_text=True)
    words = with_identifiers.get("/api/search", query_string={"q": "compositional embeddings"}).get_json()
    assert words["identifier"] is None and words["results"][0]["matched"] is None


def test_a_removed_papers_identifier_is_no_longer_found(factory: BackendFactory, tmp_path: Path) -> None:
    """A paper taken out by an update no longer answers to its DOI: the lookup follows what is published."""
    records = [
        {"id": "a", "title": "Graph embeddings", "doi": "10.1000/a"},
        {"id": "b", "title": "Table embeddings", "doi": "10.1000/b"},
    ]
    settings = factory.overrides()
    backend = open_backend(load_settings(settings, environ={}))
    rebuild(backend, [write_jsonl(tmp_path / "two.jsonl", records)])
    client = create_app(settings).test_client()
    assert client.get("/api/search?q=10.1000/b").get_json()["identifier"]["found"] is True
    update.remove(backend, ["b"])
    assert client.get("/api/search?q=10.1000/b").get_json()["identifier"]["found"] is False
    assert client.get("/api/search?q=10.1000/a").get_json()["results"][0]["id"] == "a"
