"""`GET /metrics`: the service's Prometheus metrics (setting `metrics`, off by default).

Counters and histograms are written by the process that counts them. Under gunicorn each
worker writes its own file in PROMETHEUS_MULTIPROC_DIR (config/gunicorn.conf.py makes and
empties it, see `searchsvc.web.metrics_directory`), and whichever worker answers a scrape
sums every worker's files, so a scrape counts the whole server, not one worker's share.

The index's state (generation, papers, ranking by meaning) is not counted but read at scrape
time from `backend.status()` by the worker answering, so it needs no gauge files and no
`multiprocess_mode`: a gauge written by each worker would keep whatever it held at that
worker's last request (an idle worker would report a generation long replaced), and every
worker serves the published generation anyway (each checks it on every request).

Label values are bounded: the route is Flask's URL rule (`/api/papers/<path:paper_id>`),
never the path a client sent, the method one of a fixed few, the status a number.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from werkzeug.exceptions import NotFound

from searchsvc.backends import Backend, Purpose
from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import SearchsvcError, SearchTimedOut
from searchsvc.core.model import SearchRequest
from searchsvc.core.query import Node
from searchsvc.operations import changes
from searchsvc.settings import Settings
from searchsvc.settings.rules import address_port
from searchsvc.web.metrics_directory import MULTIPROC_DIR_ENV

UNMATCHED = "<unmatched>"  # the route of every request no URL rule matched (404, 405)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})  # others count as "other"
SEMANTIC_STATES = ("on", "pending", "off")
# Seconds; a request runs at most search_time_limit_ms (30 s at most) before its 503.
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# A rebuild reads, indexes and embeds (about 0.1 s per new abstract per core): minutes to hours.
_REBUILD_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0)

# The metrics' own registry: in a single process (Flask's test client, `flask run`) a scrape reads
# this one, not prometheus_client's default, which would add the process's own metrics too.
_REGISTRY = CollectorRegistry(auto_describe=True)

blueprint = Blueprint("metrics", __name__)


@dataclass(frozen=True)
class _Meters:
    requests: Counter
    request_seconds: Histogram
    searches: Counter
    timeouts: Counter


@cache
def _meters() -> _Meters:
    """Made on first use, not at import: a process that never serves (`searchsvc rebuild`) writes
    no files of them into the shared directory."""
    return _Meters(
        requests=Counter(
            "searchsvc_requests", "HTTP requests answered", ["route", "method", "status"], registry=_REGISTRY
        ),
        request_seconds=Histogram(
            "searchsvc_request_seconds",
            "Time to answer a request",
            ["route"],
            buckets=_REQUEST_BUCKETS,
            registry=_REGISTRY,
        ),
        searches=Counter(
            "searchsvc_searches",
            "Searches run: via the api or a page; kind words (a query), filters (filters only) or empty",
            ["via", "kind"],
            registry=_REGISTRY,
        ),
        timeouts=Counter(
            "searchsvc_search_timeouts",
            "Searches, exports and lookups ended by the request's time limit",
            registry=_REGISTRY,
        ),
    )


@cache
def _rebuild_seconds() -> Histogram:
    return Histogram(
        "searchsvc_rebuild_seconds",
        "Duration of each `searchsvc rebuild` run that succeeded",
        buckets=_REBUILD_BUCKETS,
        registry=_REGISTRY,
    )


def init_app(app: Flask) -> None:
    """Count every request and serve /metrics, if the `metrics` setting is on; otherwise nothing
    is added (no route: /metrics is a 404 like any unknown path)."""
    settings: Settings = app.extensions["searchsvc"].settings
    if not settings.metrics:
        return
    _meters()
    app.before_request(_start_clock)  # create_app adds this before any check that may refuse a request
    app.after_request(_count_request)
    app.register_blueprint(blueprint)


def metered(backend: Backend) -> Backend:
    """`backend`, counting its searches by kind and the calls that ran out of time."""
    return _MeteredBackend(backend)  # a Backend: __getattr__ delegates everything else


def search_kind(search: SearchRequest) -> str:
    """words, filters or empty: the few kinds of search worth telling apart, never the query itself."""
    if search.q.strip():
        return "words"
    if search.filtered:
        return "filters"
    return "empty"


def observe_rebuild(seconds: float) -> None:
    """Record a finished rebuild's duration, where the web workers' scrapes will see it: only when
    PROMETHEUS_MULTIPROC_DIR names an existing directory (the one the server uses), else nothing,
    since the rebuild's own process ends before anyone could scrape it."""
    directory = os.environ.get(MULTIPROC_DIR_ENV, "")
    if directory and os.path.isdir(directory):
        _rebuild_seconds().observe(seconds)


