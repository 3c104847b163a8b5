"""Records → papers: the same paper listed in several sources becomes one.

Two records are the same paper when they share a DOI, an arXiv id (any version) or a paper id
(which, for a record without an id of its own, is derived from its normalised title). A record
can join papers read apart (a DOI from one, an arXiv id from another): they become one, so the
papers do not depend on the order the records arrive in.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from searchsvc.core.catalogue import JournalEntry
from searchsvc.core.paper import Paper, paper_id_for_title
from searchsvc.core.text import normalise_title
from searchsvc.ingest.collection import Collection, Group, MergeStore
from searchsvc.ingest.field_limits import DEFAULT_LIMITS, FieldLimits, limited


@dataclass
class Replayed:
    """What a rebuild took from the journal after its sources: changes, records added, papers removed."""

    changes: int = 0
    added: int = 0
    removed: int = 0


def merge_records(
    records: Iterable[Paper],
    warn: Callable[[str], None],
    scratch: Path | None = None,
    changes: Iterable[JournalEntry] = (),
    replayed: Replayed | None = None,
    limits: FieldLimits = DEFAULT_LIMITS,
    previous: Path | None = None,
) -> Collection:
    """Merge records that share an identifier, on disk in a folder made in `scratch` (None: the
    system's temporary directory; `ingest.collection`): memory stays flat whatever the input size.
    Then replay `changes` (the journal's, in order) by the same rules: their records merge with
    the sources' papers, their removed ids go, counted in `replayed`. Every paper keeps within
    `limits`, merged ones and those of changes journaled before limits existed too. The papers the
    `previous` generation's collection file holds keep their arrivals (`core.arrival`); the others
    arrive now. Close the collection when done."""
    store = MergeStore(scratch)
    tally = Replayed() if replayed is None else replayed
    try:
        with store.failures_explained():
            replayed_records = _replay(store, changes, tally, limits, warn)
            merged = merge_into(store, itertools.chain(records, replayed_records), warn, limits)
            return store.finish(merged, tally.changes, previous=previous)
    except BaseException:
        store.discard()
        raise


def _replay(
    store: MergeStore,
    changes: Iterable[JournalEntry],
    tally: Replayed,
    limits: FieldLimits,
    warn: Callable[[str], None],
) -> Iterator[Paper]:
    """Each change's records, then its removals, made as `merge_into` asks for the next record."""
    for change in changes:
        tally.changes += 1
        tally.added += len(change.added)
        yield from (limited(paper, limits, warn) for paper in change.added)
        tally.removed += sum(store.remove(paper_id) for paper_id in change.removed)


def merge_into(
    store: MergeStore, records: Iterable[Paper], warn: Callable[[str], None], limits: FieldLimits = DEFAULT_LIMITS
) -> int:
    """Merge `records` into the papers `store` holds (read before them); return how many
    records the store has merged in all, these included. A merged paper's lists are kept within
    `limits` as each record's are, warned about at the record that passed them."""
    count = store.records_before
    for record in records:
        count += 1
        keys, title = _keys(record), normalise_title(record.title)
        matches = list({g.number: g for g in _same_paper(record, title, keys, store, warn)}.values())
        if not matches:
            number, paper = count, record
            min_id, own_ids = record.id, _own_id(record)
        else:
            group, *others = sorted(matches, key=lambda g: g.number)
            number, paper, title = group.number, store.paper(group.number), group.title  # the first read's
            for other in others:
                _merge_into(paper, store.paper(other.number), warn)
                store.absorb(number, other.number)
            _merge_into(paper, record, warn)
            limited(paper, limits, warn, where=f"{record.sources[0]}, merged with {paper.sources[0]}")
            # The smallest id of all the paper's records: the same whatever order they were read in.
            min_id = min(record.id, *(g.min_id for g in matches))
            own_ids = _own_id(record) and all(g.own_ids for g in matches)
        store.put(number, paper, title, min_id, own_ids)
        store.claim(keys, number)
    return count


def _same_paper(
    record: Paper, title: str, keys: list[str], store: MergeStore, warn: Callable[[str], None]
) -> Iterator[Group]:
    """The papers read so far that `record` is: by id, or by DOI or arXiv id.

    A DOI or arXiv id joins records whatever their titles (a preprint is often renamed when
    published), unless both records have ids of their own from their sources, which then say
    they are two papers: a shared DOI under another title and another id is a slip in the data
    (the ACL records give W18-6482 the DOI of W18-6481), so the two are kept apart, with a warning.
    """
    owners = dict(store.groups_of(keys))
    for key in keys:
        group = owners.get(key)
        if group is None:
            continue
        if key.startswith("id:") or group.title == title or not (group.own_ids and _own_id(record)):
            yield group
        else:
            warn(f"{record.sources[0]}: {key} is also {group.first_source}'s, a paper with another title; kept apart")


def _own_id(paper: Paper) -> bool:
    """Whether the paper's id came from its source, not from its title."""
    return paper.id != paper_id_for_title(paper.title)


def _keys(paper: Paper) -> list[str]:
    return [f"id:{paper.id}", *paper.identifiers.merge_keys()]


def _merge_into(paper: Paper, other: Paper, warn: Callable[[str], None]) -> None:
    """Union the lists; keep the first value of each scalar and fill in what it lacks, and the
    publication's by its own rules (`Publication.merged_with`)."""
    first, later = paper.sources[0], other.sources[0]
    if normalise_title(paper.title) != normalise_title(other.title) and paper.id == other.id:
        warn(f"{later}: id {paper.id!r} is also used by {first} for another title; keeping {first}'s")
    if paper.year is None:
        paper.year = other.year
    elif other.year is not None and other.year != paper.year:
        warn(f"{later}: {paper.id!r} has year {other.year}, {first} says {paper.year}; keeping {paper.year}")
    if not paper.abstract:
        paper.abstract = other.abstract
    paper.publication = paper.publication.merged_with(other.publication, paper.year)
    paper.subjects.extend(s for s in other.subjects if s not in paper.subjects)
    paper.authors.extend(a for a in other.authors if a not in paper.authors)
    paper.sources.extend(other.sources)
    paper.identifiers = paper.identifiers.filled_from(other.identifiers)
