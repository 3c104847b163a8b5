"""The paper record: the one shape every source format is read into."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core.arrival import Arrival
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.publication import Publication
from searchsvc.core.text import normalise_title

_NON_SLUG = re.compile(r"[^0-9a-z]+")
_SLUG_MAX_CHARS = 60
# A paper id goes into URLs (/papers/<id>), HTML and file names, so it holds only characters
# that mean nothing special in any of them: `/` for arXiv's old ids (hep-th/9901001), `:` for
# DOIs and prefixes, never `..`, a leading `/`, spaces, markup or control characters.
MAX_ID_CHARS = 200
_ID = re.compile(rf"[A-Za-z0-9._:/-]{{1,{MAX_ID_CHARS}}}")
# What follows a paper's id in the address of one of its sub-pages (`/api/papers/<id>/related`,
# web/api.py): an id ending in it would be read as the other paper's sub-page.
SUB_PAGES = ("related",)


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where a record came from, so errors and merges can be traced back."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(slots=True)
class Paper:
    """One paper, as read from a source record or merged from several."""

    id: str
    title: str
    abstract: str
    year: int | None
    subjects: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    sources: list[SourceLocation] = field(default_factory=list)
    identifiers: Identifiers = field(default_factory=Identifiers)
    publication: Publication = field(default_factory=Publication)
    # When it entered this index and last changed here: kept by the merge state (ingest.collection)
    # beside the paper, never in it, so it is None while papers are read and merged.
    arrival: Arrival | None = None

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Paper:
        """A paper from the fields an engine stored for it (either engine stores the same ones)."""
        return cls(
            id=stored["id"],
            title=stored["title"],
            abstract=stored.get("abstract") or "",
            year=stored.get("year"),
            subjects=list(stored.get("subjects") or []),
            authors=list(stored.get("authors") or []),
            identifiers=Identifiers.from_stored(stored.get("identifiers")),
            publication=Publication.from_stored(stored.get("publication")),
            arrival=Arrival.from_stored(stored.get("added"), stored.get("changed")),
        )

    def stored(self) -> dict[str, Any]:
        """The fields an engine stores and gives back for `from_stored`."""
        return {
            "id": self.id,
            "title": self.title,
            "abstract": self.abstract,
            "year": self.year,
            "subjects": self.subjects,
            "authors": self.authors,
            "identifiers": self.identifiers.stored(),
            "publication": self.publication.stored(self.authors),
            "added": self.arrival.added if self.arrival else None,
            "changed": self.arrival.changed if self.arrival else None,
        }

    def encoded(self) -> str:
        """The whole paper, sources included, as one compact JSON text: how the merge state
        (`ingest.collection`) and the change journal keep papers."""
        ids = self.identifiers
        sources = [[source.path, source.line] for source in self.sources]
        fields = [self.id, self.title, self.abstract, self.year, self.subjects, self.authors, sources]
        publication = self.publication.stored(self.authors)
        return json.dumps([*fields, [ids.arxiv, ids.doi, ids.url], publication], ensure_ascii=False)

    @classmethod
    def decoded(cls, doc: str, paper_id: str | None = None) -> Paper:
        """A paper as `encoded` wrote it (its identifiers were normalised when read), with its final
        id. Journals written before papers had a publication (issue #31) decode without one."""
        own_id, title, abstract, year, subjects, authors, sources, (arxiv, doi, url), *rest = json.loads(doc)
        located = [SourceLocation(path, line) for path, line in sources]
        publication = Publication.from_stored(rest[0]) if rest else Publication()
        ids = Identifiers(arxiv, doi, url)
        return cls(paper_id or own_id, title, abstract, year, subjects, authors, located, ids, publication)


def catalogue_key(year: int | None, paper_id: str, newest: bool = True) -> tuple[bool, int, str]:
    """Newest- (or oldest-) first order: undated papers last either way, ties by id (a rebuild's
    scratch store sorts by the same rule in SQL: `ingest.collection`).

    Every engine breaks ranking ties by this order (newest first), so equal scores list alike.
    """
    return (year is None, -(year or 0) if newest else (year or 0), paper_id)


def catalogue_tie(year: int | None, paper_id: str) -> str:
    """`catalogue_key` (newest first) as one string that sorts alike, so that papers fetched by
    different requests of one search (a tier's candidates, those found by meaning) break ties
    alike without being ranked all together. Years are 4 digits (ingest.fields)."""
    return f"1{paper_id}" if year is None else f"0{9999 - year:04d}{paper_id}"


def paper_id_for_title(title: str) -> str:
    """A stable, readable id for a record that has none: slug plus a hash of the title.

    The hash covers the whole normalised title, so two titles sharing the slug prefix
    still get different ids; the slug keeps ids recognisable in URLs and logs.
    """
    normalised = normalise_title(title)
    digest = hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:10]
    slug = _NON_SLUG.sub("-", normalised).strip("-")[:_SLUG_MAX_CHARS].rstrip("-")
    return f"{slug}-{digest}" if slug else digest


def id_problem(paper_id: str) -> str | None:
    """Why `paper_id` cannot be a paper's id, or None if it can."""
    if not 1 <= len(paper_id) <= MAX_ID_CHARS:
        return f"must be 1 to {MAX_ID_CHARS} characters long, found {len(paper_id):,}"
    if not _ID.fullmatch(paper_id):
        bad = next(char for char in paper_id if not _ID.fullmatch(char))
        return f"may hold only letters A-Z and a-z, digits and . _ : / -, found {bad!r}"
    if paper_id.startswith("/") or ".." in paper_id:
        return "must not start with / or contain .."
    segments = paper_id.split("/")
    # Browsers drop a `.` segment from a link (RFC 3986) and proxies merge `//` (nginx's
    # merge_slashes): the link would lead to another address.
    if "." in segments or "" in segments:
        return "must not have a part between slashes that is . or empty (./x, a//b, x/): its link leads elsewhere"
    if len(segments) > 1 and segments[-1] in SUB_PAGES:
        return f"must not end in /{segments[-1]}: that is the address of a paper's sub-page"
    return None
