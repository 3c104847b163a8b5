"""Facet filters and counts from per-generation arrays, built once from the facet columns.

Whoosh's own multi-valued facets rebuild per-document value lists on every query (over a
second per query on the 29,580 ACL records, see docs/decisions.md); a generation never
changes, so this reads each facet's column once when the generation is opened and counts in
Python.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain

from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.schema import FACET_COLUMNS
from searchsvc.papers import fold
from searchsvc.search import FACETS, FacetValue, SearchRequest

_WORD_START = re.compile(r"(?<!\w)\w")


@dataclass
class _Facet:
    values: list[str | int]  # value index → value
    docs: list[frozenset[int]]  # value index → documents having it
    of_doc: list[tuple[int, ...]]  # docnum → value indices
    by_folded: dict[str, int]  # folded value → value index, for case/accent-insensitive filters
    tails: list[tuple[str, ...]]  # value index → its folded text from each word on ("maxim naumov", "naumov")


class FacetIndex:
    """Which documents carry which facet values, for one immutable generation."""

    def __init__(self, reader: IndexReader) -> None:
        self._facets = {name: _load_facet(reader, column) for name, column in FACET_COLUMNS.items()}

    def filters(self, request: SearchRequest) -> dict[str, frozenset[int] | None]:
        """Per facet, the documents its filter allows (None: that facet is not filtered)."""
        year = self._facets["year"]
        years = None
        if request.year_from is not None or request.year_to is not None:
            years = _union(
                docs for value, docs in zip(year.values, year.docs, strict=True) if request.year_selected(int(value))
            )
        return {
            "year": years,
            "subject": self._value_filter("subject", request.subject),
            "author": self._value_filter("author", request.author),
        }

    def counts(
        self,
        matched: frozenset[int],
        filters: dict[str, frozenset[int] | None],
        request: SearchRequest,
        limits: Mapping[str, int],
    ) -> dict[str, list[FacetValue]]:
        """Multi-select counts: each facet counted under every filter except its own."""
        result = {}
        for name in FACETS:
            counted = self._counted(name, matched, filters)
            result[name] = _listing(
                self._facets[name], counted, self._selection(name, request), limits[name], by_value=name == "year"
            )
        return result

    def lookup(
        self,
        name: str,
        prefix: str,
        matched: frozenset[int],
        filters: dict[str, frozenset[int] | None],
        request: SearchRequest,
        limit: int,
    ) -> tuple[list[FacetValue], bool]:
        """Values of `name` with a word starting with `prefix`, counted as in `counts`; and
        whether more values matched than `limit`.

        For finding one author among thousands: "nau" finds "Maxim Naumov".
        """
        facet = self._facets[name]
        wanted = fold(prefix)
        candidates = {i for i, tails in enumerate(facet.tails) if any(tail.startswith(wanted) for tail in tails)}
        counted = Counter({i: n for i, n in self._counted(name, matched, filters).items() if i in candidates})
        selection = self._selection(name, request)
        selected = {i for i in selection.marked if i in candidates}
        shown = sorted(set(counted) | selected, key=_order(facet, counted, by_value=name == "year"))
        values = [FacetValue(facet.values[i], counted[i], i in selection.marked) for i in shown[:limit]]
        return values, len(shown) > limit

    def _counted(self, name: str, matched: frozenset[int], filters: dict[str, frozenset[int] | None]) -> Counter[int]:
        """Papers per value of facet `name` among the matched ones, under every filter but its own."""
        base = intersect(matched, [f for other, f in filters.items() if other != name])
        return Counter(chain.from_iterable(map(self._facets[name].of_doc.__getitem__, base)))

    def _value_filter(self, name: str, wanted: tuple[str, ...]) -> frozenset[int] | None:
        if not wanted:
            return None
        facet = self._facets[name]
        indices = [facet.by_folded.get(fold(value)) for value in wanted]
        return _union(facet.docs[i] for i in indices if i is not None)

    def _selection(self, name: str, request: SearchRequest) -> _Selection:
        facet = self._facets[name]
        if name == "year":
            # A year range selects every year inside it; only its typed bounds must be listed.
            bounds = {request.year_from, request.year_to}
            marked = {i for i, year in enumerate(facet.values) if request.year_selected(int(year))}
            return _Selection(marked, {i for i in marked if facet.values[i] in bounds}, [])
        known: set[int] = set()
        unknown: list[str] = []
        for value in request.subject if name == "subject" else request.author:
            index = facet.by_folded.get(fold(value))
            if index is None:
                unknown.append(value)
            else:
                known.add(index)
        return _Selection(known, known, unknown)


@dataclass
class _Selection:
    marked: set[int]  # value indices shown as selected
    listed: set[int]  # value indices listed even at count 0 or beyond the limit
    unknown: list[str]  # selected values the index does not hold, listed at count 0


def _load_facet(reader: IndexReader, column: str) -> _Facet:
    values: list[str | int] = []
    index_of: dict[str | int, int] = {}
    of_doc: list[tuple[int, ...]] = []
    for raw in reader.column_reader(column):
        found = []
        for value in json.loads(raw):
            index = index_of.get(value)
            if index is None:
                index = index_of[value] = len(values)
                values.append(value)
            found.append(index)
        of_doc.append(tuple(found))
    docs: list[list[int]] = [[] for _ in values]
    for docnum, indices in enumerate(of_doc):
        for index in indices:
            docs[index].append(docnum)
    folded = [fold(str(value)) for value in values]
    by_folded = {text: i for i, text in enumerate(folded)}
    tails = [tuple(text[m.start() :] for m in _WORD_START.finditer(text)) for text in folded]
    return _Facet(values, [frozenset(d) for d in docs], of_doc, by_folded, tails)


def _listing(
    facet: _Facet, counted: Counter[int], selection: _Selection, limit: int, by_value: bool
) -> list[FacetValue]:
    """The top `limit` values plus every listed selected one, in display order."""

    order = _order(facet, counted, by_value)
    shown = set(sorted(counted, key=order)[:limit]) | selection.listed
    listing = [FacetValue(facet.values[i], counted[i], i in selection.marked) for i in sorted(shown, key=order)]
    return listing + [FacetValue(value, 0, True) for value in selection.unknown]


def _order(facet: _Facet, counted: Counter[int], by_value: bool) -> Callable[[int], tuple[int | str, ...]]:
    """Display order: years newest first, other values by count, then alphabetically."""

    def order(index: int) -> tuple[int | str, ...]:
        value = facet.values[index]
        return (-int(value),) if by_value else (-counted[index], str(value).casefold(), str(value))

    return order


def _union(sets: Iterable[frozenset[int]]) -> frozenset[int]:
    return frozenset().union(*sets)


def intersect(first: frozenset[int], filters: Iterable[frozenset[int] | None]) -> frozenset[int]:
    """`first` narrowed by every filter that is set, smallest first."""
    for docs in sorted((f for f in filters if f is not None), key=len):
        first = first & docs
    return first
