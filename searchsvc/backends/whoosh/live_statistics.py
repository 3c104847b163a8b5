"""Collection statistics of the live papers only, after an update deleted some.

Whoosh keeps a deleted document's terms in its segment's statistics (document frequencies,
total field lengths, the document count) until the segment is merged away. BM25's idf and
average lengths would then differ from a rebuild of the same papers, and so would every
score. An update therefore records, per segment, what its deleted documents contributed
(`DELETED_FILE`, written with the generation), and `LiveSearcher` subtracts it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh.fields import Schema
from whoosh.reading import IndexReader
from whoosh.searching import Searcher

from searchsvc.backends.whoosh.indexing import indexed_text
from searchsvc.backends.whoosh.segment_arrays import leaves
from searchsvc.core.paper import Paper

DELETED_FILE = "deleted-statistics.json"
REMEMBERED_FREQUENCIES = 100_000  # (field, word) pairs a searcher keeps the document frequency of


@dataclass
class Contribution:
    """What some documents add to the statistics: field lengths and documents per (field, term)."""

    lengths: Counter[str] = field(default_factory=Counter)
    documents: Counter[tuple[str, bytes]] = field(default_factory=Counter)

    def add_paper(self, schema: Schema, paper: Paper) -> None:
        for name, text in indexed_text(paper).items():
            for term, frequency in terms(schema, name, text):
                self.lengths[name] += frequency
                self.documents[(name, term)] += 1

    def __iadd__(self, other: Contribution) -> Contribution:
        self.lengths.update(other.lengths)
        self.documents.update(other.documents)
        return self

    def as_json(self) -> dict[str, Any]:
        by_field: dict[str, dict[str, int]] = {}
        for (name, term), count in self.documents.items():
            by_field.setdefault(name, {})[term.decode("utf-8")] = count
        return {"lengths": dict(self.lengths), "documents": by_field}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Contribution:
        documents: Counter[tuple[str, bytes]] = Counter()
        for name, counts in data["documents"].items():
            for term, count in counts.items():
                documents[(name, term.encode("utf-8"))] = count
        return cls(Counter(data["lengths"]), documents)


def terms(schema: Schema, name: str, text: str) -> Iterable[tuple[bytes, int]]:
    """(term, frequency) of `text` as Whoosh indexes it in field `name` (field length = the frequencies' sum)."""
    field_type = schema[name]
    return [(term, frequency) for term, frequency, _weight, _value in field_type.index(text)]


@dataclass
class SegmentDeletions:
    """One segment's deleted documents (numbers within the segment) and what they contributed."""

    deleted: list[int]
    contribution: Contribution


def save_deletions(path: Path, segments: Mapping[str, SegmentDeletions]) -> None:
    data = {segment: {"deleted": found.deleted, **found.contribution.as_json()} for segment, found in segments.items()}
    path.write_text(json.dumps(data, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def load_deletions(path: Path) -> dict[str, SegmentDeletions]:
    """The generation's record of deleted documents; empty when it has none (a rebuild)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        segment: SegmentDeletions(list(found["deleted"]), Contribution.from_json(found))
        for segment, found in data.items()
    }


def segment_deletions(reader: IndexReader, previous: Mapping[str, SegmentDeletions]) -> dict[str, SegmentDeletions]:
    """Each segment's deletions in `reader`'s index, reusing `previous` for documents deleted before:
    only the newly deleted are read and analysed again, so the cost grows with the change."""
    found: dict[str, SegmentDeletions] = {}
    for leaf, _offset in leaves(reader):
        if not leaf.has_deletions():
            continue
        segment = leaf.segment().segment_id()
        before = previous.get(segment, SegmentDeletions([], Contribution()))
        known = set(before.deleted)
        contribution = Contribution()
        contribution += before.contribution
        deleted = sorted(leaf.segment().deleted_docs())
        for docnum in deleted:
            if docnum not in known:
                contribution.add_paper(reader.schema, Paper.from_stored(leaf.stored_fields(docnum)))
        found[segment] = SegmentDeletions(deleted, contribution)
    return found


class LiveSearcher(Searcher):
    """A Whoosh searcher whose document frequencies, field lengths and document count leave out
    deleted documents (`deleted`: their contribution over all segments)."""

    def __init__(self, reader: IndexReader, deleted: Contribution | None = None, **kwargs: Any) -> None:
        parent = kwargs.get("parent")
        # Before Searcher's own __init__, which makes the sub-searchers that read it.
        self.deleted = deleted if deleted is not None else (parent.deleted if parent else Contribution())
        super().__init__(reader, **kwargs)
        self.doc_frequency = self._doc_frequency  # Searcher copies the reader's onto the instance
        self._frequencies: dict[tuple[str, bytes], int] = {}

    def _doc_frequency(self, fieldname: str, text: bytes | str) -> int:
        """Remembered: scoring asks for each query word's a few times, and a lookup reads every
        segment's term index (5 ms of a 28 ms pasted sentence on the ACL records)."""
        term = text.encode("utf-8") if isinstance(text, str) else text
        key = (fieldname, term)
        found = self._frequencies.get(key)
        if found is None:
            if len(self._frequencies) >= REMEMBERED_FREQUENCIES:
                self._frequencies.clear()  # a bound whatever words clients send
            found = self.ixreader.doc_frequency(fieldname, term) - self.deleted.documents.get(key, 0)
            self._frequencies[key] = found
        return found

    def field_length(self, fieldname: str) -> int:
        if self.has_parent():
            return self.get_parent().field_length(fieldname)
        return self.ixreader.field_length(fieldname) - self.deleted.lengths.get(fieldname, 0)

    def avg_field_length(self, fieldname: str, default: float | None = None) -> float | None:
        if not self.schema[fieldname].scorable:
            return default
        top = self.get_parent()
        return top.field_length(fieldname) / (top.doc_count() or 1)


def open_searcher(reader: IndexReader, deletions: Mapping[str, SegmentDeletions], **kwargs: Any) -> LiveSearcher:
    """A live searcher over `reader`, counting only the deletions of segments it still has.

    Its matchers do not skip deleted documents: Whoosh wraps a segment's postings in a
    FilterMatcher when it has deletions, and under AndNot that let papers through that hold
    the excluded word (`model -vision`; tests/contract/test_updates.py). The backend leaves
    deleted documents out once instead, with the live mask (doc_order.DocOrder).
    """
    segments = leaves(reader)
    for leaf, _ in segments:
        leaf.__dict__["deleted_docs_set"] = frozenset()  # SegmentReader's cached_property: read by postings()
    present = {leaf.segment().segment_id() for leaf, _ in segments}
    total = Contribution()
    for segment, found in deletions.items():
        if segment in present:
            total += found.contribution
    return LiveSearcher(reader, total, **kwargs)
