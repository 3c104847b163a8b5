"""Bringing the vector store up to date with a collection: embed what is new, drop what is gone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from searchsvc.progress import ProgressFactory
from searchsvc.semantic.encoder import DIMENSIONS, Encoder
from searchsvc.semantic.store import KEY_BYTES, StoredVectors, load, lookup, save

CHUNK = 256  # papers embedded between two progress reports


def embed_new(
    path: Path,
    keys: Sequence[bytes],
    text: Callable[[int], str],
    encoder: Callable[[], Encoder],
    progress: ProgressFactory,
) -> int:
    """Make the store at `path` hold a vector for each of `keys` (and nothing else); return how
    many had to be embedded. `text(i)` is the text of `keys[i]`."""
    stored = load(path)
    wanted = np.array(keys, dtype=f"S{KEY_BYTES}")
    rows, found = lookup(stored, wanted)
    if found.all() and np.array_equal(wanted, stored.keys):
        return 0  # nothing new: readers keep the file they have loaded
    vectors = np.zeros((len(wanted), DIMENSIONS), dtype=np.float16)
    vectors[found] = stored.vectors[rows[found]]
    missing = np.flatnonzero(~found).tolist()
    if missing:
        model = encoder()
        with progress("embedding", len(missing)) as advance:
            for start in range(0, len(missing), CHUNK):
                chunk = missing[start : start + CHUNK]
                vectors[chunk] = model.encode([text(i) for i in chunk])
                advance(len(chunk))
    save(path, StoredVectors(wanted, vectors))
    return len(missing)
