"""Each segment's unstemmed title and abstract as word sequences, a paper's words in order.

A segment holds the pair of two adjacent words only where each is in more than PAIRED_ABOVE of
its papers (schema.py). A phrase with a rarer word was found from its words' positions, and a
common word's positions in the rarer word's few papers sit in most of its posting blocks, each
decoded cold at ~77 µs ("with bayesian" 12 ms against 3.6 with every pair indexed;
docs/performance.md, "Rebuilds"). Here those few papers are read as sequences and the phrase
is looked for in them (`SegmentWords.holding`), the common word's blocks untouched.

A word is stored as its CRC-32. Hashes that two of the segment's words share are listed in the
file, and a phrase with such a word is left to the positions (`holding` returns None), so a
match is exact. The file is written by the segment's writer (`SequenceWriter`), beside the
segment, and never changed, like segment_arrays' files; a segment without one (written before
them, or with a damaged file, logged) is matched from positions as before.

The file (little-endian): the sequence (uint32 hashes), streamed as papers are added so that a
writer's memory stays flat; the shared hashes (uint32); each document's end in the sequence
(uint64); a trailer with a magic, the document count and the shared hashes' count.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from zlib import crc32

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

FILE_PREFIX = "words-"  # then the segment's id and the field; not Whoosh's `MAIN_`, whose files Whoosh cleans up
_MAGIC = b"SSWORDS1"
_TRAILER = struct.Struct("<8sQQ")
_UINT32 = np.dtype("<u4")
_UINT64 = np.dtype("<u8")
_FLUSH_WORDS = 1 << 20  # words buffered before they are written: 4 MB
_HASHES_KEPT = 200_000  # words whose hash is kept per process, about 30 MB at most
Ints = npt.NDArray[np.integer]


def file_name(segment_id: str, field: str) -> str:
    return f"{FILE_PREFIX}{segment_id}.{field}"


def word_hash(word: bytes) -> int:
    return crc32(word)


class _Hashes(dict[bytes, int]):
    """word → its hash, computed on first sight; cleared when full, so it cannot grow with the collection."""

    def __missing__(self, word: bytes) -> int:
        if len(self) >= _HASHES_KEPT:
            self.clear()
        found = self[word] = word_hash(word)
        return found


_HASHES = _Hashes()


class SequenceWriter:
    """One field's sequences while a segment is written, into the file beside it (`storage`:
    Whoosh's, of the generation's folder)."""

    def __init__(self, storage: Any, segment_id: str, field: str) -> None:
        self._storage, self._name = storage, file_name(segment_id, field)
        self._stream: Any = None  # made at the first write: a writer that adds nothing leaves no file
        self._buffer = array("I")  # the sequence from `_written` on
        self._written = 0
        self._ends = array("Q")  # document number → where its words end in the sequence
        self._terms = array("I")  # the hash of each of the field's terms (`note_term`)

    def add(self, docnum: int, words: Sequence[bytes]) -> None:
        self._end_at(docnum)
        if len(self._buffer) >= _FLUSH_WORDS:  # every word buffered is a finished document's
            self._flush()
        self._buffer.extend(map(_HASHES.__getitem__, words))
        self._ends.append(self._written + len(self._buffer))

    def note_term(self, term: bytes) -> None:
        """Told each of the field's terms as the segment's postings are written: the words its
        sequences hold, whose shared hashes the file lists."""
        self._terms.append(word_hash(term))

    def finish(self, doc_count: int) -> None:
        self._end_at(doc_count)
        self._flush()
        unique, counts = np.unique(np.frombuffer(self._terms, dtype=np.uint32), return_counts=True)
        shared = unique[counts > 1]
        try:
            self._stream.write(shared.astype(_UINT32).tobytes())
            self._stream.write(np.frombuffer(self._ends, dtype=np.uint64).astype(_UINT64).tobytes())
            self._stream.write(_TRAILER.pack(_MAGIC, doc_count, len(shared)))
        finally:
            self._stream.close()

    def _flush(self) -> None:
        if self._stream is None:
            self._stream = self._storage.create_file(self._name)
        self._stream.write(np.frombuffer(self._buffer, dtype=np.uint32).astype(_UINT32).tobytes())
        self._written += len(self._buffer)
        del self._buffer[:]

    def _end_at(self, docnum: int) -> None:
        """Hold the sequences of documents before `docnum` only: those without the field hold no
        words, and a document whose adding failed (and whose number the next one takes) none;
        its words are still buffered, as `add` writes only before a document is added."""
        if len(self._ends) > docnum:
            del self._ends[docnum:]
            del self._buffer[(self._ends[-1] if docnum else 0) - self._written :]
        self._ends.extend([self._written + len(self._buffer)] * (docnum - len(self._ends)))


class SegmentWords:
    """One segment's sequences of one field, read from its file: the document ends at once (8
    bytes a document), the words of the few documents asked for as they are asked for. Not
    memory-mapped, for the reason whoosh/unmapped.py gives."""

    def __init__(self, path: Path, starts: Ints, shared: frozenset[int]) -> None:
        self._path = path
        self._starts = starts  # document number → where its words start; one more: where the last ends
        self.shared = shared

    @classmethod
    def read(cls, path: Path, doc_count: int) -> SegmentWords:
        """Raises ValueError or OSError when the file is not what it should be: bytes on disk are untrusted."""
        with path.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size < _TRAILER.size:
                raise ValueError("it is too short")
            stream.seek(size - _TRAILER.size)
            magic, count, shared = _TRAILER.unpack(stream.read(_TRAILER.size))
            if magic != _MAGIC:
                raise ValueError("not a words file")
            if count != doc_count:
                raise ValueError(f"holds {count} documents, not {doc_count}")
            tables = 4 * shared + 8 * count
            if tables > size - _TRAILER.size:
                raise ValueError("it is too short")
            stream.seek(size - _TRAILER.size - tables)
            hashes = frozenset(np.frombuffer(_read(stream, 4 * shared), dtype=_UINT32).tolist())
            ends = np.frombuffer(_read(stream, 8 * count), dtype=_UINT64).astype(np.int64)
        starts = np.concatenate(([0], ends))
        if np.any(np.diff(starts) < 0) or 4 * int(starts[-1]) != size - _TRAILER.size - tables:
            raise ValueError("its document ends do not match its size")
        return cls(path, starts, hashes)

    def beside(self, directory: Path) -> SegmentWords:
        """The same sequences read from `directory`, a later generation the file is linked into: the
        generation this was read from is removed once no reader holds it."""
        return SegmentWords(directory / self._path.name, self._starts, self.shared)

    def holding(self, docs: Ints, words: Sequence[bytes]) -> Ints | None:
        """Those of `docs` (document numbers in the segment, ascending) where `words` stand side by
        side in this order; None when a word's hash is shared, so only positions can tell."""
        hashes = [word_hash(word) for word in words]
        if self.shared.intersection(hashes):
            return None
        starts = self._starts[docs]
        lengths = self._starts[docs + 1] - starts
        places = zip((4 * lengths).tolist(), (4 * starts).tolist(), strict=True)
        try:
            fd = os.open(self._path, os.O_RDONLY)
            try:
                read = b"".join([os.pread(fd, size, at) for size, at in places])
            finally:
                os.close(fd)
        except OSError as exc:  # the file is the segment's, checked when read: said, and the positions decide
            log.warning("matching a phrase from positions, not %s: %s", self._path, exc)
            return None
        sequence = np.frombuffer(read, dtype=_UINT32)
        if len(sequence) != int(lengths.sum()):
            log.warning("matching a phrase from positions, not %s: it ended early", self._path)
            return None
        return docs[_phrase_in(sequence, np.cumsum(lengths), hashes)]


