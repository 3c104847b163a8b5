"""Every error becomes one status and message, mapped here and nowhere else.

The API and the health routes answer `{"error": {"code": ..., "message": ..., "details": {...}}}`;
the pages people read (everything outside /api) answer an HTML page with the same message.
400 for bad parameters and queries, 404 for unknown papers, authors and routes, 503 when no index
can be served; the write API adds 401/403 (no or a wrong token, or writes off), 409 (another change
holds the index), 413 (body too large), 415 (a body no reader reads), 422 (an idempotency key
sent again with another request) and 507 (no space left to write the index: nothing was
changed). Anything unexpected is logged and answered with a 500, never a traceback.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from searchsvc.core.errors import (
    AuthorNotFound,
    ChangeNotFound,
    IndexUnavailable,
    InvalidRequest,
    PaperNotFound,
    QuerySyntaxError,
    RebuildInProgress,
    SearchsvcError,
    SearchTimedOut,
    SourceFormatError,
    StorageFull,
)
from searchsvc.operations.update import IdempotencyKeyReused, TooManyRecords
from searchsvc.web.write_auth import MissingToken, TokenInQuery, WriteApiOff, WrongToken
from searchsvc.web.write_body import BodyTooLarge, UnsupportedBodyType

_STATUS: dict[type[SearchsvcError], int] = {
    InvalidRequest: 400,
    QuerySyntaxError: 400,
    SourceFormatError: 400,  # a write request's body that no reader can read
    TokenInQuery: 400,
    MissingToken: 401,
    WriteApiOff: 403,
    WrongToken: 403,
    PaperNotFound: 404,
    AuthorNotFound: 404,
    ChangeNotFound: 404,
    RebuildInProgress: 409,
    BodyTooLarge: 413,
    TooManyRecords: 413,
    UnsupportedBodyType: 415,
    IdempotencyKeyReused: 422,
    IndexUnavailable: 503,
    SearchTimedOut: 503,
    StorageFull: 507,
}
# A rebuild or another change holds the index for seconds to minutes; an index that cannot be read
# is usually one being published or repaired.
RETRY_AFTER_CHANGE_S = 5
_HEADERS: dict[type[SearchsvcError], dict[str, str]] = {
    IndexUnavailable: {"Retry-After": "30"},
    RebuildInProgress: {"Retry-After": str(RETRY_AFTER_CHANGE_S)},
    MissingToken: {"WWW-Authenticate": 'Bearer realm="searchsvc"'},
}


def init_app(app: Flask) -> None:
    app.register_error_handler(SearchsvcError, _service_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


_PAGE_TITLES = {
    400: "This request could not be understood",
    401: "Sign-in required",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    503: "Search is not available right now",
}
_JSON_BLUEPRINTS = ("api", "write_api", "health", "openapi", "feeds")  # a feed reader is a program, not a person


def error_response(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> Response:
    if _wants_page():
        title = _PAGE_TITLES.get(status, "Something went wrong")
        response = Response(render_template("error.html", title=title, message=message), mimetype="text/html")
    else:
        response = jsonify({"error": {"code": code, "message": message, "details": details or {}}})
    response.status_code = status
    return response


def _wants_page() -> bool:
    """Whether the request is for a page a person reads rather than for the JSON API."""
    if request.blueprint is not None:
        return request.blueprint not in _JSON_BLUEPRINTS
    return not request.path.startswith("/api/") and request.path != "/api"


def _status_for(error: SearchsvcError) -> int:
    return next((status for kind, status in _STATUS.items() if isinstance(error, kind)), 500)


def _service_error(error: SearchsvcError) -> Response:
    if error.private:  # where things are, for the operator; the client gets the message alone
        current_app.logger.warning("%s: %s", error.code, error.explained())
    response = error_response(_status_for(error), error.code, error.message, error.details)
    for kind, headers in _HEADERS.items():
        if isinstance(error, kind):
            response.headers.update(headers)
    return response


def _http_error(error: HTTPException) -> Response:
    code = (error.name or "error").lower().replace(" ", "_")
    response = error_response(error.code or 500, code, error.description or error.name)
    for name, value in error.get_headers():
        if name.lower() == "allow":
            response.headers[name] = value
    return response


def _unexpected_error(error: Exception) -> Response:
    current_app.logger.exception("unexpected error while answering a request")
    return error_response(500, "internal_error", "the server failed to answer this request; the error is logged")
