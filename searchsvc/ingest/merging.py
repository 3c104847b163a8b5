"""Records → papers: the same paper listed in several sources becomes one.

Two records are the same paper when they share a DOI, an arXiv id (any version) or a paper id
(which, for a record without an id of its own, is derived from its normalised title). A record
can join papers read apart (a DOI from one, an arXiv id from another): they become one, so the
papers do not depend on the order the records arrive in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from searchsvc.core.paper import Paper, paper_id_for_title
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


class _Group:
    """One paper being merged, the keys it answers to, and every id its records carried."""

    __slots__ = ("order", "paper", "keys", "ids", "own_ids")

    def __init__(self, order: int, paper: Paper) -> None:
        self.order = order  # the first paper read keeps its title, year and abstract
        self.paper = paper
        self.keys = _keys(paper)
        self.ids = {paper.id}
        self.own_ids = _own_id(paper)  # every record's id came from its source, none from its title


def merge_records(records: Iterable[Paper], warn: Callable[[str], None]) -> Collection:
    """Merge records that share an identifier; each paper is held once, whatever the input size."""
    by_key: dict[str, _Group] = {}
    groups: dict[int, _Group] = {}  # by id() of the group: the live ones, in first-read order
    count = 0
    for record in records:
        count += 1
        keys = _keys(record)
        matches = list({id(g): g for g in _same_paper(record, keys, by_key, warn)}.values())
        if not matches:
            group = _Group(count, record)
            groups[id(group)] = group
        else:
            group, *others = sorted(matches, key=lambda g: g.order)
            for other in others:
                _merge_into(group.paper, other.paper, warn)
                group.keys.extend(k for k in other.keys if k not in group.keys)
                group.ids |= other.ids
                group.own_ids = group.own_ids and other.own_ids
                del groups[id(other)]
            _merge_into(group.paper, record, warn)
            group.keys.extend(k for k in keys if k not in group.keys)
            group.ids.add(record.id)
            group.own_ids = group.own_ids and _own_id(record)
        for key in group.keys:
            owner = by_key.get(key)
            if owner is None or id(owner) not in groups:  # a DOI kept apart stays its first paper's
                by_key[key] = group
    papers: dict[str, Paper] = {}
    for group in groups.values():
        # The smallest id of all the paper's records: the same whatever order they were read in.
        group.paper.id = min(group.ids)
        papers[group.paper.id] = group.paper
    return Collection(papers, count)


def _same_paper(
    record: Paper, keys: list[str], by_key: dict[str, _Group], warn: Callable[[str], None]
) -> Iterator[_Group]:
    """The papers read so far that `record` is: by id, or by DOI or arXiv id.

    A DOI or arXiv id joins records whatever their titles (a preprint is often renamed when
    published), unless both records have ids of their own from their sources, which then say
    they are two papers: a shared DOI under another title and another id is a slip in the data
    (the ACL records give W18-6482 the DOI of W18-6481), so the two are kept apart, with a warning.
    """
    title = normalise_title(record.title)
    for key in keys:
        group = by_key.get(key)
        if group is None:
            continue
        if (
            key.startswith("id:")
            or normalise_title(group.paper.title) == title
            or not (group.own_ids and _own_id(record))
        ):
            yield group
        else:
            warn(
                f"{record.sources[0]}: {key} is also {group.paper.sources[0]}'s, a paper with another title; kept apart"
            )


def _own_id(paper: Paper) -> bool:
    """Whether the paper's id came from its source, not from its title."""
    return paper.id != paper_id_for_title(paper.title)


def _keys(paper: Paper) -> list[str]:
    return [f"id:{paper.id}", *paper.identifiers.merge_keys()]


def _merge_into(paper: Paper, other: Paper, warn: Callable[[str], None]) -> None:
    """Union the lists; keep the first value of each scalar and fill in what it lacks."""
    first, later = paper.sources[0], other.sources[0]
    if normalise_title(paper.title) != normalise_title(other.title) and paper.id == other.id:
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
    paper.identifiers = paper.identifiers.filled_from(other.identifiers)
