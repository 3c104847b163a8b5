"""Embedding after a write through the API: in a process of its own, never inside the request.

A web worker is a gevent worker: the rebuild's encoder processes cannot be started from it
(their pipes would be gevent's non-blocking sockets), and embedding a thousand abstracts takes
longer than its 30 s timeout. So a write publishes its change at once, answers
`semantic_ranking: pending`, and starts this module as a separate process, which embeds what
the published index lacks with the rebuild's own encoder processes. Searches rank by meaning
again as soon as it finishes. No write ever waits for it or does its work.

One such process embeds at a time (a lock beside the vector store). A write that publishes
while one runs starts another, which finds the lock taken and leaves: the running one looks at
the published generation again after releasing the lock, and goes on if it changed. Either
the newcomer's attempt comes after the release (it takes the lock) or its publish came before
the release (the running one sees it), so no published change is left unembedded.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from searchsvc.backends import Backend, open_backend
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.progress import ProgressFactory, no_progress
from searchsvc.settings import Settings

LOCK_FILE = ".embedding.lock"
log = logging.getLogger(__name__)


def start(settings: Settings) -> None:
    """Start embedding the published index's new papers in a process of its own; return at once.

    The settings go to it whole through its standard input (secrets included, so never on its
    command line); its log lines go to this process's standard error, the server's log."""
    process = subprocess.Popen(
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        close_fds=True,
    )
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(pickle.dumps(settings))
    # Reaped when it ends (a green thread in a gevent worker), so no zombie is left behind.
    threading.Thread(target=process.wait, name="searchsvc-embedding-reaper", daemon=True).start()


def embed_pending(backend: Backend, progress: ProgressFactory = no_progress) -> int | None:
    """Embed every published paper that has no vector yet, until the published generation stays
    the same; return how many were embedded, or None if another process was already at it."""
    embedded: int | None = None
    while True:
        with _alone(backend.settings.vector_store_dir / LOCK_FILE) as alone:
            if not alone:
                return embedded
            seen = backend.published()
            embedded = (embedded or 0) + backend.embed(progress)
        if backend.published() == seen:
            return embedded


@contextmanager
def _alone(path: Path) -> Iterator[bool]:
    """Whether this process holds the lock at `path` (without waiting for it), for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def main() -> int:
    """The process `start` runs: settings from standard input, one log line to standard error."""
    logging.basicConfig(level=logging.INFO, format="searchsvc embedding [%(process)d]: %(message)s")
    settings = pickle.load(sys.stdin.buffer)
    started = time.monotonic()
    try:
        embedded = embed_pending(open_backend(settings))
    except SearchsvcError as failed:
        log.error("papers stay ranked by their words until the next change: %s", failed.explained())
        return 1
    if embedded is not None:
        log.info("%d paper(s) embedded in %.1f s", embedded, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
