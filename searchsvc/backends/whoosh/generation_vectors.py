"""A generation's papers by content, written with the index, and their vectors once stored.

The rebuild publishes a generation first and embeds its new papers afterwards, so searches
on a fresh generation rank lexically for as long as the embedding takes, then by meaning
as well: each search checks (two stats) whether the vector store has changed.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from functools import partial
from pathlib import Path

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.core.errors import IndexUnavailable
from searchsvc.core.progress import ProgressFactory
from searchsvc.host import AST_LOCK, beside
from searchsvc.semantic.embedding import Share, embed_new
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import RebuildEncoder
from searchsvc.semantic.store import (
    KEY_BYTES,
    RowsOnDemand,
    Stamp,
    content_key,
    find,
    find_runs,
    paper_text,
    rows_of,
    rows_on_demand,
    stamp,
)

log = logging.getLogger(__name__)
KEYS_FILE = "content-keys.npy"  # the content key of each document, by document number
Placement = list[tuple[str, int, int]]  # (segment id, first document number, documents) of each segment


def write_content_keys(generation: Path, keys: bytes) -> None:
    """Record which text each document's vector is computed from (`keys`: each document's content key
    in document order, as `paper_key` gives them), before the generation is published."""
    np.save(generation / KEYS_FILE, np.frombuffer(keys, dtype=f"S{KEY_BYTES}"))


def paper_key(title: str, abstract: str) -> bytes:
    """The content key of a paper whose stored title and abstract are these (`text_of` reads them)."""
    return content_key(paper_text(title, abstract))


def embed_generation(
    generation: Path, store: Path, encoder: RebuildEncoder, progress: ProgressFactory, share: Share
) -> int:
    """Store a vector for each paper of `generation` that `share` gives this process; return how many
    were not stored yet."""
    ix = open_index(generation)
    try:
        with ix.searcher() as searcher:
            keys = read_content_keys(generation, searcher.doc_count_all())
            return embed_new(store, keys, partial(text_of, searcher), encoder, progress, share)
    finally:
        ix.close()


def text_of(searcher: Searcher, docnum: int) -> str:
    stored = searcher.stored_fields(docnum)
    return paper_text(stored["title"], stored["abstract"])


def read_content_keys(generation: Path, doc_count: int) -> np.ndarray:
    """The generation's content keys, one per document, or IndexUnavailable if the file is not that."""
    path = generation / KEYS_FILE
    try:
        with path.open("rb") as stream, AST_LOCK:  # an .npz would keep a file open past np.load(path)
            keys = np.load(stream, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:  # not an .npy file, or cut short
        raise _damaged_keys(path, f"cannot be read: {exc}") from None
    if not isinstance(keys, np.ndarray) or keys.dtype != np.dtype(f"S{KEY_BYTES}") or keys.shape != (doc_count,):
        found = f"{getattr(keys, 'dtype', type(keys).__name__)} {getattr(keys, 'shape', '')}"
        raise _damaged_keys(path, f"expected {doc_count} keys of S{KEY_BYTES}, found {found}")
    return keys


def _damaged_keys(path: Path, detail: str) -> IndexUnavailable:
    return IndexUnavailable(
        f"cannot open index generation {path.parent.name}: its content keys are damaged; run `searchsvc rebuild`",
        private=f"{path}: {detail}",
    )


class SegmentRows:
    """A generation's vectors by document number, held as one array per segment: a re-open takes
    the arrays of the segments it shares with the generation before as they are, where one array
    for the whole generation was a copy of 230 MB (1 s) at 300,000 papers on every change."""

    def __init__(self, starts: list[int], blocks: list[np.ndarray]) -> None:
        self._starts = np.asarray(starts, dtype=np.int64)
        self._blocks = blocks
        self._count = sum(len(block) for block in blocks)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, docs: int | slice | np.ndarray) -> np.ndarray:
        """The rows of `docs` (a document number, a slice, an array of them); a slice within one
        segment is a view, as it would be of one array."""
        if isinstance(docs, slice):
            start, stop, step = docs.indices(self._count)
            segment = int(np.searchsorted(self._starts, start, side="right")) - 1
            first = int(self._starts[segment]) if segment >= 0 else 0
            if step == 1 and segment >= 0 and stop - first <= len(self._blocks[segment]):
                return self._blocks[segment][start - first : stop - first]
            docs = np.arange(start, stop, step)
        wanted = np.asarray(docs, dtype=np.int64)
        which = np.searchsorted(self._starts, wanted, side="right") - 1
        rows = np.empty((*wanted.shape, DIMENSIONS), dtype=np.float16)
        for segment in np.unique(which).tolist():
            chosen = which == segment
            rows[chosen] = self._blocks[segment][wanted[chosen] - self._starts[segment]]
        return rows


