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
from whoosh.filedb.filestore import FileStorage
from whoosh.searching import Searcher

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.embedding import embed_new
from searchsvc.semantic.encoder import shared_encoder
from searchsvc.semantic.store import KEY_BYTES, aligned, content_key, load, paper_text

KEYS_FILE = "content-keys.npy"  # the content key of each document, by document number


def write_content_keys(generation: Path) -> None:
    """Record which text each document's vector is computed from, before the generation is published."""
    ix = FileStorage(str(generation), supports_mmap=False).open_index()
    try:
        with ix.searcher() as searcher:
            keys = np.zeros(searcher.doc_count_all(), dtype=f"S{KEY_BYTES}")
            for docnum in range(len(keys)):
                keys[docnum] = content_key(text_of(searcher, docnum))
    finally:
        ix.close()
    np.save(generation / KEYS_FILE, keys)


def embed_generation(generation: Path, store: Path, progress: ProgressFactory) -> int:
    """Store a vector for each paper of `generation`; return how many were not stored yet."""
    keys = np.load(generation / KEYS_FILE)
    ix = FileStorage(str(generation), supports_mmap=False).open_index()
    try:
        with ix.searcher() as searcher:
            return embed_new(store, keys, partial(text_of, searcher), shared_encoder, progress)
    finally:
        ix.close()


def text_of(searcher: Searcher, docnum: int) -> str:
    stored = searcher.stored_fields(docnum)
    return paper_text(stored["title"], stored["abstract"])


class GenerationVectors:
    """The vectors of one generation's papers, by document number, once every one is stored."""

    def __init__(self, generation: Path, store: Path) -> None:
        self._keys: np.ndarray = np.load(generation / KEYS_FILE)
        self._store = store
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._vectors: np.ndarray | None = None

    def get(self) -> np.ndarray | None:
        """Vectors by document number, or None while some paper has none yet."""
        try:
            info = os.stat(self._store)
        except FileNotFoundError:
            return None
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    self._vectors = aligned(load(self._store), self._keys)
                    self._stamp = stamp
        return self._vectors
