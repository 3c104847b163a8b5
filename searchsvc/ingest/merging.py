"""Records → papers: the same paper listed in several sources becomes one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from searchsvc.core.paper import Paper
from searchsvc.core.text import normalise_title


@dataclass
class Collection:
    """The distinct papers of a rebuild, keyed by id, and how many records they came from."""

    papers: dict[str, Paper]
    records: int

    @property
    def merged(self) -> int:
        """Records folded into a paper already read from another record."""
        return self.records - len(self.papers)


def merge_records(records: Iterable[Paper], warn: Callable[[str], None]) -> Collection:
    """Merge records that share an id; each paper is held once, whatever the input size."""
    papers: dict[str, Paper] = {}
    count = 0
    for record in records:
        count += 1
        existing = papers.get(record.id)
        if existing is None:
            papers[record.id] = record
        else:
            _merge_into(existing, record, warn)
    return Collection(papers, count)


def _merge_into(paper: Paper, other: Paper, warn: Callable[[str], None]) -> None:
    """Union the lists; keep the first value of each scalar and fill in what it lacks."""
    first, later = paper.sources[0], other.sources[0]
    if normalise_title(paper.title) != normalise_title(other.title):
        warn(f"{later}: id {paper.id!r} is also used by {first} for another title; keeping {first}'s")
    if paper.year is None:
        paper.year = other.year
    elif other.year is not None and other.year != paper.year:
        warn(f"{later}: {paper.id!r} has year {other.year}, {first} says {paper.year}; keeping {paper.year}")
    if not paper.abstract:
        paper.abstract = other.abstract
    paper.subjects.extend(s for s in other.subjects if s not in paper.subjects)
    paper.authors.extend(a for a in other.authors if a not in paper.authors)
    paper.sources.extend(other.sources)
