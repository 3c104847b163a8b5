"""The Flask application factory: settings and backend attached once, routes and errors registered."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from flask import Flask, Response, request
from flask.json.provider import DefaultJSONProvider

from searchsvc.backends import open_backend
from searchsvc.core.deadline import request_budget
from searchsvc.core.errors import SearchsvcError
from searchsvc.host import AST_LOCK
from searchsvc.operations import leftovers, synonyms
from searchsvc.settings import load_settings
from searchsvc.web import api, feeds, health, http_errors, metrics, openapi, ui, write_api
from searchsvc.web.raw_query import refuse_invalid_utf8
from searchsvc.web.service import Service
from searchsvc.web.write_body import remove_abandoned_bodies

# The pages load their stylesheet, script and icon from this origin and nothing else: no inline
# script or style (so injected markup cannot run), no framing, forms submit only here; script
# fetches from here only (suggestions as you type).
_CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": _CONTENT_SECURITY_POLICY,
}


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The WSGI app; `config` overrides settings (defaults < config file < SEARCHSVC_* < config)."""
    settings = load_settings(config)
    with AST_LOCK:  # werkzeug compiles each route with ast
        app = Flask(__name__)
    # Flask turns debug mode on from FLASK_DEBUG in the environment; a deployment's stray
    # variable must not expose tracebacks or let errors escape the JSON/HTML error handlers.
    app.debug = False
    # Keep documents in schema order. (Typed as JSONProvider, app.json is Flask's default one here.)
    cast(DefaultJSONProvider, app.json).sort_keys = False
    if app.logger.level == logging.NOTSET:  # changes to the index and the generation served are worth a line
        app.logger.setLevel(logging.INFO)
    backend = open_backend(settings)
    metered = metrics.metered(backend) if settings.metrics else backend
    app.extensions["searchsvc"] = Service(settings, metered, writers=settings.write_tokens())
    with AST_LOCK:  # werkzeug compiles each route with ast
        app.register_blueprint(api.blueprint)
        app.register_blueprint(write_api.blueprint)
        app.register_blueprint(health.blueprint)
        app.register_blueprint(ui.blueprint)
        app.register_blueprint(feeds.blueprint)
        openapi.init_app(app)
        http_errors.init_app(app)
        metrics.init_app(app)  # first: its clock starts before any check that may refuse the request
    app.before_request(refuse_invalid_utf8)
    app.after_request(_add_security_headers)
    app.after_request(_location_on_this_host)
    # Flask's documented way to wrap its WSGI app, which mypy refuses as assigning to a method.
    app.wsgi_app = _with_request_budget(app.wsgi_app, settings.search_time_limit_ms)  # type: ignore[method-assign]
    return app


def _with_request_budget(wsgi_app: Callable[..., Iterable[bytes]], limit_ms: int) -> Callable[..., Iterable[bytes]]:
    """`wsgi_app` with one deadline for each whole request, from its arrival, read by every backend call it makes
    (core.deadline): a page's search and its author lookup share one limit."""

    def budgeted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with request_budget(limit_ms):
            return wsgi_app(environ, start_response)

    return budgeted


def remove_leftovers(app: Flask) -> None:
    """At a worker's start, before it serves: delete what killed changes left beside the index, the
    bodies of killed writes included (operations.leftovers says why, and why nothing in use goes)."""
    served: Service = app.extensions["searchsvc"]
    index_dir = served.settings.index_dir
    if not os.access(index_dir, os.W_OK):
        return  # nothing built here yet, or an index this server may only read
    try:
        removed = remove_abandoned_bodies(served.settings) + leftovers.remove_leftovers(served.backend)
    except (OSError, SearchsvcError) as exc:  # never a reason not to serve (a cluster down, a full disk)
        detail = exc.explained() if isinstance(exc, SearchsvcError) else exc
        app.logger.warning("could not remove what killed changes left beside the index: %s", detail)
        return
    if removed:
        app.logger.info("removed what killed changes left beside the index: %s", ", ".join(removed))


def open_index(app: Flask) -> None:
    """Open the published index, and the other forms searches widen with, now rather than on the
    first request; without an index, just log it."""
    try:
        backend = app.extensions["searchsvc"].backend
        status = backend.status()
        synonyms.table(backend)
    except SearchsvcError as exc:  # /readyz reports it until an index is published
        app.logger.warning("index not loaded: %s", exc.explained())
    else:
        app.logger.info("serving generation %s (%s)", status.get("generation"), status.get("engine"))


def _location_on_this_host(response: Response) -> Response:
    """A redirect to this host by its path alone. Werkzeug writes the Host header's name into the
    redirects it makes (a double slash merged: `/api//search` to `/api/search`), so a forged Host was
    echoed back, and a cache keyed without it would hand that to others; a path keeps the host and
    the scheme the client used. Leading slashes or backslashes are kept to one: `//x` or `/\\x` would
    name a host again."""
    location = response.headers.get("Location")
    if location is None:
        return response
    parts = urlsplit(location)
    if parts.netloc and parts.netloc.lower() == request.host.lower():
        path = "/" + parts.path.lstrip("/\\")
        response.headers["Location"] = urlunsplit(("", "", path, parts.query, parts.fragment))
    return response


def _add_security_headers(response: Response) -> Response:
    for name, value in _SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response
