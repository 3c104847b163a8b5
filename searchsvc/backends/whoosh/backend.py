"""The embedded Whoosh backend: builds generations and answers searches from the published one."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from whoosh import index
from whoosh.query import Query

from searchsvc.backends.whoosh.facets import intersect
from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.backends.whoosh.highlighting import highlight_abstract, highlight_title
from searchsvc.backends.whoosh.indexing import write_index
from searchsvc.backends.whoosh.querying import highlight_terms, parse_query
from searchsvc.backends.whoosh.reading import GenerationCache, OpenGeneration
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION, text_analyzer
from searchsvc.errors import RebuildFailed
from searchsvc.merging import Collection
from searchsvc.search import Hit, SearchRequest, SearchResult
from searchsvc.settings import Settings

ENGINE = "whoosh-reloaded"


class WhooshBackend:
    """Search over index generations in `settings.index_dir`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = GenerationStore(settings.index_dir)
        self._generations = GenerationCache(self.store)
        self._analyzer = text_analyzer()

    # Building -------------------------------------------------------------------

    @contextmanager
    def exclusive_rebuild(self) -> Iterator[None]:
        """Only one rebuild per index directory; a second one fails at once."""
        with self.store.rebuild_lock():
            self.store.prune()  # partial generations left by a rebuild that was killed
            yield

    def build(self, collection: Collection, progress: Callable[[int], None], provenance: dict[str, Any]) -> str:
        """Index `collection` as a new generation, check it, publish it; return its name.

        Nothing is published unless the new generation opens and holds every paper, so a
        failure at any point leaves the previous generation serving untouched.
        """
        generation = self.store.new_generation()
        try:
            write_index(generation, collection.papers.values(), self.settings.build_memory_mb, progress)
            self._check(generation, len(collection.papers))
            self.store.finish(
                generation,
                {
                    **provenance,
                    "engine": f"{ENGINE} {version(ENGINE)}",
                    "schema_version": SCHEMA_VERSION,
                    "doc_count": len(collection.papers),
                    "records": collection.records,
                    "merged": collection.merged,
                    "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                },
            )
        except BaseException:
            self.store.discard(generation)
            raise
        self.store.publish(generation)  # outside the try: once renamed into place it is never discarded
        self.store.prune()
        return generation.name

    def _check(self, generation: Path, expected: int) -> None:
        ix = index.open_dir(str(generation))
        try:
            found = ix.doc_count()
        finally:
            ix.close()
        if found != expected:
            raise RebuildFailed(f"new generation holds {found} papers, expected {expected}; not published")

    # Reading --------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The published generation's manifest, or IndexUnavailable."""
        name, manifest = self.store.published()
        return dict(manifest, generation=name)

    def search(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        gen = self._generations.get()
        query = parse_query(gen.parser, request.q) if request.q else None
        matched = gen.all_docs if query is None else frozenset(gen.searcher.docs_for_query(query))
        filters = gen.facets.filters(request)
        allowed = intersect(matched, filters.values())
        ranked = self._rank(gen, query, matched, allowed, request)
        terms = highlight_terms(query) if query is not None else frozenset()
        return SearchResult(
            request=request,
            total=len(allowed),
            hits=[self._hit(gen, docnum, score, terms) for docnum, score in ranked],
            facets=gen.facets.counts(matched, filters, request, self.settings.facet_limit),
            took_ms=round((time.perf_counter() - started) * 1000, 2),
        )

    def _rank(
        self,
        gen: OpenGeneration,
        query: Query | None,
        matched: frozenset[int],
        allowed: frozenset[int],
        request: SearchRequest,
    ) -> list[tuple[int, float | None]]:
        """The requested page as (docnum, score); relevance ties go to the newer paper, then the id.

        Document numbers are in newest-first order (see indexing.write_index), and Whoosh's
        top-N collector prefers the lower document number among equal scores.
        """
        if query is None or request.sort != "relevance":
            key = gen.oldest_rank.__getitem__ if request.sort == "oldest" else None
            page = heapq.nsmallest(request.end, allowed, key=key)[request.start :]
            return [(docnum, None) for docnum in page]
        narrowed = set(allowed) if len(allowed) < len(matched) else None
        top = gen.searcher.search(query, filter=narrowed, limit=request.end).top_n[request.start :]
        return [(docnum, round(score, 4)) for score, docnum in top]

    def _hit(self, gen: OpenGeneration, docnum: int, score: float | None, terms: frozenset[str]) -> Hit:
        stored = gen.searcher.stored_fields(docnum)
        return Hit(
            id=stored["id"],
            title=stored["title"],
            abstract=stored["abstract"],
            year=stored.get("year"),
            subjects=list(stored.get("subjects") or []),
            authors=list(stored.get("authors") or []),
            score=score,
            highlights={
                "title": highlight_title(stored["title"], terms, self._analyzer),
                "abstract": highlight_abstract(stored["abstract"], terms, self._analyzer),
            },
        )
