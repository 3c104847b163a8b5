"""One time limit per request: checked between the stages of its work and every few thousand documents inside them.

A search that runs out of time ends with `SearchTimedOut` (a clear 503), instead of holding a
worker until gunicorn's 30 s timeout kills it along with every request queued behind it.

The web layer opens one budget per HTTP request (`request_budget`), and every backend call the
request makes reads that same deadline (`budget`): a page that searches and then looks up
authors shares one limit, rather than getting one each. The budget is a context variable, so
the `Backend` protocol keeps its signatures and an engine that does not read it still works.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from searchsvc.core.errors import SearchTimedOut

# Documents between two looks at the clock. A look costs about 0.1 µs; a document through a
# wide OR (a wildcard of 300 words) costs tens of µs, so 4,096 of them could pass 0.2 s unchecked.
CHECK_EVERY = 256


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

    def remaining_ms(self) -> int:
        """What is left of the limit (at least 1 ms): the timeout to give an engine's own clock."""
        return max(1, int((self._ends - self._clock()) * 1000))


_CURRENT: ContextVar[Deadline | None] = ContextVar("searchsvc_request_budget", default=None)


@contextmanager
def request_budget(limit_ms: int) -> Iterator[Deadline]:
    """The deadline of everything done inside the block (one HTTP request)."""
    deadline = Deadline(limit_ms)
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def budget(limit_ms: int) -> Deadline:
    """The open request budget's deadline, or a new one of `limit_ms` when none is open (CLI, direct calls)."""
    return _CURRENT.get() or Deadline(limit_ms)
