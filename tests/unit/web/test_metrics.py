"""`GET /metrics` in one process (Flask's test client): what is counted, under which bounded labels,
the index's gauges, and that nothing answers while the `metrics` setting is off or on another port.

Counters live for the whole test process (as in a worker), so the tests compare before and after.
tests/system/test_metrics_gunicorn.py checks the sums across real gunicorn workers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from searchsvc.cli import main
from searchsvc.core.errors import ConfigurationError, SearchTimedOut
from searchsvc.settings import load_settings
from tests.helpers.apps import app_for
from tests.helpers.servers import gunicorn_refusing

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
SEARCH_OK = {"route": "/api/search", "method": "GET", "status": "200"}


def scrape(client: FlaskClient, base_url: str = "http://localhost/") -> Samples:
    response = client.get("/metrics", base_url=base_url)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/plain"
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def rise(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(labels)[label] for (sample, labels), _ in samples.items() if sample == name}


@pytest.fixture(scope="module")
def metered_app(seed_app: Flask, tmp_path_factory: pytest.TempPathFactory) -> Flask:
    """The seeds' app with metrics on, answered on the public port (metrics_bind empty)."""
    index_dir = seed_app.extensions["searchsvc"].settings.index_dir
    return app_for(index_dir, metrics=True, metrics_bind="")


@pytest.fixture
def metered(metered_app: Flask) -> FlaskClient:
    return metered_app.test_client()


def test_off_by_default_metrics_is_an_unknown_path(client: FlaskClient) -> None:
    assert load_settings(environ={}).metrics is False
    metrics, unknown = client.get("/metrics"), client.get("/no-such-page")
    assert metrics.status_code == unknown.status_code == 404
    assert metrics.get_data() == unknown.get_data()


@pytest.mark.parametrize("given", ["on", "true", "1", "yes"])
def test_the_setting_reads_on(given: str) -> None:
    assert load_settings(environ={"SEARCHSVC_METRICS": given}).metrics is True
    assert load_settings(environ={"SEARCHSVC_METRICS": "off"}).metrics is False


@pytest.mark.parametrize("address", ["nonsense", ":9100", "127.0.0.1:0", "127.0.0.1:70000", "host:port"])
def test_a_bad_metrics_bind_stops_the_service(address: str) -> None:
    with pytest.raises(ConfigurationError, match=r"SEARCHSVC_METRICS_BIND=.*: must be host:port"):
        load_settings(environ={"SEARCHSVC_METRICS_BIND": address})


@pytest.mark.parametrize("address", ["127.0.0.1:9100", "[::1]:9100", "metrics.internal:9100", ""])
def test_metrics_bind_takes_an_address_or_nothing(address: str) -> None:
    assert load_settings(environ={"SEARCHSVC_METRICS_BIND": address}).metrics_bind == address


def test_metrics_answer_only_on_the_metrics_bind_port(seed_app_with: Callable[..., Flask]) -> None:
    client = seed_app_with(metrics=True, metrics_bind="127.0.0.1:9100").test_client()
    assert client.get("/metrics").status_code == 404  # the public port (80 in the test client)
    assert client.get("/metrics", base_url="http://localhost:8000/").status_code == 404
    assert value(scrape(client, "http://127.0.0.1:9100/"), "searchsvc_index_up") == 1


def test_metrics_are_not_in_the_public_api_document(metered: FlaskClient) -> None:
    assert "/metrics" not in metered.get("/api/openapi.json").get_json()["paths"]


def test_requests_are_counted_by_route_method_and_status(metered: FlaskClient) -> None:
    before = scrape(metered)
    for query in ("embedding", "graph", ""):
        assert metered.get("/api/search", query_string={"q": query}).status_code == 200
    assert metered.get("/api/search?per_page=0").status_code == 400
    assert metered.get("/api/papers/no-such-paper").status_code == 404
    after = scrape(metered)
    assert rise(before, after, "searchsvc_requests_total", **SEARCH_OK) == 3
    bad = {"route": "/api/search", "method": "GET", "status": "400"}
    assert value(after, "searchsvc_requests_total", **bad) - value(before, "searchsvc_requests_total", **bad) == 1
    paper = {"route": "/api/papers/<path:paper_id>", "method": "GET", "status": "404"}
    assert value(after, "searchsvc_requests_total", **paper) - value(before, "searchsvc_requests_total", **paper) == 1
    count = "searchsvc_request_seconds_count"
    assert value(after, count, route="/api/search") - value(before, count, route="/api/search") == 4
    assert value(after, "searchsvc_request_seconds_bucket", route="/api/search", le="+Inf") >= 4


