"""A segment's postings held by term while it is written, spilled to sorted runs past a memory limit.

Whoosh's own pool keeps one tuple per posting (field, term, document, weight, value), sorts
them all, and writes and reads its runs one marshalled tuple at a time: most of a rebuild's
time went there (docs/performance.md, "Rebuilds"). Here a term's postings are grouped as
they arrive (documents come in order, so each term's list is already sorted), only the terms
are sorted, and a run is written and read in chunks of whole terms, so the memory limit holds
as before but spilling costs a few C calls per thousand terms.
"""

from __future__ import annotations

import heapq
import marshal
import struct
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.filedb.filestore import Storage
from whoosh.system import pack_uint
from whoosh.util import random_name

# What one term's postings are when written: (field, term, documents, weights, values), the
# documents and weights an array, or a tuple of one for a term found once.
Postings = tuple[str, bytes, Any, Any, list[bytes]]
# A run's chunk ends at this many terms or bytes of postings, whichever comes first: merging holds
# one chunk of every run at once, and the runs grow in number with the collection.
_CHUNK = 4096
_CHUNK_BYTES = 256 * 1024
_HEAD = struct.Struct("!I")  # a chunk's length in bytes
# The value of a frequency posting found once (a word pair's, mostly): such a posting is held as its
# document number alone.
FOUND_ONCE = pack_uint(1)
# Bytes counted against the limit besides the term's and value's own: a new term (its dict slot,
# key object and first posting as a tuple, or a number), its second posting (two arrays and a list),
# any further one. On 8,000 ACL records the count was 18% above what tracemalloc found the pool
# holding (204 MB against 173), so the limit holds.
_NEW_TERM = 200
_NEW_ONCE = 110
_SECOND = 300
_MORE = 48


class TermPool:
    def __init__(self, storage: Storage, limitmb: int) -> None:
        self._storage = storage
        self._limit = limitmb * 1024 * 1024
        self._size = 0
        self._fields: dict[str, dict[bytes, Any]] = {}
        self._runs: list[str] = []

    def add(self, fieldname: str, items: Iterable[tuple[bytes, int, float, bytes]], docnum: int) -> int:
        """One document's terms of one field; return the sum of their frequencies (the field's length)."""
        terms = self._fields.get(fieldname)
        if terms is None:
            terms = self._fields[fieldname] = {}
        size = 0
        length = 0
        for term, frequency, weight, value in items:
            length += frequency
            found = terms.get(term)
            if found is None:  # most terms of a segment occur once: a tuple until a second posting
                if value is FOUND_ONCE and weight == 1.0:
                    terms[term] = docnum
                    size += _NEW_ONCE + len(term)
                else:
                    terms[term] = (docnum, weight, value)
                    size += _NEW_TERM + len(term) + len(value)
            elif type(found) is not list:
                first = (found, 1.0, FOUND_ONCE) if type(found) is int else found
                terms[term] = [array("I", (first[0], docnum)), array("f", (first[1], weight)), [first[2], value]]
                size += _SECOND + len(value)
            else:
                found[0].append(docnum)
                found[1].append(weight)
                found[2].append(value)
                size += _MORE + len(value)
        self._size += size
        if self._size > self._limit:
            self.save()
        return length

    def save(self) -> None:
        """Write the terms held as one run, sorted, and forget them."""
        if not self._fields:
            return
        name = f"{random_name()}.terms"
        with self._storage.create_file(name).raw_file() as run:
            chunk: list[Any] = []
            size = 0
            for record in self._sorted(len(self._runs)):
                chunk.append(record)
                size += _record_bytes(record)
                if len(chunk) >= _CHUNK or size >= _CHUNK_BYTES:
                    _write_chunk(run, chunk)
                    chunk, size = [], 0
            if chunk:
                _write_chunk(run, chunk)
        self._runs.append(name)
        self._fields = {}
        self._size = 0

    def postings(self) -> Iterator[Postings]:
        """Every term's postings, by field and term, documents in order (the runs' and then those held)."""
        if not self._runs:
            yield from map(_unpacked, self._sorted(0))
            return
        # The terms held go to a run of their own first, as Whoosh's pool does: the memory they hold
        # is then free for the term table the postings are written with.
        self.save()
        sources = [self._read(name) for name in self._runs]
        merged = heapq.merge(*sources)  # by field, term and run: a term's postings in document order
        current = None
        for record in merged:
            postings = _unpacked(record)
            if current is not None and current[0] == postings[0] and current[1] == postings[1]:
                if type(current[2]) is tuple:
                    current = (current[0], current[1], array("I", current[2]), array("f", current[3]), current[4])
                current[2].extend(postings[2])
                current[3].extend(postings[3])
                current[4].extend(postings[4])
                continue
            if current is not None:
                yield current
            current = postings
        if current is not None:
            yield current

    def cleanup(self) -> None:
        for name in self._runs:
            if self._storage.file_exists(name):
                self._storage.delete_file(name)
        self._runs = []

    def _sorted(self, run: int) -> Iterator[tuple[Any, ...]]:
        """Records of the terms held, by field and term, numbered `run`: (field, term, run, document,
        weight, value) for a term with one posting, (field, term, run, documents' bytes, weights'
        bytes, values) for more."""
        for fieldname in sorted(self._fields):
            terms = self._fields.pop(fieldname)  # freed once its terms are written
            for term in sorted(terms):
                found = terms[term]
                if type(found) is int:
                    yield (fieldname, term, run, found, 1.0, FOUND_ONCE)
                elif type(found) is tuple:
                    yield (fieldname, term, run, *found)
                else:
                    yield (fieldname, term, run, found[0].tobytes(), found[1].tobytes(), found[2])

    def _read(self, name: str) -> Iterator[tuple[Any, ...]]:
        with self._storage.open_file(name).raw_file() as run:
            while head := run.read(_HEAD.size):
                yield from marshal.loads(run.read(_HEAD.unpack(head)[0]))
        self._storage.delete_file(name)


def _record_bytes(record: tuple[Any, ...]) -> int:
    """About what a record holds: its term and postings (a few bytes for a posting found once)."""
    docs, values = record[3], record[5]
    if type(docs) is int:
        return len(record[1]) + len(values)
    return len(record[1]) + 2 * len(docs) + sum(map(len, values))


def _write_chunk(run: Any, chunk: list[Any]) -> None:
    """One chunk of a run: its length, then the records marshalled in one call (marshal.load on a
    file reads it a few bytes at a time)."""
    data = marshal.dumps(chunk)
    run.write(_HEAD.pack(len(data)) + data)


def _unpacked(record: tuple[Any, ...]) -> Postings:
    fieldname, term, _run, docs, weights, values = record
    if type(docs) is int:
        return fieldname, term, (docs,), (weights,), [values]
    documents, weighting = array("I"), array("f")
    documents.frombytes(docs)
    weighting.frombytes(weights)
    return fieldname, term, documents, weighting, values
