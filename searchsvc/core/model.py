"""Search requests and results as plain data: what every backend takes and returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from searchsvc.core.arrival import Arrival
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication, date_bounds

if TYPE_CHECKING:  # the ranking policy it explains answers searches: a rebuild's fingerprint must not follow it
    from searchsvc.core.explanation import Explanation

SORTS = ("relevance", "newest", "oldest", "cited", "added")
FACETS = ("year", "subject", "author", "venue")
LIST_FACETS = ("subject", "author", "venue")  # the facets chosen by value, several at once (year is a range)


@dataclass(frozen=True)
class SearchRequest:
    """A validated search: the query string, facet filters, sort and page."""

    q: str = ""
    subject: tuple[str, ...] = ()
    author: tuple[str, ...] = ()
    venue: tuple[str, ...] = ()
    year_from: int | None = None
    year_to: int | None = None
    # ISO dates as precise as wanted (core.publication.iso_date): a paper is in the range when a day
    # its date may stand for is (a paper of "2021" is in a range from 2021-06-01).
    date_from: str | None = None
    date_to: str | None = None
    # Seconds since 1970 (core.arrival.since_second): only papers added to this index at or after it.
    added_since: int | None = None
    sort: str = "relevance"
    page: int = 1
    per_page: int = 10
    exact: bool = False  # the words only as typed: no typo matches, no other forms (core.typos, core.synonyms)
    explain: bool = False  # each hit's score taken apart (core.explanation), when ranked by relevance

    @property
    def start(self) -> int:
        """Offset of the page's first result in the whole ordered result list."""
        return (self.page - 1) * self.per_page

    @property
    def end(self) -> int:
        return self.page * self.per_page

    @property
    def filtered(self) -> bool:
        """Whether any facet filter narrows the papers."""
        return bool(
            self.subject or self.author or self.venue or self.dated or self.years or self.added_since is not None
        )

    @property
    def years(self) -> bool:
        """Whether a year range narrows the papers."""
        return self.year_from is not None or self.year_to is not None

    @property
    def dated(self) -> bool:
        """Whether a date range narrows the papers."""
        return self.date_from is not None or self.date_to is not None

    @cached_property
    def day_range(self) -> tuple[int, int]:
        """The date range as the numbers YYYYMMDD of its first and last day (core.publication.date_bounds),
        worked out once: a filter compares it with each of thousands of distinct dates."""
        low = date_bounds(self.date_from)[0] if self.date_from else 0
        high = date_bounds(self.date_to)[1] if self.date_to else 99991231
        return low, high

    def date_selected(self, date: str) -> bool:
        """Whether a paper of `date` (ISO, as precise as known; '' if unknown) may lie in the date range."""
        if not date:
            return not self.dated
        first, last = date_bounds(date)
        low, high = self.day_range
        return last >= low and first <= high

    def year_selected(self, year: int) -> bool:
        """Whether `year` lies inside the requested year range (if one is set)."""
        if self.year_from is None and self.year_to is None:
            return False
        return (self.year_from is None or year >= self.year_from) and (self.year_to is None or year <= self.year_to)


@dataclass(frozen=True)
class FacetLookupRequest:
    """Values of a facet starting with `prefix`, counted under `search`'s query and filters."""

    search: SearchRequest
    prefix: str
    limit: int


@dataclass(frozen=True)
class SuggestRequest:
    """Completions of `q`'s last word (as typed: a space after it says it is finished) among the
    papers `search`'s filters let through."""

    q: str
    search: SearchRequest
    limit: int


@dataclass(frozen=True)
class ExportRequest:
    """A download: the papers `ids` names, in that order, or else the results of `search`."""

    search: SearchRequest
    format: str
    ids: tuple[str, ...] = ()


@dataclass
class Hit:
    """One paper in a result page, with HTML-escaped highlights of its title and abstract."""

    id: str
    title: str
    abstract: str
    year: int | None
    subjects: list[str]
    authors: list[str]
    score: float | None
    highlights: dict[str, str]
    identifiers: Identifiers = field(default_factory=Identifiers)
    publication: Publication = field(default_factory=Publication)
    matched: str | None = None  # "identifier": the query was this paper's arXiv id or DOI
    arrival: Arrival | None = None
    explanation: Explanation | None = None  # set when asked for and ranked by relevance

    @classmethod
    def of(cls, paper: Paper, score: float | None, title: str, abstract: str) -> Hit:
        """`paper` as a hit, with its highlighted (escaped, marked) title and abstract snippet."""
        return cls(
            id=paper.id,
            title=paper.title,
            abstract=paper.abstract,
            year=paper.year,
            subjects=paper.subjects,
            authors=paper.authors,
            score=score,
            highlights={"title": title, "abstract": abstract},
            identifiers=paper.identifiers,
            publication=paper.publication,
            arrival=paper.arrival,
        )


@dataclass(frozen=True)
class FacetValue:
    value: str | int
    count: int
    selected: bool


@dataclass(frozen=True)
class PastedIdentifier:
    """A query that was one arXiv id or DOI (`core.identifiers.pasted`): as a page names it, and
    whether the index holds its paper (None: this index cannot tell, and the words were searched)."""

    label: str
    found: bool | None


@dataclass(frozen=True)
class TypoMatch:
    """A query word no paper holds, as typed, and the words a typo away it matched (core.typos)."""

    typed: str
    matched: tuple[str, ...]


@dataclass(frozen=True)
class AlsoSearched:
    """Words typed side by side and the other forms searched with them (core.synonyms)."""

    typed: str
    forms: tuple[str, ...]


@dataclass
class SearchResult:
    """A page of hits, the total, and facet counts under the request's other filters."""

    request: SearchRequest
    total: int
    hits: list[Hit]
    facets: dict[str, list[FacetValue]] = field(default_factory=dict)
    took_ms: float = 0.0
    suggestion: str | None = None
    identifier: PastedIdentifier | None = None
    typos: list[TypoMatch] = field(default_factory=list)
    also_searched: list[AlsoSearched] = field(default_factory=list)

    @property
    def page(self) -> int:
        return self.request.page

    @property
    def per_page(self) -> int:
        return self.request.per_page

    @property
    def pages(self) -> int:
        """Pages needed for `total`: never an empty last page, and 0 when nothing matched."""
        return math.ceil(self.total / self.request.per_page)


@dataclass
class FacetLookup:
    """Values of one facet starting with a prefix, counted under the query and the other filters."""

    name: str
    prefix: str
    values: list[FacetValue]
    truncated: bool  # more values matched than were listed
