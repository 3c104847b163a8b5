"""Paper vectors inside the published index, so every web node reads them with the papers.

A paper's document holds the vector the content-keyed store (`semantic.store`) has for its
text, as base64 of the same float16 bytes, so both engines fuse exactly the same numbers. A
rebuild loads each paper with its vector when the store already has it, or else the index it
replaces has it for the same paper and text; `embed_index` then embeds the papers that have no
vector in the cluster, writes their vectors into the published index with partial updates at
each checkpoint, and refreshes it: searches rank lexically until then (a tier is fused only
when each of its candidates has a vector).

The cluster is therefore where vectors are kept for good, and the store on the machine that
embeds is its cache: the shards of `searchsvc embed --shard I/N` can run on several machines,
each with its own store, and a rebuild or a write on any machine finds all their vectors.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
from opensearchpy import OpenSearch
from opensearchpy.helpers import scan, streaming_bulk

from searchsvc.backends.opensearch.cluster import disk_full, failure_reason
from searchsvc.backends.opensearch.generations import BULK_CHUNK, Generations
from searchsvc.backends.opensearch.mapping import (
    CITATIONS,
    CONTENT_KEY,
    EMBEDDED,
    FIRST_DAY,
    LAST_DAY,
    TEX,
    VECTOR,
    VENUE,
)
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.texts import as_written, text_fields
from searchsvc.core.errors import RebuildFailed, StorageFull
from searchsvc.core.paper import Paper, catalogue_key
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.publication import Publication, date_bounds
from searchsvc.semantic.embedding import Share, embed_new
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.selection import RebuildEncoder
from searchsvc.semantic.shards import Shard
from searchsvc.semantic.store import KEY_BYTES, StoredVectors, content_key, find, lookup, paper_text

STORE_META = "vectors"  # in an index's `_meta`: the vector store (its encoder's) its papers' vectors are of
MISSING: Dsl = {"bool": {"must_not": [{"term": {EMBEDDED: True}}]}}  # papers without a vector yet
_SCROLL = "5m"


def vector_fields(vector: np.ndarray) -> Dsl:
    """A document's fields for a float16 row of the store."""
    return {VECTOR: base64.b64encode(vector.astype(np.float16).tobytes()).decode("ascii"), EMBEDDED: True}


def decoded(value: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value), dtype=np.float16)


def vectors_of(sources: Iterable[Dsl]) -> np.ndarray | None:
    """The documents' vectors (a row each), or None when some has none yet."""
    values = [source.get(VECTOR) for source in sources]
    if not values or any(value is None for value in values):
        return None
    # None was ruled out above: any() does not narrow the items' type
    return np.vstack([decoded(cast(str, value)) for value in values]).reshape(len(values), DIMENSIONS)


def paper_key(paper: Paper) -> bytes:
    return content_key(paper_text(paper.title, paper.abstract))


def searched_publication(found: Publication) -> Dsl:
    """The publication's values the cluster filters, counts and sorts by (mapping.VENUE and the rest)."""
    first, last = date_bounds(found.date) if found.date else (None, None)
    return {VENUE: found.venue or None, FIRST_DAY: first, LAST_DAY: last, CITATIONS: found.citations}


def documents(papers: Iterable[Paper], store: Path, client: OpenSearch, earlier: list[str]) -> Iterator[Dsl]:
    """Each paper's document, with its content key, and its vector when the store has one (read
    from the store's files that hold them: an add's new papers do not read the whole store), or
    else the `earlier` indices hold one for the same paper and text (embedded on another machine)."""
    listed = list(papers)
    keys = np.array([paper_key(paper) for paper in listed], dtype=f"S{KEY_BYTES}")
    vectors, found = find(store, keys)
    for index in earlier:
        _fill_from(client, index, [paper.id for paper in listed], keys, vectors, found)
    for paper, key, vector, known in zip(listed, keys, vectors, found, strict=True):
        document = {
            **paper.stored(),
            **text_fields(paper),
            **searched_publication(paper.publication),
            CONTENT_KEY: key.hex(),
        }
        if known:
            document.update(vector_fields(vector))
        yield document


def _fill_from(
    client: OpenSearch, index: str, ids: list[str], keys: np.ndarray, vectors: np.ndarray, found: np.ndarray
) -> None:
    """Fill the rows not `found` with the vectors `index` holds for the same paper id and text."""
    wanted = np.flatnonzero(~found)
    for start in range(0, len(wanted), BULK_CHUNK):
        rows = wanted[start : start + BULK_CHUNK]
        docs = client.mget(index=index, body={"ids": [ids[row] for row in rows]}, _source=[CONTENT_KEY, VECTOR])
        for row, doc in zip(rows.tolist(), docs["docs"], strict=True):
            source = doc.get("_source") or {}
            if VECTOR in source and source.get(CONTENT_KEY) == keys[row].hex():  # hex as `documents` writes it
                vectors[row] = decoded(source[VECTOR])
                found[row] = True


