"""Which facet values a result lists, and in what order: one rule for every backend."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence

from searchsvc.core.model import LIST_FACETS, FacetValue, Hit, SearchRequest

Value = str | int


def alphabetical_key(value: Value) -> tuple[str, str]:
    """Alphabetical order among equal counts: case-insensitive first, then as written."""
    return (str(value).casefold(), str(value))


def display_order(counts: Mapping[Value, int], by_value: bool) -> Callable[[Value], tuple[int | str, ...]]:
    """Years newest first; other values by count, then alphabetically (case-insensitive first)."""

    def order(value: Value) -> tuple[int | str, ...]:
        return (-int(value),) if by_value else (-counts.get(value, 0), *alphabetical_key(value))

    return order


def listing(
    counts: Mapping[Value, int],
    marked: Collection[Value],
    listed: Collection[Value],
    unknown: list[str],
    limit: int,
    by_value: bool,
) -> list[FacetValue]:
    """The top `limit` counted values plus every `listed` one (a selection, even at count 0),
    in display order, then selected values the index does not hold at all, at count 0."""
    order = display_order(counts, by_value)
    shown = set(sorted(counts, key=order)[:limit]) | set(listed)
    values = [FacetValue(value, counts.get(value, 0), value in marked) for value in sorted(shown, key=order)]
    return values + [FacetValue(value, 0, True) for value in unknown]


def counted_in(hits: Sequence[Hit], request: SearchRequest, limit: int) -> dict[str, list[FacetValue]]:
    """The facets of a short ranked list (a `similar:` search's nearest papers): each value counted
    over those papers, the request's selections marked (names and subjects case-insensitively)."""
    counts: dict[str, Counter[Value]] = {
        "year": Counter(hit.year for hit in hits if hit.year is not None),
        "subject": Counter(value for hit in hits for value in dict.fromkeys(hit.subjects)),
        "author": Counter(value for hit in hits for value in dict.fromkeys(hit.authors)),
        "venue": Counter(hit.publication.venue for hit in hits if hit.publication.venue),
    }
    chosen = {name: {value.casefold() for value in getattr(request, name)} for name in LIST_FACETS}
    facets = {}
    for name, counted in counts.items():
        if name == "year":
            marked = {value for value in counted if request.year_selected(int(value))}
        else:
            marked = {value for value in counted if str(value).casefold() in chosen[name]}
        facets[name] = listing(counted, marked, marked, [], limit, by_value=name == "year")
    return facets
