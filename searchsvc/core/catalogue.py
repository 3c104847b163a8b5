"""What an engine builds a generation from, what an update changes, and what users asked: the
domain's side of `ingest.collection` and of the change journal, so engines need not know how
papers were read or merged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import Paper


class Catalogue(Protocol):
    """The distinct papers of a rebuild or update (`ingest.collection.Collection`), newest first."""

    records: int  # records read, merged into these papers (an update's: every one since the rebuild)
    # The journal's first `journal_entries` changes are in these papers: the engine keeps the count
    # with the generation it publishes, so an entry past it is a change that was never published.
    journal_entries: int

    @property
    def merged(self) -> int:
        """Records folded into a paper already read from another record."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Paper]: ...

    def __getitem__(self, paper_id: str) -> Paper: ...

    def catalogue(self, start: int = 0, end: int | None = None) -> Iterator[tuple[Paper, int]]:
        """Papers `start` to `end` of the newest-first order, each with its rank oldest first;
        a forked index writer reads its share this way."""

    def sizes(self) -> list[int]:
        """Each paper's size as stored (its text, mostly), newest first: what indexing it costs, roughly."""


@dataclass(frozen=True)
class Change:
    """What an update does to the published index: delete these ids, then index these papers
    (a changed paper is deleted under its old id and indexed again)."""

    deleted: list[str]
    added: list[Paper]


@dataclass(frozen=True)
class Idempotency:
    """A write sent with an `Idempotency-Key`: the key, scoped by its writer, and a digest of the
    request it was sent with, so that a retry is recognised and a key reused for another request
    is refused. `outcome` is what the change did (the lists of its report), answered again to a retry."""

    writer: str
    key: str
    request: str
    outcome: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"writer": self.writer, "key": self.key, "request": self.request, "outcome": self.outcome}

    @classmethod
    def from_record(cls, record: Any) -> Idempotency:
        if not isinstance(record, dict) or not isinstance(record.get("outcome"), dict):
            raise ValueError("its idempotency is not a JSON object with an outcome")
        return cls(str(record["writer"]), str(record["key"]), str(record["request"]), record["outcome"])


@dataclass(frozen=True)
class JournalEntry:
    """One add or remove as it was asked, kept in the change journal so every rebuild replays it:
    when, by whom, the records as read (before merging), the ids removed, and the key it was
    sent with, if any."""

    at: str
    by: str
    added: list[Paper] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    idempotency: Idempotency | None = None

    def record(self) -> dict[str, Any]:
        """As JSON data (a line of Whoosh's journal file, a document of OpenSearch's journal index);
        each paper as `Paper.encoded`, its sources included, so a replay merges exactly what was read."""
        record: dict[str, Any] = {
            "at": self.at,
            "by": self.by,
            "added": [paper.encoded() for paper in self.added],
            "removed": self.removed,
        }
        if self.idempotency is not None:
            record["idempotency"] = self.idempotency.record()
        return record

    @classmethod
    def from_record(cls, record: Any, where: str, number: int) -> JournalEntry:
        """The entry `record()` gave (or its JSON text); one that is not fails with `where:number:
        what is wrong`."""
        try:
            if isinstance(record, str | bytes):
                record = json.loads(record)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            added = [Paper.decoded(doc) for doc in record["added"]]
            removed = [str(paper_id) for paper_id in record["removed"]]
            keyed = record.get("idempotency")
            idempotency = None if keyed is None else Idempotency.from_record(keyed)
            return cls(str(record["at"]), str(record["by"]), added, removed, idempotency)
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceFormatError(
                where, number, f"not a change of the journal: {type(exc).__name__}: {exc}"
            ) from None

    def keyed(self, writer: str, key: str) -> bool:
        """Whether this change was sent by `writer` with idempotency key `key`."""
        return self.idempotency is not None and (self.idempotency.writer, self.idempotency.key) == (writer, key)
