"""Bringing the vector store up to date with a collection: embed what is new, append it.

Embedding a large collection takes far longer than indexing it (half an hour for the ACL
records on two cores), so what is embedded is appended to the store as it goes (a part per
checkpoint): a rebuild killed half-way leaves what it has embedded, and the next one embeds
only the rest. Vectors no paper uses any more stay until the store is compacted, once they or
the parts pile up (`_compaction_due`): an add or remove at 300,000 papers writes no more than
its own vectors (issue #30; each change rewrote the whole 230 MB store before).

Several processes can share one collection's embedding (`Share.shard`, `searchsvc embed --shard
I/N`): each appends its own parts, holding the store only while it appends one (issue #34).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from searchsvc.core.progress import ProgressFactory
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import EncodeChunks, RebuildEncoder
from searchsvc.semantic.shards import Shard
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
# At most this much embedding is lost to a killed rebuild or shard; each checkpoint appends a
# part, which every worker reads once.
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
    share: Share | None = None,
) -> int:
    """Make the store at `path` hold a vector for each of `keys` (an array of content keys; the
    vectors of others stay until a compaction) that `share` gives this process; return how many
    had to be embedded. `text(i)` is the text of `keys[i]`; `encoder(n)` gives the way to embed n
    texts (`selection.rebuild_encoder`).

    The whole collection (no shard) is embedded holding the store (`store.writing`) throughout:
    a second such process waits, then finds everything stored. A shard holds it only to read
    what is stored and to append each checkpoint, so the shards of one store embed side by side;
    the first whole run after them compacts their parts."""
    share = share or Share()
    if share.shard is None:
        with writing(path):
            return _embed_into(path, keys, text, encoder, progress, share)
    return _embed_into(path, keys, text, encoder, progress, share)


@dataclass(frozen=True)
class Share:
    """What one embedding process does of a collection's embedding.

    `shard`: only the keys of this shard (`shards.Shard`); `wanted`: only these of the keys
    (a mask; on OpenSearch, the papers the cluster has no vector for, which may be stored on
    another machine only); `saved`: told each batch of vectors once it is stored (OpenSearch
    writes them into the cluster at once, where every node and the next rebuild find them)."""

    shard: Shard | None = None
    wanted: np.ndarray | None = None
    saved: Callable[[StoredVectors], None] = field(default=lambda _batch: None)

    def holding(self, path: Path) -> AbstractContextManager[None]:
        """The store held for one write: a shard's own, a whole run holds it throughout already."""
        return nullcontext() if self.shard is None else writing(path)

    def chosen(self, keys: np.ndarray) -> np.ndarray:
        """Which of `keys` this process may embed."""
        mine = np.ones(len(keys), dtype=bool) if self.wanted is None else self.wanted.copy()
        return mine if self.shard is None else mine & self.shard.holds(keys)


def _embed_into(
    path: Path,
    keys: np.ndarray,
    text: Callable[[int], str],
    encoder: RebuildEncoder,
    progress: ProgressFactory,
    share: Share,
) -> int:
    with share.holding(path):
        base = base_keys(path)  # None: none yet, or not readable; rewritten below either way
        held = parts_keys(path) if base is None else np.concatenate([base, parts_keys(path)])
    found = holds(held, keys)
    missing = np.flatnonzero(~found & share.chosen(keys))
    # The vectors of `missing` alone: a shard of 30 million papers holds its own share, not 23 GB.
    fresh = np.zeros((len(missing), DIMENSIONS), dtype=np.float16)
    appended = 0  # of `missing`, those already in a part

    def checkpoint(done: int) -> None:
        nonlocal appended
        if done > appended:
            batch = StoredVectors(keys[missing[appended:done]], fresh[appended:done])
            with share.holding(path):
                append(path, batch)
            share.saved(batch)
            appended = done

    if len(missing):
        with encoder(len(missing)) as encode_chunks:
            _embed(missing, fresh, text, encode_chunks, progress, checkpoint)
    checkpoint(len(missing))
    if share.shard is None:  # a shard leaves the store's parts to the next whole run
        kept = found.copy()
        kept[missing] = True  # the others are neither stored nor embedded here (not `wanted`)
        if base is None or _compaction_due(len(held) + len(missing), int(kept.sum()), len(part_files(path))):
            vectors = np.zeros((len(keys), DIMENSIONS), dtype=np.float16)
            vectors[missing] = fresh
            held_rows = np.flatnonzero(found)
            stored, there = find(path, keys[held_rows])
            vectors[held_rows[there]] = stored[there]
            save(path, StoredVectors(keys[kept], vectors[kept]))
    return len(missing)


def _compaction_due(rows: int, used: int, parts: int) -> bool:
    """Whether to rewrite the store with only the `used` of its `rows`, having `parts` parts."""
    return parts > MAX_PARTS or rows - used > UNUSED_SHARE * rows


def _embed(
    missing: np.ndarray,
    fresh: np.ndarray,
    text: Callable[[int], str],
    encode_chunks: EncodeChunks,
    progress: ProgressFactory,
    checkpoint: Callable[[int], None],
) -> None:
    """Fill `fresh` with the vectors of the `missing` rows, in order, telling `checkpoint` how many
    are done every CHECKPOINT_SECONDS.

    Texts are read a chunk at a time, as the encoder asks for them: memory holds a few chunks'
    texts, not a collection's."""
    chunks = [missing[start : start + CHUNK] for start in range(0, len(missing), CHUNK)]
    texts = ([text(i) for i in chunk.tolist()] for chunk in chunks)
    last, done = time.monotonic(), 0
    with progress("embedding", len(missing)) as advance:
        for chunk, chunk_vectors in zip(chunks, encode_chunks(texts), strict=True):
            fresh[done : done + len(chunk)] = chunk_vectors
            advance(len(chunk))
            done += len(chunk)
            if done < len(missing) and time.monotonic() - last >= CHECKPOINT_SECONDS:
                checkpoint(done)
                last = time.monotonic()
