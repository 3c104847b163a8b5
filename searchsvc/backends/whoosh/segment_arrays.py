"""Each segment's ids and facet values as arrays, written beside the segment once.

Opening a generation used to read these through Whoosh's columns a document at a time, in
Python: at 300,000 papers most of a 6-12 s open, paid again by every worker after each change
(issue #30). A segment never changes once written (an update deletes documents through the
table of contents, not in the segment), so its arrays are written when it is (`write_missing`),
hard-linked into later generations with its files (`updates.link_previous`), read with numpy,
and reused by a worker that held the previous generation (`generation_cache.OpenGeneration`):
an open reads what changed.
"""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh import segment_words
from searchsvc.backends.whoosh.schema import FACET_COLUMNS, NUMBER_FACETS
from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.host import AST_LOCK

FILE_PREFIX = "arrays-"  # then the segment's id; not Whoosh's `MAIN_`, whose files Whoosh cleans up
Ints = npt.NDArray[np.int32]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FacetEntries:
    """One facet of one segment: an entry per (document, value)."""

    values: list[str | int]  # the segment's distinct values
    doc: Ints  # entry → document number within the segment
    value: Ints  # entry → index into `values`


@dataclass(frozen=True)
class SegmentArrays:
    segment_id: str
    ids: npt.NDArray[np.bytes_]  # document number → paper id (ASCII: core.paper.id_problem)
    facets: Mapping[str, FacetEntries]  # by facet name (FACET_COLUMNS)

    @property
    def doc_count(self) -> int:
        return len(self.ids)

    def numbers(self, name: str, missing: int = 0) -> npt.NDArray[np.int64]:
        """Document number → its value of the whole-number facet `name` (NUMBER_FACETS), or `missing`."""
        entries = self.facets[name]
        found = np.full(self.doc_count, missing, dtype=np.int64)
        found[entries.doc] = np.array(entries.values, dtype=np.int64)[entries.value] if entries.values else missing
        return found


def leaves(reader: IndexReader) -> list[tuple[IndexReader, int]]:
    """Each segment's reader with its first document number (a one-segment reader is its own)."""
    return [(reader, 0)] if reader.is_atomic() else list(reader.leaf_readers())


def file_name(segment_id: str) -> str:
    return f"{FILE_PREFIX}{segment_id}.npz"


def of_segment(reader: IndexReader) -> SegmentArrays:
    """A segment's arrays from its columns (the slow way: when it is written, or for a segment
    written before these files existed)."""
    ids = np.array([_bytes(value) for value in reader.column_reader("id")], dtype=bytes)
    if len(ids) == 0:
        ids = np.empty(0, dtype="S1")
    facets = {name: _entries(reader, column) for name, column in FACET_COLUMNS.items()}
    return SegmentArrays(reader.segment().segment_id(), ids, facets)


def write_missing(generation: Path) -> None:
    """Write the arrays of each segment of `generation` that has none (a rebuild: all of them;
    an update: its new segment), and drop the files of segments merged away, before it is published."""
    ix = open_index(generation)
    try:
        with ix.reader() as reader:
            segment_ids = set()
            for leaf, _offset in leaves(reader):
                segment_id = leaf.segment().segment_id()
                segment_ids.add(segment_id)
                if not (generation / file_name(segment_id)).exists():
                    write_segment(generation, leaf)
    finally:
        ix.close()
    present = {file_name(segment_id) for segment_id in segment_ids}
    for path in generation.glob(f"{FILE_PREFIX}*.npz"):
        if path.name not in present:
            path.unlink()
    segment_words.drop_unused(generation, segment_ids)  # a segment's word sequences go with it


def write_segment(generation: Path, reader: IndexReader) -> None:
    """Write the arrays of the segment `reader` reads (a rebuild's writer: its own, once written)."""
    _save(generation / file_name(reader.segment().segment_id()), of_segment(reader))


def read(generation: Path, reader: IndexReader) -> SegmentArrays:
    """The arrays of `reader`'s segment: from its file, or from its columns when the file is
    missing (a generation built before them) or not what it should be (logged)."""
    segment_id = reader.segment().segment_id()
    path = generation / file_name(segment_id)
    if path.exists():
        try:
            return _load(path, segment_id, reader.doc_count_all())
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.warning("reading the columns of segment %s instead of %s: %s", segment_id, path, exc)
    return of_segment(reader)


def _entries(reader: IndexReader, column: str) -> FacetEntries:
    values: list[str | int] = []
    index_of: dict[str | int, int] = {}
    docs: list[int] = []
    indices: list[int] = []
    for docnum, raw in enumerate(reader.column_reader(column)):
        for value in json.loads(raw):
            index = index_of.get(value)
            if index is None:
                index = index_of[value] = len(values)
                values.append(value)
            docs.append(docnum)
            indices.append(index)
    return FacetEntries(values, np.array(docs, dtype=np.int32), np.array(indices, dtype=np.int32))


def _save(path: Path, arrays: SegmentArrays) -> None:
    """Values as JSON text (a numpy string array would drop trailing NULs); fsync'd with the
    generation by `GenerationStore.finish`."""
    named: dict[str, npt.NDArray[np.generic]] = {"ids": arrays.ids}
    for name, entries in arrays.facets.items():
        named[f"{name}.values"] = np.frombuffer(json.dumps(entries.values).encode("utf-8"), dtype=np.uint8)
        named[f"{name}.doc"] = entries.doc
        named[f"{name}.value"] = entries.value
    with path.open("wb") as stream:
        np.savez(stream, **named)  # type: ignore[arg-type]  # numpy's stub wants positional arrays


def _load(path: Path, segment_id: str, doc_count: int) -> SegmentArrays:
    """The arrays in `path`, checked against the segment: bytes on disk are untrusted."""
    with path.open("rb") as stream, AST_LOCK, np.load(stream, allow_pickle=False) as data:
        ids = data["ids"]
        if ids.dtype.kind != "S" or ids.shape != (doc_count,):
            raise ValueError(f"ids are {ids.dtype} {ids.shape}, expected {doc_count} byte strings")
        facets = {}
        for name in FACET_COLUMNS:
            values = json.loads(data[f"{name}.values"].tobytes())
            docs, indices = data[f"{name}.doc"], data[f"{name}.value"]
            kind = int if name in NUMBER_FACETS else str
            if not isinstance(values, list) or not all(type(value) is kind for value in values):
                raise ValueError(f"{name} values are not a list of {kind.__name__}")
            for array in (docs, indices):
                if array.dtype != np.int32 or array.shape != docs.shape or array.ndim != 1:
                    raise ValueError(f"{name} entries are {array.dtype} {array.shape}")
            if len(docs) and (docs.min() < 0 or docs.max() >= doc_count or indices.min() < 0):
                raise ValueError(f"{name} entries name documents outside the segment")
            if len(indices) and indices.max() >= len(values):
                raise ValueError(f"{name} entries name values it does not hold")
            facets[name] = FacetEntries(values, docs, indices)
    return SegmentArrays(segment_id, ids, facets)


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")
