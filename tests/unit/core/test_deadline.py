"""The time limit of a request: every stage asks the same deadline, which says how long it was."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator

import pytest

from searchsvc.core.deadline import PAUSE_EVERY_S, Deadline, pause_searches_with
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


@pytest.fixture
def pauses() -> Iterator[list[float]]:
    """The clock readings at which checks paused, with pausing on for the test only."""
    paused: list[float] = []
    yield paused
    pause_searches_with(None)


def test_checks_pause_after_each_stretch_of_work_when_pausing_is_on(pauses: list[float]) -> None:
    now = [0.0]
    pause_searches_with(lambda: pauses.append(now[0]))
    deadline = Deadline(1000, clock=lambda: now[0])
    for step in range(100):  # 100 checks, 5 ms of work apart
        now[0] = step * 0.005
        deadline.check()
    gaps = [b - a for a, b in zip([0.0, *pauses[:-1]], pauses, strict=True)]
    # At least 20 ms of work between two pauses, and at most one check (5 ms) more than that.
    assert len(pauses) >= 0.5 / (PAUSE_EVERY_S + 0.005) - 1
    assert all(PAUSE_EVERY_S - 1e-9 <= gap <= PAUSE_EVERY_S + 0.005 + 1e-9 for gap in gaps), gaps


def test_checks_never_pause_when_pausing_is_off() -> None:
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    for step in range(100):
        now[0] = step * 0.005
        deadline.check()  # no hook: nothing to call, nothing raised


def test_a_turn_waits_for_the_lock_no_longer_than_the_limit() -> None:
    lock = threading.Lock()
    with Deadline(1000).turn(lock):
        assert lock.locked()
    assert not lock.locked()
    lock.acquire()
    started = time.monotonic()
    with pytest.raises(SearchTimedOut), Deadline(50).turn(lock):
        pytest.fail("ran without the lock")
    assert 0.04 <= time.monotonic() - started < 5  # it waited about its 50 ms, then gave up
    lock.release()


def test_a_pause_hands_the_turn_on_and_takes_it_back(pauses: list[float]) -> None:
    lock = threading.Lock()
    held_in_pauses: list[bool] = []
    pause_searches_with(lambda: held_in_pauses.append(lock.locked()))
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    with deadline.turn(lock):
        for step in range(10):
            now[0] = step * PAUSE_EVERY_S
            deadline.check()
            assert lock.locked()  # the search goes on holding its turn
    assert held_in_pauses and not any(held_in_pauses)  # free for another search in every pause
    assert not lock.locked()


def test_a_turn_not_given_back_before_the_limit_ends_the_search_without_releasing_the_others_turn(
    pauses: list[float],
) -> None:
    lock = threading.Lock()
    now = [0.0]
    taken: list[bool] = []

    def another_search_takes_the_turn_past_our_limit() -> None:
        taken.append(lock.acquire(blocking=False))
        now[0] = 2.0

    pause_searches_with(another_search_takes_the_turn_past_our_limit)
    deadline = Deadline(1000, clock=lambda: now[0])
    with pytest.raises(SearchTimedOut), deadline.turn(lock):
        now[0] = PAUSE_EVERY_S
        deadline.check()
        pytest.fail("went on without its turn")
    assert taken == [True] and lock.locked()  # the other search's, and still held
    lock.release()


def test_a_copy_of_what_holds_the_deadline_shares_it_and_its_turn() -> None:
    """Whoosh deep-copies a query as it normalizes it; a phrase holds the request's deadline."""
    lock = threading.Lock()
    deadline = Deadline(1000)
    with deadline.turn(lock):
        holder = {"deadline": deadline}
        assert copy.deepcopy(holder)["deadline"] is deadline


def test_a_search_past_its_limit_tells_the_log_where_its_time_went(pauses: list[float]) -> None:
    """A 503 on a three-paper index under load once said only that 5 s had passed: the error's
    private part (logged, never answered) says how long the search waited, and for what."""
    lock = threading.Lock()
    now = [0.0]

    def another_search_runs_for_a_second() -> None:
        now[0] += 1.0

    pause_searches_with(another_search_runs_for_a_second)
    deadline = Deadline(1000, clock=lambda: now[0])
    with deadline.spending("waiting for a new generation to open"):
        now[0] = 0.25
    with pytest.raises(SearchTimedOut) as raised, deadline.turn(lock):
        now[0] = 0.3
        deadline.check()  # pauses: the other search runs past the limit
        deadline.check()
    assert raised.value.private == (
        "of its 1000 ms: 250 ms waiting for a new generation to open, 0 ms waiting for its turn, "
        "1000 ms in pauses for the worker's other requests"
    )
    assert "waiting" not in raised.value.message  # the client's answer says none of it
