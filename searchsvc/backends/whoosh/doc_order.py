"""Which documents of a generation are live, and their places in catalogue order.

A rebuild numbers documents newest first, but an update (`incremental.py`) appends its
papers as a new segment and marks the papers it replaces as deleted, so document numbers
no longer follow the catalogue. Ties between equal scores, the `newest` and `oldest` sorts
all go by these arrays instead, computed once per generation from the id and year columns:
the same order either way (`core.paper.catalogue_key`), so an updated generation ranks
exactly as a rebuild of the same papers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.schema import FACET_COLUMNS
from searchsvc.core.paper import catalogue_key

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class DocOrder:
    live: Mask  # document number → not deleted
    rank: Ints  # document number → place newest first among live papers (deleted: past the end)
    by_newest: Ints  # live document numbers, newest first
    by_oldest: Ints  # live document numbers, oldest first

    @property
    def deleted(self) -> list[int]:
        return np.flatnonzero(~self.live).tolist()

    @classmethod
    def of(cls, reader: IndexReader) -> DocOrder:
        count = reader.doc_count_all()
        live = np.ones(count, dtype=bool)
        for leaf, offset in _leaves(reader):
            if leaf.has_deletions():  # from the segment: the searcher's readers hide them (live_statistics)
                live[np.fromiter(leaf.segment().deleted_docs(), dtype=np.int64) + offset] = False
        ids = [value.decode("utf-8") if isinstance(value, bytes) else value for value in reader.column_reader("id")]
        years = [_year(raw) for raw in reader.column_reader(FACET_COLUMNS["year"])]
        docs = np.flatnonzero(live).tolist()
        by_newest = np.array(sorted(docs, key=lambda d: catalogue_key(years[d], ids[d])), dtype=np.int64)
        by_oldest = np.array(sorted(docs, key=lambda d: catalogue_key(years[d], ids[d], newest=False)), dtype=np.int64)
        rank = np.full(count, count, dtype=np.int64)
        rank[by_newest] = np.arange(len(by_newest))
        for array in (live, rank, by_newest, by_oldest):
            array.setflags(write=False)
        return cls(live, rank, by_newest, by_oldest)


def _leaves(reader: IndexReader) -> list[tuple[IndexReader, int]]:
    return [(reader, 0)] if reader.is_atomic() else list(reader.leaf_readers())


def _year(raw: bytes) -> int | None:
    years = json.loads(raw) if raw else []
    return years[0] if years else None
