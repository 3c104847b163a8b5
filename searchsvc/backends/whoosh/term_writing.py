"""A segment's postings and term table written a term at a time, as Whoosh's W3 codec writes them.

Whoosh's FieldWriter takes one posting per call and its postings writer checks, buffers and
encodes each; then every term, even one found in a single paper (most word pairs are), costs a
dozen Python calls, two pickles and a zlib stream of its own. Here a term's whole posting list
is cut into the same blocks and encoded with the same pickles, compression and statistics, so
the bytes are the same (tests/unit/backends/whoosh/test_segment_writing.py compares the files
with Whoosh's), with fewer calls; the compressed bytes of a block are reused when another term
has the same block (the pairs of one paper, found once each, mostly do).

Compression is where the bytes may differ from Whoosh's, not what they hold: each block's header
names its own zlib level, which both Whoosh's reader and posting_blocks.py honour. Whoosh
compresses every block; here a block below COMPRESSED_FROM bytes is stored as it is, since zlib
makes most such blocks no smaller, and starting a zlib stream cost more than writing them.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterator, Sequence
from pickle import dumps
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3TermInfo
from whoosh.filedb.filetables import _lengths as _ENTRY
from whoosh.filedb.structfile import StructFile
from whoosh.system import pack_int, pack_long, pack_ushort
from whoosh.util.numeric import byte_to_length, length_to_byte

from searchsvc.backends.whoosh.term_pool import Postings

_BYTE_LENGTH = [byte_to_length(n) if n else None for n in range(256)]  # a length byte → what Whoosh reads back
_BYTE_AGAIN = [length_to_byte(length) for length in _BYTE_LENGTH]  # … and that length as a byte again
_COMPRESSED_KEPT = 4096  # compressed blocks remembered
# Blocks of fewer pickled bytes are stored uncompressed. Of 8,000 ACL records' blocks, 66% were below
# 96 bytes: zlib made those below 64 bytes 107 KB longer in all, those of 64–95 bytes 122 KB shorter,
# where it saves 19 bytes a block from 96 bytes up. Storing them as they are took about 2.6 of 47 CPU
# seconds off a rebuild of the ACL records (docs/performance.md).
COMPRESSED_FROM = 96


def write_postings(fieldwriter: Any, schema: Any, postings: Iterator[Postings], lengths: dict[str, bytearray]) -> None:
    """Write every term of `postings` (by field, then term) through `fieldwriter` (a W3FieldWriter,
    closed by its caller): its postings file and its term table. `lengths`: each field's length byte
    per document, which Whoosh reads back from the length columns for each posting."""
    codec = fieldwriter._codec
    if codec._inlinelimit > 1:
        raise ValueError("postings inlined in the term table are not written here")
    blocks = _Blocks(fieldwriter._postfile, codec._blocklimit, codec._compression)
    terms = _TermTable(fieldwriter._tindex)
    fieldmap: dict[str, int] = fieldwriter._fieldmap
    current = None
    prefix = b""
    for name, term, docs, weights, values in postings:
        if name != current:
            current = name
            prefix = pack_ushort(fieldmap.setdefault(name, len(fieldmap)))
            fixed = schema[name].format.fixed_value_size()
            blocks.field(fixed, lengths.get(name, bytearray()))
        info = blocks.term(docs, weights, values)
        terms.add(prefix + term, info)
    terms.finish()


class _TermTable:
    """OrderedHashWriter.add without asking the file where it is twice a term (a system call each):
    the same entries, index and hash buckets, the buckets kept compact (`_CompactBuckets`)."""

    def __init__(self, table: Any) -> None:
        self._table = table
        file = table.dbfile
        self._write = file.file.write if type(file) is StructFile else file.write
        self._at = table.dbfile.tell()
        self._index = table.index
        if any(table.buckets):
            raise ValueError("the term table already holds terms")
        table.buckets = buckets = _CompactBuckets()
        self._hashes, self._positions = buckets.hashes, buckets.positions
        self._hash = table.hashfn
        self._last = table.lastkey

    def add(self, key: bytes, value: bytes) -> None:
        if key <= self._last:
            raise ValueError(f"terms must increase: {self._last!r}..{key!r}")
        entry = _ENTRY.pack(len(key), len(value)) + key + value
        at = self._at
        self._index.append(at)
        self._write(entry)
        self._at = at + len(entry)
        hashed = self._hash(key)
        self._hashes[hashed & 255].append(hashed)
        self._positions[hashed & 255].append(at)
        self._last = key

    def finish(self) -> None:
        self._table.lastkey = self._last


class _CompactBuckets:
    """HashWriter's 256 buckets of (hash, position) pairs, which it keeps as tuples in lists until the
    segment is closed: about 120 bytes a term, 110 MB for the 930,000 terms of a 150,000-paper
    segment, the rebuild's memory growing with the collection (docs/performance.md). Here 12 bytes
    a term in two arrays per bucket; HashWriter's `_write_hashes` gets each bucket as the list of
    pairs it expects, one bucket at a time."""

    def __init__(self) -> None:
        self.hashes = [array("I") for _ in range(256)]  # the hash functions give 32 bits
        self.positions = [array("Q") for _ in range(256)]

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        for hashes, positions in zip(self.hashes, self.positions, strict=True):
            yield list(zip(hashes, positions, strict=True))


class _Blocks:
    """The postings file while terms are written, and what one term's blocks say of it."""

    def __init__(self, postfile: Any, limit: int, compression: int) -> None:
        # StructFile.write only passes its bytes on: write to its file (a call fewer a term).
        self._write = postfile.file.write if type(postfile) is StructFile else postfile.write
        self._offset = postfile.tell()
        self._limit = limit
        self._compression = compression
        self._compressed: dict[bytes, bytes] = {}
        self._fixed: int | None = None
        self._lengths = bytearray()

    def field(self, fixed: int | None, lengths: bytearray) -> None:
        self._fixed, self._lengths = fixed, lengths

    def term(self, docs: Sequence[int], weights: Sequence[float], values: list[bytes]) -> bytes:
        """Write one term's blocks; return its W3TermInfo bytes."""
        if len(docs) == 1:
            return self._once(docs[0], weights[0], values[0])
        start = self._offset
        limit = self._limit
        count = len(docs)
        total, most, low, high = 0.0, 0.0, None, 0
        written = [WHOOSH3_HEADER_MAGIC]
        for begin in range(0, count, limit):
            end = min(begin + limit, count)
            block_weights, block_low, block_high, block = self._block(
                docs[begin:end], weights[begin:end], values[begin:end], end == count
            )
            written.append(block)
            total += block_weights
            most = max(most, *weights[begin:end])
            low = block_low if low is None or block_low is None else min(low, block_low)
            high = max(high, block_high)
        data = b"".join(written)
        self._write(data)
        self._offset += len(data)
        info = W3TermInfo._struct.pack(
            False,
            total,
            count,
            0 if low is None else length_to_byte(low),
            length_to_byte(high),
            most,
            docs[0],
            docs[-1],
        )
        return info + pack_long(start) + pack_int(len(data))

    def _once(self, doc: int, weight: float, value: bytes) -> bytes:
        """`term` for a term in one paper (most word pairs): the same bytes, the lists left out."""
        known = self._lengths
        byte = _BYTE_AGAIN[known[doc]] if doc < len(known) else 0
        (stored,) = array("f", (weight,)).tolist()
        fixed = self._fixed
        if fixed is None or fixed < 0:
            mini_values: Any = (value,) if value else ()
        else:
            mini_values = None if fixed == 0 else value
        data = dumps(((doc,), None if stored == 1.0 else stored, mini_values), 2)
        level, data = self._compressed_as_written(data)
        most = max(0, weight)
        info = dumps((1, doc, most, level, byte, byte), 2)
        block = WHOOSH3_HEADER_MAGIC + pack_int(-(len(info) + len(data))) + info + data
        start = self._offset
        self._write(block)
        self._offset += len(block)
        term = W3TermInfo._struct.pack(False, stored, 1, byte, byte, max(0.0, weight), doc, doc)
        return term + pack_long(start) + pack_int(len(block))

    def _compressed_as_written(self, data: bytes) -> tuple[int, bytes]:
        """A block's pickled postings as written, and the zlib level its header names (0: none):
        compressed if the codec compresses and the block is not too small to gain, the compressed
        bytes of a block seen before reused."""
        if not self._compression or len(data) < COMPRESSED_FROM:
            return 0, data
        compressed = self._compressed.get(data)
        if compressed is None:
            if len(self._compressed) >= _COMPRESSED_KEPT:
                self._compressed.clear()
            compressed = self._compressed[data] = zlib.compress(data, self._compression)
        return self._compression, compressed

    def _block(
        self, docs: Sequence[int], weights: Sequence[float], values: list[bytes], last: bool
    ) -> tuple[float, int | None, int, bytes]:
        """One block as W3PostingsWriter._write_block writes it: its weights' sum, its shortest and longest
        field length, and its bytes."""
        known = self._lengths
        low: int | None
        high: int
        if not known:  # a field without lengths
            low, high = None, 0
        elif docs[-1] < len(known) and (found := [known[doc] for doc in docs]) and min(found):
            low, high = _BYTE_LENGTH[min(found)], _BYTE_LENGTH[max(found)] or 0  # the lengths grow with their bytes
        else:
            lengths = [_BYTE_LENGTH[known[doc]] if doc < len(known) else None for doc in docs]
            present = [length for length in lengths if length]
            low, high = (min(present), max(present)) if present else (None, 0)
        stored = array("f", weights).tolist()  # as W3PostingsWriter's array holds them
        distinct = set(stored)
        if distinct == {1.0}:
            mini_weights: Any = None
        else:
            mini_weights = stored[0] if len(distinct) == 1 else tuple(stored)
        fixed = self._fixed
        if fixed is None or fixed < 0:
            mini_values: Any = tuple(value for value in values if value)
        else:
            mini_values = None if fixed == 0 else b"".join(values)
        deltas = tuple([docs[0], *map(int.__sub__, docs[1:], docs[:-1])])
        data = dumps((deltas, mini_weights, mini_values), 2)
        level, data = self._compressed_as_written(data)
        info = dumps((len(docs), docs[-1], max(0, *weights), level, length_to_byte(low), length_to_byte(high)), 2)
        length = len(info) + len(data)
        return sum(stored), low, high, pack_int(-length if last else length) + info + data
