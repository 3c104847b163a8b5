"""Embedding after a write through the API: in a process of its own, never inside the request.

A web worker is a gevent worker: the rebuild's encoder processes cannot be started from it
(their pipes would be gevent's non-blocking sockets), and embedding a thousand abstracts takes
longer than its 30 s timeout. So a write publishes its change at once, answers
`semantic_ranking: pending`, and starts this module as a separate process, which embeds what
the published index lacks with the rebuild's own encoder processes. Searches rank by meaning
again as soon as it finishes. No write ever waits for it or does its work.

One such process embeds at a time (a lock beside the vector store, `host.alone_until_unchanged`):
a write that publishes while one runs starts another, which leaves, and the running one goes on
while the published generation changes.
"""

from __future__ import annotations

import logging
import pickle
import sys
import time

from searchsvc.backends import Backend, open_backend
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.progress import ProgressFactory, no_progress
from searchsvc.host import alone_until_unchanged, start_detached
from searchsvc.semantic.shards import Shard
from searchsvc.settings import Settings

LOCK_FILE = ".embedding.lock"
log = logging.getLogger(__name__)


def start(settings: Settings) -> None:
    """Start embedding the published index's new papers in a process of its own; return at once.
    A process that cannot be started (no memory, no process slots) is logged, never raised: the
    change it follows is published, and its answer must say so (issue #36)."""
    try:
        start_detached(__name__, pickle.dumps(settings))
    except OSError as failed:
        log.error(
            "the change stands, its new papers ranked by their words: they could not be embedded now (%s); "
            "the next write embeds them, or `searchsvc embed`",
            failed.strerror or type(failed).__name__,
        )


def embed_pending(backend: Backend, progress: ProgressFactory = no_progress, shard: Shard | None = None) -> int | None:
    """Embed every published paper (of `shard` alone, if given) that has no vector yet, until the
    published generation stays the same; return how many were embedded, or None if another process
    was already at it (at this shard: those of other shards run beside it)."""
    name = LOCK_FILE if shard is None else f"{LOCK_FILE.removesuffix('.lock')}-{shard.number}-of-{shard.count}.lock"
    lock = backend.settings.vector_store_dir / name
    passes = alone_until_unchanged(lock, backend.published, lambda: backend.embed(progress, shard))
    return None if passes is None else sum(passes)


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
