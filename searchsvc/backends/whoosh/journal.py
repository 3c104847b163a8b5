"""The change journal of a Whoosh index: a file beside it, `<index_dir>/changes.jsonl`.

One JSON object a line (`JournalEntry.record`), appended and fsync'd before the change is
published. The generation published with it keeps in its manifest how many lines it includes
(`JOURNAL_ENTRIES`); a line past that count belongs to a change that was never published (the
process died in between) and is cut off by the next change or rebuild (`keep_first`), as is a
line a crash cut short, which is no entry at all. A cut journal a killed process left unrenamed
(`TEMPORARY`) is removed with the other leftovers, under the index's lock.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from searchsvc.core.catalogue import JournalEntry
from searchsvc.host import fsync_dir

FILE_NAME = "changes.jsonl"
_TEMPORARY = (".changes-", ".jsonl")  # a cut journal, written then renamed over FILE_NAME (`keep_first`)
TEMPORARY = re.compile(rf"{re.escape(_TEMPORARY[0])}[A-Za-z0-9_]+{re.escape(_TEMPORARY[1])}")  # mkstemp's names


class FileJournal:
    """The changes kept in `directory` (the index folder): a `backends.ports.Journal`."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME

    def changes(self, first: int | None = None) -> Iterator[JournalEntry]:
        """The journal's changes in order, the first `first` of them (None: every complete line).
        A line that is not a change fails with `changes.jsonl:LINE: what is wrong`."""
        for number, line in enumerate(self._lines()[:first], start=1):
            yield JournalEntry.from_record(line, str(self.path), number)

    def __len__(self) -> int:
        """The complete lines, counted without splitting them: /readyz and each scrape ask."""
        return self._data().count(b"\n")

    def append(self, entry: JournalEntry) -> None:
        """Add `entry`, flushed to disk before this returns."""
        created = not self.path.exists()
        line = json.dumps(entry.record(), ensure_ascii=False) + "\n"
        with self.path.open("ab") as stream:
            stream.write(line.encode("utf-8"))
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
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=_TEMPORARY[0], suffix=_TEMPORARY[1])
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

    def find(self, writer: str, key: str, first: int) -> JournalEntry | None:
        """Read newest first; a line is parsed only if it holds the key's JSON text."""
        needle = json.dumps(key, ensure_ascii=False).encode("utf-8")
        lines = self._lines()[:first]
        for number in range(len(lines), 0, -1):
            if needle in lines[number - 1]:
                entry = JournalEntry.from_record(lines[number - 1], str(self.path), number)
                if entry.keyed(writer, key):
                    return entry
        return None

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
