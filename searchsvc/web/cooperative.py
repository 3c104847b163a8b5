"""Searches in a gevent worker pause for the worker's other connections (gunicorn's post_worker_init)."""

from __future__ import annotations

from searchsvc.core.deadline import pause_searches_with


def pause_searches_for_other_connections() -> None:
    """From now on a search in this process pauses at its deadline checks until the event loop
    has polled its sockets and served what is ready (a /healthz, a slow client's next header).

    `gevent.idle`, not `gevent.sleep(0)`: sleep(0) resumes the search before the loop polls,
    so a /healthz waited about a second behind a 2 s search; with idle() it waited ~50 ms.
    """
    import gevent  # only a gevent worker calls this

    pause_searches_with(gevent.idle)