def _phrase_in(sequence: Ints, ends: Ints, hashes: Sequence[int]) -> Ints:
    """The indices (ascending, distinct) of the documents, back to back in `sequence` up to each
    of `ends`, holding `hashes` side by side."""
    size = len(sequence) - len(hashes) + 1
    if size <= 0:
        return np.empty(0, dtype=np.int64)
    matches = sequence[:size] == hashes[0]
    for offset, value in enumerate(hashes[1:], 1):
        matches &= sequence[offset : offset + size] == value
    begins = np.flatnonzero(matches)
    documents = np.searchsorted(ends, begins, side="right")
    documents = documents[begins + len(hashes) <= ends[documents]]  # ascending, a document once per match
    return documents[np.concatenate(([True], documents[1:] != documents[:-1]))] if len(documents) else documents


def _read(stream: Any, size: int) -> bytes:
    found: bytes = stream.read(size)
    if len(found) != size:
        raise ValueError("it ends early")
    return found


class GenerationWords:
    """The sequences of a generation's segments, read once each, by segment id and field: a
    segment's file never changes, so an update's generation takes its previous one's."""

    def __init__(self, directory: Path, previous: GenerationWords | None = None) -> None:
        self._directory = directory
        self._opened: dict[tuple[str, str], SegmentWords | None] = {}
        if previous is not None:  # each segment's file is linked into this generation too
            self._opened = {
                key: None if words is None else words.beside(directory) for key, words in previous._opened.items()
            }

    def of(self, segment_id: str, field: str, doc_count: int) -> SegmentWords | None:
        key = (segment_id, field)
        if key not in self._opened:
            self._opened[key] = self._open(segment_id, field, doc_count)
        return self._opened[key]

    def _open(self, segment_id: str, field: str, doc_count: int) -> SegmentWords | None:
        path = self._directory / file_name(segment_id, field)
        if not path.exists():
            return None
        try:
            return SegmentWords.read(path, doc_count)
        except (OSError, ValueError, struct.error) as exc:
            log.warning("matching phrases in segment %s from positions, not %s: %s", segment_id, path, exc)
            return None


def drop_unused(generation: Path, segment_ids: Iterable[str]) -> None:
    """Remove the files of segments no longer in `generation` (merged away by an update)."""
    kept = set(segment_ids)
    for path in generation.glob(f"{FILE_PREFIX}*"):
        if path.name[len(FILE_PREFIX) :].rsplit(".", 1)[0] not in kept:
            path.unlink()
