"""What an engine builds a generation from, and what an update changes: the domain's side of
`ingest.collection`, so engines need not know how papers were read or merged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from searchsvc.core.paper import Paper


class Catalogue(Protocol):
    """The distinct papers of a rebuild or update (`ingest.collection.Collection`), newest first."""

    records: int  # records read, merged into these papers (an update's: every one since the rebuild)

    @property
    def merged(self) -> int:
        """Records folded into a paper already read from another record."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Paper]: ...

    def __getitem__(self, paper_id: str) -> Paper: ...

    def catalogue(self, start: int = 0, end: int | None = None) -> Iterator[tuple[Paper, int]]:
        """Papers `start` to `end` of the newest-first order, each with its rank oldest first;
        a forked index writer reads its share this way."""


@dataclass(frozen=True)
class Change:
    """What an update does to the published index: delete these ids, then index these papers
    (a changed paper is deleted under its old id and indexed again)."""

    deleted: list[str]
    added: list[Paper]
