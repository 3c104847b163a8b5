"""`GET /api/openapi.json`: the OpenAPI 3.1 document, generated from the routes and their schemas.

Each API route carries an `Operation` (see api.py); the request schemas are the ones the
routes load parameters with, made with this app's settings, so the document states the
limits the service enforces.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Flask, Response, current_app, jsonify

from searchsvc.api import Operation
from searchsvc.schemas import ErrorSchema, HealthSchema, StatusSchema

blueprint = Blueprint("openapi", __name__)
_CONVERTER = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")
_ERROR_REASONS = {
    400: "Invalid parameters or query syntax; details name each bad field",
    404: "Unknown paper, facet or route",
    503: "No index is published or it cannot be read",
}


def init_app(app: Flask) -> None:
    app.register_blueprint(blueprint)


@blueprint.get("/api/openapi.json")
def openapi_document() -> Response:
    return jsonify(build_spec(current_app).to_dict())


def build_spec(app: Flask) -> APISpec:
    spec = APISpec(
        title="searchsvc",
        version=version("searchsvc"),
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={"description": "Ranked, faceted search over research-paper records."},
    )
    spec.components.schema("Error", schema=ErrorSchema)
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        operation = getattr(app.view_functions[rule.endpoint], "operation", None)
        if isinstance(operation, Operation):
            spec.path(path=_CONVERTER.sub(r"{\1}", rule.rule), operations={"get": _operation(operation)})
    spec.path(path="/healthz", operations={"get": _simple("The process is alive", HealthSchema, ())})
    spec.path(path="/readyz", operations={"get": _simple("The index is loaded", StatusSchema, (503,))})
    return spec


def _operation(operation: Operation) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"in": "path", "name": name, "required": True, "schema": schema}
        for name, schema in operation.path_params.items()
    ]
    if operation.params is not None:
        parameters.append({"in": "query", "schema": operation.params()})
    answer = (
        {"application/json": {"schema": operation.response}}
        if operation.response is not None
        else {media_type: {"schema": {"type": "string"}} for media_type in operation.download_types}
    )
    result = _simple(operation.summary, answer, operation.errors)
    result["parameters"] = parameters
    return result


def _simple(summary: str, answer: Any, errors: tuple[int, ...]) -> dict[str, Any]:
    content = answer if isinstance(answer, dict) else {"application/json": {"schema": answer}}
    responses: dict[str, Any] = {"200": {"description": "OK", "content": content}}
    for status in errors:
        responses[str(status)] = {
            "description": _ERROR_REASONS[status],
            "content": {"application/json": {"schema": "Error"}},
        }
    return {"summary": summary, "responses": responses}
