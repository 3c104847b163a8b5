"""Writes through the Procfile's real gunicorn (gevent workers) with ranking by meaning on: every body the
limits allow, in every text format, is answered 2xx with what was done, and its papers are embedded by a
process of its own, never inside a request (issue #36: from 256 papers to embed, a write answered 500
and so did every write after it, since a gevent worker cannot run the encoder processes' pipes)."""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.backends.whoosh.journal import FileJournal
from searchsvc.settings import Settings
from searchsvc.settings.write_tokens import entry_for, new_token
from tests.helpers import servers
from tests.helpers.bodies import FORMATS, body, largest_body
from tests.helpers.records import jsonl, made_up_papers, write_jsonl
from tests.helpers.servers import get, procfile_web, rebuild_index

pytestmark = pytest.mark.reliability

TOKEN = new_token()
BODY_LIMIT = Settings().max_write_body_bytes  # the defaults: what users have
RECORDS_LIMIT = Settings().max_write_records
EMBEDDED_WITHIN = (
    480  # polls of 0.5 s: a thousand titles take seconds, minutes on a loaded machine (embedding yields to others)
)
# A write has no time budget: it runs in a process of its own while the worker answers others, and its
# client waits. The largest bodies took 3-6 s on a quiet machine and past 30 s in a loaded suite (7 Dec,
# load ~12), so a write's client waits as long as these tests wait for an embedding.
WRITE_TIMEOUT = EMBEDDED_WITHIN * 0.5


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One gunicorn with ranking by meaning on, serving an index built with it off: no paper has
    its vector until a write's embedding gives every one of them theirs. (base URL, index folder)"""
    folder = tmp_path_factory.mktemp("write-embedding-server")
    index_dir = folder / "index"
    sources = write_jsonl(folder / "sources" / "wombats.jsonl", made_up_papers("wombat", 3))
    rebuild_index(index_dir, sources, SEARCHSVC_SEMANTIC_RANKING="false")
    with procfile_web(folder, index_dir, SEARCHSVC_WRITE_TOKEN_HASHES=entry_for("loader", TOKEN)) as base:
        yield base, index_dir


@pytest.fixture
def server(served: tuple[str, Path]) -> str:
    return served[0]


def write(base: str, content: bytes, content_type: str = "application/x-ndjson", key: str = "") -> tuple[int, Any]:
    headers = {"Content-Type": content_type, **writer_headers(key)}
    request = urllib.request.Request(f"{base}/api/papers", data=content, method="POST", headers=headers)
    return servers.send(request, WRITE_TIMEOUT)


def writer_headers(key: str = "") -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", **({"Idempotency-Key": key} if key else {})}


def semantic_ranking(base: str) -> str:
    status, ready = get(f"{base}/readyz")
    assert status == 200, ready
    return ready["semantic_ranking"]


def wait_until_ranked_by_meaning(base: str) -> None:
    for _attempt in range(EMBEDDED_WITHIN):
        if semantic_ranking(base) == "on":
            return
        time.sleep(0.5)
    pytest.fail("the papers written were never all embedded")


def test_a_write_to_an_index_built_without_meaning_is_answered_and_then_embedded(server: str) -> None:
    assert semantic_ranking(server) == "pending"  # built with it off: nothing embedded yet
    status, report = write(server, jsonl(made_up_papers("numbat", 1)).encode())
    assert status == 200, report
    assert report["added"] == ["numbat-00"] and report["semantic_ranking"] == "pending", report
    assert report["embedded"] == 0  # not in the request
    wait_until_ranked_by_meaning(server)  # the three built without it too
    # The tests below leave the embedding of their bodies' papers running: the server's stop ends it.


def test_the_next_write_is_answered_while_a_large_one_is_being_embedded(server: str) -> None:
    status, large = write(server, body("application/x-ndjson", "quoll", 1000))
    assert status == 200 and len(large["added"]) == 1000 and large["semantic_ranking"] == "pending", large
    status, small = write(server, jsonl(made_up_papers("bilby", 1)).encode())
    assert status == 200 and small["added"] == ["bilby-00"], small
    assert semantic_ranking(server) == "pending"  # the 1,000 papers' embedding did not hold it up
    wait_until_ranked_by_meaning(server)
    assert get(f"{server}/api/search?q=quoll+999")[1]["results"][0]["title"] == "quoll 999"


@pytest.mark.parametrize("count", [256, 1000])
@pytest.mark.parametrize("content_type", list(FORMATS))
def test_a_body_of_many_papers_is_answered_in_every_format(server: str, content_type: str, count: int) -> None:
    word = f"{content_type.split('/')[1][:8]}{count}"
    status, report = write(server, body(content_type, word, count), content_type)
    assert status == 200, report
    assert report["records"] == count and len(report["added"]) == count, report
    assert report["semantic_ranking"] == "pending" and report["changed_at"], report


@pytest.mark.parametrize("content_type", list(FORMATS))
def test_the_largest_body_the_limit_allows_is_answered_in_every_format(server: str, content_type: str) -> None:
    content, count = largest_body(content_type, f"largest{content_type.split('/')[1][:8]}", BODY_LIMIT, RECORDS_LIMIT)
    # As large as it gets: one record more would pass the byte limit or the record limit.
    assert len(content) <= BODY_LIMIT and (count == RECORDS_LIMIT or BODY_LIMIT < len(content) + 300)
    status, report = write(server, content, content_type)
    assert status == 200, report
    assert report["records"] == count and len(report["added"]) == count, report
    assert report["semantic_ranking"] == "pending", report


def test_one_record_past_the_limit_is_a_413_and_changes_nothing(server: str) -> None:
    before = get(f"{server}/readyz")[1]["generation"]
    status, refused = write(server, body("text/csv", "toomany", RECORDS_LIMIT + 1), "text/csv")
    assert status == 413 and refused["error"]["code"] == "too_many_records", refused
    assert f"more than {RECORDS_LIMIT:,} records" in refused["error"]["message"]
    assert get(f"{server}/readyz")[1]["generation"] == before


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
    served: tuple[str, Path], moment: str
) -> None:
    """Issue #36: SIGKILL of the worker once the change is journaled (not yet published), or once
    it is published (not yet answered): GET /api/changes/<key> tells which, and the retry under the
    same key makes the change exactly once. Its papers are then embedded like any write's."""
    base, index_dir = served
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