class GenerationVectors:
    """The vectors of one generation's papers, by document number, once every one is stored.

    Rows are filled as the store gains them (a rebuild or a write embeds after publishing) and
    never read again once filled: a segment's rows are taken from the previous generation where
    the two share it (the same array, never written again once complete), then from the store's
    newest parts (`store.find`), so a worker re-opening after an add at 300,000 papers reads the
    add's vectors, not the whole store, and copies none."""

    def __init__(
        self, generation: Path, store: Path, placement: Placement, previous: GenerationVectors | None = None
    ) -> None:
        """`placement`: (segment id, first document, documents) of each segment."""
        doc_count = sum(count for _, _, count in placement)
        self._keys: np.ndarray = read_content_keys(generation, doc_count)
        self._store = store
        self._placement = placement
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._blocks: list[np.ndarray | None] = [None] * len(placement)  # per segment, once some row is known
        self._found = np.zeros(doc_count, dtype=bool)
        self._base: Stamp | None = None  # the store's base file the found rows were read with
        # After a fresh open, until every row is read beside: rows read as searches ask.
        self._on_demand: RowsOnDemand | None = None
        self._loading: Future[None] | None = None
        if previous is not None:
            self._take_shared(previous)
            self._base = previous._base

    def get(self) -> SegmentRows | RowsOnDemand | None:
        """Vectors by document number, or None while some paper has none yet; after a fresh open,
        until every row is read beside, rows read from the store as they are asked for."""
        self._refresh()
        if self._on_demand is not None:
            return self._on_demand
        if self._stamp is None or not self._found.all():
            return None
        return self._segment_rows()

    def whole(self, wait_s: float) -> SegmentRows | None:
        """`get()` once every row is in memory (related papers scan them all), waiting at most
        `wait_s` seconds for the rows a fresh open reads beside; None if they are not there by then."""
        rows = self.get()
        if self._loading is not None and not isinstance(rows, SegmentRows):
            try:
                self._loading.exception(timeout=wait_s)  # cooperative for a gevent pool's future
            except TimeoutError:
                return None
            rows = self.get()
        return rows if isinstance(rows, SegmentRows) else None

    def _segment_rows(self) -> SegmentRows:
        """The blocks as rows by document number (a block never filled: no rows)."""
        empty = np.zeros((0, DIMENSIONS), np.float16)
        return SegmentRows(
            [start for _, start, _ in self._placement], [empty if b is None else b for b in self._blocks]
        )

    def embedded(self) -> int:
        """How many of the generation's papers the store has a vector for (all of them once `get` gives vectors)."""
        self._refresh()
        return int(self._found.sum())

    def _refresh(self) -> None:
        """Fill the rows still missing if the store changed since (a rebuild appends as it embeds);
        all of them again if its base was replaced or deleted (a compaction, an operator)."""
        if self._on_demand is not None:  # every row is there, read as asked, until the whole is read
            return
        now = stamp(self._store)
        if now == self._stamp:
            return
        with self._lock:
            if now == self._stamp or self._on_demand is not None:
                return
            base = now[1:] if now else None
            if base != self._base:
                self._found[:] = False
                self._base = base
            missing = np.flatnonzero(~self._found)
            if len(missing) and len(missing) == len(self._keys) and now is not None:  # all at once: a fresh open
                self._on_demand = rows_on_demand(self._store, self._keys)
                if self._on_demand is None:  # a store that cannot be read by rows (find_runs says why)
                    self._take_runs()
                else:
                    self._found[:] = True
                    self._loading = beside().submit(self._read_whole, now)
            elif len(missing) and now is not None:
                vectors, found = find(self._store, self._keys[missing])
                self._write(missing[found], vectors[found])
                self._found[missing[found]] = True
            self._stamp = now

    def _take_runs(self) -> None:
        """Every row from the store, read whole (each segment's rows a view of the base where it
        holds them in order: a fresh open of a compacted store copies nothing)."""
        runs = find_runs(self._store, self._keys, [(start, count) for _, start, count in self._placement])
        self._blocks = [vectors for vectors, _ in runs]
        for (_, start, count), (_, found) in zip(self._placement, runs, strict=True):
            self._found[start : start + count] = found

    def _read_whole(self, seen: Stamp) -> None:
        """Beside the searches reading rows on demand: every row, then served from memory. The
        store is then as `seen` (its stamp when this began), so a change since is read next."""
        try:
            with self._lock:
                self._take_runs()
        except Exception:  # the rows on demand go on serving; said once, not raised into nothing
            log.exception("cannot read the vectors of %s whole; reading them row by row", self._store)
            return
        self._stamp = seen
        self._on_demand = None  # its files close with the last search reading from them

    def _write(self, docs: np.ndarray, vectors: np.ndarray) -> None:
        """Put `vectors` in the rows of `docs`, in blocks of this generation's own (a shared block is complete)."""
        for segment, (_, start, count) in enumerate(self._placement):
            inside = (docs >= start) & (docs < start + count)
            if not inside.any():
                continue
            block = self._blocks[segment]
            if block is None:
                block = self._blocks[segment] = np.zeros((count, DIMENSIONS), dtype=np.float16)
            block[docs[inside] - start] = vectors[inside]

    def _take_shared(self, previous: GenerationVectors) -> None:
        """Take the blocks of the segments `previous` holds too (complete ones as they are, others
        copied); then, by content, the rows of the papers an update moved (small segments merged
        into its own, one add in nine) from the segments `previous` had and this one has not,
        rather than from the store's base."""
        before = {segment: (index, start) for index, (segment, start, _count) in enumerate(previous._placement)}
        for index, (segment, start, count) in enumerate(self._placement):
            if segment not in before or previous._blocks[before[segment][0]] is None:
                continue
            shared, old = previous._blocks[before[segment][0]], before[segment][1]
            known = previous._found[old : old + count]
            assert shared is not None
            self._blocks[index] = shared if known.all() else shared.copy()
            self._found[start : start + count] = known
        now = {segment for segment, _start, _count in self._placement}
        gone = _documents([(start, count) for segment, start, count in previous._placement if segment not in now])
        new = _documents([(start, count) for segment, start, count in self._placement if segment not in before])
        gone = gone[previous._found[gone]]
        if len(gone) and len(new):
            at, there = rows_of(previous._keys[gone], self._keys[new])
            rows = previous._segment_rows() if previous._on_demand is None else previous._on_demand
            self._write(new[there], rows[gone[at[there]]])  # each found
            self._found[new[there]] = True


def _documents(ranges: list[tuple[int, int]]) -> np.ndarray:
    """The document numbers of (first, count) ranges."""
    return np.concatenate([np.arange(start, start + count) for start, count in ranges] or [np.empty(0, np.int64)])
