"""Faults against real processes: workers killed under load, damaged and unreadable indexes,
bad source files, a full disk, a forged pointer, and what requests can put in the logs.

Each ends the same way: a clear error, the published index still served (or a 503 that says
why, until a rebuild fixes it, without a restart), and nothing lost. The killed rebuild
(SIGKILL half-way) is tests/test_cli.py::test_rebuild_killed_half_way_leaves_previous_index_and_no_stale_state.
"""

from __future__ import annotations

import errno
import http.client
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from searchsvc.settings.write_tokens import entry_for, new_token
from tests.helpers.apps import app_for
from tests.helpers.indexes import build_index
from tests.helpers.paths import REPO, SEEDS
from tests.helpers.records import jsonl, made_up_papers
from tests.helpers.servers import (
    POLL_ATTEMPTS,
    POLL_INTERVAL,
    REQUEST_TIMEOUT,
    ClientThreads,
    get,
    gunicorn_workers,
    procfile_web,
    rebuild_index,
    run_rebuild,
    server_output,
)

pytestmark = pytest.mark.reliability

SEED_PAPERS = 28
WORD = "quokkatronic"  # made up: in no seed paper
NEW_PAPERS = 20
LOAD_REQUESTS = 2000
CLIENTS = 4  # each with one request in flight at a time
REPORTS = REPO / "tests" / "reports"  # git-ignored


def word_total(base: str) -> int:
    status, body = get(f"{base}/api/search?q={WORD}&per_page=1")
    assert status == 200, body
    return body["total"]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(POLL_ATTEMPTS):
        if condition():
            return
        time.sleep(POLL_INTERVAL)
    raise AssertionError(f"timed out waiting for {what}")


# Under load -------------------------------------------------------------------------


class LoadRun(ClientThreads):
    """Client threads sending a mix of API and page requests, one connection each, until stopped.

    A failure is any answer but 200 with a well-formed body, or no answer at all; failures
    are kept with the time they happened, so those in flight on a killed worker can be told
    apart from any other.
    """

    PATHS = [
        "/api/search?q=embedding&subject=cs.LG",
        f"/api/search?q={WORD}&per_page=50",
        "/api/search?q=&sort=newest&per_page=5",
        "/api/search?q=%22embedding+tables%22+OR+checkpoint*",
        "/api/facets/author?prefix=na",
        "/?q=training&subject=cs.DC",
        "/?q=compositional+embeddings",
        "/readyz",
    ]

    def __init__(self, base: str, clients: int) -> None:
        self.base = base
        self.outcomes: list[tuple[float, str]] = []  # (when, "ok" or what failed)
        self._lock = threading.Lock()
        super().__init__(clients)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.outcomes)

    def wait_for(self, requests: int) -> None:
        wait_until(lambda: self.count >= requests, f"{requests} requests")

    def _client(self, number: int) -> None:
        for path in itertools.islice(itertools.cycle(self.PATHS), number, None):
            if self.stopping:
                return
            outcome = self._one(path)
            with self._lock:
                self.outcomes.append((time.monotonic(), outcome))

    def _one(self, path: str) -> str:
        connection = http.client.HTTPConnection(urllib.parse.urlsplit(self.base).netloc, timeout=REQUEST_TIMEOUT)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:  # reset, disconnected, cut short
            return f"connection: {type(exc).__name__}"
        finally:
            connection.close()
        if response.status != 200:
            return f"HTTP {response.status} for {path}: {body[:200]!r}"
        if path.startswith("/api/") or path == "/readyz":
            try:
                json.loads(body)
            except ValueError:
                return f"malformed JSON for {path}"
        elif b'id="results-heading"' not in body:
            return f"page without results for {path}"
        return "ok"


