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
from searchsvc.web import idempotency
from searchsvc.web.schemas import ErrorSchema

blueprint = Blueprint("openapi", __name__)
_CONVERTER = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")
_ERROR_REASONS = {
    400: "Invalid parameters or query syntax; details name each bad field. For a write: a body no reader can "
    "read (`body:LINE: what is wrong`, nothing changed), or a token in the URL (refused, never checked)",
    401: "No `Authorization: Bearer <token>` header",
    403: "The token is no writer's, or the write API is off (no write tokens configured)",
    404: "Unknown paper, author, facet or route; for an author, details.suggestions lists the closest names; "
    "for a change, none made under that idempotency key is published",
    409: "Another change to the index (a rebuild or another write) is running; nothing changed",
    413: "The body is larger than max_write_body_bytes; nothing changed",
    415: "The body's media type is not one the readers read; details.accepted lists those they do",
    422: "The idempotency key was sent before with another request; nothing changed",
    503: "No index is published or it cannot be read, or the search ran past its time limit",
    507: "No space is left to write the index (its disk or quota is full); nothing changed",
}
# Headers every answer of that status carries (http_errors._HEADERS).
_ERROR_HEADERS = {
    401: {"WWW-Authenticate": "The scheme to authenticate with: Bearer"},
    409: {"Retry-After": "Seconds to wait before trying the change again"},
}
_SECURITY_SCHEME = "bearerAuth"
_IDEMPOTENCY_KEY = {
    "in": "header",
    "name": idempotency.HEADER,
    "required": False,
    "description": f"{idempotency.KEY_RULE}, new for each change: a retry under the same key is not applied "
    "again but answered with the first change's report (replayed: true); GET /api/changes/{key} tells the outcome",
    "schema": {"type": "string", "maxLength": idempotency.MAX_KEY_LENGTH + 2},
}
_METHODS = ("get", "post", "put", "patch", "delete")  # a route's one method of these is its operation


@dataclass(frozen=True)
class Operation:
    """What the OpenAPI document says of a route: its parameters, its answer, its errors."""

    summary: str
    params: Callable[[Settings], Schema] | None = None  # a schema class: built with the app's settings (its limits)
    response: type[Schema] | None = None  # JSON; or else a download in one of `download_types`
    download_types: tuple[str, ...] = ()
    errors: tuple[int, ...] = (503,)
    path_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    body_types: tuple[str, ...] = ()  # media types of the request body, if it takes one
    writes: bool = False  # needs a writer's bearer token (web/write_auth.py)
    idempotent: bool = False  # takes an Idempotency-Key header (web/idempotency.py)


View = TypeVar("View", bound=Callable[..., Any])


def documented(operation: Operation) -> Callable[[View], View]:
    """Attach `operation` to a view, for the document."""

    def attach(view: View) -> View:
        view.operation = operation  # type: ignore[attr-defined]  # a function attribute, read back with getattr
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
    spec.components.security_scheme(
        _SECURITY_SCHEME,
        {
            "type": "http",
            "scheme": "bearer",
            "description": "A write token (`searchsvc token NAME`); its SHA-256 must be in write_tokens_file or "
            "write_token_hashes. Never in the URL.",
        },
    )
    operations: dict[str, dict[str, Any]] = {}
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        operation = getattr(app.view_functions[rule.endpoint], "operation", None)
        if isinstance(operation, Operation):
            method = next(m for m in _METHODS if m.upper() in (rule.methods or ()))
            path = operations.setdefault(_CONVERTER.sub(r"{\1}", rule.rule), {})
            path[method] = _operation(operation, app.extensions["searchsvc"].settings)
    for template, methods in operations.items():
        spec.path(path=template, operations=methods)
    return spec


def _download_schema(media_type: str) -> dict[str, Any]:
    """A download's body: text, or for a JSON media type (`…+json`: CSL-JSON) an array of objects."""
    if media_type.split(";")[0].strip().endswith("+json"):
        return {"type": "array", "items": {"type": "object"}}
    return {"type": "string"}


def _operation(operation: Operation, settings: Settings) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"in": "path", "name": name, "required": True, "schema": schema}
        for name, schema in operation.path_params.items()
    ]
    if operation.params is not None:
        parameters.append({"in": "query", "schema": operation.params(settings)})
    if operation.idempotent:
        parameters.append(_IDEMPOTENCY_KEY)
    content = (
        {"application/json": {"schema": operation.response}}
        if operation.response is not None
        else {media_type: {"schema": _download_schema(media_type)} for media_type in operation.download_types}
    )
    responses: dict[str, Any] = {"200": {"description": "OK", "content": content}}
    for status in operation.errors:
        responses[str(status)] = {
            "description": _ERROR_REASONS[status],
            "content": {"application/json": {"schema": "Error"}},
        }
        if status in _ERROR_HEADERS:
            responses[str(status)]["headers"] = {
                name: {"description": why, "required": True, "schema": {"type": "string"}}
                for name, why in _ERROR_HEADERS[status].items()
            }
    if operation.params is not None:
        # Each parameter's own limit fits, but all of them at once in 4-byte characters do not.
        responses["414"] = {
            "description": "The request line is longer than the server's limit (limit_request_line in "
            "config/gunicorn.conf.py); answered by gunicorn before the app, as HTML",
            "content": {"text/html": {"schema": {"type": "string"}}},
        }
    document: dict[str, Any] = {"summary": operation.summary, "parameters": parameters, "responses": responses}
    if operation.body_types:
        document["requestBody"] = {
            "required": True,
            "description": "Records in one of the source formats (README, Source formats), UTF-8, at most "
            f"{settings.max_write_body_bytes:,} bytes (max_write_body_bytes)",
            "content": {media_type: {"schema": {"type": "string"}} for media_type in operation.body_types},
        }
    if operation.writes:
        document["security"] = [{_SECURITY_SCHEME: []}]
    return document
