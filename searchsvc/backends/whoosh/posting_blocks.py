"""The blocks of one Whoosh posting list, found from their headers without Whoosh's file reads.

A whoosh3 posting list is a run of blocks of up to 128 postings, each a length, a pickled
header (postings, the largest document number, …) and the compressed postings. Whoosh finds a
document by stepping from header to header, and each step reads the header through its Python
file layers: ~45 µs, 100 ms for a word in most of 300,000 abstracts, paid on every search for a
phrase's matches of that word. Here the list is one read of bytes, each header one C unpickle, and
each block's postings one more, decoded with numpy. The layout is whoosh-reloaded 2.7.5's
(`codec/whoosh3.py`), the version pyproject.toml pins; the tests compare every result with
Whoosh's own matchers.
"""

from __future__ import annotations

import io
import pickle
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.system import _INT_SIZE, unpack_int


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


class _Listed(NamedTuple):
    """A posting list's bytes (after its tag) and where they start in the postings file."""

    raw: bytes
    start: int


def blocks(m: W3LeafMatcher) -> Iterator[Block]:
    """Each block of `m`'s posting list, in order."""
    for block, _ in _listed(m):
        yield block


def all_postings(m: W3LeafMatcher) -> Iterator[Postings]:
    """Each block's postings of `m`'s posting list, in order."""
    for block, raw in _listed(m):
        yield postings(m, block, raw)


def _listed(m: W3LeafMatcher) -> Iterator[tuple[Block, _Listed]]:
    """Each block of `m`'s posting list and the list's bytes, read at once: one read of a few
    hundred KB costs less than a read of each header through Whoosh's file layers (~15 µs each,
    most of a phrase's time beside a word in 128 blocks)."""
    length = m._length[0] if isinstance(m._length, tuple) else m._length  # read back as unpack_int's 1-tuple
    listed = _Listed(m._postfile.get(m._baseoffset, m._startoffset + length - m._baseoffset), m._baseoffset)
    stream = io.BytesIO(listed.raw)
    position = 0
    while True:
        stream.seek(position)
        length = unpack_int(stream.read(_INT_SIZE))[0]
        info = pickle.Unpickler(stream).load()  # noqa: S301 - Whoosh's own header, which it unpickles too
        end = position + _INT_SIZE + abs(length)
        data = stream.tell()
        yield Block(listed.start + position, info[1], info[0], info[3], listed.start + data, listed.start + end), listed
        if length < 0:  # the last block's length is stored negated
            return
        position = end


def postings(m: W3LeafMatcher, block: Block, listed: _Listed | None = None) -> Postings:
    """`block`'s postings, as `m._read_ids`, `_read_weights` and `_read_values` would give them after
    `m._goto(block.position)`, with one read of bytes (none where `listed` holds them), one C unpickle
    and no loop in Python: Whoosh's took ~230 µs a block, most of a phrase's time at 300,000 papers."""
    if listed is None:
        raw = m._postfile.get(block.data, block.end - block.data)
    else:
        raw = listed.raw[block.data - listed.start : block.end - listed.start]
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
