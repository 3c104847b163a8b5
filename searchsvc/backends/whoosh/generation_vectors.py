"""A generation's papers by content, written with the index, and their vectors once stored.

The rebuild publishes a generation first and embeds its new papers afterwards, so searches
on a fresh generation rank lexically for as long as the embedding takes, then by meaning
as well: each search checks (one stat) whether the vector store has changed.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path

import numpy as np
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.core.errors import IndexUnavailable
from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.embedding import embed_new
from searchsvc.semantic.selection import RebuildEncoder
from searchsvc.semantic.store import KEY_BYTES, content_key, load, lookup, paper_text

KEYS_FILE = "content-keys.npy"  # the content key of each document, by document number


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
    """The vectors of one generation's papers, by document number, once every one is stored."""

    def __init__(self, generation: Path, store: Path, doc_count: int) -> None:
        self._keys: np.ndarray = read_content_keys(generation, doc_count)
        self._store = store
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._vectors: np.ndarray | None = None
        self._embedded = 0

    def get(self) -> np.ndarray | None:
        """Vectors by document number, or None while some paper has none yet."""
        self._refresh()
        return self._vectors

    def embedded(self) -> int:
        """How many of the generation's papers the store has a vector for (all of them once `get` gives vectors)."""
        self._refresh()
        return self._embedded

    def _refresh(self) -> None:
        """Read the store again if it changed since (a rebuild checkpoints it while it embeds)."""
        try:
            info = os.stat(self._store)
        except FileNotFoundError:
            self._stamp, self._vectors, self._embedded = None, None, 0
            return
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    stored = load(self._store)
                    rows, found = lookup(stored, self._keys)
                    self._vectors = stored.vectors[rows] if found.all() else None
                    self._embedded = int(found.sum())
                    self._stamp = stamp
