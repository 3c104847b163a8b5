"""Opening a generation's Whoosh index through file handles, never memory-mapped.

Whoosh maps index files by default, and a mapped file counts in the process's RSS as it is
read: a web worker grew with the index it touched (docs/performance.md, "Figures behind the
code"), and a rebuild checking its new 300,000-paper generation peaked at 870 MiB just to
count the documents (85 MiB unmapped). The kernel's page cache keeps the files either way.
"""

from __future__ import annotations

from pathlib import Path

from whoosh.codec.base import Segment
from whoosh.fields import Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.index import Index
from whoosh.reading import SegmentReader


def open_index(directory: Path) -> Index:
    return FileStorage(str(directory), supports_mmap=False).open_index()


def open_segment(directory: Path, schema: Schema, segment: Segment) -> SegmentReader:
    """A reader of one segment in `directory`, written but not yet committed (a rebuild's writer's)."""
    return SegmentReader(FileStorage(str(directory), supports_mmap=False), schema, segment)
