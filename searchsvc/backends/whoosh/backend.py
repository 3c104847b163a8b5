"""The embedded Whoosh backend: builds generations and answers searches from the published one."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property
from importlib.metadata import version
from pathlib import Path
from typing import Any

from whoosh import index, query

from searchsvc.backends.whoosh.bounded import top_scored
from searchsvc.backends.whoosh.facets import intersect
from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.backends.whoosh.highlighting import MatchedWords, highlight_abstract, highlight_title
from searchsvc.backends.whoosh.indexing import write_index
from searchsvc.backends.whoosh.querying import CompiledQuery, QueryCompiler, matched_words
from searchsvc.backends.whoosh.reading import GenerationCache, OpenGeneration
from searchsvc.backends.whoosh.schema import FIELD_BOOSTS, SCHEMA_VERSION, SEARCH_FIELDS
from searchsvc.backends.whoosh.spelling import correct_spelling
from searchsvc.deadline import Deadline
from searchsvc.errors import PaperNotFound, RebuildFailed
from searchsvc.merging import Collection
from searchsvc.papers import Paper
from searchsvc.query import Node, check_term_count, parse, words
from searchsvc.search import FacetLookup, Hit, SearchRequest, SearchResult
from searchsvc.settings import Settings

ENGINE = "whoosh-reloaded"
RELATED_KEY_TERMS = 12  # a paper's most distinctive words that "related papers" look for


class WhooshBackend:
    """Search over index generations in `settings.index_dir`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = GenerationStore(settings.index_dir)
        self._generations = GenerationCache(self.store)

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
        except OSError as exc:  # a full disk, a lost mount: say where, and that nothing changed
            self.store.discard(generation)
            raise RebuildFailed(
                f"cannot write the new generation {generation}: {exc.strerror or exc}; the published index is unchanged"
            ) from exc
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
        """The generation this process serves: its manifest and the papers its index holds."""
        gen = self._generations.get()
        return dict(gen.manifest, generation=gen.path.name, doc_count=gen.searcher.doc_count())

    def search(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        found = self._match(request, self._deadline())
        ranked = self._rank(found, request)
        found.deadline.check()
        words = matched_words(found.compiled.scored) if found.compiled else MatchedWords()
        hits = [self._hit(found.gen, docnum, score, words) for docnum, score in ranked]
        facets = found.gen.facets.counts(found.matched, found.filters, request, self.settings.facet_limits())
        found.deadline.check()
        suggestion = self._suggestion(found, request)
        return SearchResult(
            request=request,
            total=len(found.allowed),
            hits=hits,
            facets=facets,
            took_ms=round((time.perf_counter() - started) * 1000, 2),
            suggestion=suggestion,
        )

    def export(self, request: SearchRequest, limit: int) -> list[Paper]:
        """The first `limit` papers of the whole ordered result set."""
        found = self._match(request, self._deadline())
        ranked = self._rank(found, replace(request, page=1, per_page=limit))
        found.deadline.check()
        return [_paper(found.gen.searcher.stored_fields(docnum)) for docnum, _ in ranked]

    def facet_values(self, name: str, prefix: str, request: SearchRequest, limit: int) -> FacetLookup:
        found = self._match(request, self._deadline())
        values, truncated = found.gen.facets.lookup(name, prefix, found.matched, found.filters, request, limit)
        return FacetLookup(name=name, prefix=prefix, values=values, truncated=truncated)

    def paper(self, paper_id: str) -> Paper:
        gen = self._generations.get()
        return _paper(gen.searcher.stored_fields(_docnum(gen, paper_id)))

    def related(self, paper_id: str, limit: int) -> list[Hit]:
        """Papers sharing the paper's most distinctive words (more-like-this)."""
        gen = self._generations.get()
        docnum = _docnum(gen, paper_id)
        stored = gen.searcher.stored_fields(docnum)
        key_terms = gen.searcher.key_terms_from_text(
            "abstract", f"{stored['title']} {stored['abstract']}", numterms=RELATED_KEY_TERMS
        )
        like = query.Or(
            [
                query.Term(field, term, boost=weight * FIELD_BOOSTS[field])
                for term, weight in key_terms
                for field in SEARCH_FIELDS
            ]
        )
        top = gen.searcher.search(like, limit=limit, mask={docnum}).top_n
        words = MatchedWords(stemmed=frozenset(term for term, _ in key_terms))
        return [self._hit(gen, other, round(score, 4), words) for score, other in top]

    def _deadline(self) -> Deadline:
        return Deadline(self.settings.search_time_limit_ms)

    def _match(self, request: SearchRequest, deadline: Deadline) -> _Found:
        """The papers the query matches, and those the filters let through."""
        gen = self._generations.get()
        tree = parse(request.q)
        check_term_count(tree, self.settings.max_query_terms)
        compiled = (
            None
            if tree is None
            else QueryCompiler(gen.searcher.reader(), self.settings.max_wildcard_terms).compile(tree)
        )
        matched = (
            gen.all_docs
            if compiled is None
            else frozenset(deadline.bounded(gen.searcher.docs_for_query(compiled.scored)))
        )
        filters = gen.facets.filters(request)
        deadline.check()
        return _Found(gen, tree, compiled, matched, filters, intersect(matched, filters.values()), deadline)

    def _rank(self, found: _Found, request: SearchRequest) -> list[tuple[int, float | None]]:
        """The requested page as (docnum, score).

        By relevance, papers matching all words of a group come first, then those matching
        some; within each tier the score decides, and ties go to the newer paper, then the
        id: document numbers are in newest-first order (see indexing.write_index), and
        Whoosh's top-N collector prefers the lower document number among equal scores.
        """
        gen, compiled = found.gen, found.compiled
        if compiled is None or request.sort != "relevance":
            key = gen.oldest_rank.__getitem__ if request.sort == "oldest" else None
            page = heapq.nsmallest(request.end, found.allowed, key=key)[request.start :]
            return [(docnum, None) for docnum in page]
        tiers = [found.allowed] if compiled.required is None else [found.all_words, found.allowed - found.all_words]
        ranked: list[tuple[int, float | None]] = []
        offset = 0
        for tier in tiers:
            low, high = max(request.start - offset, 0), min(request.end - offset, len(tier))
            offset += len(tier)
            if low < high:
                narrowed = None if tier is found.matched else set(tier)
                top = top_scored(gen.searcher, compiled.scored, high, found.deadline, filter=narrowed)[low:]
                ranked.extend((docnum, round(score, 4)) for score, docnum in top)
        return ranked

    def _suggestion(self, found: _Found, request: SearchRequest) -> str | None:
        """A respelling of words no paper contains, if it finds more papers ("did you mean")."""
        reader = found.gen.searcher.reader()
        respelled = {}
        for word in words(found.tree):
            if word.field in (None, *SEARCH_FIELDS):
                better = correct_spelling(reader, word.text)
                if better is not None:
                    respelled[word.start, word.end] = better
        if not respelled:
            return None
        corrected = request.q
        for (start, end), better in sorted(respelled.items(), reverse=True):
            corrected = corrected[:start] + better + corrected[end:]
        alternative = self._match(replace(request, q=corrected), found.deadline)
        return corrected if len(alternative.all_words) > len(found.all_words) else None

    def _hit(self, gen: OpenGeneration, docnum: int, score: float | None, words: MatchedWords) -> Hit:
        paper = _paper(gen.searcher.stored_fields(docnum))
        return Hit(
            id=paper.id,
            title=paper.title,
            abstract=paper.abstract,
            year=paper.year,
            subjects=paper.subjects,
            authors=paper.authors,
            score=score,
            highlights={
                "title": highlight_title(paper.title, words),
                "abstract": highlight_abstract(paper.abstract, words),
            },
        )


@dataclass(frozen=True)
class _Found:
    gen: OpenGeneration
    tree: Node | None
    compiled: CompiledQuery | None
    matched: frozenset[int]  # what the query matches
    filters: dict[str, frozenset[int] | None]
    allowed: frozenset[int]  # ... and the filters let through
    deadline: Deadline  # of the request this match is for

    @cached_property
    def all_words(self) -> frozenset[int]:
        """Allowed papers matching all words of a group (every allowed paper for other queries)."""
        if self.compiled is None or self.compiled.required is None:
            return self.allowed
        return self.allowed & frozenset(self.gen.searcher.docs_for_query(self.compiled.required))


def _docnum(gen: OpenGeneration, paper_id: str) -> int:
    docnum = gen.searcher.document_number(id=paper_id)
    if docnum is None:
        raise PaperNotFound(f"no paper with id {paper_id!r}", {"id": paper_id})
    return docnum


def _paper(stored: dict[str, Any]) -> Paper:
    return Paper(
        id=stored["id"],
        title=stored["title"],
        abstract=stored["abstract"],
        year=stored.get("year"),
        subjects=list(stored.get("subjects") or []),
        authors=list(stored.get("authors") or []),
    )
