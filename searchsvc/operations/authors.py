"""An author's profile: a search filtered to one author, plus the co-authors of those papers.

Built only from the Backend protocol (search, export, facet_values), so it works alike on
every engine. The name is matched as the author filter matches it (case and accents
ignored); the profile shows the name as the index stores it.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, replace

from searchsvc.backends import Backend
from searchsvc.core.errors import AuthorNotFound
from searchsvc.core.facet_order import alphabetical_key
from searchsvc.core.model import FacetValue, SearchRequest, SearchResult
from searchsvc.core.text import fold, one_line
from searchsvc.operations.search import export, facet_values, search

SUGGESTIONS = 5  # closest names offered for an unknown author
_LOOKUP_WORDS = 3  # words of the unknown name looked up by their first letters
_LOOKUP_PREFIX = 3  # letters of each word: "naumof" looks up "nau"
_LOOKUP_LIMIT = 100  # names listed per word looked up


@dataclass(frozen=True)
class Coauthor:
    name: str
    count: int  # papers written together, among the profile's papers


@dataclass(frozen=True)
class AuthorProfile:
    """An author's papers (one page of them, with facets) and everyone they wrote them with."""

    name: str  # as stored
    result: SearchResult
    coauthors: list[Coauthor]
    coauthors_complete: bool  # False when the author has more papers than were counted (max_export)

    @property
    def request(self) -> SearchRequest:
        return self.result.request

    @property
    def years(self) -> list[FacetValue]:
        return self.result.facets["year"]

    @property
    def subjects(self) -> list[FacetValue]:
        return self.result.facets["subject"]


def author_profile(backend: Backend, name: str, request: SearchRequest) -> AuthorProfile:
    """The profile of the author called `name` (any case or accents), under `request`'s filters,
    sort and page; `AuthorNotFound` with the closest names if the index has no such author.
    Whitespace is folded as the readers fold it in stored names ("Dan  Klein" is "Dan Klein")."""
    name = one_line(name)
    filtered = replace(request, q="", author=(name,))
    result = search(backend, filtered)
    stored = _stored_name(result)
    if stored is None and _has_filters(request):  # maybe only these filters leave none of their papers
        stored = _stored_name(search(backend, SearchRequest(author=(name,), per_page=1)))
    if stored is None:
        raise AuthorNotFound(f"no author called “{name}”", {"suggestions": closest_names(backend, name)})
    # The author facet is counted as a multi-select facet (ignoring its own filter), so it cannot
    # tell who wrote these papers with the author: count their author lists instead.
    limit = backend.settings.max_export
    papers = export(backend, replace(filtered, sort="newest"), limit)
    together = Counter(other for paper in papers for other in set(paper.authors) if fold(other) != fold(stored))
    coauthors = [Coauthor(other, count) for other, count in sorted(together.items(), key=_by_count)]
    return AuthorProfile(stored, result, coauthors, coauthors_complete=result.total <= limit)


def closest_names(backend: Backend, name: str) -> list[str]:
    """Up to `SUGGESTIONS` stored names closest to `name` (folded, by difflib's ratio).

    The candidates are the names with a word starting like one of `name`'s first words, a few
    lookups of `_LOOKUP_LIMIT` names each: comparing against every author of a collection
    (tens of thousands) would make each mistyped URL cost a second of CPU.
    """
    wanted = fold(name)
    candidates: dict[str, str] = {}  # folded → stored
    for word in wanted.split()[:_LOOKUP_WORDS]:
        lookup = facet_values(backend, "author", word[:_LOOKUP_PREFIX], SearchRequest(), _LOOKUP_LIMIT)
        for value in lookup.values:
            candidates.setdefault(fold(str(value.value)), str(value.value))
    close = difflib.get_close_matches(wanted, list(candidates), n=SUGGESTIONS, cutoff=0.6)
    return [candidates[folded] for folded in close]


def _stored_name(result: SearchResult) -> str | None:
    """The selected author as the index spells it, if it has papers under the search's other filters."""
    selected = [value for value in result.facets["author"] if value.selected and value.count > 0]
    return str(selected[0].value) if selected else None


def _has_filters(request: SearchRequest) -> bool:
    return bool(request.subject or request.venue or request.years or request.dated)


def _by_count(item: tuple[str, int]) -> tuple[int, str, str]:
    return (-item[1], *alphabetical_key(item[0]))
