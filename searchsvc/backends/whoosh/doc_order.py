"""Which documents of a generation are live, and their places in catalogue order.

A rebuild numbers documents newest first, but an update (`updates.py`) appends its
papers as a new segment and marks the papers it replaces as deleted, so document numbers
no longer follow the catalogue. Ties between equal scores, the `newest` and `oldest` sorts
(and `cited` and `added`) all go by these arrays instead, computed once per generation from the
segments' ids, years, citation counts and arrivals:
the same order either way (`core.paper.catalogue_key`), so an updated generation ranks
exactly as a rebuild of the same papers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.segment_arrays import SegmentArrays, leaves

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class DocOrder:
    live: Mask  # document number → not deleted
    rank: Ints  # document number → place newest first among live papers (deleted: past the end)
    by_newest: Ints  # live document numbers, newest first
    by_oldest: Ints  # live document numbers, oldest first
    by_cited: Ints  # live document numbers, most cited first (unknown counts last), ties newest first
    by_added: Ints  # live document numbers, newest additions to this index first, ties newest first

    @property
    def deleted(self) -> list[int]:
        return np.flatnonzero(~self.live).tolist()

    @classmethod
    def of(cls, reader: IndexReader, segments: Sequence[SegmentArrays]) -> DocOrder:
        """From the ids and years of `segments` (`reader`'s, in its order) and `reader`'s deletions."""
        count = reader.doc_count_all()
        live = np.ones(count, dtype=bool)
        for leaf, offset in leaves(reader):
            if leaf.has_deletions():  # from the segment: the searcher's readers hide them (live_statistics)
                live[np.fromiter(leaf.segment().deleted_docs(), dtype=np.int64) + offset] = False
        # Ids are ASCII (core.paper.id_problem), so their bytes sort as the strings do.
        ids = np.concatenate([segment.ids for segment in segments]) if segments else np.empty(0, dtype="S1")
        years, cited, added = (
            np.concatenate([segment.numbers(name, missing) for segment in segments])
            if segments
            else np.empty(0, np.int64)
            for name, missing in (("year", 0), ("citations", -1), ("added", 0))
        )
        undated = years == 0
        docs = np.flatnonzero(live)
        # core.paper.catalogue_key in numpy (lexsort's last key sorts first): undated last, then by year, then id.
        by_newest = docs[np.lexsort((ids[docs], -years[docs], undated[docs]))]
        by_oldest = docs[np.lexsort((ids[docs], years[docs], undated[docs]))]
        by_cited = by_newest[np.argsort(-cited[by_newest], kind="stable")]  # unknown (-1) after 0
        by_added = by_newest[np.argsort(-added[by_newest], kind="stable")]
        rank = np.full(count, count, dtype=np.int64)
        rank[by_newest] = np.arange(len(by_newest))
        for array in (live, rank, by_newest, by_oldest, by_cited, by_added):
            array.setflags(write=False)
        return cls(live, rank, by_newest, by_oldest, by_cited, by_added)
