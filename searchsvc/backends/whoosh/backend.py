"""The embedded Whoosh backend: builds generations and answers searches from the published one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial, wraps
from importlib.metadata import version
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt
from whoosh import query

from searchsvc.backends.analysis import SEARCH_FIELDS, unstemmed_words
from searchsvc.backends.bm25f import FIELD_WEIGHTS
from searchsvc.backends.ports import FINGERPRINT, JOURNAL_ENTRIES, IndexShape, Purpose
from searchsvc.backends.whoosh import segment_arrays
from searchsvc.backends.whoosh.answer import WhooshAnswer, match
from searchsvc.backends.whoosh.deadline_collectors import top_scored
from searchsvc.backends.whoosh.generation_cache import GenerationCache, OpenGeneration
from searchsvc.backends.whoosh.generation_vectors import embed_generation, write_content_keys
from searchsvc.backends.whoosh.generations import FILES, GenerationStore
from searchsvc.backends.whoosh.highlights import MatchedWords
from searchsvc.backends.whoosh.hits import hits_of
from searchsvc.backends.whoosh.indexing import write_index
from searchsvc.backends.whoosh.journal import FileJournal
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION
from searchsvc.backends.whoosh.spelling import typo_options, write_vocabulary
from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.backends.whoosh.updates import link_previous, write_update
from searchsvc.core import typos
from searchsvc.core.arrival import last_changed
from searchsvc.core.catalogue import Catalogue, Change
from searchsvc.core.deadline import Deadline, budget
from searchsvc.core.errors import IndexUnavailable, PaperNotFound, RebuildFailed, StorageFull, is_storage_full
from searchsvc.core.model import FacetLookup, Hit, SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.query import Node, SimilarTo
from searchsvc.core.ranking import RELATED_KEY_TERMS, related_order, rocchio
from searchsvc.core.suggestions import Suggestion, Typed
from searchsvc.core.tex import reading
from searchsvc.semantic.embedding import Share
from searchsvc.semantic.selection import encoder_status, rebuild_encoder, vector_store
from searchsvc.semantic.shards import Shard
from searchsvc.settings import Settings

ENGINE = "whoosh-reloaded"
# The modules whose code `build` runs to write a generation (operations.fingerprint follows their imports).
_WRITERS = tuple(
    f"searchsvc.backends.whoosh.{name}" for name in ("indexing", "segment_arrays", "generation_vectors", "spelling")
)
# What an update's manifest keeps of the published one's: it holds the same sources' papers, changed.
_BUILT_FROM = ("sources", "built_at", FINGERPRINT)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _in_turn(method: Callable[Concatenate[WhooshBackend, _P], _R]) -> Callable[Concatenate[WhooshBackend, _P], _R]:
    """The method reads the served generation alone between its pauses, waiting its turn within
    the request's limit (and first, outside the turn, for a newly published generation).

    Whoosh reads a file as a seek then a read, so two threads must not read one searcher at
    once. Under gevent a search pauses at its deadline checks (core.deadline) so the worker's
    other connections move, and hands the turn on meanwhile: a pause falls between two reads,
    so the next search reads the same files safely, and a cheap search is not held up for the
    whole limit of a costly one. Without pauses (sync workers, the CLI) the lock is never contended.
    """

    @wraps(method)
    def taking_turn(self: WhooshBackend, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        deadline = self._deadline()
        self._newest_generation(deadline)
        with deadline.turn(self._turn):
            return method(self, *args, **kwargs)

    return taking_turn


class WhooshBackend:
    """Search over index generations in `settings.index_dir`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = GenerationStore(settings.index_dir)
        self._generations = GenerationCache(self.store, lambda: self.vector_store)
        self._turn = threading.Lock()  # gevent's own lock in a gevent worker (it patches threading first)

    @property
    def vector_store(self) -> Path:
        """The running encoder's store file (loading the encoder, when ranking by meaning is on)."""
        return vector_store(self.settings)

    # Building -------------------------------------------------------------------

    @contextmanager
    def exclusive_change(self, kind: str, by: str = "") -> Iterator[None]:
        """One change (a rebuild or a write) per index directory; a second one fails at once."""
        with self.store.rebuild_lock(kind, by):
            self.store.prune()  # partial generations left by a change that was killed
            yield

    def remove_leftovers(self) -> list[str]:
        """Partial generations of killed changes, removed unless a change runs now."""
        return self.store.remove_leftovers()

    def build(
        self,
        collection: Catalogue,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Index `collection` as a new generation, check it, publish it; return its name.

        Nothing is published unless the new generation opens and holds every paper, so a
        failure at any point leaves the previous generation serving untouched.
        """

        def write(generation: Path) -> None:
            written = write_index(generation, collection, self.settings.build_memory_mb, progress)
            segment_arrays.write_missing(generation)
            self._check(generation, len(collection))
            write_content_keys(generation, written.keys)
            write_vocabulary(generation, written.word_counts())

        return self._publish(write, collection, provenance, ready, {})

    def apply(
        self,
        collection: Catalogue,
        change: Change,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """A new generation sharing the published one's segment files (updates.py)."""
        previous = self.store.generations / self.store.published_name()
        manifest = self.store.manifest(previous)
        base: dict[str, Any] = {key: manifest[key] for key in _BUILT_FROM if key in manifest}
        linked: set[str] = set()

        def write(generation: Path) -> None:
            linked.update(link_previous(previous, generation))
            write_update(previous, generation, change, self.settings.build_memory_mb)
            segment_arrays.write_missing(generation)
            progress(len(change.added))
            self._check(generation, len(collection))

        known = {name: digest for name, digest in manifest[FILES].items() if name in linked}
        return self._publish(write, collection, {**base, "last_change": provenance}, ready, known)

    def published(self) -> str | None:
        return self.store.current_name()

    def index_shape(self) -> IndexShape:
        """The schema and the code that writes it; no setting changes what a generation holds
        (`build_memory_mb` changes how its segments are cut, not what they answer)."""
        return IndexShape(settings={}, version=SCHEMA_VERSION, modules=_WRITERS)

    def published_fingerprint(self) -> dict[str, Any] | None:
        """The published manifest's fingerprint, once its files are checked against it and its schema
        is this version's (as before serving it)."""
        try:
            hold = self.store.hold_current()
        except (IndexUnavailable, OSError):  # damaged, unreadable, or none published
            return None
        hold.release()
        found = hold.manifest.get(FINGERPRINT)
        return found if isinstance(found, dict) and hold.manifest["schema_version"] == SCHEMA_VERSION else None

    def journal(self) -> FileJournal:
        return FileJournal(self.settings.index_dir)

    def published_entries(self) -> int | None:
        """The journal entries the published generation's manifest says it includes."""
        name = self.store.current_name()
        if name is None:
            return None
        entries = self.store.manifest(self.store.generations / name).get(JOURNAL_ENTRIES)
        return None if entries is None else int(entries)

    def _publish(
        self,
        write: Callable[[Path], None],
        collection: Catalogue,
        provenance: dict[str, Any],
        ready: Callable[[str], None],
        known_digests: dict[str, str],
    ) -> str:
        generation = self.store.new_generation()
        try:
            write(generation)
            now = datetime.now(UTC).isoformat(timespec="seconds")
            self.store.finish(
                generation,
                {
                    "built_at": now,
                    **provenance,
                    "changed_at": now,
                    "engine": f"{ENGINE} {version(ENGINE)}",
                    "schema_version": SCHEMA_VERSION,
                    "doc_count": len(collection),
                    "records": collection.records,
                    "merged": collection.merged,
                    JOURNAL_ENTRIES: collection.journal_entries,
                },
                known_digests,
            )
            ready(generation.name)
        except OSError as exc:  # a full disk, a lost mount: say that nothing changed, and where (privately)
            self.store.discard(generation)
            where = f"cannot write the new generation {generation}: {exc.strerror or exc}"
            if is_storage_full(exc):
                raise StorageFull(where) from exc
            raise RebuildFailed(
                f"cannot write the new generation: {exc.strerror or exc}; the published index is unchanged",
                private=where,
            ) from exc
        except BaseException:
            self.store.discard(generation)
            raise
        self.store.publish(generation)  # outside the try: once renamed into place it is never discarded
        self.store.prune()
        return generation.name

    def embed(self, progress: ProgressFactory, shard: Shard | None = None) -> int:
        """Embed the published generation's papers that the vector store lacks (of `shard` alone, if
        given: the shards append to the store side by side); return how many.

        Runs after publishing, so a rebuild's new papers are searchable at once and ranked
        by meaning too once this finishes (GenerationVectors notices the store change).
        """
        if not self.settings.semantic_ranking:
            return 0
        # Held only while embedding: this process's own GenerationCache would keep the
        # generation from being pruned by the next rebuild.
        hold = self.store.hold_current()
        try:
            encoder = partial(rebuild_encoder, self.settings)
            return embed_generation(hold.path, self.vector_store, encoder, progress, Share(shard=shard))
        finally:
            hold.release()

    def _check(self, generation: Path, expected: int) -> None:
        ix = open_index(generation)
        try:
            found = ix.doc_count()
        finally:
            ix.close()
        if found != expected:
            raise RebuildFailed(f"new generation holds {found} papers, expected {expected}; not published")

    # Reading --------------------------------------------------------------------

    @_in_turn
    def status(self) -> dict[str, Any]:
        """The generation this process serves: its manifest, the papers its index holds, and whether
        they are ranked by meaning too ("pending" while the rebuild is still embedding them)."""
        gen = self._generations.get()
        semantic, embedded = "off", {}
        if self.settings.semantic_ranking:
            encoder = encoder_status(self.settings)  # loaded before the first search; a missing model: 503
            semantic = "on" if gen.vectors.get() is not None else "pending"
            embedded = {**encoder, "embedded_papers": gen.vectors.embedded()}
        doc_count = gen.searcher.doc_count()
        return dict(gen.manifest, generation=gen.path.name, doc_count=doc_count, semantic_ranking=semantic, **embedded)

    def last_change(self) -> tuple[str, str]:
        gen = self._generations.get()
        return gen.path.name, last_changed(gen.manifest)

    @contextmanager
    def answer(
        self, request: SearchRequest, tree: Node | None, deadline: Deadline, purpose: Purpose
    ) -> Iterator[WhooshAnswer]:
        """The matches of `tree` on the served generation, scored, for the search recipe to ask
        further (the turn is held meanwhile: see `_in_turn`); with typo tolerance, its words no
        paper holds also match their near words in the generation's vocabulary (core.typos).
        Facets and highlights are computed only when asked, so `purpose` changes nothing here.
        With candidates found by meaning, a fresh open's vectors are waited for before the turn, as
        related papers wait (`similar`): the scan needs them whole."""
        self._newest_generation(deadline)
        if self.settings.semantic_ranking and self.settings.meaning_candidates and tree is not None:
            with deadline.spending("waiting for the vectors of a fresh open"):
                self._generations.get().vectors.whole(wait_s=deadline.remaining_ms() / 2000)
        with deadline.turn(self._turn):
            gen = self._generations.get()
            searched = tree
            if self.settings.typo_tolerance and not request.exact:
                searched = typos.respelled(tree, unstemmed_words, partial(typo_options, gen.vocabulary), deadline)
            yield WhooshAnswer(match(gen, request, searched, deadline, self.settings), request, tree, self.settings)

    @_in_turn
    def facet_values(
        self, name: str, prefix: str, request: SearchRequest, tree: Node | None, limit: int
    ) -> FacetLookup:
        found = match(self._generations.get(), request, tree, self._deadline(), self.settings)
        values, truncated = found.gen.facets.lookup(name, prefix, found.matched, found.filters, request, limit)
        found.deadline.check()
        return FacetLookup(name=name, prefix=prefix, values=values, truncated=truncated)

    @_in_turn
    def suggest(self, start: Typed, narrowing: SearchRequest, tree: Node | None, limit: int) -> list[Suggestion]:
        """Completions from arrays built when the generation was opened: unnarrowed, a lookup is two
        binary searches and one partition; narrowed, the search's match and a count per candidate
        (suggesting.py), each checking the deadline."""
        deadline = self._deadline()
        gen = self._generations.get()
        deadline.check()
        if tree is None and not narrowing.filtered:
            found = gen.completions.suggest(start, limit)
        else:
            among = match(gen, narrowing, tree, deadline, self.settings).all_words
            found = gen.completions.suggest_among(start, among, gen.postings, gen.facets, limit, deadline.check)
        deadline.check()
        return found

    @_in_turn
    def paper(self, paper_id: str) -> Paper:
        gen = self._generations.get()
        return Paper.from_stored(gen.searcher.stored_fields(_docnum(gen, paper_id)))

    def similar(self, to: SimilarTo, request: SearchRequest, limit: int) -> list[Hit]:
        """The papers nearest in meaning to `to` among the whole match (the generation's vectors,
        scanned with numpy); while they are pending, ranking by meaning is off, or a fresh open is
        still reading them past half the time left, those sharing the liked papers' most
        distinctive words (more-like-this). Those words are highlighted."""
        deadline = self._deadline()
        self._newest_generation(deadline)
        if self.settings.semantic_ranking:  # waited for before the turn, as a new generation is
            with deadline.spending("waiting for the vectors of a fresh open"):
                self._generations.get().vectors.whole(wait_s=deadline.remaining_ms() / 2000)
        with deadline.turn(self._turn):
            return self._similar(to, request, limit, deadline)

    def _similar(self, to: SimilarTo, request: SearchRequest, limit: int, deadline: Deadline) -> list[Hit]:
        gen = self._generations.get()
        like = [_docnum(gen, paper_id) for paper_id in to.like]
        unlike = [_docnum(gen, paper_id) for paper_id in to.unlike]
        texts = [gen.searcher.stored_fields(docnum) for docnum in like]
        key_terms = gen.searcher.key_terms_from_text(
            "abstract",
            " ".join(f"{reading(stored['title'])} {reading(stored['abstract'])}" for stored in texts),
            numterms=RELATED_KEY_TERMS,
        )
        deadline.check()
        if to.rest is None and not request.filtered:
            allowed = gen.all_docs
        else:
            allowed = match(gen, request, to.rest, deadline, self.settings).allowed
        left_out = np.union1d(np.flatnonzero(~allowed), np.array([*like, *unlike], dtype=np.int64))
        vectors = gen.vectors.whole(wait_s=0) if self.settings.semantic_ranking else None
        if vectors is not None:
            target = rocchio(np.stack([vectors[d] for d in like]), np.array([vectors[d] for d in unlike]))
            nearest = related_order(vectors, target, limit, exclude=left_out)
        else:
            nearest = self._more_like_this(gen, left_out, key_terms, limit, deadline)
        words = MatchedWords(stemmed=frozenset(term for term, _ in key_terms))
        return hits_of(gen, [(other, round(score, 4)) for other, score in nearest], words, deadline)

    def _more_like_this(
        self,
        gen: OpenGeneration,
        left_out: npt.NDArray[np.int64],
        key_terms: list[tuple[str, float]],
        limit: int,
        deadline: Deadline,
    ) -> list[tuple[int, float]]:
        like = query.Or(
            [
                query.Term(field, term, boost=weight * FIELD_WEIGHTS[field])
                for term, weight in key_terms
                for field in SEARCH_FIELDS
            ]
        )
        best = top_scored(gen.searcher, like, limit, deadline, leave_out=set(left_out.tolist()))
        return [(d, s) for s, d in best]

    def _deadline(self) -> Deadline:
        """The request's one deadline (core.deadline.request_budget), shared by every call it makes."""
        return budget(self.settings.search_time_limit_ms)

    def _newest_generation(self, deadline: Deadline) -> None:
        """Before the turn: wait for a newly published generation being opened, for up to half of
        what is left of the request's budget (the rest is the search's), so that a change is
        answered from as soon as this process has it open, and the turn is held by no waiter."""
        with deadline.spending("waiting for a new generation to open"):
            self._generations.get(wait_s=deadline.remaining_ms() / 2000)


def _docnum(gen: OpenGeneration, paper_id: str) -> int:
    """The live document with this id (an update leaves the replaced one behind, deleted)."""
    docnum = next((d for d in gen.searcher.document_numbers(id=paper_id) if gen.all_docs[d]), None)
    if docnum is None:
        raise PaperNotFound(f"no paper with id {paper_id!r}", {"id": paper_id})
    return docnum
