"""What users wrote: every add and remove, kept beside the index so that a rebuild replays them.

A rebuild reads the sources, which do not hold the papers added through `searchsvc add` or the
write API, and still hold those removed. So each change is appended here, the records as they
were read (before merging) and the ids removed, and flushed to disk before the change is
published; every rebuild merges the sources and then replays these changes by the same rules.

One JSON object a line, `<index_dir>/changes.jsonl`. A change is published with the collection
file that records how many lines it includes (`collection.journal_entries_of`); a line past that
count belongs to a change that was never published (the process died in between) and is cut off
by the next change or rebuild (`keep_first`), so a change is in both or in neither.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import Paper
from searchsvc.host import fsync_dir
from searchsvc.ingest.collection import decode_paper, encode_paper

FILE_NAME = "changes.jsonl"


@dataclass(frozen=True)
class Change:
    """One add or remove as it was asked: when, by whom, the records read and the ids removed."""

    at: str
    by: str
    added: list[Paper] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def line(self) -> str:
        added = [encode_paper(paper) for paper in self.added]
        record = {"at": self.at, "by": self.by, "added": added, "removed": self.removed}
        return json.dumps(record, ensure_ascii=False) + "\n"


class Journal:
    """The changes kept in `directory` (the index folder)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME

    def changes(self, first: int | None = None) -> Iterator[Change]:
        """The journal's changes in order, the first `first` of them (None: every complete line).
        A line that is not a change fails with `changes.jsonl:LINE: what is wrong`."""
        for number, line in enumerate(self._lines()[:first], start=1):
            yield _change(line, self.path, number)

    def __len__(self) -> int:
        """The complete lines, counted without splitting them: /readyz and each scrape ask."""
        return self._data().count(b"\n")

    def append(self, change: Change) -> None:
        """Add `change`, flushed to disk before this returns."""
        created = not self.path.exists()
        with self.path.open("ab") as stream:
            stream.write(change.line().encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        if created:
            fsync_dir(self.path.parent)

    def keep_first(self, count: int) -> int:
        """Cut the journal to its first `count` changes (those published), a line cut short by a
        crash included; how many changes were cut."""
        data = self._data()
        lines = _complete_lines(data)
        kept = b"".join(lines[:count])
        if kept == data:
            return 0
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".changes-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(kept)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        fsync_dir(self.path.parent)
        return max(0, len(lines) - count)

    def _lines(self) -> list[bytes]:
        return _complete_lines(self._data())

    def _data(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""


def _complete_lines(data: bytes) -> list[bytes]:
    """Every complete line: one cut short by a crash while appending is not a change."""
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


def _change(line: bytes, path: Path, number: int) -> Change:
    try:
        record: Any = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        added = [decode_paper(doc) for doc in record["added"]]
        removed = [str(paper_id) for paper_id in record["removed"]]
        return Change(str(record["at"]), str(record["by"]), added, removed)
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceFormatError(
            str(path), number, f"not a change of the journal: {type(exc).__name__}: {exc}"
        ) from None
