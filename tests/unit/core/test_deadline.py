"""The time limit of a request: every stage asks the same deadline, which says how long it was."""

from __future__ import annotations

import pytest

from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import SearchTimedOut

pytestmark = pytest.mark.reliability


def test_the_deadline_passes_until_its_limit_then_names_it() -> None:
    now = [10.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    now[0] = 10.999
    deadline.check()
    now[0] = 11.0
    with pytest.raises(SearchTimedOut) as raised:
        deadline.check()
    assert raised.value.details == {"limit_ms": 1000} and "1000 ms" in raised.value.message
