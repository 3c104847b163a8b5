"""The blocks of one Whoosh posting list, found from their headers without Whoosh's file reads.

A whoosh3 posting list is a run of blocks of up to 128 postings, each a length, a pickled
header (postings, the largest document number, …) and the compressed postings. Whoosh finds a
document by stepping from header to header, and each step reads the header through its Python
file layers: ~45 µs, 100 ms for a word in most of 300,000 abstracts, paid on every search for a
phrase's matches of that word. Here each header is one read of bytes and one C unpickle (13 µs
measured at 300,000 papers); the blocks holding a wanted document are then read by Whoosh's own
matcher. The layout is whoosh-reloaded 2.7.5's (`codec/whoosh3.py`), the version pyproject.toml
pins; the tests compare every result with Whoosh's own matchers.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterator
from typing import Protocol

from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.system import _INT_SIZE, unpack_int

_HEAD_BYTES = 96  # a header pickles to ~40 bytes; read more and retry if it did not fit


class _PostingFile(Protocol):
    """What is read of Whoosh's posting file (a StructFile; Whoosh has no types)."""

    def get(self, position: int, length: int) -> bytes: ...


def headers(m: W3LeafMatcher) -> Iterator[tuple[int, int]]:
    """(position, largest document number) of each block of `m`'s posting list, in order."""
    postfile = m._postfile
    position = m._baseoffset
    while True:
        length, info = _header(postfile, position, _HEAD_BYTES)
        yield position, info[1]
        if length < 0:  # the last block's length is stored negated
            return
        position += _INT_SIZE + length


def _header(postfile: _PostingFile, position: int, size: int) -> tuple[int, tuple]:
    raw = postfile.get(position, size)
    try:
        info = pickle.Unpickler(io.BytesIO(raw[_INT_SIZE:])).load()  # noqa: S301 - Whoosh's own header, which it unpickles too
    except (EOFError, pickle.UnpicklingError):
        if len(raw) < size:  # the file ends here: the header is damaged, as Whoosh would find it
            raise
        return _header(postfile, position, size * 4)
    return unpack_int(raw[:_INT_SIZE])[0], info
