"""The paper record: the one shape every source format is read into."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core.text import normalise_title

_NON_SLUG = re.compile(r"[^0-9a-z]+")
_SLUG_MAX_CHARS = 60


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
        }


def catalogue_key(year: int | None, paper_id: str, newest: bool = True) -> tuple[bool, int, str]:
    """Newest- (or oldest-) first order: undated papers last either way, ties by id.

    Every engine breaks ranking ties by this order (newest first), so equal scores list alike.
    """
    return (year is None, -(year or 0) if newest else (year or 0), paper_id)


def paper_id_for_title(title: str) -> str:
    """A stable, readable id for a record that has none: slug plus a hash of the title.

    The hash covers the whole normalised title, so two titles sharing the slug prefix
    still get different ids; the slug keeps ids recognisable in URLs and logs.
    """
    normalised = normalise_title(title)
    digest = hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:10]
    slug = _NON_SLUG.sub("-", normalised).strip("-")[:_SLUG_MAX_CHARS].rstrip("-")
    return f"{slug}-{digest}" if slug else digest
