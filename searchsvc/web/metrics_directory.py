"""The directory gunicorn's workers write their metrics to (prometheus_client's multiprocess mode),
kept by the master through config/gunicorn.conf.py's hooks.

This module must not import prometheus_client at import time: the library picks single- or
multi-process mode once, when it is first imported, from PROMETHEUS_MULTIPROC_DIR, and the
workers forked from the master inherit whatever the master imported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare() -> Path | None:
    """Before any worker is forked: empty the directory named by PROMETHEUS_MULTIPROC_DIR (made if
    missing), or make a private one and name it there. Returns a directory made here, for `remove`.

    Files left by an earlier run would otherwise be added to this run's counts, and a pid reused
    by a new worker would take over a dead one's values. Only the library's `*.db` files are
    removed: the variable may name a folder that holds something else too.
    """
    named = os.environ.get(MULTIPROC_DIR_ENV, "")
    if not named:
        made = Path(tempfile.mkdtemp(prefix="searchsvc-metrics-"))
        os.environ[MULTIPROC_DIR_ENV] = str(made)  # before the fork: every worker inherits it
        return made
    directory = Path(named)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)
    return None


def worker_exited(pid: int) -> None:
    """A worker's live gauges leave with it (gunicorn's child_exit); its counts stay in the sums.

    The metrics have no live gauge today (see searchsvc.web.metrics), so this is the library's
    bookkeeping kept in place for the first one added."""
    from prometheus_client import multiprocess  # after prepare() named the directory

    multiprocess.mark_process_dead(pid)


def remove(made: Path | None) -> None:
    """On the master's exit: remove the private directory `prepare` made, if it made one."""
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
