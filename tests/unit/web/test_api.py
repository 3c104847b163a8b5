"""The JSON API on the Whoosh backend: what is not part of the contract both backends share (tests/contract/)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.cli import main
from tests.helpers.apps import app_for, error_of

COMPOSITIONAL = "Compositional Embeddings Using Complementary Partitions for Memory-Efficient Recommendation Systems"


# --- /api/search -------------------------------------------------------------------


def test_the_cli_prints_the_document_the_api_returns(client: FlaskClient, seed_backend: WhooshBackend) -> None:
    url = "/api/search?q=embedding+-compositional&subject=cs.LG&subject=cs.IR&sort=newest&per_page=4&page=2"
    api = client.get(url).get_json()
    printed = CliRunner().invoke(
        main,
        ["search", "embedding -compositional", "--subject", "cs.LG", "--subject", "cs.IR", "--sort", "newest"]
        + ["--per-page", "4", "--page", "2", "--json", "--index-dir", str(seed_backend.settings.index_dir)],
    )
    assert printed.exit_code == 0, printed.output
    cli = json.loads(printed.stdout)
    assert api.pop("took_ms") >= 0 and cli.pop("took_ms") >= 0
    assert cli == api and api["total"] > 4


# --- papers, related, facets, export -----------------------------------------------


@pytest.mark.reliability
def test_export_stops_at_the_configured_limit(seed_app_with: Callable[..., Flask]) -> None:
    client = seed_app_with(max_export=3).test_client()
    response = client.get("/api/export?format=jsonl")
    assert len(response.get_data(as_text=True).splitlines()) == 3
    assert response.headers["X-Export-Limit"] == "3"


# --- errors ------------------------------------------------------------------------


@pytest.mark.reliability
def test_a_wildcard_expanding_beyond_the_limit_is_a_400(seed_app_with: Callable[..., Flask]) -> None:
    client = seed_app_with(max_wildcard_terms=2).test_client()
    error = error_of(client, "/api/search?q=embed*", 400)
    assert error["code"] == "query_too_broad"
    assert error["details"]["q"] == [
        "'embed*' matches more than 2 different words: type more letters before the * (column 1)"
    ]
    assert client.get("/api/search?q=shamp*").status_code == 200


@pytest.mark.reliability
def test_an_unexpected_failure_is_a_json_500_without_internals(
    seed_app: Flask, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(seed_app.extensions["searchsvc"].backend, "answer", broken)
    error = error_of(seed_app.test_client(), "/api/search", 500)
    assert error == {
        "code": "internal_error",
        "message": "the server failed to answer this request; the error is logged",
        "details": {},
    }
    assert "secret internal detail" in caplog.text  # logged for the operator, not shown to the client


def test_health_readiness_and_security_headers(client: FlaskClient, seed_backend: WhooshBackend) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json == {
        "status": "ready",
        "generation": seed_backend.store.current_name(),
        "doc_count": 28,
        "semantic_ranking": "on",
        "encoder": "bge-small-int8",  # the default, fetched by the test command (`bge_model --required`)
        "built_at": seed_backend.status()["built_at"],
        "changed_at": seed_backend.status()["built_at"],  # never changed through the write API
        "engine": "whoosh",
        "changes": 0,  # none since the sources
    }
    for response in (ready, client.get("/api/search"), client.get("/api/missing")):
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


def test_a_worker_starts_without_an_index_and_says_why(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from searchsvc.web.app import open_index

    app = app_for(tmp_path / "empty")
    open_index(app)  # gunicorn's post_worker_init hook: must not stop the worker from booting
    assert "index not loaded: no index is published" in caplog.text


def test_a_pasted_identifier_where_the_index_cannot_tell_is_searched_as_words(make_index, runner: CliRunner) -> None:
    """Without the published generation's collection file (built on another machine), the index cannot
    tell whether it holds a DOI's paper: the words are searched and nothing is claimed."""
    backend = make_index([{"id": "a", "title": "Graph embeddings", "doi": "10.1000/graph"}])
    index = backend.settings.index_dir
    app = app_for(index)
    assert app.test_client().get("/api/search?q=10.1000/graph").get_json()["identifier"]["found"] is True
    printed = runner.invoke(main, ["search", "10.1000/nothing", "--index-dir", str(index)])
    assert "DOI 10.1000/nothing is not in this collection" in printed.stdout
    for kept in (index / "collections").glob("*.sqlite"):
        kept.unlink()
    found = app.test_client().get("/api/search?q=10.1000/graph").get_json()
    assert found["identifier"] == {"value": "DOI 10.1000/graph", "found": None}
    assert all(hit["matched"] is None for hit in found["results"])
    printed = runner.invoke(main, ["search", "10.1000/graph", "--index-dir", str(index)])
    assert printed.exit_code == 0 and "not in this collection" not in printed.stdout
