"""Which facet values a result lists, and in what order: one rule for every backend."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from searchsvc.core.model import FacetValue

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
