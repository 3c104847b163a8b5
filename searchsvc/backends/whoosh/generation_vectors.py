"""A generation's papers by content, written with the index, and their vectors once stored.

The rebuild publishes a generation first and embeds its new papers afterwards, so searches
on a fresh generation rank lexically for as long as the embedding takes, then by meaning
as well: each search checks (two stats) whether the vector store has changed.
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.core.errors import IndexUnavailable
from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.embedding import embed_new
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import RebuildEncoder
from searchsvc.semantic.store import KEY_BYTES, Stamp, content_key, find, paper_text, rows_of, stamp

KEYS_FILE = "content-keys.npy"  # the content key of each document, by document number
Placement = list[tuple[str, int, int]]  # (segment id, first document number, documents) of each segment


def write_content_keys(generation: Path) -> None:
    """Record which text each document's vector is computed from, before the generation is published."""
    ix = open_index(generation)
    try:
        with ix.searcher() as searcher:
            keys = np.zeros(searcher.doc_count_all(), dtype=f"S{KEY_BYTES}")
            for docnum in range(len(keys)):
                keys[docnum] = content_key(text_of(searcher, docnum))
    finally:
        ix.close()
    np.save(generation / KEYS_FILE, keys)


def embed_generation(generation: Path, store: Path, encoder: RebuildEncoder, progress: ProgressFactory) -> int:
    """Store a vector for each paper of `generation`; return how many were not stored yet."""
    ix = open_index(generation)
    try:
        with ix.searcher() as searcher:
            keys = read_content_keys(generation, searcher.doc_count_all())
            return embed_new(store, keys, partial(text_of, searcher), encoder, progress)
    finally:
        ix.close()


def text_of(searcher: Searcher, docnum: int) -> str:
    stored = searcher.stored_fields(docnum)
    return paper_text(stored["title"], stored["abstract"])


def read_content_keys(generation: Path, doc_count: int) -> np.ndarray:
    """The generation's content keys, one per document, or IndexUnavailable if the file is not that."""
    path = generation / KEYS_FILE
    try:
        with path.open("rb") as stream:  # an .npz would keep a file open past np.load(path)
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


class GenerationVectors:
    """The vectors of one generation's papers, by document number, once every one is stored.

    Rows are filled as the store gains them (a rebuild or a write embeds after publishing) and
    never read again once filled: from the previous generation's rows for the segments the two
    share, then from the store's newest parts (`store.find`), so a worker re-opening after an add
    at 300,000 papers reads the add's vectors, not the whole store."""

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
        self._rows: np.ndarray | None = None  # (documents, DIMENSIONS), allocated once some vector is known
        self._found = np.zeros(doc_count, dtype=bool)
        self._base: Stamp | None = None  # the store's base file the found rows were read with
        if previous is not None and previous._rows is not None:  # copied now: no chain of generations kept
            self._rows = np.zeros((doc_count, DIMENSIONS), dtype=np.float16)
            self._take_shared(previous, self._rows)
            self._base = previous._base

    def get(self) -> np.ndarray | None:
        """Vectors by document number, or None while some paper has none yet."""
        self._refresh()
        return self._rows if self._found.all() and self._rows is not None else None

    def embedded(self) -> int:
        """How many of the generation's papers the store has a vector for (all of them once `get` gives vectors)."""
        self._refresh()
        return int(self._found.sum())

    def _refresh(self) -> None:
        """Fill the rows still missing if the store changed since (a rebuild appends as it embeds);
        all of them again if its base was replaced or deleted (a compaction, an operator)."""
        now = stamp(self._store)
        if now == self._stamp:
            return
        with self._lock:
            if now == self._stamp:
                return
            base = now[1:] if now else None
            if base != self._base:
                self._found[:] = False
                self._base = base
            missing = np.flatnonzero(~self._found)
            rows = self._rows
            if now is not None and not len(self._keys):
                rows = np.zeros((0, DIMENSIONS), np.float16)  # nothing to embed: ranked by meaning at once
            if len(missing) and now is not None:
                vectors, found = find(self._store, self._keys[missing])
                if rows is None and len(missing) == len(self._keys):
                    rows = vectors  # every row read at once (a fresh open): no copy of the store
                else:
                    rows = rows if rows is not None else np.zeros((len(self._keys), DIMENSIONS), np.float16)
                    rows[missing[found]] = vectors[found]
                self._found[missing[found]] = True
            self._rows, self._stamp = rows, now

    def _take_shared(self, previous: GenerationVectors, rows: np.ndarray) -> None:
        """Copy the rows of the segments `previous` holds too, where it has them; then, by content,
        those of the papers an update moved (small segments merged into its own, one add in nine)
        from the segments `previous` had and this one has not, rather than from the store's base."""
        assert previous._rows is not None
        before = {segment: start for segment, start, _count in previous._placement}
        for segment, start, count in self._placement:
            if segment in before:
                old = before[segment]
                known = previous._found[old : old + count]
                if known.all():  # a plain copy: a boolean mask over 230 MB took 0.4 s at 300,000 papers
                    rows[start : start + count] = previous._rows[old : old + count]
                else:
                    rows[start : start + count][known] = previous._rows[old : old + count][known]
                self._found[start : start + count] |= known
        now = {segment for segment, _start, _count in self._placement}
        gone = _documents([(start, count) for segment, start, count in previous._placement if segment not in now])
        new = _documents([(start, count) for segment, start, count in self._placement if segment not in before])
        gone = gone[previous._found[gone]]
        if len(gone) and len(new):
            at, there = rows_of(previous._keys[gone], self._keys[new])
            rows[new[there]] = previous._rows[gone[at[there]]]
            self._found[new[there]] = True


def _documents(ranges: list[tuple[int, int]]) -> np.ndarray:
    """The document numbers of (first, count) ranges."""
    return np.concatenate([np.arange(start, start + count) for start, count in ranges] or [np.empty(0, np.int64)])
