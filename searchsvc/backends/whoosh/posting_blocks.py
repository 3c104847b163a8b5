"""The blocks of one Whoosh posting list, found from their headers without Whoosh's file reads.

A whoosh3 posting list is a run of blocks of up to 128 postings, each a length, a pickled
header (postings, the largest document number, …) and the compressed postings. Whoosh finds a
document by stepping from header to header, and each step reads the header through its Python
file layers: ~45 µs, 100 ms for a word in most of 300,000 abstracts, paid on every search for a
phrase's matches of that word. Here each header is one read of bytes and one C unpickle (13 µs
measured at 300,000 papers), and so is each block's postings, decoded with numpy. The layout is
whoosh-reloaded 2.7.5's (`codec/whoosh3.py`), the version pyproject.toml pins; the tests compare
every result with Whoosh's own matchers.
"""

from __future__ import annotations

import io
import pickle
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.system import _INT_SIZE, unpack_int

_HEAD_BYTES = 96  # a header pickles to ~40 bytes; read more and retry if it did not fit


class _PostingFile(Protocol):
    """What is read of Whoosh's posting file (a StructFile; Whoosh has no types)."""

    def get(self, position: int, length: int) -> bytes: ...


class Block(NamedTuple):
    """One block of a posting list, as its header says."""

    position: int  # where it starts (its length)
    largest: int  # its largest document number
    size: int  # its postings
    compression: int  # zlib's level, 0 for none
    data: int  # where its postings start, after the header
    end: int  # where the next block starts


class Postings(NamedTuple):
    """A block's postings: document numbers (ascending, the segment's), frequencies, values."""

    ids: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]
    values: tuple[Any, ...]


def blocks(m: W3LeafMatcher) -> Iterator[Block]:
    """Each block of `m`'s posting list, in order."""
    postfile = m._postfile
    position = m._baseoffset
    while True:
        length, info, size = _header(postfile, position, _HEAD_BYTES)
        end = position + _INT_SIZE + abs(length)
        yield Block(position, info[1], info[0], info[3], position + _INT_SIZE + size, end)
        if length < 0:  # the last block's length is stored negated
            return
        position = end


def postings(m: W3LeafMatcher, block: Block) -> Postings:
    """`block`'s postings, as `m._read_ids`, `_read_weights` and `_read_values` would give them after
    `m._goto(block.position)`, with one read of bytes, one C unpickle and no loop in Python: Whoosh's
    took ~230 µs a block, most of a phrase's time at 300,000 papers."""
    raw = m._postfile.get(block.data, block.end - block.data)
    ids, weights, values = pickle.loads(zlib.decompress(raw) if block.compression else raw)  # noqa: S301 - Whoosh's own block, which it unpickles too
    if m._byteids:  # a term vector's block, whose ids are words: not a posting list (the schema has none)
        raise ValueError("a term vector's block is not a posting list")
    count = block.size
    found = np.cumsum(ids, dtype=np.int64)  # document numbers are stored as their deltas
    if weights is None:
        frequencies = np.ones(count, dtype=np.float64)
    elif isinstance(weights, float):
        frequencies = np.full(count, weights, dtype=np.float64)
    else:
        frequencies = np.asarray(weights, dtype=np.float64)
    fixed = m._fixedsize
    if fixed is None or fixed < 0:
        kept = values
    elif fixed == 0:
        kept = (None,) * count
    else:
        kept = tuple(values[i : i + fixed] for i in range(0, len(values), fixed))
    return Postings(found, frequencies, kept)


def _header(postfile: _PostingFile, position: int, size: int) -> tuple[int, tuple[Any, ...], int]:
    """A block's length, its header, and the header's size in bytes."""
    raw = postfile.get(position, size)
    read = io.BytesIO(raw[_INT_SIZE:])
    try:
        info = pickle.Unpickler(read).load()  # noqa: S301 - Whoosh's own header, which it unpickles too
    except (EOFError, pickle.UnpicklingError):
        if len(raw) < size:  # the file ends here: the header is damaged, as Whoosh would find it
            raise
        return _header(postfile, position, size * 4)
    return unpack_int(raw[:_INT_SIZE])[0], info, read.tell()
