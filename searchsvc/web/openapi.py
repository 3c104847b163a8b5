"""`GET /api/openapi.json`: the OpenAPI 3.1 document, generated from the routes and their schemas.

Each documented route carries an `Operation`; the request schemas are the ones the routes
load parameters with, made with this app's settings, so the document states the limits the
service enforces.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, TypeVar

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, Flask, Response, current_app, jsonify
from marshmallow import Schema

from searchsvc.settings import Settings
from searchsvc.web.schemas import ErrorSchema

blueprint = Blueprint("openapi", __name__)
_CONVERTER = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")
_ERROR_REASONS = {
    400: "Invalid parameters or query syntax; details name each bad field",
    404: "Unknown paper, author, facet or route; for an author, details.suggestions lists the closest names",
    503: "No index is published or it cannot be read, or the search ran past its time limit",
}


@dataclass(frozen=True)
class Operation:
    """What the OpenAPI document says of a route: its parameters, its answer, its errors."""

    summary: str
    params: Callable[[Settings], Schema] | None = None  # a schema class: built with the app's settings (its limits)
    response: type[Schema] | None = None  # JSON; or else a download in one of `download_types`
    download_types: tuple[str, ...] = ()
    errors: tuple[int, ...] = (503,)
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)


View = TypeVar("View", bound=Callable[..., Any])


def documented(operation: Operation) -> Callable[[View], View]:
    """Attach `operation` to a view, for the document."""

    def attach(view: View) -> View:
        view.operation = operation  # type: ignore[attr-defined]
        return view

    return attach


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
            operations = {"get": _operation(operation, app.extensions["searchsvc"].settings)}
            spec.path(path=_CONVERTER.sub(r"{\1}", rule.rule), operations=operations)
    return spec


def _operation(operation: Operation, settings: Settings) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"in": "path", "name": name, "required": True, "schema": schema}
        for name, schema in operation.path_params.items()
    ]
    if operation.params is not None:
        parameters.append({"in": "query", "schema": operation.params(settings)})
    content = (
        {"application/json": {"schema": operation.response}}
        if operation.response is not None
        else {media_type: {"schema": {"type": "string"}} for media_type in operation.download_types}
    )
    responses: dict[str, Any] = {"200": {"description": "OK", "content": content}}
    for status in operation.errors:
        responses[str(status)] = {
            "description": _ERROR_REASONS[status],
            "content": {"application/json": {"schema": "Error"}},
        }
    if operation.params is not None:
        # Each parameter's own limit fits, but all of them at once in 4-byte characters do not.
        responses["414"] = {
            "description": "The request line is longer than the server's limit (limit_request_line in "
            "config/gunicorn.conf.py); answered by gunicorn before the app, as HTML",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    return {"summary": operation.summary, "parameters": parameters, "responses": responses}
