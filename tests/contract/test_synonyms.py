"""Acronyms and synonyms (issue #33, item 1), on both engines: words typed side by side also match
their other forms, and the papers only those find rank after every paper with the words as typed."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask.testing import FlaskClient

from tests.helpers.backends import BackendFactory


def ids(client: FlaskClient, **params: object) -> list[str]:
    found = client.get("/api/search", query_string={"per_page": 100, **params}).json
    return [hit["id"] for hit in found["results"]]


def test_an_acronym_and_its_long_form_find_each_other_the_typed_form_first(client: FlaskClient) -> None:
    acronym, typed = ids(client, q="DLRM"), ids(client, q="DLRM", exact="true")
    spelled = ids(client, q='"deep learning recommendation models"') + ids(
        client, q='"deep learning recommendation model"'
    )
    # Every paper holding "DLRM" first (ranked with the other forms' words too), then those only spelling it out.
    assert typed and set(acronym[: len(typed)]) == set(typed)
    assert set(acronym) == set(typed) | set(spelled) and set(spelled) - set(typed)
    # Quoted: only as typed, not even its plural "DLRMs", which the word finds (analysis.ACRONYM_PLURAL).
    quoted = ids(client, q='"DLRM"')
    assert quoted and set(quoted) < set(typed)

    words = "deep learning recommendation model"
    long, long_typed = ids(client, q=words), ids(client, q=words, exact="true")
    assert set(long[: len(long_typed)]) == set(long_typed) and set(long) >= set(typed)
    document = client.get("/api/search", query_string={"q": words}).json
    assert document["also_searched"] == [{"typed": words, "forms": ["DLRM"]}]


def test_nas_finds_the_neural_architecture_search_papers(client: FlaskClient) -> None:
    found = client.get("/api/search", query_string={"q": "NAS", "per_page": 100}).json
    spelled = ids(client, q='"neural architecture search"')
    assert spelled and set(spelled) <= {hit["id"] for hit in found["results"]}
    assert found["also_searched"] == [{"typed": "NAS", "forms": ["neural architecture search"]}]


def test_a_setting_turns_the_other_forms_off(factory: BackendFactory) -> None:
    from tests.helpers.paths import SEEDS

    client = factory.publish([SEEDS], semantic_ranking=False, expand_synonyms=False).test_client()
    document = client.get("/api/search", query_string={"q": "DLRM", "per_page": 100}).json
    assert document["also_searched"] == [] and document["total"] == len(ids(client, q="DLRM", exact="true"))


RECORDS = [
    {"id": "spelled", "title": "Predicting click-through rate with deep models", "year": 2021},
    {"id": "acronym", "title": "CTR prediction at scale", "year": 2022},
    {"id": "joined", "title": "Clickthrough data for ranking", "year": 2020},
    {"id": "other", "title": "Ranking with clicks", "year": 2019},
]


@pytest.fixture(scope="module")
def with_file(factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    path: Path = tmp_path_factory.mktemp("synonyms") / "synonyms.txt"
    path.write_text("# one group a line\nclick-through rate, CTR, clickthrough\n", encoding="utf-8")
    return factory.publish_records(RECORDS, semantic_ranking=False, synonyms_file=str(path)).test_client()


@pytest.mark.parametrize(
    ("q", "first"),
    [("CTR", "acronym"), ("click-through rate", "spelled"), ("clickthrough", "joined")],
)
def test_a_synonyms_file_line_works_every_way(with_file: FlaskClient, q: str, first: str) -> None:
    found = ids(with_file, q=q)
    assert found[0] == first and set(found) >= {"spelled", "acronym", "joined"}
    page = with_file.get("/", query_string={"q": q}).text
    assert "Also searched:" in page and "Search only the words as typed" in page


def test_an_update_adds_the_acronyms_its_papers_define(factory: BackendFactory, tmp_path: Path) -> None:
    from searchsvc.backends import open_backend
    from searchsvc.core.model import SearchRequest
    from searchsvc.operations import update
    from searchsvc.operations.rebuild import rebuild
    from searchsvc.operations.search import search
    from tests.helpers.records import write_jsonl

    backend = open_backend(factory.settings(semantic_ranking=False))
    rebuild(backend, [write_jsonl(tmp_path / "first.jsonl", [{"id": "spelled", "title": "A sparse tensor gadget"}])])
    assert search(backend, SearchRequest(q="STG")).total == 0
    defining = [{"id": "defines", "title": "Sparse Tensor Gadgets (STG) at scale"}]
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", defining)])
    found = search(backend, SearchRequest(q="STG"))
    assert [hit.id for hit in found.hits] == ["defines", "spelled"]  # the paper with "STG" first
    assert [also.forms for also in found.also_searched] == [("sparse tensor gadgets",)]
