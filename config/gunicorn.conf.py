"""gunicorn settings for searchsvc: the Procfile's `web:` line and `searchsvc serve` both use this file.

Environment: PORT (default 8000) and HOST (default 0.0.0.0, the platform convention) for
the address, WEB_CONCURRENCY for the number of workers, SEARCHSVC_* for the service, and
PROMETHEUS_MULTIPROC_DIR for where workers keep their metrics when SEARCHSVC_METRICS is on.
"""

import multiprocessing
import os
import sys

from searchsvc.core.errors import ConfigurationError
from searchsvc.settings import load_settings
from searchsvc.settings.rules import address_port

# Settings are checked here, in the master, so a bad value stops gunicorn with one line before
# any worker boots (a worker failing in create_app would print a traceback per worker instead).
# (Named with an underscore: gunicorn reads this module's other globals as its own settings.)
try:
    _settings = load_settings()
except ConfigurationError as exc:
    print(f"error: {exc.message}", file=sys.stderr)
    sys.exit(2)

# One BLAS thread per worker, set before any worker imports numpy: the workers already use
# every core, and embedding one query is too small to gain. The ONNX encoders take their
# thread count from the code instead (searchsvc/semantic/selection.py: one for queries, so
# a worker starts no thread pool; every core only for a rebuild's `searchsvc rebuild`).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

_port = os.environ.get("PORT", "8000")
bind = [f"{os.environ.get('HOST', '0.0.0.0')}:{_port}"]
# With metrics on, gunicorn also listens on metrics_bind (loopback by default), the one address
# /metrics answers on (searchsvc/web/metrics.py); every address serves the same app otherwise.
if _settings.metrics and _settings.metrics_bind:
    if address_port(_settings.metrics_bind) == _port:
        print(f"error: SEARCHSVC_METRICS_BIND={_settings.metrics_bind}: {_port} is the public PORT", file=sys.stderr)
        sys.exit(2)
    bind.append(_settings.metrics_bind)

# Searching is CPU-bound pure Python, so one worker process per core; each opens the
# published index generation itself. Each worker is a gevent worker, not a synchronous one:
# a synchronous worker waits on one client at a time, so two sockets that send nothing stop
# the service. Here each connection costs a greenlet. A search never waits on a socket, so it
# pauses every 20 ms of its work (post_worker_init) to let the worker's other connections
# move, and searches of one worker take turns at its Whoosh searcher, handing the turn on in
# each pause (docs/decisions.md).
_MAX_WORKERS = 64


def _worker_count() -> int:
    """WEB_CONCURRENCY, checked like every setting: 0 started no worker (requests hung), `abc` a traceback."""
    given = os.environ.get("WEB_CONCURRENCY")
    if given is None:
        return multiprocessing.cpu_count()
    count = int(given) if given.strip().isdigit() else 0
    if not 1 <= count <= _MAX_WORKERS:
        print(
            f"error: WEB_CONCURRENCY={given[:40]!r}: the number of worker processes must be a whole number "
            f"from 1 to {_MAX_WORKERS} (one per core is the default)",
            file=sys.stderr,
        )
        sys.exit(2)
    return count


workers = _worker_count()
worker_class = "gevent"
worker_connections = 1000  # open connections per worker, idle ones included

# A search that has not answered in 30 s is stuck; gunicorn replaces the worker.
timeout = 30
graceful_timeout = 30
# Seconds a kept-alive connection may stay idle, and (gevent worker) the most a client may
# take to send a request's line and headers: a socket that trickles them is closed after it.
keepalive = 2

# The longest request line gunicorn accepts (its default is 4094). The app's own limits
# (500 query characters, 50 values per filter) are the ones users meet: a 500-character
# query in a non-Latin script is about 4,500 bytes once percent-encoded.
limit_request_line = 8190

# gunicorn's control socket (for `gunicornc`) defaults to one path per user, which two
# instances on one machine would fight over; nothing here uses it.
control_socket_disable = True

accesslog = "-"
errorlog = "-"
# Escapes what requests put in the access log (header values), so no request forges a line.
logger_class = "searchsvc.web.access_log.EscapingLogger"


# Metrics (prometheus_client's multiprocess mode): each worker writes its counts to files in one
# directory and a scrape sums them. The master takes it for itself and empties it of the library's
# files (or makes a private one) before forking; a folder another running server has is refused.
_made_metrics_directory = None


def on_starting(server):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    global _made_metrics_directory
    if _settings.metrics:
        from searchsvc.web import metrics_directory

        try:
            _made_metrics_directory = metrics_directory.prepare()
        except ConfigurationError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            sys.exit(2)


def child_exit(server, worker):  # noqa: ANN001, ANN201
    if _settings.metrics:
        from searchsvc.web import metrics_directory

        metrics_directory.worker_exited(worker.pid)


def on_exit(server):  # noqa: ANN001, ANN201
    from searchsvc.web import metrics_directory

    metrics_directory.remove(_made_metrics_directory)


def post_worker_init(worker):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    """Let searches pause for the worker's other connections, writes run in processes of their own and
    the opening of a newly published generation beside them; remove what killed changes left (a worker
    killed by its timeout is followed by this one), and open the published index before the first
    request, so no user waits for it."""
    from gunicorn.workers.ggevent import GeventWorker

    from searchsvc.web.app import open_index, remove_leftovers
    from searchsvc.web.cooperative import (
        open_generations_in_native_threads,
        pause_searches_for_other_connections,
        run_writes_in_own_processes,
    )

    if isinstance(worker, GeventWorker):  # GUNICORN_CMD_ARGS may choose another class
        pause_searches_for_other_connections()
        run_writes_in_own_processes()
        open_generations_in_native_threads()
    remove_leftovers(worker.wsgi)
    open_index(worker.wsgi)
