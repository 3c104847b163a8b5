"""The OpenSearch backend: the Backend interface on a cluster, behind one alias.

A rebuild loads a new index `<alias>-<timestamp>`, checks it, and moves the alias to it in
one `_aliases` call, so searches see the old index or the new one, never a partial one.
Searches read the alias, so every web node serves whatever the last rebuild published.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html import escape, unescape
from importlib.metadata import version
from typing import Any, TypeVar

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import streaming_bulk

from searchsvc.backends.opensearch.cluster import (
    PartialAnswer,
    check_response,
    cluster_errors,
    connect,
    failure_reason,
)
from searchsvc.backends.opensearch.mapping import AUTHOR_VALUE, EXACT, FOLDED, TEXT_FIELDS, index_body
from searchsvc.backends.opensearch.querying import MATCH_ALL, WORDS, Dsl, all_of, filters, translate, year_range
from searchsvc.backends.opensearch.spelling import respell
from searchsvc.backends.whoosh.highlighting import SNIPPET_CHARS, opening  # the same snippet on both backends
from searchsvc.core.errors import IndexUnavailable, PaperNotFound, RebuildFailed, RebuildInProgress
from searchsvc.core.facet_order import display_order, listing
from searchsvc.ingest.merging import Collection
from searchsvc.core.paper import Paper
from searchsvc.core.text import fold
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.query import Node, check_term_count, parse, required_words, words
from searchsvc.core.model import FACETS, FacetLookup, FacetValue, Hit, SearchRequest, SearchResult
from searchsvc.settings import Settings

T = TypeVar("T")
ENGINE = "opensearch"
_ELLIPSIS = "…"
_SOURCE = ["id", "title", "abstract", "year", "subjects", "authors"]
_FACET_FIELDS = {"year": "year", "subject": "subjects", "author": AUTHOR_VALUE}
_FOLDED_FIELDS = {"subject": f"subjects.{FOLDED}", "author": f"authors.{FOLDED}"}
# Values fetched per facet before the display order is applied: the cluster orders ties by
# raw bytes, the service case-insensitively, so a few more than shown must come back.
_FACET_HEADROOM = 10
_BULK_CHUNK = 500
_REPLICAS_WAIT = 120  # seconds, for the new index's replicas before the alias moves to it
_MARK = re.compile(r"</?mark>")
_MARK_TAG = re.compile(r"(</?mark>)")
# Scores from the whole index's word statistics, not each shard's: with per-shard statistics
# the same paper scores differently depending on its shard, and small indexes rank at random.
_SEARCH_TYPE = "dfs_query_then_fetch"
_WHOLE_ANSWERS = {"allow_partial_search_results": "false"}  # a search missing shards is an error
_RETRIES = 2
_RETRY_PAUSE = 0.1  # seconds, times the attempt
_LIKE_TERMS = 12  # as the Whoosh backend's RELATED_KEY_TERMS


class OpenSearchBackend:
    """Search over the index the alias `settings.opensearch_index` points at."""

    def __init__(self, settings: Settings, client: OpenSearch | None = None) -> None:
        self.settings = settings
        self.alias = settings.opensearch_index
        self.client = client or connect(settings)
        self._where = ", ".join(settings.opensearch_url)
        self._generation = re.compile(rf"{re.escape(self.alias)}-\d{{8}}t\d{{6}}-\d{{6}}")

    # Building -------------------------------------------------------------------

    @contextmanager
    def exclusive_rebuild(self) -> Iterator[None]:
        """One rebuild per alias at a time, across machines: a lock index only one can create."""
        lock = f"{self.alias}-rebuild-lock"
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "started": _now()}
        with cluster_errors(self._where):
            if not self._take_lock(lock, holder):
                raise RebuildInProgress(self._lock_message(lock))
        try:
            with cluster_errors(self._where):
                self._prune(keep=None)  # indices left by a rebuild that was killed
            yield
        finally:
            with cluster_errors(self._where):
                self.client.indices.delete(index=lock, ignore_unavailable=True)

    def _take_lock(self, lock: str, holder: dict[str, Any]) -> bool:
        body = {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"_meta": holder}}
        for _attempt in range(2):
            try:
                self.client.indices.create(index=lock, body=body)
                return True
            except os_errors.RequestError as exc:
                if exc.error != "resource_already_exists_exception":
                    raise
            if not self._lock_is_stale(lock):
                return False
            self.client.indices.delete(index=lock, ignore_unavailable=True)
        return False

    def _lock_holder(self, lock: str) -> dict[str, Any]:
        found: dict[str, Any] = self.client.indices.get_mapping(index=lock, ignore=404)
        meta = found.get(lock, {}).get("mappings", {}).get("_meta", {})
        return meta if isinstance(meta, dict) else {}

    def _lock_is_stale(self, lock: str) -> bool:
        """A lock taken on this machine by a process that no longer runs (a killed rebuild)."""
        holder = self._lock_holder(lock)
        if holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder.get("pid", 0)), 0)
        except ProcessLookupError:
            return True
        except (PermissionError, ValueError):
            return False
        return False

    def _lock_message(self, lock: str) -> str:
        holder = self._lock_holder(lock)
        who = f" (process {holder.get('pid')} on {holder.get('host')}, since {holder.get('started')})" if holder else ""
        return (
            f"another rebuild of alias {self.alias!r} is running{who}; if it died on another machine, "
            f"delete the index {lock!r}"
        )

    def embed(self, progress: ProgressFactory) -> int:
        """Nothing to do: on OpenSearch ranking is lexical only (docs/scaling.md)."""
        return 0

    def build(self, collection: Collection, progress: Callable[[int], None], provenance: dict[str, Any]) -> str:
        """Load `collection` into a new index, check it, move the alias to it; return its name.

        The alias moves only once the new index holds every paper and its replicas are
        allocated; any failure deletes the new index and leaves the alias where it was.
        """
        name = f"{self.alias}-{datetime.now(UTC).strftime('%Y%m%dt%H%M%S-%f')}"
        meta = {
            **provenance,
            "engine": f"{ENGINE} (opensearch-py {version('opensearch-py')})",
            "doc_count": len(collection.papers),
            "records": collection.records,
            "merged": collection.merged,
        }
        with cluster_errors(self._where):
            self.client.indices.create(index=name, body=index_body(self.settings.opensearch_shards, meta))
            try:
                self._load(name, collection.papers.values(), progress)
                self._replicate(name)
                self._check(name, len(collection.papers))
                built_at = datetime.now(UTC).isoformat(timespec="seconds")
                self.client.indices.put_mapping(index=name, body={"_meta": {**meta, "built_at": built_at}})
                self._publish(name)
            except BaseException:
                self.client.indices.delete(index=name, ignore_unavailable=True)
                raise
            self._prune(keep=name)
        return name

    def _load(self, name: str, papers: Any, progress: Callable[[int], None]) -> None:
        actions = (
            {
                "_index": name,
                "_id": paper.id,
                "_source": {
                    "id": paper.id,
                    "title": paper.title,
                    "abstract": paper.abstract,
                    "year": paper.year,
                    "subjects": paper.subjects,
                    "authors": paper.authors,
                },
            }
            for paper in papers
        )
        for ok, item in streaming_bulk(self.client, actions, chunk_size=_BULK_CHUNK, raise_on_error=False):
            if not ok:
                failed = next(iter(item.values()))
                raise RebuildFailed(
                    f"the cluster refused paper {failed.get('_id')!r}: {failure_reason(failed.get('error'))}; "
                    "the published index is unchanged"
                )
            progress(1)

    def _replicate(self, name: str) -> None:
        """Turn on refreshes and replicas (off while loading, for speed), then wait for them."""
        settings = {"index": {"number_of_replicas": self.settings.opensearch_replicas, "refresh_interval": None}}
        self.client.indices.put_settings(index=name, body=settings)
        self.client.indices.refresh(index=name)
        health = self.client.cluster.health(
            index=name,
            params={"wait_for_status": "green", "timeout": f"{_REPLICAS_WAIT}s"},
            request_timeout=_REPLICAS_WAIT + 10,
        )
        if health.get("timed_out"):
            raise RebuildFailed(
                f"new index {name} did not get its {self.settings.opensearch_replicas} replica(s) within "
                f"{_REPLICAS_WAIT} s (status {health.get('status')}; a cluster needs more nodes than replicas); "
                "not published"
            )

    def _check(self, name: str, expected: int) -> None:
        found = self.client.count(index=name)["count"]
        if found != expected:
            raise RebuildFailed(f"new index {name} holds {found} papers, expected {expected}; not published")

    def _publish(self, name: str) -> None:
        """Move the alias in one atomic call: no moment without an index, none with two."""
        actions: list[dict[str, Any]] = [{"add": {"index": name, "alias": self.alias}}]
        actions += [{"remove": {"index": old, "alias": self.alias}} for old in self._aliased()]
        self.client.indices.update_aliases(body={"actions": actions})

    def _aliased(self) -> list[str]:
        """The indices the alias points at (none before the first rebuild)."""
        found = self.client.indices.get_alias(name=self.alias, ignore=404)  # 404: no alias, not an error
        return [] if found.get("status") == 404 else sorted(found)

    def _prune(self, keep: str | None) -> None:
        """Delete this alias's generations that it does not point at (and not `keep`)."""
        serving = set(self._aliased()) | {keep}
        existing = self.client.indices.get(index=f"{self.alias}-*", ignore_unavailable=True, allow_no_indices=True)
        for index in existing:
            if self._generation.fullmatch(index) and index not in serving:
                self.client.indices.delete(index=index, ignore_unavailable=True)

    # Reading --------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        with cluster_errors(self._where):
            index = self._serving()
            mapping = self.client.indices.get_mapping(index=index)[index]["mappings"]
            count = self.client.count(index=self.alias)["count"]
        meta = dict(mapping.get("_meta", {}))
        meta.pop("mapping_version", None)
        return dict(meta, generation=index, doc_count=count, semantic_ranking="off")

    def _serving(self) -> str:
        indices = self._aliased()
        if not indices:
            raise IndexUnavailable(
                f"no index is published under alias {self.alias!r} on the OpenSearch cluster: run `searchsvc rebuild`",
                private=self._where,
            )
        return indices[0]

    def search(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        plan = self._plan(request)
        body: Dsl = {
            "query": plan.scored,
            "post_filter": plan.post_filter,
            "aggs": {**self._facet_aggs(plan, request), **self._selection_aggs(request)},
            "track_total_hits": True,
            **self._timeout(),
        }
        if plan.required is not None:
            body["aggs"]["all_words"] = plan.all_words_agg()
        checks = _spelling_checks(plan.tree)
        if checks:
            body["aggs"]["spelling"] = {"global": {}, "aggs": {"known": _known_words(checks)}}
            body["suggest"] = _suggesters(checks)
        tiered = plan.required is not None and request.sort == "relevance"
        if tiered:
            body["size"] = 0  # the page comes from one search per tier, once their sizes are known
        else:
            body.update(_page(request.sort, request.start, request.per_page))
        response = self._search(body)
        total = response["hits"]["total"]["value"]
        all_words = response["aggregations"]["all_words"]["doc_count"] if plan.required is not None else total
        docs = (
            self._tiered_docs(plan, request.start, request.end, all_words, total, highlight=True)
            if tiered
            else response["hits"]["hits"]
        )
        hits = [self._hit(doc) for doc in docs]
        aggs = response["aggregations"]
        facets = {name: self._listing(name, aggs, request) for name in FACETS}
        suggestion = self._suggestion(request, checks, response, all_words) if checks else None
        return SearchResult(
            request=request,
            total=total,
            hits=hits,
            facets=facets,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            suggestion=suggestion,
        )

    def export(self, request: SearchRequest, limit: int) -> list[Paper]:
        plan = self._plan(request)
        if plan.required is not None and request.sort == "relevance":
            counts = self._search(
                {
                    "query": plan.scored,
                    "post_filter": plan.post_filter,
                    "size": 0,
                    "track_total_hits": True,
                    "aggs": {"all_words": plan.all_words_agg()},
                    **self._timeout(),
                }
            )
            total = counts["hits"]["total"]["value"]
            all_words = counts["aggregations"]["all_words"]["doc_count"]
            docs = self._tiered_docs(plan, 0, limit, all_words, total, highlight=False)
        else:
            body = {"query": plan.scored, "post_filter": plan.post_filter, **self._timeout()}
            body.update(_page(request.sort, 0, limit, highlight=False))
            docs = self._search(body)["hits"]["hits"]
        return [_paper_of(doc["_source"]) for doc in docs]

    def facet_values(self, name: str, prefix: str, request: SearchRequest, limit: int) -> FacetLookup:
        """Values of `name` with a word starting with `prefix`, counted as the search's facets are."""
        plan = self._plan(request)
        others = all_of([f for other, f in plan.filters.items() if other != name])
        wanted = fold(prefix)
        if name == "year":
            values: Dsl = {"terms": {"field": "year", "size": self.settings.year_facet_limit}}
        else:
            values = {
                "terms": {
                    "field": _FOLDED_FIELDS[name],
                    "include": rf"(.*[^a-z0-9])?{_regexp_literal(wanted)}.*" if wanted else ".*",
                    "size": limit + 1 + _FACET_HEADROOM,
                    "order": [{"_count": "desc"}, {"_key": "asc"}],
                },
                "aggs": {"shown": {"terms": {"field": _FACET_FIELDS[name], "size": 1}}},
            }
        body = {
            "query": plan.scored,
            "size": 0,
            "aggs": {"lookup": {"filter": others, "aggs": {"values": values}}, **self._selection_aggs(request)},
            **self._timeout(),
        }
        aggs = self._search(body)["aggregations"]
        counts: dict[str | int, int] = {}
        for bucket in aggs["lookup"]["values"]["buckets"]:
            value = bucket["key"] if name == "year" else bucket["shown"]["buckets"][0]["key"]
            counts[value] = counts.get(value, 0) + bucket["doc_count"]
        marked, _listed, _unknown = self._selection(name, aggs, request)
        candidates = {value for value in {*counts, *marked} if _has_word_starting(str(value), wanted)}
        shown = sorted(candidates, key=display_order(counts, by_value=name == "year"))
        found = [FacetValue(value, counts.get(value, 0), value in marked) for value in shown[:limit]]
        return FacetLookup(name=name, prefix=prefix, values=found, truncated=len(shown) > limit)

    def paper(self, paper_id: str) -> Paper:
        with cluster_errors(self._where):
            try:
                found = self.client.get(index=self.alias, id=paper_id, _source_includes=_SOURCE)
            except os_errors.NotFoundError as exc:
                if exc.error == "index_not_found_exception":
                    raise
                raise PaperNotFound(f"no paper with id {paper_id!r}", {"id": paper_id}) from None
        return _paper_of(found["_source"])

    def related(self, paper_id: str, limit: int) -> list[Hit]:
        """Papers sharing the paper's most distinctive words (more_like_this)."""
        self.paper(paper_id)  # PaperNotFound before asking the cluster for likes of nothing
        with cluster_errors(self._where):
            index = self._serving()
        like = {
            "more_like_this": {
                "fields": list(TEXT_FIELDS),
                "like": [{"_index": index, "_id": paper_id}],
                "min_term_freq": 1,
                "min_doc_freq": 1,
                "max_query_terms": _LIKE_TERMS,
            }
        }
        body = {"query": like, "size": limit, "_source": _SOURCE, "highlight": _HIGHLIGHT, **self._timeout()}
        return [self._hit(doc) for doc in self._search(body)["hits"]["hits"]]

    # Parts of a search ----------------------------------------------------------

    def _plan(self, request: SearchRequest) -> _Plan:
        tree = parse(request.q)
        check_term_count(tree, self.settings.max_query_terms)
        required = required_words(tree)
        return _Plan(
            tree=tree,
            scored=MATCH_ALL if tree is None else translate(tree),
            required=None if required is None else translate(required, "all"),
            filters=filters(request),
        )

    def _search(self, body: Dsl) -> dict[str, Any]:
        return self._asked(
            lambda: check_response(
                self.client.search(index=self.alias, body=body, search_type=_SEARCH_TYPE, params=_WHOLE_ANSWERS)
            )
        )

    def _asked(self, ask: Callable[[], T]) -> T:
        """`ask()`'s answer; asked again when part of the index did not answer (a node died
        mid-search: the shard copies that remain answer the next time)."""
        for attempt in range(_RETRIES + 1):
            try:
                with cluster_errors(self._where):
                    return ask()
            except PartialAnswer:
                if attempt == _RETRIES:
                    raise
                time.sleep(_RETRY_PAUSE * (attempt + 1))
        raise AssertionError("unreachable")

    def _timeout(self) -> Dsl:
        return {"timeout": f"{self.settings.search_time_limit_ms}ms"}

    def _tiered_docs(self, plan: _Plan, start: int, end: int, all_words: int, total: int, highlight: bool) -> list[Dsl]:
        """The page [start, end) of papers matching all words first, then the others.

        Each tier is its own ranked search; the page takes what it needs from each.
        """
        assert plan.required is not None
        tiers = [
            {"bool": {"must": [plan.scored], "filter": [plan.required]}},
            {"bool": {"must": [plan.scored], "must_not": [plan.required]}},
        ]
        searches: list[Dsl] = []
        offset = 0
        for query, size in zip(tiers, (all_words, total - all_words), strict=True):
            low, high = max(start - offset, 0), min(end - offset, size)
            offset += size
            if low < high:
                body = {"query": query, "post_filter": plan.post_filter, **self._timeout()}
                searches.append(body | _page("relevance", low, high - low, highlight))
        if not searches:
            return []
        lines: list[Dsl] = []
        for body in searches:
            lines += [{"search_type": _SEARCH_TYPE, "allow_partial_search_results": False}, body]

        def ask() -> list[Dsl]:
            responses = self.client.msearch(index=self.alias, body=lines)["responses"]
            return [doc for response in responses for doc in check_response(response)["hits"]["hits"]]

        return self._asked(ask)

    def _facet_aggs(self, plan: _Plan, request: SearchRequest) -> Dsl:
        """Multi-select: each facet counted under the query and every filter but its own."""
        aggs = {}
        for name in FACETS:
            others = [f for other, f in plan.filters.items() if other != name]
            aggs[f"facet_{name}"] = {"filter": all_of(others), "aggs": {"values": self._values_agg(name)}}
        return aggs

    def _values_agg(self, name: str) -> Dsl:
        if name == "year":
            return {"terms": {"field": "year", "size": self.settings.year_facet_limit, "order": {"_key": "desc"}}}
        size = self.settings.facet_limit + _FACET_HEADROOM
        return {"terms": {"field": _FACET_FIELDS[name], "size": size, "order": [{"_count": "desc"}, {"_key": "asc"}]}}

    def _selection_aggs(self, request: SearchRequest) -> Dsl:
        """The index's own spelling of the selected values, over every paper (a global aggregation)."""
        selected: Dsl = {}
        if request.year_from is not None or request.year_to is not None:
            selected["year"] = {
                "filter": year_range(request.year_from, request.year_to),
                "aggs": {"values": {"terms": {"field": "year", "size": self.settings.year_facet_limit}}},
            }
        for name, wanted in (("subject", request.subject), ("author", request.author)):
            if wanted:
                selected[name] = {
                    "filter": {"terms": {_FOLDED_FIELDS[name]: list(wanted)}},
                    "aggs": {"values": {"terms": {"field": _FACET_FIELDS[name], "size": 10 * len(wanted)}}},
                }
        return {"selected": {"global": {}, "aggs": selected}} if selected else {}

    def _selection(
        self, name: str, aggs: Dsl, request: SearchRequest
    ) -> tuple[set[str | int], set[str | int], list[str]]:
        """(values shown as selected, values listed even at count 0, selected values the index lacks)."""
        known = [b["key"] for b in aggs.get("selected", {}).get(name, {}).get("values", {}).get("buckets", [])]
        if name == "year":
            return set(known), {year for year in known if year in (request.year_from, request.year_to)}, []
        wanted = request.subject if name == "subject" else request.author
        folded_known = {fold(str(value)) for value in known}
        marked = {value for value in known if fold(str(value)) in {fold(w) for w in wanted}}
        return marked, marked, [value for value in wanted if fold(value) not in folded_known]

    def _listing(self, name: str, aggs: Dsl, request: SearchRequest) -> list[FacetValue]:
        buckets = aggs[f"facet_{name}"]["values"]["buckets"]
        counts: dict[str | int, int] = {bucket["key"]: bucket["doc_count"] for bucket in buckets}
        marked, listed, unknown = self._selection(name, aggs, request)
        limit = self.settings.facet_limits()[name]
        return listing(counts, marked, listed, unknown, limit, by_value=name == "year")

    def _suggestion(
        self, request: SearchRequest, checks: list[tuple[int, int, str]], response: Dsl, all_words: int
    ) -> str | None:
        """A respelling of words no paper contains, if it finds more papers ("did you mean")."""
        known = response["aggregations"]["spelling"]["known"]["buckets"]
        respelled = {}
        for i, (start, end, word) in enumerate(checks):
            if known[str(i)]["doc_count"]:
                continue
            options = [
                option
                for field in TEXT_FIELDS
                for entry in response.get("suggest", {}).get(f"{field}_{i}", [])
                for option in entry["options"]
            ]
            better = respell(word, options)
            if better is not None:
                respelled[start, end] = better
        if not respelled:
            return None
        corrected = request.q
        for (start, end), better in sorted(respelled.items(), reverse=True):
            corrected = corrected[:start] + better + corrected[end:]
        plan = self._plan(replace(request, q=corrected))
        wanted = all_of([*plan.filters.values(), plan.required or plan.scored])
        with cluster_errors(self._where):
            alternative = self.client.count(
                index=self.alias, body={"query": {"bool": {"must": [plan.scored], "filter": [wanted]}}}
            )
        return corrected if alternative["count"] > all_words else None

    def _hit(self, doc: Dsl) -> Hit:
        source = doc["_source"]
        marked = doc.get("highlight", {})
        title, abstract = source["title"], source.get("abstract") or ""
        score = doc.get("_score")
        return Hit(
            id=source["id"],
            title=title,
            abstract=abstract,
            year=source.get("year"),
            subjects=list(source.get("subjects") or []),
            authors=list(source.get("authors") or []),
            score=None if score is None else round(score, 4),
            highlights={
                "title": _best(marked, "title") or escape(title, quote=True),
                "abstract": _snippet(_best(marked, "abstract"), abstract),
            },
        )


@dataclass(frozen=True)
class _Plan:
    """A request translated: the scored query, the all-words tier, and the facet filters."""

    tree: Node | None
    scored: Dsl
    required: Dsl | None
    filters: dict[str, Dsl | None]

    @property
    def post_filter(self) -> Dsl:
        """Every facet's filter: narrows the hits, not the facet counts."""
        return all_of(list(self.filters.values()))

    def all_words_agg(self) -> Dsl:
        """Counts the papers of the all-words tier that the filters let through."""
        assert self.required is not None
        return {"filter": all_of([*self.filters.values(), self.required])}


_BY_YEAR = {"order": "desc", "missing": "_last"}
_SORTS = {
    # Ties go to the newer paper, then the id, as on the Whoosh backend.
    "relevance": [{"_score": "desc"}, {"year": _BY_YEAR}, {"id": "asc"}],
    "newest": [{"year": _BY_YEAR}, {"id": "asc"}],
    "oldest": [{"year": {"order": "asc", "missing": "_last"}}, {"id": "asc"}],
}
_HIGHLIGHT = {
    "pre_tags": ["<mark>"],
    "post_tags": ["</mark>"],
    "encoder": "html",  # the cluster escapes the text around the marks
    "fields": {
        **{name: {"number_of_fragments": 0} for name in ("title", f"title.{EXACT}")},
        **{name: {"fragment_size": 120, "number_of_fragments": 2} for name in ("abstract", f"abstract.{EXACT}")},
    },
}


def _page(sort: str, start: int, size: int, highlight: bool = True) -> Dsl:
    """The part of a search body that asks for one page of hits, in `sort` order."""
    body: Dsl = {"from": start, "size": size, "sort": _SORTS[sort], "_source": _SOURCE}
    if highlight:
        body["highlight"] = _HIGHLIGHT
    return body


def _best(marked: Dsl, field: str) -> str:
    """The field's highlight from whichever analysis (stemmed words, exact phrases) marked more."""
    candidates = [" … ".join(map(_escaped, marked.get(name, []))) for name in (field, f"{field}.{EXACT}")]
    return max(candidates, key=lambda text: text.count("<mark>"))


def _escaped(fragment: str) -> str:
    """The cluster's highlight re-escaped the way every other text of the service is.

    Its HTML encoder writes `/` as `&#x2F;`; only the marks it added are markup (a `<mark>`
    in the stored text arrives escaped), so the text between them is decoded and escaped again.
    """
    parts = _MARK_TAG.split(fragment)
    return "".join(part if _MARK_TAG.fullmatch(part) else escape(unescape(part), quote=True) for part in parts)


def _snippet(highlighted: str, abstract: str) -> str:
    """Marked fragments with an ellipsis where words were cut off; else the escaped opening."""
    if not highlighted:
        return escape(opening(abstract, SNIPPET_CHARS), quote=True)
    plain = unescape(_MARK.sub("", highlighted))
    head = plain.split(" … ")[0]
    tail = plain.split(" … ")[-1]
    before = "" if abstract.startswith(head) else _ELLIPSIS
    after = "" if abstract.endswith(tail) else _ELLIPSIS
    return before + highlighted + after


def _paper_of(source: Dsl) -> Paper:
    return Paper(
        id=source["id"],
        title=source["title"],
        abstract=source.get("abstract") or "",
        year=source.get("year"),
        subjects=list(source.get("subjects") or []),
        authors=list(source.get("authors") or []),
    )


def _spelling_checks(tree: Node | None) -> list[tuple[int, int, str]]:
    """(start, end, word) of each plain query word worth respelling if no paper has it."""
    checks = []
    for word in words(tree):
        if word.field not in (None, *TEXT_FIELDS):
            continue
        tokens = [match.group() for match in WORDS.finditer(fold(word.text))]
        if len(tokens) == 1 and len(tokens[0]) >= 3 and not tokens[0].isdigit():
            checks.append((word.start, word.end, tokens[0]))
    return checks


def _known_words(checks: list[tuple[int, int, str]]) -> Dsl:
    exact = [f"{field}.{EXACT}" for field in TEXT_FIELDS]
    return {
        "filters": {
            "filters": {
                str(i): {"multi_match": {"query": word, "fields": exact}} for i, (_s, _e, word) in enumerate(checks)
            }
        }
    }


def _suggesters(checks: list[tuple[int, int, str]]) -> Dsl:
    return {
        f"{field}_{i}": {
            "text": word,
            "term": {
                "field": f"{field}.{EXACT}",
                "suggest_mode": "missing",
                "prefix_length": 1,
                "min_word_length": 3,
                "max_edits": 2,
                "size": 10,
            },
        }
        for i, (_start, _end, word) in enumerate(checks)
        for field in TEXT_FIELDS
    }


def _regexp_literal(text: str) -> str:
    """`text` as a literal in Lucene's regular expression syntax."""
    return "".join(f"\\{char}" if not char.isalnum() else char for char in text)


_WORD_START = re.compile(r"(?<!\w)\w")


def _has_word_starting(value: str, prefix: str) -> bool:
    folded = fold(value)
    return any(folded[m.start() :].startswith(prefix) for m in _WORD_START.finditer(folded))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
