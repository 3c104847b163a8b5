"""Slow clients against the Procfile's real gunicorn: 200 sockets that send nothing or trickle a
header byte a second must not keep a normal client's searches from being answered."""

from __future__ import annotations

import os
import selectors
import socket
import statistics
import threading
import time
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.paths import SEEDS
from tests.helpers.servers import get, procfile_web, rebuild_index

pytestmark = pytest.mark.reliability

IDLE, TRICKLING = 100, 100
SEARCHES = 100
TRICKLE_EVERY = 1.0  # seconds between two header bytes of a trickling socket
# A request line and a header that never ends: the server waits for the rest of the headers.
_TRICKLE = b"GET /api/search?q=memory HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100_000


class SlowClients:
    """`idle` sockets that send nothing and `trickling` ones that send one header byte every
    TRICKLE_EVERY seconds, each reopened as soon as the server closes it, as an attacker would;
    all run by one thread until the `with` block ends, which closes them."""

    def __init__(self, port: int, idle: int, trickling: int) -> None:
        self._port = port
        self._wanted = [False] * idle + [True] * trickling
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)
        self.reopened = 0

    def __enter__(self) -> SlowClients:
        self._selector = selectors.DefaultSelector()
        for trickles in self._wanted:
            self._open(trickles)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()
        self._selector.close()
        assert not self._thread.is_alive()

    def _open(self, trickles: bool) -> None:
        sock = socket.create_connection(("127.0.0.1", self._port), timeout=5)
        sock.setblocking(False)
        self._selector.register(sock, selectors.EVENT_READ, [trickles, 0])

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=TRICKLE_EVERY):
                self._reopen_if_closed(key)
            for key in list(self._selector.get_map().values()):
                trickles, sent = key.data
                if trickles:
                    try:
                        key.fileobj.send(_TRICKLE[sent : sent + 1])
                        key.data[1] = sent + 1
                    except OSError:
                        self._replace(key)

    def _reopen_if_closed(self, key: selectors.SelectorKey) -> None:
        try:
            closed = key.fileobj.recv(65536) == b""
        except BlockingIOError:
            return
        except OSError:
            closed = True
        if closed:
            self._replace(key)

    def _replace(self, key: selectors.SelectorKey) -> None:
        self._selector.unregister(key.fileobj)
        key.fileobj.close()
        self.reopened += 1
        try:
            self._open(key.data[0])
        except OSError:  # the server's backlog is full: try again on the next round
            self._wanted.append(key.data[0])


def search_latencies(base: str, count: int) -> list[float]:
    """Seconds each of `count` searches took (one new connection each); a failure counts as
    forever and ends the run (a blocked server would otherwise take 10 s per search)."""
    latencies = []
    for number in range(count):
        started = time.monotonic()
        try:
            status, body = get(f"{base}/api/search?q=embedding&page={1 + number % 3}", timeout=10)
            ok = status == 200 and body["total"] > 0
        except (OSError, urllib.error.URLError, ValueError):
            ok = False
        latencies.append(time.monotonic() - started if ok else float("inf"))
        if not ok:
            break
    return latencies


def p95(latencies: list[float]) -> float:
    return statistics.quantiles(latencies, n=20, method="inclusive")[-1]


@contextmanager
def seeds_server(tmp_path: Path) -> Iterator[str]:
    index_dir = tmp_path / "index"
    rebuild_index(index_dir, SEEDS)
    with procfile_web(tmp_path, index_dir) as base:
        yield base


def test_slow_clients_do_not_block_searches(tmp_path: Path) -> None:
    with seeds_server(tmp_path) as base:
        port = int(base.rsplit(":", 1)[1])
        with SlowClients(port, IDLE, TRICKLING) as attack:
            time.sleep(2 * TRICKLE_EVERY)  # every slow socket is open and has been served what it sent
            latencies = search_latencies(base, SEARCHES)
        load = os.getloadavg()[0]
    failed = sum(latency == float("inf") for latency in latencies)
    assert failed == 0, f"search {len(latencies)} of {SEARCHES} failed (load average {load:.1f})"
    assert p95(latencies) < 1.0, (
        f"p95 {p95(latencies):.2f} s, median {statistics.median(latencies):.3f} s, "
        f"{attack.reopened} slow sockets reopened, load average {load:.1f}"
    )
