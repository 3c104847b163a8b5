"""The HTTP service as it is deployed: the Procfile's `web:` line and `searchsvc serve`, for real.

These tests start real gunicorn processes (a master and gevent workers) and run real
`searchsvc rebuild` processes beside them, because what they check only exists across
processes: each worker noticing a generation published by another process, on its own
and without a restart, while requests keep arriving; the Procfile's quoting and the
gunicorn config binding the platform's $HOST:$PORT; `searchsvc serve` building the index
before it execs gunicorn. Flask's test client runs one app in this process and can show
none of that.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from searchsvc.cli import gunicorn_command
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl, made_up_papers
from tests.helpers.servers import (
    POLL_ATTEMPTS,
    POLL_INTERVAL,
    SEARCHSVC,
    ClientThreads,
    environment,
    free_port,
    get,
    procfile_web,
    procfile_web_command,
    rebuild_index,
    server_output,
    serving,
)

SEED_PAPERS = 28
WORD = "zyxwvutron"  # made up: no seed paper contains it
NEW_PAPERS = 30
MAX_RESPONSES_WAITED = 3000  # responses the clients may need to show a switch (they make ~100 a second)
FURTHER_RESPONSES = 20  # responses after the first one showing a switch that must all agree with it


def search_url(base: str, q: str, per_page: int) -> str:
    return f"{base}/api/search?{urllib.parse.urlencode({'q': q, 'per_page': per_page})}"


def test_procfile_web_line_is_what_searchsvc_serve_runs() -> None:
    assert shlex.split(procfile_web_command()) == gunicorn_command()


# Under load ---------------------------------------------------------------------

QUERIES = ("", "embedding", WORD)
OLD, NEW = "seeds", "seeds and new"
# What each state of the index answers to the queries that tell the states apart.
STATES: dict[str, dict[str, int]] = {
    OLD: {"": SEED_PAPERS, WORD: 0},
    NEW: {"": SEED_PAPERS + NEW_PAPERS, WORD: NEW_PAPERS},
}


class Load(ClientThreads):
    """Client threads each sending searches, one new connection per request, until stopped.

    Records every outcome: failures (a status other than 200, an exception, a total that
    belongs to neither state of the index), per query the run of consecutive responses
    with the same total, and per client how often the state it sees changes: a client's
    requests are sequential, so after it has seen a generation it must never see the one
    before again.
    """

    def __init__(self, base: str, clients: int, new_ids: set[str]) -> None:
        self.base = base
        self.new_ids = new_ids
        self.requests = 0
        self.failures: list[str] = []
        self.runs: dict[str, tuple[int | None, int]] = {q: (None, 0) for q in STATES[OLD]}
        self.embedding_totals: set[int] = set()
        self.state_changes = [0] * clients
        self._last_state: list[str | None] = [None] * clients
        self._changed = threading.Condition()
        super().__init__(clients)

    def _client(self, number: int) -> None:
        sent = number  # clients start at different queries
        while not self.stopping:
            q = QUERIES[sent % len(QUERIES)]
            sent += 1
            try:
                status, body = get(search_url(self.base, q, per_page=50 if q == WORD else 5))
            except Exception as exc:  # every failure is recorded, none may end the thread
                self._record_failure(f"q={q!r}: {exc!r}")
                continue
            self._record(number, q, status, body)

    def _record_failure(self, failure: str) -> None:
        with self._changed:
            self.requests += 1
            self.failures.append(failure)
            self._changed.notify_all()

    def _record(self, client: int, q: str, status: int, body: Any) -> None:
        with self._changed:
            self.requests += 1
            try:
                problem = self._check(client, q, status, body)
            except (KeyError, TypeError) as exc:
                problem = f"malformed body {exc!r}"
            if problem:
                self.failures.append(f"q={q!r}: {problem}: {json.dumps(body)[:300]}")
            self._changed.notify_all()

    def _check(self, client: int, q: str, status: int, body: Any) -> str | None:
        if status != 200:
            return f"HTTP {status}"
        total = body["total"]
        if q == "embedding":
            self.embedding_totals.add(total)  # the new papers do not mention it: never changes
            return None
        value, run = self.runs[q]
        self.runs[q] = (total, run + 1 if total == value else 1)
        state = next((name for name, totals in STATES.items() if totals[q] == total), None)
        if state is None:
            return f"total {total} is neither the seeds' nor the rebuilt index's"
        if q == WORD and {hit["id"] for hit in body["results"]} != (self.new_ids if total else set()):
            return "results are not exactly the new papers"
        if self._last_state[client] not in (None, state):
            self.state_changes[client] += 1
        self._last_state[client] = state
        return None

    def wait_for(self, state: str) -> None:
        """Until the first response showing `state` and FURTHER_RESPONSES after it, for each
        query that tells the states apart, all agree; bounded."""
        expected = STATES[state]
        with self._changed:
            first, quiet = self.requests, 0
            while self.requests - first < MAX_RESPONSES_WAITED and quiet < POLL_ATTEMPTS:
                if self._all_agree(expected):
                    return
                if not self._changed.wait(POLL_INTERVAL):  # no response at all for a while
                    quiet += 1
            raise AssertionError(
                f"never saw the index as {state!r} {FURTHER_RESPONSES + 1} times in a row: runs {self.runs}, "
                f"{self.requests} requests, failures {self.failures[:5]}"
            )

    def _all_agree(self, expected: Mapping[str, int]) -> bool:
        """The last FURTHER_RESPONSES + 1 responses to each query gave its expected total."""
        return all(self.runs[q][0] == total and self.runs[q][1] > FURTHER_RESPONSES for q, total in expected.items())


def readyz_generation(base: str) -> str:
    status, body = get(f"{base}/readyz")
    assert status == 200 and body["status"] == "ready", body
    return body["generation"]


def test_gunicorn_serves_and_switches_to_a_rebuilt_index_under_load(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    index_dir = tmp_path / "index"
    built = [rebuild_index(index_dir, SEEDS)]
    records = made_up_papers(WORD, NEW_PAPERS)
    more = write("more.jsonl", jsonl(records))

    with procfile_web(tmp_path, index_dir) as base:
        served = [readyz_generation(base)]
        with Load(base, clients=3, new_ids={record["id"] for record in records}) as load:
            load.wait_for(OLD)
            built.append(rebuild_index(index_dir, SEEDS, more))
            load.wait_for(NEW)
            served.append(readyz_generation(base))
            built.append(rebuild_index(index_dir, SEEDS))
            load.wait_for(OLD)
            served.append(readyz_generation(base))

    assert load.failures == []
    assert load.requests > 50
    assert len(load.embedding_totals) == 1 and load.embedding_totals.pop() > 0
    assert all(changes <= 2 for changes in load.state_changes), load.state_changes  # never back to an older one
    assert served == built and len(set(served)) == 3
    log = server_output(tmp_path / "server.log")
    assert log.count("Booting worker") == 2, "a worker was replaced: the switch must need no restart"
    assert "Traceback" not in log and "WORKER TIMEOUT" not in log


# Starting up --------------------------------------------------------------------


def test_searchsvc_serve_builds_the_index_from_seeds_when_none_is_published(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    port = free_port()
    command = [str(SEARCHSVC), "serve", "--host", "127.0.0.1", "--port", str(port), "--index-dir", str(index_dir)]

    with serving(command, environment(WEB_CONCURRENCY="1"), port, tmp_path / "server.log") as base:
        for _ in range(POLL_ATTEMPTS):
            status, ready = get(f"{base}/readyz")
            if status == 200:
                break
            time.sleep(POLL_INTERVAL)
        assert status == 200, ready
        assert ready["doc_count"] == SEED_PAPERS
        status, found = get(search_url(base, "compositional embeddings", per_page=5))
        assert status == 200 and found["total"] > 0 and found["results"]

    assert (index_dir / "generations" / ready["generation"]).is_dir()
    assert "building it from seeds" in server_output(tmp_path / "server.log")


@pytest.mark.reliability
def test_readyz_is_503_until_an_index_is_published(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    index_dir.mkdir()

    with procfile_web(tmp_path, index_dir) as base:
        status, body = get(f"{base}/readyz")
        assert status == 503 and body["error"]["code"] == "index_unavailable", body
        status, body = get(search_url(base, "embedding", per_page=5))
        assert status == 503 and body["error"]["code"] == "index_unavailable", body

        generation = rebuild_index(index_dir, SEEDS)

        for _ in range(10):  # the same server; spread over its two workers, each notices the index itself
            status, body = get(f"{base}/readyz")
            assert status == 200 and body["generation"] == generation and body["doc_count"] == SEED_PAPERS, body
            status, body = get(search_url(base, "", per_page=5))
            assert status == 200 and body["total"] == SEED_PAPERS, body
