"""A gevent worker's other connections keep moving while one request works (gunicorn's post_worker_init):
searches pause at their deadline checks, and writes run in a native thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from searchsvc.core.deadline import pause_searches_with
from searchsvc.host import work_beside_in

_T = TypeVar("_T")


def pause_searches_for_other_connections() -> None:
    """From now on a search in this process pauses at its deadline checks until the event loop
    has polled its sockets and served what is ready (a /healthz, a slow client's next header).

    `gevent.idle`, not `gevent.sleep(0)`: sleep(0) resumes the search before the loop polls,
    so a /healthz waited about a second behind a 2 s search; with idle() it waited ~50 ms.
    """
    import gevent  # only a gevent worker calls this

    pause_searches_with(gevent.idle)


def _in_this_thread(work: Callable[[], _T]) -> _T:
    return work()


_write_runner: Callable[[Callable[[], object]], object] = _in_this_thread


def run_write(work: Callable[[], _T]) -> _T:
    """Run a write's change (reading, merging, indexing, publishing) as this process runs writes."""
    return _write_runner(work)  # type: ignore[return-value]  # the runner gives back what `work` does


def run_writes_in_native_threads() -> None:
    """From now on a write runs in a native thread of the gevent hub's pool while its greenlet
    waits: a change at 300,000 papers indexes for seconds in pure Python, which held the event
    loop, so every search that reached the writing worker waited for it (issue #30: 503s during
    writes at the ACL records' size). The searches share the interpreter with it, in turns,
    instead of waiting. gevent's locks work across native threads (the backend's turn, the
    generation cache); the change itself takes the index's file locks, as a CLI `add` does."""
    import gevent  # only a gevent worker calls this

    global _write_runner
    pool = gevent.get_hub().threadpool
    _write_runner = pool.apply


def open_generations_in_native_threads() -> None:
    """From now on a newly published generation is opened by a native thread of gevent's while the
    worker's searches go on with the previous one (backends/whoosh/generation_cache.py): one of
    the standard library's threads would be a greenlet here, holding the event loop as it opens."""
    from gevent.threadpool import ThreadPoolExecutor  # only a gevent worker calls this

    work_beside_in(ThreadPoolExecutor(max_workers=1))
