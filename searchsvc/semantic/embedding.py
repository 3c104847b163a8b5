"""Bringing the vector store up to date with a collection: embed what is new, drop what is gone.

Embedding a large collection takes far longer than indexing it (half an hour for the ACL
records on two cores), so the store is checkpointed as it goes: a rebuild killed half-way
leaves what it has embedded, and the next one embeds only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import EncodeChunks, RebuildEncoder
from searchsvc.semantic.store import StoredVectors, load, lookup, save, writing

CHUNK = 64  # papers embedded between two progress reports (and two looks at the checkpoint clock)
# At most this much embedding is lost to a killed rebuild; each checkpoint rewrites the whole
# store (about 18 MB for the ACL records), and every worker reloads it once.
CHECKPOINT_SECONDS = 30.0


def embed_new(
    path: Path,
    keys: np.ndarray,
    text: Callable[[int], str],
    encoder: RebuildEncoder,
    progress: ProgressFactory,
) -> int:
    """Make the store at `path` hold a vector for each of `keys` (an array of content keys,
    and nothing else); return how many had to be embedded. `text(i)` is the text of `keys[i]`;
    `encoder(n)` gives the way to embed n texts (`selection.rebuild_encoder`). Waits for
    another process writing the store (`store.writing`)."""
    with writing(path):
        return _embed_into(path, keys, text, encoder, progress)


def _embed_into(
    path: Path, keys: np.ndarray, text: Callable[[int], str], encoder: RebuildEncoder, progress: ProgressFactory
) -> int:
    stored = load(path)
    rows, found = lookup(stored, keys)
    if found.all() and np.array_equal(keys, stored.keys):
        return 0  # nothing new: readers keep the file they have loaded
    vectors = np.zeros((len(keys), DIMENSIONS), dtype=np.float16)
    vectors[found] = stored.vectors[rows[found]]
    missing = np.flatnonzero(~found).tolist()
    if missing:

        def checkpoint(done: list[int]) -> None:
            save(path, _with_new(stored, keys[done], vectors[done]))

        with encoder(len(missing)) as encode_chunks:
            _embed(missing, vectors, text, encode_chunks, progress, checkpoint)
    save(path, StoredVectors(keys, vectors))
    return len(missing)


def _embed(
    missing: list[int],
    vectors: np.ndarray,
    text: Callable[[int], str],
    encode_chunks: EncodeChunks,
    progress: ProgressFactory,
    checkpoint: Callable[[list[int]], None],
) -> None:
    """Fill the `missing` rows of `vectors`, handing what is done to `checkpoint` every CHECKPOINT_SECONDS.

    Texts are read a chunk at a time, as the encoder asks for them: memory holds a few chunks'
    texts, not a collection's."""
    chunks = [missing[start : start + CHUNK] for start in range(0, len(missing), CHUNK)]
    texts = ([text(i) for i in chunk] for chunk in chunks)
    last, done = time.monotonic(), 0
    with progress("embedding", len(missing)) as advance:
        for chunk, chunk_vectors in zip(chunks, encode_chunks(texts), strict=True):
            vectors[chunk] = chunk_vectors
            advance(len(chunk))
            done += len(chunk)
            if done < len(missing) and time.monotonic() - last >= CHECKPOINT_SECONDS:
                checkpoint(missing[:done])
                last = time.monotonic()


def _with_new(stored: StoredVectors, keys: np.ndarray, vectors: np.ndarray) -> StoredVectors:
    """The store as it was plus what this rebuild has embedded so far, so a kill loses neither.

    A generation's searches use its vectors only once every one of its papers has one
    (`GenerationVectors.get`), so a checkpoint never passes for a finished embedding.
    """
    return StoredVectors(np.concatenate([stored.keys, keys]), np.concatenate([stored.vectors, vectors]))
