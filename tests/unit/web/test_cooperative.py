"""A gevent worker's search pauses so the worker's other connections are served meanwhile."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from searchsvc.core.deadline import Deadline, pause_searches_with
from searchsvc.web import cooperative
from searchsvc.web.cooperative import pause_searches_for_other_connections, run_write

gevent = pytest.importorskip("gevent")
gevent_socket = pytest.importorskip("gevent.socket")
gevent_thread = pytest.importorskip("gevent.thread")

pytestmark = pytest.mark.reliability


@pytest.fixture
def pausing() -> Iterator[None]:
    pause_searches_for_other_connections()
    yield
    pause_searches_with(None)


def test_a_connection_ready_to_read_is_served_while_a_search_computes(pausing: None) -> None:
    """Two greenlets of one thread, as gunicorn's gevent worker runs them: a search that only
    computes and checks its deadline, and a connection whose request is already waiting."""
    finished: dict[str, float] = {}
    client, server = gevent_socket.socketpair()

    def search() -> None:
        deadline = Deadline(5000)
        ends = time.monotonic() + 0.5
        while time.monotonic() < ends:  # half a second of work, never waiting on a socket
            deadline.check()
        finished["search"] = time.monotonic()

    def other_connection() -> None:
        server.recv(16)  # waits on the socket: only the event loop's poll wakes it
        finished["other"] = time.monotonic()

    listening = gevent.spawn(other_connection)
    gevent.sleep(0.01)  # it is now waiting on its socket
    searching = gevent.spawn(search)
    gevent.sleep(0)  # the search starts, then the request arrives
    client.send(b"GET /healthz")
    started = time.monotonic()
    gevent.joinall([searching, listening], timeout=10)
    client.close()
    server.close()
    assert finished["other"] < finished["search"]
    assert finished["other"] - started < 0.25  # served within a few pauses, not after the search


def test_a_cheap_search_runs_in_the_pauses_of_a_costly_one_it_shares_a_turn_with(pausing: None) -> None:
    """Searches of one worker take turns at its searcher (a gevent worker's patched lock); a
    search queued behind a costly one must not wait out the costly one's limit (CI saw a
    22 ms page answer 503 after 2.29 s behind a wildcard search)."""
    turn = gevent_thread.allocate_lock()  # what threading.Lock() gives in a gevent worker
    finished: list[str] = []

    def search(name: str, seconds: float) -> None:
        deadline = Deadline(5000)
        with deadline.turn(turn):
            ends = time.monotonic() + seconds
            while time.monotonic() < ends:
                deadline.check()
        finished.append(name)

    costly = gevent.spawn(search, "costly", 0.5)
    gevent.sleep(0)  # the costly search holds the turn
    cheap = gevent.spawn(search, "cheap", 0.01)
    gevent.joinall([costly, cheap], timeout=10)
    assert finished == ["cheap", "costly"]


def test_a_connection_is_served_while_a_write_computes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write indexes for seconds in pure Python without a deadline to pause at: in a gevent
    worker it runs in a native thread, and the waiting connection is served meanwhile (issue #30:
    searches reaching a writing worker answered 503)."""
    monkeypatch.setattr(cooperative, "_write_runner", cooperative._write_runner)  # restored afterwards
    cooperative.run_writes_in_native_threads()
    finished: dict[str, float] = {}
    client, server = gevent_socket.socketpair()

    def write() -> int:
        ends = time.monotonic() + 0.5
        count = 0
        while time.monotonic() < ends:  # half a second of work in Python, no wait, no pause
            count += 1
        return count

    def writing() -> None:
        assert run_write(write) > 0  # its result comes back to the greenlet
        finished["write"] = time.monotonic()

    def other_connection() -> None:
        server.recv(16)
        finished["other"] = time.monotonic()

    listening = gevent.spawn(other_connection)
    gevent.sleep(0.01)
    writer = gevent.spawn(writing)
    gevent.sleep(0.01)  # the write is running in its thread
    client.send(b"GET /healthz")
    gevent.joinall([writer, listening], timeout=10)
    client.close()
    server.close()
    assert finished["other"] < finished["write"]


def test_a_writes_error_reaches_its_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cooperative, "_write_runner", cooperative._write_runner)
    cooperative.run_writes_in_native_threads()

    def failing() -> None:
        raise ValueError("a malformed body")

    with pytest.raises(ValueError, match="a malformed body"):
        gevent.spawn(run_write, failing).get(timeout=10)
