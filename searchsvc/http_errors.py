"""Every error becomes one JSON shape and status, mapped here and nowhere else.

`{"error": {"code": ..., "message": ..., "details": {...}}}`: 400 for bad parameters and
queries, 404 for unknown papers and routes, 503 when no index can be served. Anything
unexpected is logged and answered with a 500 in the same shape, never a traceback.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from searchsvc.errors import IndexUnavailable, InvalidRequest, PaperNotFound, QuerySyntaxError, SearchsvcError

_STATUS: dict[type[SearchsvcError], int] = {
    InvalidRequest: 400,
    QuerySyntaxError: 400,
    PaperNotFound: 404,
    IndexUnavailable: 503,
}


def init_app(app: Flask) -> None:
    app.register_error_handler(SearchsvcError, _service_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)


def error_response(status: int, code: str, message: str, details: dict[str, Any] | None = None) -> Response:
    response = jsonify({"error": {"code": code, "message": message, "details": details or {}}})
    response.status_code = status
    return response


def _status_for(error: SearchsvcError) -> int:
    return next((status for kind, status in _STATUS.items() if isinstance(error, kind)), 500)


def _service_error(error: SearchsvcError) -> Response:
    response = error_response(_status_for(error), error.code, error.message, error.details)
    if isinstance(error, IndexUnavailable):
        response.headers["Retry-After"] = "30"
    return response


def _http_error(error: HTTPException) -> Response:
    code = (error.name or "error").lower().replace(" ", "_")
    response = error_response(error.code or 500, code, error.description or error.name)
    for name, value in error.get_headers():
        if name.lower() == "allow":
            response.headers[name] = value
    return response


def _unexpected_error(error: Exception) -> Response:
    from flask import current_app

    current_app.logger.exception("unexpected error while answering a request")
    return error_response(500, "internal_error", "the server failed to answer this request; the error is logged")
