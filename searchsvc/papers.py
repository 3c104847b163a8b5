"""The paper record: the one shape every source format is read into."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field

_NON_WORD = re.compile(r"[\W_]+")
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


def fold(text: str) -> str:
    """Case- and accent-insensitive form of `text` (for matching names and titles)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def normalise_title(title: str) -> str:
    """The title's words, case- and accent-folded, so trivial variants compare equal.

    Letters of every script are kept: a title in Chinese or Greek must not normalise to ''.
    """
    return " ".join(_NON_WORD.sub(" ", fold(title)).split())


def paper_id_for_title(title: str) -> str:
    """A stable, readable id for a record that has none: slug plus a hash of the title.

    The hash covers the whole normalised title, so two titles sharing the slug prefix
    still get different ids; the slug keeps ids recognisable in URLs and logs.
    """
    normalised = normalise_title(title)
    digest = hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:10]
    slug = _NON_SLUG.sub("-", normalised).strip("-")[:_SLUG_MAX_CHARS].rstrip("-")
    return f"{slug}-{digest}" if slug else digest
