"""Facet filters and counts from per-generation arrays, built once from the facet columns.

Whoosh's own multi-valued facets rebuild per-document value lists on every query (the cost is
measured in docs/performance.md, "Figures behind the code"); a generation never
changes, so this reads each facet's column once when the generation is opened into flat
numpy arrays (one entry per paper and value). Sets of papers are boolean masks over
document numbers: a filter is an `&`, a count is one `bincount` over the entries of the
matched papers, and the counts of the unfiltered collection are computed once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.schema import FACET_COLUMNS
from searchsvc.core.facet_order import alphabetical_key, display_order, listing
from searchsvc.core.model import FACETS, FacetValue, SearchRequest
from searchsvc.core.text import fold, word_tails

Mask = npt.NDArray[np.bool_]  # document number → in the set
Filters = dict[str, Mask | None]


@dataclass
class _Facet:
    values: list[str | int]  # value index → value
    entry_doc: npt.NDArray[np.int32]  # one entry per (paper, value): the paper ...
    entry_value: npt.NDArray[np.int32]  # ... and the value
    by_value: npt.NDArray[np.int32]  # entries ordered by value; value v's papers are ...
    value_start: npt.NDArray[np.int64]  # ... entry_doc[by_value[value_start[v]:value_start[v + 1]]]
    display_rank: npt.NDArray[np.int64]  # value index → place in the display order among equal counts
    by_folded: dict[str, int]  # folded value → value index, for case/accent-insensitive filters
    tails: list[tuple[str, ...]]  # value index → its folded text from each word on ("maxim naumov", "naumov")
    unfiltered: npt.NDArray[np.int64] | None = field(default=None)  # counts over every paper, once computed

    def docs(self, indices: list[int], doc_count: int) -> Mask:
        mask = np.zeros(doc_count, dtype=bool)
        for i in indices:
            mask[self.entry_doc[self.by_value[self.value_start[i] : self.value_start[i + 1]]]] = True
        return mask


class FacetIndex:
    """Which documents carry which facet values, for one immutable generation."""

    def __init__(self, reader: IndexReader, live: Mask) -> None:
        """`live`: the documents not deleted (doc_order.DocOrder), which every count is over."""
        self.doc_count = reader.doc_count_all()
        self.all_docs: Mask = live
        self._facets = {name: _load_facet(reader, column) for name, column in FACET_COLUMNS.items()}

    def filters(self, request: SearchRequest) -> Filters:
        """Per facet, the documents its filter allows (None: that facet is not filtered)."""
        year = self._facets["year"]
        years = None
        if request.year_from is not None or request.year_to is not None:
            selected = [i for i, value in enumerate(year.values) if request.year_selected(int(value))]
            years = year.docs(selected, self.doc_count)
        return {
            "year": years,
            "subject": self._value_filter("subject", request.subject),
            "author": self._value_filter("author", request.author),
        }

    def counts(
        self, matched: Mask, filters: Filters, request: SearchRequest, limits: Mapping[str, int]
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
        self, name: str, prefix: str, matched: Mask, filters: Filters, request: SearchRequest, limit: int
    ) -> tuple[list[FacetValue], bool]:
        """Values of `name` with a word starting with `prefix`, counted as in `counts`; and
        whether more values matched than `limit`.

        For finding one author among thousands: "nau" finds "Maxim Naumov".
        """
        facet = self._facets[name]
        wanted = fold(prefix)
        candidates = {i for i, tails in enumerate(facet.tails) if any(tail.startswith(wanted) for tail in tails)}
        counted = self._counted(name, matched, filters)
        selection = self._selection(name, request)
        shown = [i for i in candidates if counted[i] > 0 or i in selection.marked]
        counts = {facet.values[i]: int(counted[i]) for i in shown}
        ordered = sorted(counts, key=display_order(counts, by_value=name == "year"))
        marked = {facet.values[i] for i in selection.marked}
        values = [FacetValue(value, counts[value], value in marked) for value in ordered[:limit]]
        return values, len(ordered) > limit

    def papers_per_value(self, name: str) -> list[tuple[str, int]]:
        """Every value of facet `name` with its papers in the whole generation."""
        facet = self._facets[name]
        counted = self._counted(name, self.all_docs, {})
        return [(str(value), count) for value, count in zip(facet.values, counted.tolist(), strict=True) if count]

    def _counted(self, name: str, matched: Mask, filters: Filters) -> npt.NDArray[np.int64]:
        """Papers per value of facet `name` among the matched ones, under every filter but its own."""
        facet = self._facets[name]
        others = [f for other, f in filters.items() if other != name and f is not None]
        if matched is self.all_docs and not others:
            if facet.unfiltered is None:
                live = facet.entry_value[self.all_docs[facet.entry_doc]]  # not an update's deleted papers
                facet.unfiltered = np.bincount(live, minlength=len(facet.values))
            return facet.unfiltered
        base = intersect(matched, others)
        return np.bincount(facet.entry_value[base[facet.entry_doc]], minlength=len(facet.values))

    def _value_filter(self, name: str, wanted: tuple[str, ...]) -> Mask | None:
        if not wanted:
            return None
        facet = self._facets[name]
        indices = [facet.by_folded.get(fold(value)) for value in wanted]
        return facet.docs([i for i in indices if i is not None], self.doc_count)

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
    entry_doc: list[int] = []
    entry_value: list[int] = []
    for docnum, raw in enumerate(reader.column_reader(column)):
        for value in json.loads(raw):
            index = index_of.get(value)
            if index is None:
                index = index_of[value] = len(values)
                values.append(value)
            entry_doc.append(docnum)
            entry_value.append(index)
    entry_values = np.array(entry_value, dtype=np.int32)
    by_value = np.argsort(entry_values, kind="stable").astype(np.int32)
    value_start = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_values, minlength=len(values)), out=value_start[1:])
    by_folded = {fold(str(value)): i for i, value in enumerate(values)}
    tails = [word_tails(str(value)) for value in values]
    display_rank = np.empty(len(values), dtype=np.int64)
    display_rank[sorted(range(len(values)), key=lambda i: alphabetical_key(values[i]))] = np.arange(len(values))
    return _Facet(
        values,
        np.array(entry_doc, dtype=np.int32),
        entry_values,
        by_value,
        value_start,
        display_rank,
        by_folded,
        tails,
    )


def _listing(
    facet: _Facet, counted: npt.NDArray[np.int64], selection: _Selection, limit: int, by_value: bool
) -> list[FacetValue]:
    """The core listing of the top `limit` values plus every listed selected one. Only those
    are handed over: the top ones are found here without sorting thousands of authors."""
    shown = set(_top(facet, counted, limit, by_value).tolist()) | selection.listed
    counts = {facet.values[i]: int(counted[i]) for i in shown}
    marked = {facet.values[i] for i in selection.marked}
    listed = {facet.values[i] for i in selection.listed}
    return listing(counts, marked, listed, selection.unknown, limit, by_value)


def _top(facet: _Facet, counted: npt.NDArray[np.int64], limit: int, by_value: bool) -> npt.NDArray[np.int64]:
    """The first `limit` counted values in display order, found without sorting them all."""
    present = np.flatnonzero(counted)
    if by_value:
        years = np.array([-int(facet.values[i]) for i in present], dtype=np.int64)
        return present[np.argsort(years, kind="stable")[:limit]]
    if len(present) > limit:
        threshold = np.partition(counted[present], len(present) - limit)[len(present) - limit]
        present = present[counted[present] >= threshold]
    return present[np.lexsort((facet.display_rank[present], -counted[present]))][:limit]


def intersect(first: Mask, filters: Sequence[Mask | None]) -> Mask:
    """`first` narrowed by every filter that is set."""
    for docs in filters:
        if docs is not None:
            first = first & docs
    return first
