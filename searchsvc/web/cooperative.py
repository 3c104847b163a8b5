"""A gevent worker's other connections keep moving while one request works (gunicorn's post_worker_init):
searches pause at their deadline checks, and writes run in a process of their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from searchsvc.backends import Backend, open_backend
from searchsvc.core.deadline import pause_searches_with
from searchsvc.host import call_in_process, work_beside_in
from searchsvc.settings import Settings

_T = TypeVar("_T")


def pause_searches_for_other_connections() -> None:
    """From now on a search in this process pauses at its deadline checks until the event loop
    has polled its sockets once and served what was ready (a /healthz, a slow client's next header).

    Neither of gevent's own pauses does that. `gevent.sleep(0)` resumes the search before the loop
    polls, so a /healthz waited about a second behind a 2 s search. `gevent.idle()` resumes it
    only once a poll finds nothing ready: while the worker's other clients kept it busy with cheap
    searches, a search paused in it for 7.3 s and answered 503 (CI, issue #30). So a pause waits on
    a check watcher, which the loop runs after every poll, with an idle watcher active so that
    the poll does not block: back after one round, however busy or quiet the worker.
    """
    import gevent  # only a gevent worker calls this

    def after_one_poll() -> None:
        hub = gevent.get_hub()
        polled, keeps_polling = hub.loop.check(), hub.loop.idle()
        keeps_polling.start(_nothing)
        try:
            hub.wait(polled)
        finally:
            keeps_polling.stop()
            keeps_polling.close()
            polled.close()

    pause_searches_with(after_one_poll)


def _nothing() -> None:
    """An idle watcher's callback: it is there to keep the loop from blocking, not to run anything."""


Change = Callable[..., _T]  # a change made on a backend: `change(backend, **arguments)`


def _in_this_thread(change: Change[_T], backend: Backend, arguments: dict[str, Any]) -> _T:
    return change(backend, **arguments)


def _in_own_process(change: Change[_T], backend: Backend, arguments: dict[str, Any]) -> _T:
    return call_in_process(_made_on_backend_of, change, backend.settings, arguments)


def _made_on_backend_of(change: Change[_T], settings: Settings, arguments: dict[str, Any]) -> _T:
    """In the write's own process: the change, on the engine the settings name."""
    return change(open_backend(settings), **arguments)


_write_runner: Callable[[Change[Any], Backend, dict[str, Any]], Any] = _in_this_thread


def run_write(change: Change[_T], backend: Backend, **arguments: Any) -> _T:
    """`change(backend, **arguments)` (reading, merging, indexing, publishing) as this process runs
    writes: here, or in a process of its own on an engine opened from `backend`'s settings, so the
    arguments are data (pickled), never the request or the app."""
    return _write_runner(change, backend, arguments)


def run_writes_in_own_processes() -> None:
    """From now on a write runs in a process of its own (`host.call_in_process`) while its greenlet
    waits: a change at 300,000 papers indexes for seconds in pure Python. In the event loop it held
    every search of the worker (503s during writes at the ACL records' size); in a native thread it
    shared the interpreter with them in turns, which took searches past their budget at 300,000
    papers (issue #30). In its own process it shares only the cores, at a lower priority, and the
    change takes the index's file locks as a CLI `add` does. It dies with the worker, as a thread
    would: a change is published whole or not at all, and a retry under its key learns which."""
    global _write_runner
    _write_runner = _in_own_process


def open_generations_in_native_threads() -> None:
    """From now on a newly published generation is opened by a native thread of gevent's while the
    worker's searches go on with the previous one (backends/whoosh/generation_cache.py): one of
    the standard library's threads would be a greenlet here, holding the event loop as it opens."""
    from gevent.threadpool import ThreadPoolExecutor  # only a gevent worker calls this

    work_beside_in(ThreadPoolExecutor(max_workers=1))
