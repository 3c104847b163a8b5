"""The client for the configured cluster, and its failures as the service's own errors.

Every call to the cluster goes through `cluster_errors`, so an unreachable cluster is a 503
(IndexUnavailable), a query the cluster refuses is a 400 and a write it refuses for want of disk
a 507 (StorageFull), never a 500 with a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import BulkIndexError

from searchsvc.core.errors import IndexUnavailable, QuerySyntaxError, QueryTooBroad, SearchTimedOut, StorageFull
from searchsvc.settings import Settings


class QueryRejected(QuerySyntaxError):
    """A query the search cluster refuses to run (OpenSearch backend); the cluster's reason is given."""

    code = "query_rejected"
    label = "query rejected"


class PartialAnswer(IndexUnavailable):
    """Part of the index did not answer: a node died or left mid-search. Asking again reaches
    the shard copies that remain, so searches retry this one (and only this) error."""


# Seconds the client waits for one answer beyond the search's own time limit (the cluster
# stops the search at that limit and says so), before calling the node unreachable.
_GRACE_SECONDS = 5


def connect(settings: Settings) -> OpenSearch:
    """A client spreading requests over every configured node, retrying another on failure."""
    auth = (settings.opensearch_user, settings.opensearch_password) if settings.opensearch_user else None
    return OpenSearch(
        hosts=list(settings.opensearch_url),
        http_auth=auth,
        verify_certs=settings.opensearch_verify_certs,
        ssl_show_warn=settings.opensearch_verify_certs,
        ca_certs=settings.opensearch_ca_certs or None,
        timeout=settings.search_time_limit_ms / 1000 + _GRACE_SECONDS,
        max_retries=len(settings.opensearch_url) + 1,
        retry_on_timeout=False,  # a search slow on one node is as slow on another
        retry_on_status=(502, 503, 504),
    )


def where(settings: Settings) -> str:
    """The cluster as messages name it: its nodes' addresses."""
    return ", ".join(settings.opensearch_url)


@contextmanager
def cluster_errors(where: str) -> Iterator[None]:
    """Translate the client's exceptions; `where` names the cluster in messages."""
    try:
        yield
    except os_errors.ConnectionTimeout as exc:
        raise SearchTimedOut(
            "the OpenSearch cluster did not answer in time; try again, or narrow the search",
            private=f"{where}: {exc.error}",
        ) from None
    except os_errors.ConnectionError as exc:
        raise IndexUnavailable("cannot reach the OpenSearch cluster", private=f"{where}: {exc.error}") from None
    except (os_errors.AuthenticationException, os_errors.AuthorizationException) as exc:
        raise IndexUnavailable(
            "the OpenSearch cluster refused the service's credentials", private=f"{where}: {reason(exc)}"
        ) from None
    except os_errors.NotFoundError as exc:
        if exc.error == "index_not_found_exception":
            raise IndexUnavailable(
                "no index is published on the OpenSearch cluster: run `searchsvc rebuild`", private=where
            ) from None
        raise
    except os_errors.RequestError as exc:
        raise rejected(reason(exc)) from None
    except BulkIndexError as exc:  # `helpers.bulk`: the items the cluster refused
        why = "; ".join(_item_reason(item) for item in exc.errors[:3])
        if disk_full(why):
            raise StorageFull(f"{where}: {why}") from None
        raise IndexUnavailable("the OpenSearch cluster refused a write; try again", private=f"{where}: {why}") from None
    except os_errors.TransportError as exc:  # 429 too busy, 5xx
        why = reason(exc)
        if disk_full(why):
            raise StorageFull(f"{where}: {why}") from None
        if _too_many_clauses(why):  # the cluster answers 500 for a query it will not expand
            raise rejected(why) from None
        kind = PartialAnswer if exc.status_code in (500, 503) else IndexUnavailable
        raise kind("the OpenSearch cluster could not answer; try again", private=f"{where}: {why}") from None


def rejected(why: str) -> QuerySyntaxError:
    """The error for a query the cluster refused; a wildcard over too many words is 'too broad'."""
    if _too_many_clauses(why):
        message = "a wildcard in the query matches more different words than the cluster allows: type more letters"
        return QueryTooBroad(f"{QueryTooBroad.label}: {message}", {"q": [message]})
    message = f"the search cluster refused this query: {why}"
    return QueryRejected(f"{QueryRejected.label}: {message}", {"q": [message]})


def _item_reason(item: dict[str, Any]) -> str:
    """Why the cluster refused one item of a bulk request (`{"index": {"error": …}}`)."""
    refused: dict[str, Any] = next(iter(item.values()), {})
    return failure_reason(refused.get("error"))


def disk_full(why: str) -> bool:
    """Whether the cluster refused a write because a node's disk passed its flood-stage watermark:
    it then blocks writes to the index (`read_only_allow_delete`) until space is freed."""
    return "cluster_block_exception" in why and ("flood-stage" in why or "read-only-allow-delete" in why)


def _too_many_clauses(why: str) -> bool:
    return "too_many_clauses" in why or "maxClauseCount" in why


def reason(exc: os_errors.TransportError) -> str:
    """The cluster's own explanation, from the deepest cause it reports."""
    info = exc.info if isinstance(exc.info, dict) else {}
    return failure_reason(info.get("error", {})) or str(exc.error)


def failure_reason(error: Any) -> str:
    """`type: reason` of the root cause of an error object in a cluster response."""
    if not isinstance(error, dict):
        return str(error or "")
    causes = error.get("root_cause") or []
    deepest = error.get("caused_by")
    if deepest:
        return failure_reason(deepest)
    if causes and causes[0] is not error:
        return failure_reason(causes[0])
    return ": ".join(str(part) for part in (error.get("type"), error.get("reason")) if part)


def check_response(response: dict[str, Any]) -> dict[str, Any]:
    """A search response, or the error its shard failures or time-out amount to.

    A search with shards that failed, or that stopped at the time limit, answered for part
    of the index only: that is an error, not a smaller result.
    """
    if "error" in response:  # one search of an msearch: refused (4xx), or the cluster failed (5xx)
        why = failure_reason(response["error"])
        if response.get("status", 400) >= 500 and not _too_many_clauses(why):
            raise PartialAnswer("the OpenSearch cluster could not answer; try again", private=why)
        raise rejected(why)
    if response.get("timed_out"):
        raise SearchTimedOut(
            "the search took longer than the time limit; add words, a phrase or a filter to narrow it",
            {"limit": "search_time_limit_ms"},
        )
    shards = response.get("_shards", {})
    if shards.get("failed"):
        failures = shards.get("failures") or [{}]
        why = failure_reason(failures[0].get("reason"))
        if _too_many_clauses(why):
            raise rejected(why)
        raise PartialAnswer(f"part of the index did not answer ({shards['failed']} of {shards['total']} shards): {why}")
    return response
