"""Facet filters and counts from per-generation arrays, assembled once from the segments' arrays.

Whoosh's own multi-valued facets rebuild per-document value lists on every query (the cost is
measured in docs/performance.md, "Figures behind the code"); a generation never
changes, so its segments' facet entries (segment_arrays.py) are put together once when the
generation is opened into flat numpy arrays (one entry per paper and value). Sets of papers are
boolean masks over document numbers: a filter is an `&`, a count is one `bincount` over the
entries of the matched papers, and the counts of the unfiltered collection are computed once.

Values are numbered in a `ValueTable` that the next generation of the same process extends
(never reorders), so a worker opening the generation after an update pays for the values and
segments that are new, not for the whole collection again. A value kept in the table whose
papers are all gone counts as absent: results are those of a fresh open.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from searchsvc.backends import analysis
from searchsvc.backends.whoosh.schema import FACET_COLUMNS
from searchsvc.backends.whoosh.segment_arrays import SegmentArrays
from searchsvc.core.facet_order import alphabetical_key, display_order, listing
from searchsvc.core.model import FACETS, LIST_FACETS, FacetValue, SearchRequest
from searchsvc.core.text import fold, folded_tails

Mask = npt.NDArray[np.bool_]  # document number → in the set
Filters = dict[str, Mask | None]


@dataclass(frozen=True)
class ValueTable:
    """A facet's distinct values, numbered in the order first seen by this process."""

    values: list[str | int]  # value index → value
    index_of: dict[str | int, int]
    # Folded value → the values folding to it, for case- and accent-insensitive filters: folded as the
    # cluster's `folded` normalizer folds (analysis.folded), so a filter matches the same values on
    # either engine ("oeuvre" the venue "Œuvre").
    by_folded: dict[str, list[int]]
    tails: list[tuple[str, ...]]  # value index → its folded text from each word on ("maxim naumov", "naumov")
    keys: list[tuple[str, str]]  # value index → core.facet_order.alphabetical_key
    display_rank: npt.NDArray[np.int64]  # value index → place in alphabetical order, for ties of counts

    @classmethod
    def empty(cls) -> ValueTable:
        return cls([], {}, {}, [], [], np.empty(0, dtype=np.int64))

    def extended(self, values: Sequence[str | int]) -> ValueTable:
        """This table with those of `values` it lacks appended (itself when it lacks none): the
        previous generation keeps using its own, so nothing here is changed in place."""
        new = list(dict.fromkeys(value for value in values if value not in self.index_of))
        if not new:
            return self
        start = len(self.values)
        index_of = {**self.index_of, **{value: start + i for i, value in enumerate(new)}}
        by_folded = dict(self.by_folded)
        for i, value in enumerate(new, start):
            text = analysis.folded(str(value))
            by_folded[text] = [*by_folded.get(text, []), i]
        folded = [fold(str(value)) for value in new]
        keys = self.keys + [alphabetical_key(value) for value in new]
        return ValueTable(
            self.values + new,
            index_of,
            by_folded,
            self.tails + [folded_tails(text) for text in folded],
            keys,
            _ranks_with(self.display_rank, keys, start),
        )

    def indices(self, values: Sequence[str | int]) -> npt.NDArray[np.int32]:
        """The index of each of `values`, all of which the table holds."""
        return np.array([self.index_of[value] for value in values], dtype=np.int32)


def _ranks_with(ranks: npt.NDArray[np.int64], keys: list[tuple[str, str]], start: int) -> npt.NDArray[np.int64]:
    """Alphabetical ranks of every value, given those of the first `start` (`ranks`): the new
    values' places are found by binary search among the old ones, whose ranks shift past them,
    so a few new authors do not sort hundreds of thousands again."""
    by_rank = np.empty(start, dtype=np.int64)
    by_rank[ranks] = np.arange(start)
    new = sorted(range(start, len(keys)), key=keys.__getitem__)
    old = range(start)
    places = np.array(
        [bisect_left(old, keys[i], key=lambda r: keys[by_rank[r]]) if start else 0 for i in new], np.int64
    )
    result = np.empty(len(keys), dtype=np.int64)
    result[:start] = ranks + np.searchsorted(places, ranks, side="right")
    result[np.array(new, dtype=np.int64)] = places + np.arange(len(new))
    return result


@dataclass
class _Facet:
    table: ValueTable
    entry_doc: npt.NDArray[np.int32]  # one entry per (paper, value): the paper ...
    entry_value: npt.NDArray[np.int32]  # ... and the value
    doc_count: int
    live: Mask
    _by_value: tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]] | None = field(default=None)
    _unfiltered: npt.NDArray[np.int64] | None = field(default=None)

    @property
    def values(self) -> list[str | int]:
        return self.table.values

    @property
    def unfiltered(self) -> npt.NDArray[np.int64]:
        """Live papers per value over the whole generation; a value at 0 is absent from it."""
        if self._unfiltered is None:
            live = self.entry_value[self.live[self.entry_doc]]  # not an update's deleted papers
            self._unfiltered = np.bincount(live, minlength=len(self.values))
        return self._unfiltered

    def present(self, index: int) -> bool:
        return bool(self.unfiltered[index])

    def docs(self, indices: list[int]) -> Mask:
        """The documents carrying any of the values `indices`; entries ordered by value once,
        at the first filter on this facet (an open need not sort what no filter asks)."""
        if self._by_value is None:
            by_value = np.argsort(self.entry_value, kind="stable").astype(np.int32)
            value_start = np.zeros(len(self.values) + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.entry_value, minlength=len(self.values)), out=value_start[1:])
            self._by_value = (by_value, value_start)
        by_value, value_start = self._by_value
        mask = np.zeros(self.doc_count, dtype=bool)
        for i in indices:
            mask[self.entry_doc[by_value[value_start[i] : value_start[i + 1]]]] = True
        return mask

    def folded(self, value: str) -> list[int]:
        """The present values folding as `value` does."""
        return [i for i in self.table.by_folded.get(analysis.folded(value), []) if self.present(i)]


