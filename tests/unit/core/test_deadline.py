"""The time limit of a search: the clock is looked at inside long loops."""

from __future__ import annotations

import pytest

from searchsvc.core.deadline import CHECK_EVERY, Deadline
from searchsvc.core.errors import SearchTimedOut

pytestmark = pytest.mark.reliability


def test_the_clock_is_checked_inside_long_loops() -> None:
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    seen = 0
    with pytest.raises(SearchTimedOut):
        for _ in deadline.bounded(range(10 * CHECK_EVERY)):
            seen += 1
            now[0] += 0.001  # a millisecond a document: the limit passes at document 1000
    assert seen == CHECK_EVERY - 1  # stopped at the first look at the clock after the limit
