"""The directory gunicorn's workers write their metrics to (prometheus_client's multiprocess mode),
kept by the master through config/gunicorn.conf.py's hooks.

This module must not import prometheus_client at import time: the library picks single- or
multi-process mode once, when it is first imported, from PROMETHEUS_MULTIPROC_DIR, and the
workers forked from the master inherit whatever the master imported.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from searchsvc.core.errors import ConfigurationError

MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The files prometheus_client's multiprocess mode writes (values.py: `{file_prefix}_{pid}.db`, the
# prefix a metric's type, a gauge's with its multiprocess mode, Gauge._MULTIPROC_MODES): nothing
# else in the folder is ours.
_GAUGE_MODES = "all|liveall|min|livemin|max|livemax|sum|livesum|mostrecent|livemostrecent"
LIBRARY_FILE = re.compile(rf"(?:counter|histogram|summary|gauge_(?:{_GAUGE_MODES}))_[0-9]+\.db")
# Held (flock) by the master using the folder, for as long as it runs: the kernel drops it with
# the process, so a killed server leaves no lock, and a flock holds across PID namespaces (two
# containers on one volume), where a pid tells nothing.
LOCK_FILE = "searchsvc-server.lock"
_RECORD_BYTES = 512

_held: int | None = None  # the lock's descriptor, while this process holds it


def prepare() -> Path | None:
    """Before any worker is forked: take the directory named by PROMETHEUS_MULTIPROC_DIR (made if
    missing) for this server and empty it of the library's files, or make a private one and name it
    there. Returns a directory made here, for `remove`. ConfigurationError if another server that
    runs uses the named one.

    Files left by an earlier run would otherwise be added to this run's counts, and a pid reused
    by a new worker would take over a dead one's values. Only the library's files are removed:
    the variable may name a folder that holds something else too. A live server's files are
    never removed: two servers in one folder would wipe each other's counts at each start.
    """
    named = os.environ.get(MULTIPROC_DIR_ENV, "")
    if not named:
        made = Path(tempfile.mkdtemp(prefix="searchsvc-metrics-"))
        os.environ[MULTIPROC_DIR_ENV] = str(made)  # before the fork: every worker inherits it
        return made
    directory = Path(named)
    directory.mkdir(parents=True, exist_ok=True)
    _take(directory)
    for path in directory.iterdir():
        if LIBRARY_FILE.fullmatch(path.name) and not path.is_symlink():
            path.unlink(missing_ok=True)
    return None


def _take(directory: Path) -> None:
    """Hold the directory's lock for this server's life, recording who holds it; refuse one held."""
    global _held
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise ConfigurationError(
            f"{MULTIPROC_DIR_ENV}={directory}: another searchsvc server ({holder}) keeps its metrics there; "
            "give each server a folder of its own, or leave the variable unset for a private one"
        ) from None
    record = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode("utf-8")
    os.ftruncate(fd, os.pwrite(fd, record, 0))
    _held = fd


def _holder(fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, _RECORD_BYTES, 0))
    except ValueError:
        record = {}
    if not isinstance(record, dict):
        record = {}
    shown = f"pid {record.get('pid', 'unknown')} on {record.get('host', 'an unknown host')}"
    return "".join(c if c.isprintable() else "?" for c in shown[:160])


def worker_exited(pid: int) -> None:
    """A worker's live gauges leave with it (gunicorn's child_exit); its counts stay in the sums.

    The metrics have no live gauge today (see searchsvc.web.metrics), so this is the library's
    bookkeeping kept in place for the first one added."""
    from prometheus_client import multiprocess  # after prepare() named the directory

    multiprocess.mark_process_dead(pid)


def remove(made: Path | None) -> None:
    """On the master's exit: remove the private directory `prepare` made, if it made one, and let
    go of a named one."""
    global _held
    if _held is not None:
        os.close(_held)
        _held = None
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
