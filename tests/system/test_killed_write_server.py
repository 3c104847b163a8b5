"""A gunicorn worker (the Procfile's, gevent) SIGKILLed in the middle of a keyed write with ranking by
meaning on: the outcome is known and the retry under the same key makes the change once (issue #36).
A server of its own (conftest.py's `unembedded_server`, one per module): beside
test_write_embedding_server.py's bodies, the wait for every paper to be embedded waited for their
~40,000 papers too (4 minutes)."""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.backends.whoosh.journal import FileJournal
from tests.helpers import servers
from tests.helpers.bodies import body
from tests.helpers.servers import get
from tests.helpers.write_servers import wait_until_ranked_by_meaning, write, writer_headers

pytestmark = pytest.mark.reliability


class WriteInFlight:
    """A keyed POST sent on a connection of its own, answered (or not) in a thread: which worker
    holds it can be asked while the worker is at it."""

    def __init__(self, base: str, content: bytes, key: str) -> None:
        self.port = int(base.rsplit(":", 1)[1])
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=servers.REQUEST_TIMEOUT)
        self.connection.connect()
        self.answer: int | BaseException | None = None
        headers = {"Content-Type": "application/x-ndjson", **writer_headers(key)}
        self.thread = threading.Thread(target=self._send, args=(content, headers), daemon=True)
        self.thread.start()

    def _send(self, content: bytes, headers: dict[str, str]) -> None:
        try:
            self.connection.request("POST", "/api/papers", body=content, headers=headers)
            self.answer = self.connection.getresponse().status
        except (OSError, http.client.HTTPException) as dropped:
            self.answer = dropped

    def worker(self) -> int:
        """The pid of the process that accepted the connection."""
        assert self.connection.sock is not None
        here = self.connection.sock.getsockname()[1]
        for held in psutil.net_connections(kind="tcp"):
            if held.laddr and held.laddr.port == self.port and held.raddr and held.raddr.port == here and held.pid:
                return held.pid
        pytest.fail("no worker holds the write's connection")


@pytest.mark.parametrize("moment", ["journaled", "published"])
def test_a_worker_killed_in_a_keyed_write_leaves_an_outcome_that_its_retry_learns(
    unembedded_server: tuple[str, Path], moment: str
) -> None:
    """Issue #36: SIGKILL of the worker once the change is journaled (not yet published), or once
    it is published (not yet answered): GET /api/changes/<key> tells which, and the retry under the
    same key makes the change exactly once. Its papers are then embedded like any write's."""
    base, index_dir = unembedded_server
    key, count = f"killed-{moment}", 1000
    content = body("application/x-ndjson", f"killed{moment}", count)
    store, journal = GenerationStore(index_dir), FileJournal(index_dir)
    published, journaled, papers = store.published_name(), len(journal), get(f"{base}/readyz")[1]["doc_count"]
    reached = {
        "journaled": lambda: len(journal) > journaled and store.published_name() == published,
        "published": lambda: store.published_name() != published,
    }[moment]

    flight = WriteInFlight(base, content, key)
    while not reached():
        assert flight.thread.is_alive(), f"the write ended before it was {moment}: {flight.answer}"
        time.sleep(0.001)
    os.kill(flight.worker(), signal.SIGKILL)
    flight.thread.join(servers.REQUEST_TIMEOUT)
    made = store.published_name() != published  # as the kill found it
    assert made or isinstance(flight.answer, BaseException), flight.answer  # no answer before publishing

    status, told = servers.send(urllib.request.Request(f"{base}/api/changes/{key}", headers=writer_headers()))
    assert status == (200 if made else 404), told
    status, retried = write(base, content, key=key)
    assert status == 200 and len(retried["added"]) == count and retried["replayed"] is made, retried
    assert [c.idempotency.key for c in journal.changes() if c.idempotency and c.idempotency.key == key] == [key]
    assert get(f"{base}/readyz")[1]["doc_count"] == papers + count
    status, again = write(base, content, key=key)
    assert status == 200 and again["replayed"] is True and again["changed_at"] == retried["changed_at"]
    if moment == "published":  # the killed worker never started their embedding: the retry did
        wait_until_ranked_by_meaning(base)