def test_searches_are_counted_by_kind(metered: FlaskClient) -> None:
    before = scrape(metered)
    metered.get("/api/search?q=embedding")
    metered.get("/api/search?subject=cs.LG")
    metered.get("/api/search")
    metered.get("/?q=graph")
    after = scrape(metered)

    def rise(via: str, kind: str) -> float:
        return value(after, "searchsvc_searches_total", via=via, kind=kind) - value(
            before, "searchsvc_searches_total", via=via, kind=kind
        )

    assert (rise("api", "words"), rise("api", "filters"), rise("api", "empty"), rise("page", "words")) == (1, 1, 1, 1)
    assert label_values(after, "searchsvc_searches_total", "kind") <= {"words", "filters", "empty"}


def test_label_values_stay_bounded_whatever_the_paths(metered: FlaskClient) -> None:
    scrape(metered)  # counted once done: the scrape below then already lists /metrics, whatever ran before
    before = scrape(metered)
    for _ in range(50):
        assert metered.get(f"/{uuid.uuid4().hex}/{uuid.uuid4().hex}").status_code == 404
    for paper_id in ("a", "b", "c"):
        metered.get(f"/api/papers/{paper_id}")
    assert metered.open("/api/search", method="BREW").status_code == 405
    after = scrape(metered)
    new_routes = label_values(after, "searchsvc_requests_total", "route") - label_values(
        before, "searchsvc_requests_total", "route"
    )
    assert new_routes <= {"<unmatched>", "/api/papers/<path:paper_id>"}
    assert "<unmatched>" in label_values(after, "searchsvc_requests_total", "route")
    unmatched = {"route": "<unmatched>", "method": "GET", "status": "404"}
    assert rise(before, after, "searchsvc_requests_total", **unmatched) == 50
    assert "BREW" not in label_values(after, "searchsvc_requests_total", "method")
    assert value(after, "searchsvc_requests_total", route="<unmatched>", method="other", status="405") >= 1


def test_timeouts_are_counted(metered_app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    def stuck(*args: object) -> None:
        raise SearchTimedOut("the search ran past its time limit")

    client = metered_app.test_client()
    before = value(scrape(client), "searchsvc_search_timeouts_total")
    engine = metered_app.extensions["searchsvc"].backend._backend  # under the counting wrapper
    monkeypatch.setattr(engine, "answer", stuck)
    assert client.get("/api/search?q=embedding").status_code == 503
    assert client.get("/?q=embedding").status_code == 503
    assert client.get("/api/export?format=csv").status_code == 503
    assert value(scrape(client), "searchsvc_search_timeouts_total") - before == 3


def test_the_index_gauges_say_what_readyz_says(metered: FlaskClient) -> None:
    ready = metered.get("/readyz").get_json()
    samples = scrape(metered)
    assert value(samples, "searchsvc_index_up") == 1
    assert value(samples, "searchsvc_papers") == ready["doc_count"]
    assert value(samples, "searchsvc_changes") == ready["changes"]
    assert label_values(samples, "searchsvc_index_info", "generation") == {ready["generation"]}
    states = {state: value(samples, "searchsvc_semantic_ranking", state=state) for state in ("on", "pending", "off")}
    assert states == {state: float(state == ready["semantic_ranking"]) for state in states}
    assert value(samples, "searchsvc_index_built_timestamp_seconds") > 0
    assert ready["semantic_ranking"] == "on"  # the seeds are embedded as they are indexed
    assert value(samples, "searchsvc_embedded_papers") == ready["doc_count"]


def test_without_an_index_the_index_is_reported_down(tmp_path: Path) -> None:
    client = app_for(tmp_path / "empty-index", metrics=True, metrics_bind="").test_client()
    assert client.get("/readyz").status_code == 503
    samples = scrape(client)
    assert value(samples, "searchsvc_index_up") == 0
    assert ("searchsvc_papers", frozenset()) not in samples


def test_searchsvc_settings_lists_both_settings() -> None:
    result = CliRunner().invoke(main, ["settings"], env={"SEARCHSVC_METRICS": "on"})
    assert result.exit_code == 0, result.output
    assert "metrics = True" in result.output and "metrics_bind = 127.0.0.1:9100" in result.output


def test_gunicorn_refuses_a_metrics_bind_on_the_public_port() -> None:
    result = gunicorn_refusing(PORT="9100", HOST="127.0.0.1", SEARCHSVC_METRICS="on")
    assert result.returncode == 2, result.stderr
    assert "error: SEARCHSVC_METRICS_BIND=127.0.0.1:9100: 9100 is the public PORT" in result.stderr
    assert "Booting worker" not in result.stderr
