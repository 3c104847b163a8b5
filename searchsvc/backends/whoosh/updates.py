"""An update as a new generation that shares the previous one's segment files.

The previous generation's Whoosh files are hard-linked into the new generation's folder
(never written: Whoosh writes a new table of contents and new segment files, so the
previous generation stays byte-identical while it is served). The update's deletions go
into the new table of contents, its papers into one new segment. The files written with
each generation (content keys, vocabulary, deleted-document statistics) are carried over
and changed only where the update changed something, so the cost grows with the change,
not with the collection.

Small segments pile up, one per update: past `MAX_SMALL_SEGMENTS` they are merged into the
update's segment (docs/performance.md measures it). Deleted documents stay in the large
segments until the next rebuild; `live_statistics` keeps them out of every score.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
from whoosh.codec.base import Segment
from whoosh.fields import Schema
from whoosh.reading import SegmentReader
from whoosh.searching import Searcher
from whoosh.writing import SegmentWriter

from searchsvc.backends.whoosh.generation_vectors import KEYS_FILE, text_of
from searchsvc.backends.whoosh.generations import MANIFEST, READERS_LOCK
from searchsvc.backends.whoosh.indexing import document, indexed_text
from searchsvc.backends.whoosh.live_statistics import (
    DELETED_FILE,
    load_deletions,
    save_deletions,
    segment_deletions,
    terms,
)
from searchsvc.backends.whoosh.schema import EXACT_FIELDS
from searchsvc.backends.whoosh.segment_writing import PaperSegmentWriter
from searchsvc.backends.whoosh.spelling import VOCABULARY_FILE
from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.core.catalogue import Change
from searchsvc.core.paper import Paper
from searchsvc.core.vocabulary import Vocabulary
from searchsvc.host import AST_LOCK
from searchsvc.semantic.store import KEY_BYTES, content_key

MAX_SMALL_SEGMENTS = 8  # an update's segment is small: below a tenth of the largest segment
_WRITTEN_AGAIN = {MANIFEST, READERS_LOCK, KEYS_FILE, VOCABULARY_FILE, DELETED_FILE, "MAIN_WRITELOCK"}


def link_previous(previous: Path, generation: Path) -> set[str]:
    """Hard-link the previous generation's index files into `generation`; return their names."""
    linked = set()
    for path in previous.iterdir():
        if path.is_file() and path.name not in _WRITTEN_AGAIN and not path.name.startswith("."):
            os.link(path, generation / path.name)
            linked.add(path.name)
    return linked


def write_update(previous: Path, generation: Path, change: Change, memory_mb: int) -> None:
    """Make `change` in `generation`, which holds links to `previous`'s index files."""
    ix = open_index(generation)
    try:
        writer = PaperSegmentWriter(ix, memory_mb)
        try:
            with writer.searcher() as searcher:
                removed = [_stored_paper(searcher, paper_id) for paper_id in change.deleted]
            for paper_id in change.deleted:
                writer.delete_by_term("id", paper_id)
            for paper in change.added:
                writer.add_document(**document(paper))
            writer.commit(mergetype=_merge_small_segments)
        except BaseException:
            if not writer.is_closed:
                writer.cancel()
            raise
    finally:
        ix.close()
    _write_sidecars(previous, generation, change.added, [p for p in removed if p is not None])


def _stored_paper(searcher: Searcher, paper_id: str) -> Paper | None:
    docnum = searcher.document_number(id=paper_id)
    return None if docnum is None else Paper.from_stored(searcher.stored_fields(docnum))


def _merge_small_segments(writer: SegmentWriter, segments: list[Segment]) -> list[Segment]:
    """Whoosh merge policy: when more than MAX_SMALL_SEGMENTS small segments exist, write their
    live papers again into the segment being written.

    Again from their stored fields, not with Whoosh's `add_reader`: that sums the merged
    documents' one-byte field lengths into the segment's total, so average lengths, and every
    score, would drift from a rebuild's.
    """
    largest = max((s.doc_count_all() for s in segments), default=0)
    small = [s for s in segments if s.doc_count_all() * 10 < largest]
    if len(small) <= MAX_SMALL_SEGMENTS:
        return segments
    for segment in small:
        reader = SegmentReader(writer.storage, writer.schema, segment)
        try:
            for docnum in range(segment.doc_count_all()):
                if not segment.is_deleted(docnum):
                    writer.add_document(**document(Paper.from_stored(reader.stored_fields(docnum))))
        finally:
            reader.close()
    return [s for s in segments if s not in small]


def _write_sidecars(previous: Path, generation: Path, added: list[Paper], removed: list[Paper]) -> None:
    """The files written with a generation, from the previous one's and what changed."""
    before = _segment_offsets(previous)
    with AST_LOCK:
        previous_keys = np.load(previous / KEYS_FILE, allow_pickle=False)
    ix = open_index(generation)
    try:
        with ix.searcher() as searcher:
            reader = searcher.reader()
            deletions = segment_deletions(reader, load_deletions(previous / DELETED_FILE))
            save_deletions(generation / DELETED_FILE, deletions)
            keys = np.zeros(reader.doc_count_all(), dtype=f"S{KEY_BYTES}")
            for leaf, offset in searcher.leaf_searchers():
                segment = leaf.reader().segment()
                count = segment.doc_count_all()
                if segment.segment_id() in before:
                    start = before[segment.segment_id()]
                    keys[offset : offset + count] = previous_keys[start : start + count]
                else:
                    for docnum in range(offset, offset + count):
                        keys[docnum] = content_key(text_of(searcher, docnum))
            schema = reader.schema
    finally:
        ix.close()
    np.save(generation / KEYS_FILE, keys)
    _vocabulary_changed(Vocabulary.load(previous / VOCABULARY_FILE), schema, added, removed).save(
        generation / VOCABULARY_FILE
    )


def _segment_offsets(generation: Path) -> dict[str, int]:
    """Segment id → its first document number in `generation`."""
    ix = open_index(generation)
    try:
        with ix.searcher() as searcher:
            return {leaf.reader().segment().segment_id(): offset for leaf, offset in searcher.leaf_searchers()}
    finally:
        ix.close()


def _vocabulary_changed(vocabulary: Vocabulary, schema: Schema, added: list[Paper], removed: list[Paper]) -> Vocabulary:
    """The spelling vocabulary (papers per exact word and field, summed) after the change."""
    papers: Counter[str] = Counter(dict(vocabulary.items()))
    for sign, changed in ((1, added), (-1, removed)):
        for paper in changed:
            text = indexed_text(paper)
            for exact in EXACT_FIELDS.values():
                for term, _frequency in terms(schema, exact, text[exact]):
                    papers[term.decode("utf-8")] += sign
    return Vocabulary.of((word, count) for word, count in papers.items() if count > 0)
