"""Source files → paper records: finds the files and picks the reader for each format."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from searchsvc.core.errors import SearchsvcError, SourceFormatError
from searchsvc.core.paper import Paper
from searchsvc.ingest.jsonl import read_jsonl
from searchsvc.ingest.profile import read_profile

Reader = Callable[[Path, Callable[[str], None]], Iterator[Paper]]

READERS: dict[str, Reader] = {".txt": read_profile, ".jsonl": read_jsonl}


def discover(paths: Iterable[Path]) -> list[Path]:
    """The source files named by `paths`, folders expanded, in one sorted order.

    Sorting makes a rebuild independent of the order sources are named in.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(p for p in path.rglob("*") if p.suffix in READERS and p.is_file())
        elif path.is_file():
            if path.suffix not in READERS:
                raise SourceFormatError(
                    str(path),
                    1,
                    f"unsupported source format {path.suffix or '(none)'!r}: expected " + " or ".join(sorted(READERS)),
                )
            found.add(path)
        else:
            raise SearchsvcError(f"{path}: no such file or folder")
    return sorted(found)


def read_records(files: Iterable[Path], warn: Callable[[str], None]) -> Iterator[Paper]:
    """Stream the records of every file, in order, each through its format's reader."""
    for path in files:
        yield from READERS[path.suffix](path, warn)
