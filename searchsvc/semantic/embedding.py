"""Bringing the vector store up to date with a collection: embed what is new, append it.

Embedding a large collection takes far longer than indexing it (half an hour for the ACL
records on two cores), so what is embedded is appended to the store as it goes (a part per
checkpoint): a rebuild killed half-way leaves what it has embedded, and the next one embeds
only the rest. Vectors no paper uses any more stay until the store is compacted, once they or
the parts pile up (`_compaction_due`): an add or remove at 300,000 papers writes no more than
its own vectors (issue #30; each change rewrote the whole 230 MB store before).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import EncodeChunks, RebuildEncoder
from searchsvc.semantic.store import (
    StoredVectors,
    append,
    base_keys,
    find,
    holds,
    part_files,
    parts_keys,
    save,
    writing,
)

CHUNK = 64  # papers embedded between two progress reports (and two looks at the checkpoint clock)
# At most this much embedding is lost to a killed rebuild; each checkpoint rewrites the whole
# store (about 18 MB for the ACL records), and every worker reloads it once.
CHECKPOINT_SECONDS = 30.0
# The store is rewritten with only the collection's vectors when more of its rows than this
# share are unused (removed or changed papers), or it has more parts than MAX_PARTS.
UNUSED_SHARE = 0.25
MAX_PARTS = 32


def embed_new(
    path: Path,
    keys: np.ndarray,
    text: Callable[[int], str],
    encoder: RebuildEncoder,
    progress: ProgressFactory,
) -> int:
    """Make the store at `path` hold a vector for each of `keys` (an array of content keys; the
    vectors of others stay until a compaction); return how many had to be embedded. `text(i)` is the text of `keys[i]`;
    `encoder(n)` gives the way to embed n texts (`selection.rebuild_encoder`). Waits for
    another process writing the store (`store.writing`)."""
    with writing(path):
        return _embed_into(path, keys, text, encoder, progress)


def _embed_into(
    path: Path, keys: np.ndarray, text: Callable[[int], str], encoder: RebuildEncoder, progress: ProgressFactory
) -> int:
    base = base_keys(path)  # None: none yet, or not readable; rewritten below either way
    held = parts_keys(path) if base is None else np.concatenate([base, parts_keys(path)])
    found = holds(held, keys)
    vectors = np.zeros((len(keys), DIMENSIONS), dtype=np.float16)
    missing = np.flatnonzero(~found).tolist()
    appended = 0  # of `missing`, those already in a part

    def checkpoint(done: int) -> None:
        nonlocal appended
        if done > appended:
            rows = missing[appended:done]
            append(path, StoredVectors(keys[rows], vectors[rows]))
            appended = done

    if missing:
        with encoder(len(missing)) as encode_chunks:
            _embed(missing, vectors, text, encode_chunks, progress, checkpoint)
    parts = len(part_files(path)) + (appended < len(missing))
    if base is None or _compaction_due(len(held) + len(missing), len(keys), parts):
        held_rows = np.flatnonzero(found)  # the others are embedded in `vectors` already
        kept, there = find(path, keys[held_rows])
        vectors[held_rows[there]] = kept[there]
        save(path, StoredVectors(keys, vectors))
    else:
        checkpoint(len(missing))
    return len(missing)


def _compaction_due(rows: int, used: int, parts: int) -> bool:
    """Whether to rewrite the store with only the `used` of its `rows`, having `parts` parts."""
    return parts > MAX_PARTS or rows - used > UNUSED_SHARE * rows


def _embed(
    missing: list[int],
    vectors: np.ndarray,
    text: Callable[[int], str],
    encode_chunks: EncodeChunks,
    progress: ProgressFactory,
    checkpoint: Callable[[int], None],
) -> None:
    """Fill the `missing` rows of `vectors`, telling `checkpoint` how many are done every CHECKPOINT_SECONDS.

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
                checkpoint(done)
                last = time.monotonic()
