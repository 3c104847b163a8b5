"""One time budget per request, against the real gunicorn on the 29,580 ACL records.

A time bound IS the requirement here: adversarial queries (500-letter nonsense words, 70–100
short nonsense words, phrases of stop words, wildcards near their limit, the search page with
an author lookup) once held a worker for 15–23 s, and two at once took the service down.
Thirty misspelt common words, each matching the words a typo away, are among them (issue #33).

The ACL index is built once for the module with the CLI, ranking by meaning off (embedding
29,580 papers would take most of an hour; this test is about lexical work). The server runs
with a 2 s limit so the test is quick, and the Procfile's two workers: four clients keep both
busy, so each worker's gevent loop holds two searches taking turns, and /healthz must still
be answered at once (a search pauses every 20 ms for the worker's other connections and hands
its turn on: core/deadline.py). Before that, a /healthz accepted by a busy worker waited for
the whole 2 s search, and later a cheap page waited out a wildcard search's whole limit.
"""

from __future__ import annotations

import random
import string
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers.indexes import AclIndex
from tests.helpers.paths import SHARED_ACL
from tests.helpers.servers import procfile_web

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="the shared ACL records are not here"),
]

LIMIT_MS = 2000
ALLOWED_S = LIMIT_MS * 1.1 / 1000
HEALTH_S = 0.5  # measured 22–45 ms on a quiet machine; a search pauses every 20 ms of its work
SEED = 20261201
_NO_MEANING = {"SEARCHSVC_SEMANTIC_RANKING": "false"}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, whatever proxy is set


WILDCARDS = ["fa* cl* no* ar*", "ac* ad* ba* be*", "ne* gr* ha* mu*"]  # each expands to 240-300 words
# Common words of ACL titles: misspelt, each is looked up and matches up to three words that
# thousands of papers hold (typo tolerance, core/typos.py).
COMMON = (
    "language translation learning neural models semantic parsing sentence corpus annotation embeddings attention "
    "transformer generation dialogue question answering retrieval entity relation extraction summarization "
    "classification sentiment grammar speech syntax lexical evaluation benchmark"
).split()


def _nonsense(rng: random.Random, letters: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(letters))


def _misspelt(rng: random.Random, word: str) -> str:
    """`word` with two neighbouring letters after its first swapped: one edit."""
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def adversarial_urls() -> list[str]:
    """22 different queries that each cost seconds of CPU or more when left unbounded."""
    rng = random.Random(SEED)
    queries = [_nonsense(rng, 500) for _ in range(4)]
    queries += [" ".join(_nonsense(rng, 4) for _ in range(count)) for count in (70, 85, 99, 100)]
    queries += [" ".join(_misspelt(rng, word) for word in rng.sample(COMMON, 30)) for _ in range(2)]
    queries += [
        '"of the" "in the" "to the" "and the" "on the" "for the" "is a" "of a"',
        '"the the"',
        '"of of" "a a" "in in"',
        '"the model of the" "in the" "of a" "to the"',
        'title:"of the" abstract:"in the" "and the"',
        '"is the" OR "as a" OR "by the" OR "with the" OR "from the"',
    ]
    queries += WILDCARDS
    urls = [f"/api/search?{urllib.parse.urlencode({'q': q})}" for q in queries]
    pages = [
        {"q": _nonsense(rng, 500), "find_author": "a"},
        {"q": " ".join(_nonsense(rng, 5) for _ in range(80)), "find_author": "s"},
        {"q": '"of the" "in the" "to the"', "find_author": "m"},
    ]
    urls += [f"/?{urllib.parse.urlencode(page)}" for page in pages]
    assert len(set(urls)) == 22
    return urls


def _timed_get(url: str, timeout: float = 60) -> tuple[int, float]:
    started = time.monotonic()
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        error.read()
        error.close()
        status = error.code
    return status, time.monotonic() - started


class _HealthPoller:
    """Polls /healthz from its own thread until stopped; keeps the slowest answer."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._stop = threading.Event()
        self.slowest = 0.0
        self.polls = 0
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._run, name="healthz", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                status, took = _timed_get(f"{self._base}/healthz", timeout=35)
                if status != 200:
                    self.failures.append(f"status {status}")
                self.slowest = max(self.slowest, took)
            except OSError as error:
                self.failures.append(repr(error))
            self.polls += 1
            time.sleep(0.05)

    def __enter__(self) -> _HealthPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=40)


@pytest.fixture(scope="module")
def server(acl_index: AclIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with procfile_web(
        tmp_path_factory.mktemp("server"),
        acl_index.index_dir,
        SEARCHSVC_SEARCH_TIME_LIMIT_MS=str(LIMIT_MS),
        **_NO_MEANING,
    ) as base:
        yield base


def test_adversarial_queries_four_at_a_time_answer_within_the_limit_and_healthz_stays_quick(server: str) -> None:
    urls = adversarial_urls()
    with _HealthPoller(server) as health, ThreadPoolExecutor(max_workers=4) as clients:
        answers = list(clients.map(lambda path: (path, *_timed_get(server + path)), urls))
    slow = [(path[:80], status, round(took, 2)) for path, status, took in answers if took > ALLOWED_S]
    failed = [(path[:80], status) for path, status, _ in answers if status not in (200, 400, 503)]
    assert not failed, failed
    assert not slow, f"answered after more than {ALLOWED_S} s: {slow}"
    assert health.polls > 0 and not health.failures, health.failures
    assert health.slowest < HEALTH_S, f"/healthz took {health.slowest:.2f} s"


def test_the_whole_suite_of_answers_is_not_just_timeouts(server: str) -> None:
    """The bound is met by answering, not only by giving up: nonsense and misspelt words get a 200."""
    statuses = {path: _timed_get(server + path)[0] for path in adversarial_urls()[:10]}
    assert set(statuses.values()) == {200}, statuses