def embed_index(
    client: OpenSearch,
    generations: Generations,
    store: Path,
    encoder: RebuildEncoder,
    progress: ProgressFactory,
    shard: Shard | None = None,
) -> tuple[int, int]:
    """Embed the published index's papers (of `shard` alone, if given) that have no vector yet and
    whose text the store lacks, give each of them its vector, and refresh, a checkpoint at a time;
    return how many papers were embedded, and how many were rewritten with their vectors (each
    leaves a deleted copy for merging.py).

    Safe beside an update publishing (a write through the API does not wait for its papers'
    embedding): a vector is written only into the very version of the paper it was read from."""
    index = generations.serving()
    scanned = _scanned(client, index, MISSING, ["title", "abstract", TEX, CONTENT_KEY])
    # A shard keeps its own papers alone in memory, 1/N of the collection, and never compacts the
    # store: it needs no catalogue (half a kilobyte a paper, 16 GB at 30 million papers).
    lacking = {hit["_id"]: hit for hit in scanned if shard is None or shard.holds_key(hit["_source"][CONTENT_KEY])}
    order = (
        _catalogue(client, index) if shard is None else [(i, hit["_source"][CONTENT_KEY]) for i, hit in lacking.items()]
    )
    keys = np.array([bytes.fromhex(key) for _id, key in order], dtype=f"S{KEY_BYTES}")
    wanted = np.array([paper_id in lacking for paper_id, _key in order], dtype=bool)
    by_key: dict[str, list[dict[str, Any]]] = {}
    for hit in lacking.values():
        by_key.setdefault(hit["_source"][CONTENT_KEY], []).append(hit)
    written = 0

    def text(i: int) -> str:
        paper_id = order[i][0]
        hit = lacking.get(paper_id)
        source = as_written(hit["_source"] if hit else client.get(index=index, id=paper_id)["_source"])
        return paper_text(source["title"], source.get("abstract") or "")  # as written: the store's keys

    def saved(batch: StoredVectors) -> None:
        """Write a checkpoint's vectors into the cluster at once: a process killed later, or a
        machine lost, loses none of them."""
        nonlocal written
        hits = [hit for key in batch.keys for hit in by_key.pop(key.hex(), [])]
        written += _write_refreshed(client, index, _updates(index, batch, hits))

    embedded = embed_new(store, keys, text, encoder, progress, Share(shard, wanted, saved))
    rest = [hit for hits in by_key.values() for hit in hits]  # stored before this run: not written yet
    if rest:
        keys_left = np.array([bytes.fromhex(hit["_source"][CONTENT_KEY]) for hit in rest], dtype=f"S{KEY_BYTES}")
        stored, there = find(store, keys_left)
        known = [hit for hit, is_there in zip(rest, there, strict=True) if is_there]
        written += _write_refreshed(
            client, index, _updates(index, StoredVectors(keys_left[there], stored[there]), known)
        )
    return embedded, written


def _write_refreshed(client: OpenSearch, index: str, updates: Iterable[Dsl]) -> int:
    """`_write` the updates, then refresh if any was made: a restarted shard scans what is still missing."""
    written = _write(client, updates)
    if written:
        client.indices.refresh(index=index)
    return written


def _catalogue(client: OpenSearch, index: str) -> list[tuple[str, str]]:
    """(id, content key) of every paper, in catalogue order: the store then lists its keys in
    the order the Whoosh backend writes them, so one store serves both without being rewritten."""
    found = [(hit["_source"], hit["_id"]) for hit in _scanned(client, index, None, ["year", CONTENT_KEY])]
    found.sort(key=lambda item: catalogue_key(item[0].get("year"), item[1]))
    return [(paper_id, source[CONTENT_KEY]) for source, paper_id in found]


def _updates(index: str, stored: StoredVectors, hits: Iterable[dict[str, Any]]) -> Iterator[Dsl]:
    """Partial updates giving each scanned paper its vector among `stored` (each has one), each
    conditional on the paper being still the version scanned (an update published meanwhile
    changes its sequence number)."""
    listed = list(hits)
    keys = np.array([bytes.fromhex(hit["_source"][CONTENT_KEY]) for hit in listed], dtype=f"S{KEY_BYTES}")
    rows, found = lookup(stored, keys)
    for hit, row, known in zip(listed, rows.tolist(), found, strict=True):
        if known:
            yield {
                "_op_type": "update",
                "_index": index,
                "_id": hit["_id"],
                "if_seq_no": hit["_seq_no"],
                "if_primary_term": hit["_primary_term"],
                "doc": vector_fields(stored.vectors[row]),
            }


def _write(client: OpenSearch, updates: Iterable[Dsl]) -> int:
    """Send the updates; return how many were made. One whose paper an update replaced (409) or
    removed (404) meanwhile is no failure: that update's own embedding gives the new version its vector."""
    written = 0
    for ok, item in streaming_bulk(client, updates, chunk_size=BULK_CHUNK, raise_on_error=False):
        failed = item.get("update", {})
        if not ok and failed.get("status") not in (404, 409):
            if disk_full(why := failure_reason(failed.get("error"))):
                raise StorageFull(f"the vectors' writes: {why}")
            raise RebuildFailed(f"the cluster refused the vector of paper {failed.get('_id')!r}: {why}")
        written += ok
    return written


def _scanned(client: OpenSearch, index: str, query: Dsl | None, fields: list[str]) -> Iterator[dict[str, Any]]:
    body: Dsl = {"query": query or {"match_all": {}}, "_source": fields, "seq_no_primary_term": True}
    return scan(client, index=index, query=body, scroll=_SCROLL, size=1000)
