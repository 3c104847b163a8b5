"""`/api/openapi.json` is valid OpenAPI 3.1 and says what the endpoints really accept and return."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

QUERY_ENDPOINTS = ["/api/search", "/api/facets/author", "/api/export", "/api/authors/Maxim Naumov"]
TEMPLATES = {"/api/facets/author": "/api/facets/{name}", "/api/authors/Maxim Naumov": "/api/authors/{name}"}


@pytest.fixture(scope="module")
def spec(seed_app: Flask) -> dict[str, Any]:
    return seed_app.test_client().get("/api/openapi.json").get_json()


def query_parameters(spec: dict[str, Any], path: str) -> dict[str, dict[str, Any]]:
    template = TEMPLATES.get(path, path)
    return {p["name"]: p for p in spec["paths"][template]["get"]["parameters"] if p["in"] == "query"}


def example(parameter: dict[str, Any]) -> list[str]:
    """A valid value for a declared parameter, built only from what the document says."""
    schema = parameter["schema"]
    kind = schema["type"] if isinstance(schema["type"], str) else schema["type"][0]
    if "enum" in schema:
        return [str(schema["enum"][-1])]
    if "example" in schema:
        return [str(schema["example"])]
    if kind == "array":
        return ["cs.LG"]
    if kind == "integer":
        return [str(schema.get("minimum", 1))]
    if kind == "boolean":
        return ["true"]
    return ["embedding"]


def test_the_document_is_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    validate(spec)
    assert spec["openapi"] == "3.1.0"


def test_every_route_is_documented(seed_app: Flask, spec: dict[str, Any]) -> None:
    routes = {
        re.sub(r"<(?:path:)?(\w+)>", r"{\1}", rule.rule)
        for rule in seed_app.url_map.iter_rules()
        if rule.endpoint != "static" and not rule.endpoint.startswith("ui.") and rule.rule != "/api/openapi.json"
    }
    assert routes == set(spec["paths"])


@pytest.mark.parametrize("path", QUERY_ENDPOINTS)
def test_every_declared_parameter_is_accepted_and_nothing_else(
    client: FlaskClient, spec: dict[str, Any], path: str
) -> None:
    declared = query_parameters(spec, path)
    required = {"format": ["csv"]} if path == "/api/export" else {}
    a_paper = client.get("/api/search").json["results"][0]["id"]
    for name, parameter in declared.items():
        value = [a_paper] if name == "id" else example(parameter)  # an export's chosen papers must exist
        response = client.get(path, query_string={**required, name: value})
        assert response.status_code == 200, (name, response.get_data(as_text=True))
    # An export by id replaces the search, so the two together are refused (tests/contract/test_contract.py).
    everything = {name: example(p) for name, p in declared.items() if name != "id"}
    assert client.get(path, query_string=everything).status_code == 200
    unknown = client.get(path, query_string={**required, "undeclared": "1"})
    assert unknown.status_code == 400 and unknown.json["error"]["details"] == {"undeclared": ["Unknown field."]}


@pytest.mark.reliability
def test_declared_limits_are_the_enforced_ones(client: FlaskClient, spec: dict[str, Any]) -> None:
    declared = query_parameters(spec, "/api/search")
    per_page = declared["per_page"]["schema"]
    assert (per_page["minimum"], per_page["maximum"], per_page["default"]) == (1, 100, 10)
    for value, status in ((per_page["maximum"], 200), (per_page["maximum"] + 1, 400), (per_page["minimum"] - 1, 400)):
        assert client.get(f"/api/search?per_page={value}").status_code == status
    longest = declared["q"]["schema"]["maxLength"]
    assert client.get("/api/search", query_string={"q": "a" * longest}).status_code == 200
    assert client.get("/api/search", query_string={"q": "a" * (longest + 1)}).status_code == 400
    assert declared["sort"]["schema"]["enum"] == ["relevance", "newest", "oldest", "cited", "added"]
    assert declared["subject"]["schema"]["maxItems"] == 50
    assert client.get("/api/search", query_string={"subject": ["s"] * 51}).status_code == 400


@pytest.mark.parametrize(
    ("url", "template", "status"),
    [
        ("/api/search?q=embedding&subject=cs.LG", "/api/search", 200),
        ("/api/search?sort=newest", "/api/search", 200),
        ("/api/search?per_page=0", "/api/search", 400),
        ("/api/search?q=a+AND", "/api/search", 400),
        ("/api/facets/author?prefix=m", "/api/facets/{name}", 200),
        ("/api/facets/nope", "/api/facets/{name}", 404),
        ("/api/papers/nope", "/api/papers/{paper_id}", 404),
        ("/api/authors/Maxim%20Naumov?sort=oldest", "/api/authors/{name}", 200),
        ("/api/authors/Maxim%20Naumof", "/api/authors/{name}", 404),
        ("/api/authors/Maxim%20Naumov?page=0", "/api/authors/{name}", 400),
        ("/healthz", "/healthz", 200),
        ("/readyz", "/readyz", 200),
    ],
)
def test_responses_match_their_declared_schemas(
    client: FlaskClient, spec: dict[str, Any], url: str, template: str, status: int
) -> None:
    response = client.get(url)
    assert response.status_code == status
    declared = spec["paths"][template]["get"]["responses"][str(status)]["content"]["application/json"]["schema"]
    validator = Draft202012Validator({**declared, "components": spec["components"]})
    errors = [error.message for error in validator.iter_errors(response.get_json())]
    assert errors == []


def test_paper_and_related_responses_match_their_schemas(client: FlaskClient, spec: dict[str, Any]) -> None:
    paper_id = client.get("/api/search").json["results"][0]["id"]
    for url, template in (
        (f"/api/papers/{paper_id}", "/api/papers/{paper_id}"),
        (f"/api/papers/{paper_id}/related", "/api/papers/{paper_id}/related"),
    ):
        declared = spec["paths"][template]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        validator = Draft202012Validator({**declared, "components": spec["components"]})
        assert [e.message for e in validator.iter_errors(client.get(url).get_json())] == []


@pytest.mark.parametrize("export_format", ["bibtex", "csv", "jsonl"])
def test_export_downloads_have_a_declared_media_type(
    client: FlaskClient, spec: dict[str, Any], export_format: str
) -> None:
    declared = spec["paths"]["/api/export"]["get"]["responses"]["200"]["content"]
    assert client.get(f"/api/export?format={export_format}").headers["Content-Type"] in declared


def test_the_write_operations_need_a_bearer_token_and_declare_their_bodies_and_refusals(
    seed_app: Flask, spec: dict[str, Any]
) -> None:
    from searchsvc.web.write_body import MEDIA_TYPES

    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    writes = {(path, method) for path, methods in spec["paths"].items() for method in methods if method != "get"}
    assert writes == {("/api/papers", "post"), ("/api/papers/{paper_id}", "delete")}
    for path, method in writes:
        operation = spec["paths"][path][method]
        assert operation["security"] == [{"bearerAuth": []}]
        assert {"401", "403", "409"} <= set(operation["responses"])
        assert operation["responses"]["401"]["headers"]["WWW-Authenticate"]["required"] is True
        assert operation["responses"]["409"]["headers"]["Retry-After"]["required"] is True
    add = spec["paths"]["/api/papers"]["post"]
    assert list(add["requestBody"]["content"]) == list(MEDIA_TYPES)
    assert {"400", "413", "415"} <= set(add["responses"])
    assert "404" in spec["paths"]["/api/papers/{paper_id}"]["delete"]["responses"]
    for path, method in writes:  # a retry is safe under the same key
        (key,) = [p for p in spec["paths"][path][method]["parameters"] if p["in"] == "header"]
        assert key["name"] == "Idempotency-Key" and "422" in spec["paths"][path][method]["responses"]
    reads = {
        path: operation
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
        if method == "get"
    }
    # Reads stay open, but for what a writer's change did, told to that writer alone.
    assert [path for path, operation in reads.items() if "security" in operation] == ["/api/changes/{key}"]
