"""`GET /metrics` from the Procfile's real gunicorn with two gevent workers (SEARCHSVC_METRICS=on).

What only exists across processes: each worker counts in its own file and whichever worker
answers a scrape reports the sum of all of them (prometheus_client's multiprocess mode, the
directory kept by config/gunicorn.conf.py's hooks), /metrics answering on the metrics address
alone, and a `searchsvc rebuild` process adding its duration to what the workers report.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.paths import SEEDS
from tests.helpers.servers import (
    POLL_ATTEMPTS,
    POLL_INTERVAL,
    free_port,
    get,
    get_text,
    procfile_web,
    rebuild_index,
    run_rebuild,
)

SEARCHES = 20
MORE_SEARCHES = 10
SCRAPES = 6  # several connections, so both workers are likely to answer one
UNKNOWN_PATHS = 50
QUERIES = ("embedding", "graph neural", "", "learning", "transformer")
SEARCH_OK = {"route": "/api/search", "method": "GET", "status": "200"}


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    status, text = get_text(url)
    assert status == 200, text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def searches_ok(url: str) -> float:
    return scrape(url).get(("searchsvc_requests_total", frozenset(SEARCH_OK.items())), 0.0)


def search(base: str, number: int) -> int:
    query = urllib.parse.urlencode({"q": QUERIES[number % len(QUERIES)], "per_page": 5})
    return get(f"{base}/api/search?{query}")[0]


def run_searches(base: str, count: int) -> None:
    """`count` searches from 4 client threads at once, so both workers take some."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(lambda number: search(base, number), range(count))) == [200] * count


def counting_processes(directory: Path) -> set[str]:
    """The pids whose counter files are in the multiprocess directory (counter_<pid>.db)."""
    return {path.stem.split("_")[1] for path in directory.glob("counter_*.db")}


def routes(url: str) -> set[str]:
    return {dict(labels)["route"] for name, labels in scrape(url) if name == "searchsvc_requests_total"}


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "index"
    rebuild_index(directory, SEEDS)
    return directory


def test_metrics_sum_both_workers_and_rise(tmp_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)  # the master makes a private directory
    metrics_port = free_port()
    metrics_env = {"SEARCHSVC_METRICS": "on", "SEARCHSVC_METRICS_BIND": f"127.0.0.1:{metrics_port}"}
    with procfile_web(tmp_path, index_dir, **metrics_env) as base:
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        assert get_text(f"{base}/metrics")[0] == 404, "the public port must not answer /metrics"

        run_searches(base, SEARCHES)
        # Whichever worker answers each scrape, it reports every worker's searches.
        assert [searches_ok(metrics_url) for _ in range(SCRAPES)] == [SEARCHES] * SCRAPES

        run_searches(base, MORE_SEARCHES)
        assert [searches_ok(metrics_url) for _ in range(SCRAPES)] == [SEARCHES + MORE_SEARCHES] * SCRAPES
        samples = scrape(metrics_url)
        assert samples[("searchsvc_request_seconds_count", frozenset({("route", "/api/search")}))] == (
            SEARCHES + MORE_SEARCHES
        )
        assert samples[("searchsvc_searches_total", frozenset({("via", "api"), ("kind", "words")}))] >= SEARCHES
        assert samples[("searchsvc_papers", frozenset())] == get(f"{base}/readyz")[1]["doc_count"]

        known = routes(metrics_url)
        for _ in range(UNKNOWN_PATHS):
            assert get_text(f"{base}/{uuid.uuid4().hex}")[0] == 404
        assert routes(metrics_url) - known <= {"<unmatched>"}
        unmatched = {"route": "<unmatched>", "method": "GET", "status": "404"}
        assert scrape(metrics_url)[("searchsvc_requests_total", frozenset(unmatched.items()))] == UNKNOWN_PATHS


def test_a_rebuild_beside_the_server_reports_its_duration(tmp_path: Path, index_dir: Path) -> None:
    shared = {"SEARCHSVC_METRICS": "on", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    metrics_port = free_port()
    with procfile_web(tmp_path, index_dir, SEARCHSVC_METRICS_BIND=f"127.0.0.1:{metrics_port}", **shared) as base:
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        before = scrape(metrics_url)
        assert ("searchsvc_rebuild_seconds_count", frozenset()) not in before, "the master emptied the directory"
        assert run_rebuild(index_dir, SEEDS, **shared).stdout.startswith(
            "index generation "
        )  # up to date: not a rebuild
        assert ("searchsvc_rebuild_seconds_count", frozenset()) not in scrape(metrics_url)
        generation = rebuild_index(index_dir, SEEDS, force=True, **shared)
        after = scrape(metrics_url)
        assert after[("searchsvc_rebuild_seconds_count", frozenset())] == 1
        assert after[("searchsvc_rebuild_seconds_sum", frozenset())] > 0
        served = {dict(labels)["generation"] for name, labels in after if name == "searchsvc_index_info"}
        assert served == {generation}
        assert get(f"{base}/readyz")[1]["generation"] == generation
        # Each worker counts in its own file there (the second may still be booting when /healthz first answers).
        for _ in range(POLL_ATTEMPTS):
            if len(counting_processes(tmp_path / "metrics")) >= 2:
                break
            time.sleep(POLL_INTERVAL)
        assert len(counting_processes(tmp_path / "metrics")) == 2