class _MeteredBackend:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    @contextmanager
    def answer(self, search: SearchRequest, tree: Node | None, deadline: Deadline, purpose: Purpose) -> Iterator[Any]:
        """A search's answer (a page's counted by kind), and its time running out while the search
        recipe asks it (operations/search.py), counted."""
        if purpose == "page":
            via = "api" if request.blueprint == "api" else "page"
            _meters().searches.labels(via=via, kind=search_kind(search)).inc()
        try:
            with self._backend.answer(search, tree, deadline, purpose) as answer:
                yield answer
        except SearchTimedOut:
            _meters().timeouts.inc()
            raise

    def facet_values(self, *args: Any) -> Any:
        return self._timed(self._backend.facet_values, *args)

    def similar(self, *args: Any) -> Any:
        return self._timed(self._backend.similar, *args)

    @staticmethod
    def _timed(call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except SearchTimedOut:
            _meters().timeouts.inc()
            raise


def _start_clock() -> None:
    g.metrics_started = time.perf_counter()


def _count_request(response: Response) -> Response:
    route = request.url_rule.rule if request.url_rule is not None else UNMATCHED
    method = request.method if request.method in _METHODS else "other"
    meters = _meters()
    meters.requests.labels(route=route, method=method, status=str(response.status_code)).inc()
    started = g.get("metrics_started")
    if started is not None:
        meters.request_seconds.labels(route=route).observe(time.perf_counter() - started)
    return response


@blueprint.get("/metrics")
def metrics() -> Response:
    """The metrics in the format the scraper asks for (Prometheus text, or OpenMetrics); a 404,
    like any unknown path, on any port but `metrics_bind`'s when that is set."""
    settings: Settings = current_app.extensions["searchsvc"].settings
    # gunicorn sets SERVER_PORT from the listening socket the request came in on, not from its Host header.
    if settings.metrics_bind and request.environ.get("SERVER_PORT") != address_port(settings.metrics_bind):
        raise NotFound()
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    scrape = _Scrape(current_app.extensions["searchsvc"].backend)
    return Response(encode(scrape), content_type=content_type)


class _Scrape:
    """What one scrape reports: the counted metrics (every worker's, in multiprocess mode) and
    the index's state as this process sees it now."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def collect(self) -> Iterator[Metric]:
        if os.environ.get(MULTIPROC_DIR_ENV):
            yield from MultiProcessCollector(None).collect()
        else:
            yield from _REGISTRY.collect()
        yield from index_state(self._backend)


def index_state(backend: Backend) -> Iterable[Metric]:
    """Gauges of the index this process serves, from `backend.status()` (one pointer check on
    Whoosh; a few small requests on OpenSearch, its deleted copies' `_stats` among them)."""
    up = GaugeMetricFamily("searchsvc_index_up", "1 if this process has a readable published index, else 0")
    try:
        status = backend.status()
    except SearchsvcError:
        up.add_metric([], 0)
        return [up]
    up.add_metric([], 1)
    info = GaugeMetricFamily("searchsvc_index_info", "The generation served (value 1)", labels=["generation", "engine"])
    info.add_metric([str(status.get("generation", "")), backend.settings.backend], 1)
    papers = GaugeMetricFamily("searchsvc_papers", "Papers in the served generation")
    papers.add_metric([], float(status.get("doc_count", 0)))
    semantic = GaugeMetricFamily(
        "searchsvc_semantic_ranking",
        "Ranking by meaning: 1 for the current state (on; pending while a rebuild embeds; off)",
        labels=["state"],
    )
    for state in SEMANTIC_STATES:
        semantic.add_metric([state], 1 if status.get("semantic_ranking") == state else 0)
    kept = GaugeMetricFamily(
        "searchsvc_changes", "Changes made since the sources (adds and removes) that every rebuild replays"
    )
    kept.add_metric([], float(changes.count(backend)))
    found = [up, info, papers, semantic, kept]
    if "embedded_papers" in status:  # ranking by meaning is on: how far the vectors have got
        embedded = GaugeMetricFamily(
            "searchsvc_embedded_papers", "Papers of the served generation that have their vector (ranking by meaning)"
        )
        embedded.add_metric([], float(status["embedded_papers"]))
        found.append(embedded)
    if "deleted_copies" in status:  # OpenSearch: what the background merge has yet to drop
        deleted = GaugeMetricFamily(
            "searchsvc_deleted_copies",
            "Old copies of rewritten papers the index still holds (scores settle at 0): OpenSearch only",
        )
        deleted.add_metric([], float(status["deleted_copies"]))
        found.append(deleted)
    built = _timestamp(status.get("built_at"))
    if built is not None:
        built_at = GaugeMetricFamily(
            "searchsvc_index_built_timestamp_seconds", "When the served generation was built (Unix time)"
        )
        built_at.add_metric([], built)
        found.append(built_at)
    return found


def _timestamp(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None