def test_load_with_two_rebuilds_and_a_worker_killed_loses_nothing(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    rebuild_index(index_dir, SEEDS)
    more = tmp_path / "more.jsonl"
    more.write_text(jsonl(made_up_papers(WORD, NEW_PAPERS)), encoding="utf-8")
    pidfile = tmp_path / "gunicorn.pid"

    with procfile_web(tmp_path, index_dir, GUNICORN_CMD_ARGS=f"--pid {pidfile}") as base:
        with LoadRun(base, clients=CLIENTS) as load:
            load.wait_for(200)
            rebuild_index(index_dir, SEEDS, more)
            wait_until(lambda: word_total(base) == NEW_PAPERS, "the first rebuild to be served")

            load.wait_for(load.count + 200)
            victim = gunicorn_workers(pidfile)[0]
            killed_at, count_at_kill = time.monotonic(), load.count
            os.kill(victim, signal.SIGKILL)
            wait_until(
                lambda: len(gunicorn_workers(pidfile)) == 2 and victim not in gunicorn_workers(pidfile), "a new worker"
            )

            load.wait_for(load.count + 200)
            rebuild_index(index_dir, SEEDS)
            wait_until(lambda: word_total(base) == 0, "the second rebuild to be served")
            # At least 1,000 more after the kill, however long the rebuilds (and their embedding) took.
            load.wait_for(max(LOAD_REQUESTS, count_at_kill + 1100))

    outcomes = list(load.outcomes)
    failures = [(when, what) for when, what in outcomes if what != "ok"]
    in_flight = [what for when, what in failures if what.startswith("connection:") and when >= killed_at]
    report = {
        "requests": len(outcomes),
        "ok": len(outcomes) - len(failures),
        "failed_in_flight_on_killed_worker": len(in_flight),
        "failed_otherwise": len(failures) - len(in_flight),
        "failures": Counter(what for _, what in failures),
        "ok_after_kill": sum(1 for when, what in outcomes if what == "ok" and when > killed_at),
    }
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "load-run.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("load run:", json.dumps(report))

    assert report["requests"] >= LOAD_REQUESTS
    assert report["failed_otherwise"] == 0, failures
    # A gevent worker holds every connection it has accepted (a search computing, others waiting
    # their turn), so a SIGKILL loses those, and no more: at most one per client.
    assert report["failed_in_flight_on_killed_worker"] <= CLIENTS
    assert report["ok_after_kill"] >= 1000
    log = server_output(tmp_path / "server.log")
    assert log.count("Booting worker") == 3, "the master replaced exactly the killed worker"
    assert "Traceback" not in log


# A damaged or unreadable index -------------------------------------------------------


def readyz(base: str) -> tuple[int, Any]:
    return get(f"{base}/readyz")


def assert_unavailable(base: str, reason: str) -> None:
    status, body = readyz(base)
    assert status == 503 and body["error"]["code"] == "index_unavailable", body
    assert reason in body["error"]["message"], body
    status, body = get(f"{base}/api/search?q=embedding")
    assert status == 503 and body["error"]["code"] == "index_unavailable" and reason in body["error"]["message"]


def assert_recovers_after_a_rebuild(base: str, index_dir: Path, log: Path, force: bool = False) -> None:
    generation = rebuild_index(index_dir, SEEDS, force=force)
    for _ in range(10):  # both workers, each on its own
        status, body = readyz(base)
        assert status == 200 and body["generation"] == generation, body
        status, body = get(f"{base}/api/search?q=embedding")
        assert status == 200 and body["total"] > 0
    assert server_output(log).count("Booting worker") == 2, "recovered without a restart"


def segment_files(generation: Path) -> list[Path]:
    return sorted(generation.glob("*.seg"))


def test_a_damaged_generation_is_503_with_the_reason_until_a_rebuild(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    generation = index_dir / "generations" / rebuild_index(index_dir, SEEDS)
    segments = segment_files(generation)
    assert segments, list(generation.iterdir())
    for segment in segments:  # truncated, as by a crash or a full disk while copying it
        with segment.open("r+b") as stream:
            stream.truncate(segment.stat().st_size // 3)

    with procfile_web(tmp_path, index_dir) as base:
        assert_unavailable(base, f"cannot open index generation {generation.name}")
        assert_recovers_after_a_rebuild(base, index_dir, tmp_path / "server.log")
    assert not generation.exists(), "the damaged generation was pruned"


# Root reads every file whatever its mode, unless it gives up these two capabilities.
WITHOUT_ROOT_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def test_an_unreadable_index_is_503_with_the_reason_until_a_rebuild(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    generation = index_dir / "generations" / rebuild_index(index_dir, SEEDS)
    generation.chmod(0o000)

    with procfile_web(tmp_path, index_dir, prefix=WITHOUT_ROOT_OVERRIDE) as base:
        assert_unavailable(base, "Permission denied")
        # Run as root, the rebuild reads what the server may not, and finds the generation whole.
        assert_recovers_after_a_rebuild(base, index_dir, tmp_path / "server.log", force=os.geteuid() == 0)
    assert not generation.exists(), "the unreadable generation was pruned"


def test_a_pointer_naming_a_path_outside_the_generations_is_refused(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    rebuild_index(index_dir, SEEDS)
    outside = tmp_path / "elsewhere"
    shutil.copytree(next((index_dir / "generations").iterdir()), outside)  # a whole valid index outside
    (index_dir / "CURRENT").write_text("../../elsewhere\n", encoding="utf-8")

    with procfile_web(tmp_path, index_dir) as base:
        assert_unavailable(base, "does not name a generation")
        status, body = get(f"{base}/api/papers/..%2F..%2Felsewhere%2Fmanifest.json")
        assert status == 503
        assert_recovers_after_a_rebuild(base, index_dir, tmp_path / "server.log")
        status, body = get(f"{base}/api/papers/../../../etc/passwd")
        assert status == 404 and body["error"]["code"] == "not_found", body


# Bad sources and a full disk ---------------------------------------------------------


def write_garbage(path: Path, size: int) -> None:
    with path.open("wb") as stream:
        for _ in range(size // 1_000_000):
            stream.write(os.urandom(1_000_000))


def write_one_line(path: Path, size: int) -> None:
    """A record whose title is `size` bytes of valid text: well-formed JSON, but no paper record."""
    with path.open("w", encoding="utf-8") as stream:
        stream.write('{"id": "huge", "title": "')
        for _ in range(size // 1_000_000):
            stream.write("title " * 166_666)
        stream.write('"}\n')


BAD_SOURCES: dict[str, tuple[Callable[[Path], None], str]] = {
    "not-utf8.jsonl": (lambda p: p.write_bytes(b'{"id": "a", "title": "caf\xe9"}\n'), "not UTF-8 text"),
    "empty.jsonl": (lambda p: p.write_bytes(b""), "file has no records"),
    "empty.txt": (lambda p: p.write_bytes(b""), "file is empty"),
    "garbage.jsonl": (lambda p: write_garbage(p, 100_000_000), "not UTF-8 text"),
    "garbage.txt": (lambda p: write_garbage(p, 100_000_000), "not UTF-8 text"),
    "one-100-mb-line.jsonl": (lambda p: write_one_line(p, 100_000_000), "line longer than 1,000,000 bytes"),
}


@pytest.mark.parametrize("name", sorted(BAD_SOURCES))
def test_a_bad_source_fails_the_rebuild_and_leaves_the_index(tmp_path: Path, name: str) -> None:
    index_dir = tmp_path / "index"
    published = rebuild_index(index_dir, SEEDS)
    make, problem = BAD_SOURCES[name]
    bad = tmp_path / name
    make(bad)

    done = run_rebuild(index_dir, SEEDS, bad)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: {bad}:1: {problem}"), done.stderr
    assert "Traceback" not in done.stderr
    assert (index_dir / "CURRENT").read_text().strip() == published
    assert [p.name for p in (index_dir / "generations").iterdir()] == [published]


@contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A file system of `size` that fills up for real (mount needs root, which CI has for apt)."""
    mountpoint = Path(tempfile.mkdtemp(prefix="searchsvc-full-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        mountpoint.rmdir()
        pytest.fail(f"cannot mount a tmpfs to fill ({mounted.stderr.strip()}): this test needs root")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "--lazy", str(mountpoint)], check=True)  # even while a test's app holds files
        mountpoint.rmdir()


def test_a_full_disk_fails_the_rebuild_cleanly_and_the_index_keeps_serving(tmp_path: Path) -> None:
    many = tmp_path / "many.jsonl"
    with many.open("w", encoding="utf-8") as stream:  # far more than fits
        for number in range(3000):
            words = " ".join(f"w{number}x{k}" for k in range(150))
            stream.write(json.dumps({"id": f"n{number}", "title": f"Paper {number}", "abstract": words}) + "\n")

    with small_tmpfs("5m") as disk:  # room for two generations of the seeds (~1.6 MB each), not for `many`
        index_dir = disk / "index"
        published = rebuild_index(index_dir, SEEDS)

        done = run_rebuild(index_dir, SEEDS, many)

        assert done.returncode == 1
        # The disk fills while the records are merged into the scratch file, or while the index is written.
        assert "No space left on device" in done.stderr, done.stderr
        assert any(f"cannot write the {what}" in done.stderr for what in ("new generation", "rebuild's scratch file"))
        assert not list(index_dir.glob(".rebuild-papers-*")), "scratch file left"
        assert "Traceback" not in done.stderr, done.stderr
        assert (index_dir / "CURRENT").read_text().strip() == published
        assert [p.name for p in (index_dir / "generations").iterdir()] == [published], "partial generation left"
        with procfile_web(tmp_path, index_dir) as base:
            status, body = get(f"{base}/api/search?q=embedding&per_page=1")
            assert status == 200 and body["total"] > 0
        assert run_rebuild(index_dir, SEEDS).stdout.startswith(f"index generation {published} is up to date")
        assert rebuild_index(index_dir, SEEDS, force=True) != published  # and the next rebuild that fits works


def fill(disk: Path) -> Path:
    """Write a file on `disk` until no byte more fits; return it."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as stream:
        try:
            while True:
                stream.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        try:
            while True:
                stream.write(b"\0")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_a_full_disk_answers_each_write_507_without_a_path_and_changes_nothing(tmp_path: Path) -> None:
    token = new_token()
    headers = {"Authorization": f"Bearer {token}"}
    with small_tmpfs("3m") as disk:
        index_dir = disk / "index"
        build_index(index_dir, made_up_papers(WORD, 3), sources_dir=tmp_path, semantic_ranking=False)
        app = app_for(index_dir, write_token_hashes=[entry_for("ci-bot", token)], semantic_ranking=False)
        client = app.test_client()
        before = client.get("/readyz").get_json()["generation"]
        filler = fill(disk)

        body = jsonl(made_up_papers("numbat", 2))
        added = client.post("/api/papers", data=body, headers=headers, content_type="application/x-ndjson")
        removed = client.delete(f"/api/papers/{WORD}-00", headers=headers)
        for answer in (added, removed):
            assert answer.status_code == 507, answer.get_data(as_text=True)
            refused = answer.get_json()["error"]
            assert refused["code"] == "insufficient_storage" and "/" not in refused["message"], refused
        assert client.get("/readyz").get_json()["generation"] == before
        assert client.get(f"/api/search?q={WORD}").get_json()["total"] == 3

        filler.unlink()
        assert client.delete(f"/api/papers/{WORD}-00", headers=headers).status_code == 200


# What requests put in the logs --------------------------------------------------------


def send_raw(base: str, request: bytes) -> bytes:
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=REQUEST_TIMEOUT) as connection:
        connection.sendall(request)
        return connection.recv(100)


def test_request_supplied_values_cannot_forge_or_split_log_lines(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    rebuild_index(index_dir, SEEDS)
    forged = b'127.0.0.1 - - [01/Jan/2030:00:00:00 +0000] "GET /admin HTTP/1.1" 200 1'
    requests = [
        # NEL (U+0085), a line break to many log tools; a bidi override; a forged entry after it.
        b"GET /api/search?q=a HTTP/1.1\r\nHost: x\r\nUser-Agent: a\xc2\x85" + forged + b"\r\nConnection: close\r\n\r\n",
        b"GET /api/search?q=b HTTP/1.1\r\nHost: x\r\nReferer: \xe2\x80\xae" + forged + b"\r\nConnection: close\r\n\r\n",
        b'GET /api/search?q=c HTTP/1.1\r\nHost: x\r\nUser-Agent: x" "' + forged + b"\r\nConnection: close\r\n\r\n",
        b"GET /api/search?q=%0A" + forged.replace(b" ", b"%20") + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ]
    with procfile_web(tmp_path, index_dir) as base:
        for request in requests:
            assert send_raw(base, request).startswith(b"HTTP/1.1 200")
    lines = server_output(tmp_path / "server.log").splitlines()
    access = [line for line in lines if '"GET /api/search?q=' in line]
    assert len(access) == len(requests), access  # one line per request: none split
    assert not any(line.startswith(forged.decode()) for line in lines)
    assert all(line.isprintable() for line in access), access
    # gunicorn reads header bytes as Latin-1: the NEL byte and the override's bytes show as escapes.
    # (Two workers write the log: its lines need not come in the order the requests were sent.)
    by_query = {line.split('"GET /api/search?q=')[1][0]: line for line in access}
    assert "\\u0085" in by_query["a"] and "\\u0080" in by_query["b"], access
