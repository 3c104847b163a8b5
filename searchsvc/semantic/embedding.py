"""Bringing the vector store up to date with a collection: embed what is new, drop what is gone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.encoder import DIMENSIONS, Encoder
from searchsvc.semantic.store import StoredVectors, load, lookup, save

CHUNK = 256  # papers embedded between two progress reports


def embed_new(
    path: Path,
    keys: np.ndarray,
    text: Callable[[int], str],
    encoder: Callable[[], Encoder],
    progress: ProgressFactory,
) -> int:
    """Make the store at `path` hold a vector for each of `keys` (an array of content keys,
    and nothing else); return how many had to be embedded. `text(i)` is the text of `keys[i]`."""
    stored = load(path)
    rows, found = lookup(stored, keys)
    if found.all() and np.array_equal(keys, stored.keys):
        return 0  # nothing new: readers keep the file they have loaded
    vectors = np.zeros((len(keys), DIMENSIONS), dtype=np.float16)
    vectors[found] = stored.vectors[rows[found]]
    missing = np.flatnonzero(~found).tolist()
    if missing:
        model = encoder()
        with progress("embedding", len(missing)) as advance:
            for start in range(0, len(missing), CHUNK):
                chunk = missing[start : start + CHUNK]
                vectors[chunk] = model.encode([text(i) for i in chunk])
                advance(len(chunk))
    save(path, StoredVectors(keys, vectors))
    return len(missing)
