"""A phrase's positions decoded at once equal Whoosh's own decoding of each posting's value."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.formats import Positions

from searchsvc.backends.whoosh.phrases import _decoded


def _whoosh(values: list[bytes]) -> tuple[list[int], list[int]]:
    fmt = Positions()
    decoded = [fmt.decode_positions(value) for value in values]
    counts = [len(positions) for positions in decoded]
    deltas = [b - a for positions in decoded for a, b in zip([0, *positions], positions, strict=False)]
    return counts, deltas


_POSITIONS = st.lists(st.integers(0, 2**31 - 2), max_size=1200, unique=True).map(sorted)


@settings(max_examples=200, deadline=None)
@given(st.lists(_POSITIONS, min_size=1, max_size=20), st.booleans())
def test_positions_decoded_at_once_are_whooshs(postings: list[list[int]], stop_kept: bool) -> None:
    fmt = Positions()
    values = [fmt.encode(positions) for positions in postings]
    if not stop_kept:  # the codec may write a value without pickle's final STOP
        values = [value.removesuffix(b".") for value in values]
    counts, deltas = _decoded(values)
    assert (counts.tolist(), deltas.tolist()) == _whoosh([value.removesuffix(b".") + b"." for value in values])
