"""One time limit per request: checked between the stages of its work and every few thousand documents inside them.

A search that runs out of time ends with `SearchTimedOut` (a clear 503), instead of holding a
worker until gunicorn's 30 s timeout kills it along with every request queued behind it.

The web layer opens one budget per HTTP request (`request_budget`), and every backend call the
request makes reads that same deadline (`budget`): a page that searches and then looks up
authors shares one limit, rather than getting one each. The budget is a context variable, so
the `Backend` protocol keeps its signatures and an engine that does not read it still works.

Under a cooperative server (gunicorn's gevent worker) one thread serves every connection of a
worker, and a search never waits on a socket, so nothing else in the worker would run until it
ends: a `/healthz` accepted meanwhile waited for the whole limit. So every look at the clock
may also pause the search (`pause_searches_with`), at most every `PAUSE_EVERY_S`, to let the
worker's other connections move. Searches of one process take turns at what they share
(`Deadline.turn`), and a pause hands the turn on: a cheap search queued behind a costly one
runs in the costly one's pauses instead of waiting out its limit (CI saw a 22 ms page answer
a 503 after 2.29 s). A pause falls between two reads, never inside one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from searchsvc.core.errors import SearchTimedOut

# Documents (or posting steps) between two looks at the clock. A look costs about 0.15 µs; a
# document matched by four wildcards of 300 words each costs ~0.8 ms (scoring visits every
# word's matcher), so 256 of them passed 0.2 s unchecked on the ACL records and 64 still 50 ms.
CHECK_EVERY = 16
# Work between two pauses (when pausing is on): a pause costs a few µs when nothing else waits.
PAUSE_EVERY_S = 0.02

_pause: Callable[[], None] | None = None


def pause_searches_with(pause: Callable[[], None] | None) -> None:
    """Have every deadline check call `pause` after `PAUSE_EVERY_S` of work since the last (under
    gevent, one round of the event loop: web/cooperative.py)."""
    global _pause
    _pause = pause


class Deadline:
    def __init__(self, limit_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit_ms = limit_ms
        self._clock = clock
        started = clock()
        self._ends = started + limit_ms / 1000
        self._next_pause = started + PAUSE_EVERY_S
        self._turn: threading.Lock | None = None  # the lock of the turn this request holds
        self._spent: dict[str, float] = {}  # seconds spent waiting, by what for: said when the limit is passed

    def __deepcopy__(self, memo: dict[int, object]) -> Deadline:
        """Itself: a copy of what holds it (Whoosh deep-copies queries as it normalizes them)
        stays within the request's one limit, and shares the turn it holds."""
        return self

    def check(self) -> None:
        now = self._clock()
        if now >= self._ends:
            raise self._timed_out()
        if _pause is not None and now >= self._next_pause:
            self._next_pause = now + PAUSE_EVERY_S
            self._pause_handing_on_the_turn(_pause)

    def _pause_handing_on_the_turn(self, pause: Callable[[], None]) -> None:
        turn, self._turn = self._turn, None
        if turn is not None:
            turn.release()
        with self.spending("in pauses for the worker's other requests"):
            pause()
        if turn is not None:
            self._take(turn)

    @contextmanager
    def spending(self, on: str) -> Iterator[None]:
        """Count the block's time as waiting `on` something: a request past its limit logs where
        its time went (`SearchTimedOut.private`), so a 503 says what held it."""
        started = self._clock()
        try:
            yield
        finally:
            self._spent[on] = self._spent.get(on, 0.0) + self._clock() - started

    @contextmanager
    def turn(self, lock: threading.Lock) -> Iterator[None]:
        """Hold `lock` for the block but not in its pauses, waiting for it no longer than what is left of the limit."""
        self._take(lock)
        try:
            yield
        finally:
            if self._turn is lock:  # not when taking it back after a pause ran out of time
                self._turn = None
                lock.release()

    def _take(self, lock: threading.Lock) -> None:
        with self.spending("waiting for its turn"):
            taken = lock.acquire(timeout=max(0.0, self._ends - self._clock()))
        if not taken:
            raise self._timed_out()
        self._turn = lock

    def _timed_out(self) -> SearchTimedOut:
        spent = ", ".join(f"{seconds * 1000:.0f} ms {on}" for on, seconds in self._spent.items())
        return SearchTimedOut(
            f"the search took longer than its limit of {self.limit_ms} ms: narrow it "
            "(fewer or rarer words, a filter) or try again",
            {"limit_ms": self.limit_ms},
            private=f"of its {self.limit_ms} ms: {spent or 'none waiting'}",
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
