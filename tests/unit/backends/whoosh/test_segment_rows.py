"""A generation's vectors held per segment read as one array would (generation_vectors.SegmentRows)."""

from __future__ import annotations

import numpy as np

from searchsvc.backends.whoosh.generation_vectors import SegmentRows
from searchsvc.core.ranking import related_order
from searchsvc.semantic.encoder import DIMENSIONS


def _pieces() -> tuple[np.ndarray, SegmentRows]:
    whole = np.random.default_rng(3).standard_normal((10, DIMENSIONS)).astype(np.float16)
    # Segments of 4, 0 (an empty one) and 6 documents.
    return whole, SegmentRows([0, 4, 4], [whole[:4].copy(), whole[4:4].copy(), whole[4:].copy()])


def test_rows_by_number_slice_and_array_are_those_of_the_whole() -> None:
    whole, rows = _pieces()
    assert len(rows) == 10
    assert np.array_equal(rows[7], whole[7])
    assert np.array_equal(rows[np.array([9, 0, 4, 3])], whole[[9, 0, 4, 3]])
    assert np.array_equal(rows[2:8], whole[2:8])  # across segments
    assert np.array_equal(rows[::3], whole[::3])
    assert np.array_equal(rows[5:], whole[5:])
    assert rows[np.array([], dtype=np.int64)].shape == (0, DIMENSIONS)


def test_a_slice_within_one_segment_is_a_view() -> None:
    _whole, rows = _pieces()
    assert np.shares_memory(rows[5:9], rows[4:10])


def test_nearest_in_meaning_is_the_same_as_over_one_array() -> None:
    whole, rows = _pieces()
    assert related_order(rows, rows[2], 5, exclude=[2]) == related_order(whole, whole[2], 5, exclude=[2])
