"""The published generation, opened once and swapped when a rebuild publishes a new one."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends.whoosh import segment_arrays
from searchsvc.backends.whoosh.doc_order import DocOrder
from searchsvc.backends.whoosh.facets import FacetIndex
from searchsvc.backends.whoosh.generation_vectors import GenerationVectors
from searchsvc.backends.whoosh.generations import GenerationHold, GenerationStore, PointerStamp
from searchsvc.backends.whoosh.live_statistics import DELETED_FILE, load_deletions, open_searcher
from searchsvc.backends.whoosh.postings import Postings
from searchsvc.backends.whoosh.schema import SCHEMA_VERSION
from searchsvc.backends.whoosh.segment_arrays import SegmentArrays
from searchsvc.backends.whoosh.spelling import generation_vocabulary
from searchsvc.backends.whoosh.suggesting import GenerationCompletions, generation_completions
from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.core.errors import IndexUnavailable
from searchsvc.host import beside


class OpenGeneration:
    """A searcher on one generation and everything derived from it once, for every request.

    Closing happens when the last reference goes away, so a request still using the old
    generation after a swap finishes on it undisturbed.
    """

    def __init__(self, hold: GenerationHold, vector_store: Path, previous: OpenGeneration | None = None) -> None:
        """`previous`: the generation this process served until now, if any, whose segments'
        arrays, vectors and cached posting lists are reused where the two share segments (an
        update's generation shares all but one)."""
        self.path: Path = hold.path
        self.manifest: dict[str, Any] = hold.manifest
        self.stamp: PointerStamp | None = hold.stamp
        built_with = hold.manifest.get("schema_version")
        if built_with != SCHEMA_VERSION:
            hold.release()
            raise IndexUnavailable(
                f"the published index was built with schema version {built_with}, this version of searchsvc "
                f"reads version {SCHEMA_VERSION}: run `searchsvc rebuild`"
            )
        try:
            ix = open_index(hold.path)  # not memory-mapped: whoosh/unmapped.py
            deletions = load_deletions(hold.path / DELETED_FILE)  # an update's (live_statistics.py)
            self.searcher: Searcher = open_searcher(ix.reader(), deletions, fromindex=ix)
        except Exception as exc:  # whoosh raises many kinds on damaged files
            hold.release()
            raise _unreadable(hold.path, exc) from exc
        weakref.finalize(self, _close, self.searcher, hold)
        try:
            reader = self.searcher.reader()
            placed = _placed_segments(hold.path, reader, previous.segments if previous else {})
            self.segments: dict[str, SegmentArrays] = {segment.segment_id: segment for segment, _ in placed}
            self.order = DocOrder.of(reader, [segment for segment, _ in placed])
            self.facets: FacetIndex = FacetIndex(placed, self.order.live, previous.facets if previous else None)
            self.all_docs = self.facets.all_docs
            # "Did you mean" never walks the word list.
            self.vocabulary = generation_vocabulary(hold.path, self.searcher)
            self.postings: Postings = Postings(
                self.searcher,
                previous=previous.postings if previous else None,
                directory=hold.path,
                word_papers=self.vocabulary.papers,
            )
            self._completions: GenerationCompletions | None = None
            placement = [(segment.segment_id, offset, segment.doc_count) for segment, offset in placed]
            self.vectors: GenerationVectors = GenerationVectors(
                hold.path, vector_store, placement, previous.vectors if previous else None
            )
        except IndexUnavailable:
            raise
        except Exception as exc:
            raise _unreadable(hold.path, exc) from exc

    @property
    def completions(self) -> GenerationCompletions:
        """Suggestions as you type, arranged at the first suggestion asked of this generation: at
        the ACL records' size they took most of a re-open (0.9 of 1.1 s), which no search needs."""
        if self._completions is None:
            self._completions = generation_completions(self.vocabulary, self.facets)
        return self._completions


def _placed_segments(
    generation: Path, reader: IndexReader, known: dict[str, SegmentArrays]
) -> list[tuple[SegmentArrays, int]]:
    """Each segment's arrays with its first document number, in the reader's order: `known` ones
    (the previous generation's) reused, the others read."""
    return [
        (known.get(leaf.segment().segment_id()) or segment_arrays.read(generation, leaf), offset)
        for leaf, offset in segment_arrays.leaves(reader)
    ]


def _unreadable(generation: Path, exc: Exception) -> IndexUnavailable:
    """Whoosh raises many kinds on damaged files; the client learns which generation, the log why."""
    return IndexUnavailable(
        f"cannot open index generation {generation.name}: it cannot be read; run `searchsvc rebuild`",
        private=f"{generation}: {type(exc).__name__}: {exc}",
    )


def _close(searcher: Searcher, hold: GenerationHold) -> None:
    searcher.close()
    hold.release()


class GenerationCache:
    """Hands out the published generation, checking the pointer (one stat) on every call.

    A generation published while another is served is opened beside it (`host.beside`, a native
    thread) while the requests go on with the one served: a request waits for it only as long as
    it is given (`get`'s `wait_s`, a share of its budget), so an open slower than that (a fresh
    open at 300,000 papers, a re-open on a loaded machine) costs no request its budget. The
    first open of a process has nothing to serve meanwhile, and is waited for.
    """

    def __init__(self, store: GenerationStore, vector_store: Callable[[], Path]) -> None:
        self._store = store
        self._vector_store = vector_store
        self._lock = threading.Lock()
        self._current: OpenGeneration | None = None
        self._opening: Future[OpenGeneration] | None = None  # the published one, opened beside the current

    def get(self, wait_s: float = 0.0) -> OpenGeneration:
        """The newest generation open here: the published one, or while it is being opened beside
        the served one for longer than `wait_s` seconds, the served one."""
        try:
            stamp = self._store.stamp()
            current = self._current
            if current is not None and stamp == current.stamp:
                return current
            with self._lock:
                if self._current is None:
                    self._current = self._open(None)
                    return self._current
                if self._opening is None and self._store.stamp() != self._current.stamp:
                    self._opening = beside().submit(self._open, self._current)
                opening, current = self._opening, self._current
            if opening is None:
                return current
            return self._when_open(opening, current, wait_s)
        except OSError as exc:  # permissions, a damaged disk: the reason goes to /readyz, not a 500
            raise IndexUnavailable(
                f"cannot read the index ({exc.strerror or type(exc).__name__}): check the index directory's "
                "permissions, or run `searchsvc rebuild`",
                private=f"{self._store.root}: {exc}",
            ) from exc

    def _when_open(self, opening: Future[OpenGeneration], current: OpenGeneration, wait_s: float) -> OpenGeneration:
        """The generation `opening` opens once it is open within `wait_s`, else `current`. An open
        that failed is raised to every request that waited for it, and nothing is served until the
        next open: a generation that cannot be read must not be answered from the one before, unnoticed."""
        try:
            failed = opening.exception(timeout=wait_s)  # cooperative for a gevent pool's future
        except TimeoutError:
            return current
        with self._lock:
            if self._opening is opening:
                self._opening = None
                self._current = None if failed else opening.result()
        return opening.result()

    def _open(self, previous: OpenGeneration | None) -> OpenGeneration:
        vector_store = self._vector_store()  # before the hold: loading the model may fail
        return OpenGeneration(self._store.hold_current(), vector_store, previous)