class FacetIndex:
    """Which documents carry which facet values, for one immutable generation."""

    def __init__(
        self, segments: Sequence[tuple[SegmentArrays, int]], live: Mask, previous: FacetIndex | None = None
    ) -> None:
        """`segments`: each with its first document number; `live`: the documents not deleted
        (doc_order.DocOrder), which every count is over; `previous`: the generation this process
        served before, whose value tables and segments' value numbers are reused."""
        self.doc_count = len(live)
        self.all_docs: Mask = live
        if previous and not {segment.segment_id for segment, _ in segments} & {s for _, s in previous._mapped}:
            previous = None  # a rebuild: its values are numbered afresh, so none of the old ones are kept
        self._mapped: dict[tuple[str, str], npt.NDArray[np.int32]] = {}  # (facet, segment) → value indices
        self._facets = {name: self._facet(name, segments, previous) for name in FACET_COLUMNS}

    def _facet(self, name: str, segments: Sequence[tuple[SegmentArrays, int]], previous: FacetIndex | None) -> _Facet:
        table = previous._facets[name].table if previous else ValueTable.empty()
        docs, values = [], []
        for segment, offset in segments:
            entries = segment.facets[name]
            key = (name, segment.segment_id)
            mapped = previous._mapped.get(key) if previous else None
            if mapped is None:  # a segment new to this process
                table = table.extended(entries.values)
                mapped = table.indices(entries.values)
            self._mapped[key] = mapped
            docs.append(entries.doc + np.int32(offset))
            values.append(mapped[entries.value] if len(mapped) else entries.value)
        entry_doc = np.concatenate(docs) if docs else np.empty(0, dtype=np.int32)
        entry_value = np.concatenate(values) if values else np.empty(0, dtype=np.int32)
        return _Facet(table, entry_doc, entry_value, self.doc_count, self.all_docs)

    def filters(self, request: SearchRequest) -> Filters:
        """Per facet, the documents its filter allows (None: that facet is not filtered); the date
        range and `added_since`, which are no facets, under "date" and "added", so every facet is
        counted under them."""
        year, date, added = self._facets["year"], self._facets["date"], self._facets["added"]
        years = dates = arrived = None
        if request.years:
            years = year.docs([i for i, value in enumerate(year.values) if request.year_selected(int(value))])
        if request.dated:
            dates = date.docs([i for i, value in enumerate(date.values) if request.date_selected(str(value))])
        if request.added_since is not None:
            arrived = added.docs([i for i, value in enumerate(added.values) if int(value) >= request.added_since])
        return {
            "year": years,
            "date": dates,
            "added": arrived,
            **{name: self._value_filter(name, getattr(request, name)) for name in LIST_FACETS},
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
        candidates = {i for i, tails in enumerate(facet.table.tails) if any(tail.startswith(wanted) for tail in tails)}
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

    def papers_among(self, name: str, among: Mask) -> dict[str, int]:
        """Each value of facet `name` held by papers of `among`, with how many of them hold it."""
        values, counted = self._facets[name].values, self._counted(name, among, {})
        return {str(values[i]): int(counted[i]) for i in np.flatnonzero(counted).tolist()}

    def tails(self, name: str) -> Callable[[str | int], tuple[str, ...]]:
        """Each value of facet `name` → its folded text from each word on, as `core.text.word_tails`
        gives, computed once per value in this process rather than at every open."""
        table = self._facets[name].table
        return lambda value: table.tails[table.index_of[value]]

    def _counted(self, name: str, matched: Mask, filters: Filters) -> npt.NDArray[np.int64]:
        """Papers per value of facet `name` among the matched ones, under every filter but its own."""
        facet = self._facets[name]
        others = [f for other, f in filters.items() if other != name and f is not None]
        if matched is self.all_docs and not others:
            return facet.unfiltered
        base = intersect(matched, others)
        return np.bincount(facet.entry_value[base[facet.entry_doc]], minlength=len(facet.values))

    def _value_filter(self, name: str, wanted: tuple[str, ...]) -> Mask | None:
        if not wanted:
            return None
        facet = self._facets[name]
        return facet.docs([i for value in wanted for i in facet.folded(value)])

    def _selection(self, name: str, request: SearchRequest) -> _Selection:
        facet = self._facets[name]
        if name == "year":
            # A year range selects every year inside it; only its typed bounds must be listed.
            bounds = {request.year_from, request.year_to}
            marked = {i for i, year in enumerate(facet.values) if facet.present(i) and request.year_selected(int(year))}
            return _Selection(marked, {i for i in marked if facet.values[i] in bounds}, [])
        known: set[int] = set()
        unknown: list[str] = []
        for value in getattr(request, name):
            found = facet.folded(value)
            if found:
                known.update(found)
            else:
                unknown.append(value)
        return _Selection(known, known, unknown)


@dataclass
class _Selection:
    marked: set[int]  # value indices shown as selected
    listed: set[int]  # value indices listed even at count 0 or beyond the limit
    unknown: list[str]  # selected values the index does not hold, listed at count 0


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
    return present[np.lexsort((facet.table.display_rank[present], -counted[present]))][:limit]


def intersect(first: Mask, filters: Sequence[Mask | None]) -> Mask:
    """`first` narrowed by every filter that is set."""
    for docs in filters:
        if docs is not None:
            first = first & docs
    return first
