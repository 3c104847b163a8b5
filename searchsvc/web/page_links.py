"""The search page's state lives in its URL: every link on the page is the current search with one change.

Pure functions of a `SearchRequest`, so the templates hold no URL logic and the rules (a new
filter goes back to page 1, defaults stay out of the URL, pages beyond the result window are
never offered) are tested without a browser.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from searchsvc.core.arrival import iso_second
from searchsvc.core.model import LIST_FACETS, SearchRequest, SearchResult

_PAGES_AROUND = 2  # page links shown either side of the current page


def with_query(path: str, pairs: list[tuple[str, str]]) -> str:
    """`path` with `pairs` as its query string (none when there are none)."""
    return f"{path}?{urlencode(pairs)}" if pairs else path


def search_pairs(request: SearchRequest) -> list[tuple[str, str]]:
    """What a search asks for (its query and filters) as query parameters, without sort or paging."""
    pairs: list[tuple[str, str]] = []
    if request.q:
        pairs.append(("q", request.q))
    pairs += [(name, value) for name in LIST_FACETS for value in getattr(request, name)]
    ranges = ("year_from", "year_to", "date_from", "date_to")
    pairs += [(name, str(getattr(request, name))) for name in ranges if getattr(request, name)]
    if request.added_since is not None:
        pairs.append(("added_since", iso_second(request.added_since)))
    return pairs


@dataclass(frozen=True)
class Chip:
    """A selected filter shown above the results, with the link that removes it."""

    facet: str
    label: str
    remove: str


@dataclass(frozen=True)
class SearchLinks:
    """URLs of the search page (`base`) and the export for `request` with one thing changed.

    On an author's page `base` is that page and `request` leaves the author out (the path holds it);
    `export_pairs` puts it back into the export links.
    """

    request: SearchRequest
    base: str
    export_base: str
    feed_base: str
    default_per_page: int
    export_pairs: tuple[tuple[str, str], ...] = ()

    # The URL of any search -----------------------------------------------------------

    def to(self, request: SearchRequest) -> str:
        return with_query(self.base, self.pairs(request))

    def pairs(self, request: SearchRequest, paged: bool = True) -> list[tuple[str, str]]:
        """The request as query parameters, leaving out every default so URLs stay short."""
        pairs = search_pairs(request)
        if request.sort != "relevance":
            pairs.append(("sort", request.sort))
        if paged and request.per_page != self.default_per_page:
            pairs.append(("per_page", str(request.per_page)))
        if paged and request.page != 1:
            pairs.append(("page", str(request.page)))
        if request.exact:
            pairs.append(("exact", "true"))
        return pairs

    def hidden_fields(self, *shown: str) -> list[tuple[str, str]]:
        """Parameters a form must carry to keep the current search, except the fields it shows itself;
        never `exact`, which was asked of the words typed before."""
        return [(name, value) for name, value in self.pairs(self._first_page()) if name not in (*shown, "exact")]

    # One change ------------------------------------------------------------------------

    def _first_page(self, **changes: Any) -> SearchRequest:  # each value of its field's type, as for replace()
        return replace(self.request, page=1, **changes)

    def toggle(self, facet: str, value: str) -> str:
        """Select `value` of a multi-select facet, or deselect it if it is selected."""
        current: tuple[str, ...] = getattr(self.request, facet)
        values = tuple(v for v in current if v != value) if value in current else (*current, value)
        return self.to(self._first_page(**{facet: values}))

    def toggle_year(self, year: int) -> str:
        """A year outside the range extends it (or starts one); the only year of a range clears it;
        a year inside a wider range narrows the range to that year."""
        low, high = self.request.year_from, self.request.year_to
        if low is None and high is None:
            low = high = year
        elif not self.request.year_selected(year):
            low = year if low is not None and year < low else low
            high = year if high is not None and year > high else high
        elif low == high == year:
            low = high = None
        else:
            low = high = year
        return self.to(self._first_page(year_from=low, year_to=high))

    def search_for(self, q: str) -> str:
        return self.to(self._first_page(q=q))

    def exactly(self) -> str:
        """This search with its words only as typed (no typo matches, no other forms)."""
        return self.to(self._first_page(exact=True))

    def page(self, number: int) -> str:
        return self.to(replace(self.request, page=number))

    def clear_filters(self) -> str:
        return self.to(
            self._first_page(
                subject=(),
                author=(),
                venue=(),
                year_from=None,
                year_to=None,
                date_from=None,
                date_to=None,
                added_since=None,
            )
        )

    def export(self, format_name: str) -> str:
        pairs = [("format", format_name), *self.export_pairs, *self.pairs(self.request, paged=False)]
        return f"{self.export_base}?{urlencode(pairs)}"

    def feed(self) -> str:
        """The Atom feed of this search's newest papers (whatever the page's sort)."""
        return with_query(self.feed_base, [*self.export_pairs, *search_pairs(self.request)])

    # What the page shows ---------------------------------------------------------------

    def chips(self) -> list[Chip]:
        """Every selected filter, each with the link that removes just it."""
        request = self.request
        chips = [
            Chip(facet, value, self.toggle(facet, value)) for facet in LIST_FACETS for value in getattr(request, facet)
        ]
        if request.dated:
            clear = self.to(self._first_page(date_from=None, date_to=None))
            chips.insert(0, Chip("date", range_label(request.date_from, request.date_to), clear))
        if request.added_since is not None:
            clear = self.to(self._first_page(added_since=None))
            chips.insert(0, Chip("added", f"added since {iso_second(request.added_since)}", clear))
        if request.years:
            clear = self.to(self._first_page(year_from=None, year_to=None))
            chips.insert(0, Chip("year", range_label(request.year_from, request.year_to), clear))
        return chips


def range_label(low: int | str | None, high: int | str | None) -> str:
    if low is not None and high is not None:
        return str(low) if low == high else f"{low}–{high}"
    return f"from {low}" if low is not None else f"until {high}"


def last_page(result: SearchResult, max_result_window: int) -> int:
    """The last page that has results and may be requested (deep pages beyond the window may not)."""
    return min(result.pages, max_result_window // result.per_page)


def page_numbers(current: int, last: int) -> list[int | None]:
    """Page links around the current one, always with the first and last; None marks a gap."""
    shown = sorted({1, last, *range(max(1, current - _PAGES_AROUND), min(last, current + _PAGES_AROUND) + 1)})
    numbers: list[int | None] = []
    for number in shown:
        if numbers and number - (numbers[-1] or 0) > 1:
            numbers.append(None)
        numbers.append(number)
    return numbers if last >= 1 else []
