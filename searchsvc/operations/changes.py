"""The changes made since the sources, as the engine's journal keeps them (`Backend.journal`):
listed, counted, and exported as a source file, so that they can be moved into the sources."""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends import Backend
from searchsvc.core.catalogue import JournalEntry
from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.operations.published import published_changes
from searchsvc.operations.update import ChangeReport, replayed


def kept(backend: Backend) -> list[JournalEntry]:
    """The changes every rebuild replays, oldest first: those published (a change whose process
    died before publishing is no change, though its entry may still be in the journal)."""
    journal = backend.journal()
    return list(journal.changes(published_changes(backend, journal)))


def count(backend: Backend) -> int:
    journal = backend.journal()
    return min(len(journal), published_changes(backend, journal))


def made_under(backend: Backend, writer: str, key: str) -> ChangeReport | None:
    """The report of the published change `writer` made under idempotency key `key`; None if none is."""
    journal = backend.journal()
    entry = journal.find(writer, key, published_changes(backend, journal))
    return None if entry is None else replayed(backend, entry)


def export(backend: Backend, file: Path) -> tuple[int, int]:
    """Write the papers the changes added to `file` as JSON lines (`ingest.jsonl`'s records);
    return how many, and how many removals a file of records cannot say."""
    changes = kept(backend)
    added = [paper for change in changes for paper in change.added]
    file.write_text("".join(EXPORT_FORMATS["jsonl"].write(added)), encoding="utf-8")
    return len(added), sum(len(change.removed) for change in changes)
