"""A per-search time limit: checked between the stages of a search and every few thousand documents inside them.

A search that runs out of time ends with `SearchTimedOut` (a clear 503), instead of holding a
worker until gunicorn's 30 s timeout kills it along with every request queued behind it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from searchsvc.core.errors import SearchTimedOut

CHECK_EVERY = 4096  # documents between two looks at the clock: cheap, and well under a millisecond apart


class Deadline:
    def __init__(self, limit_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_ms = limit_ms
        self._clock = clock
        self._ends = clock() + limit_ms / 1000

    def check(self) -> None:
        if self._clock() >= self._ends:
            raise SearchTimedOut(
                f"the search took longer than its limit of {self.limit_ms} ms: narrow it "
                "(fewer or rarer words, a filter) or try again",
                {"limit_ms": self.limit_ms},
            )
