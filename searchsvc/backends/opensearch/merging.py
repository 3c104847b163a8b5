"""Merging away the deleted copies that rewritten papers leave: after the answer, in a process of its own.

An update rewrites papers (and embedding rewrites them again with their vectors). Lucene keeps
each old copy as a deleted document, counted in word statistics until a merge drops it, so
scores differ a little from a fresh load's (and Whoosh's) until then. The cluster keeps the
copies written since its last retention-lease sync (every ~30 s) for its replicas' recoveries,
and no request hastens that, so the merge can take half a minute: a write answers once its
change is searchable (its refresh) and starts this process, which asks for the merge until no
deleted copy is left or `opensearch_merge_wait_s` has passed.

One such process runs at a time per index folder (`host.alone_until_unchanged`): a write while
it runs starts another, which leaves, and the running one goes on while deleted copies come.
A merge never refreshes (an update may be writing with refreshes held, and a refresh would show
its papers half-written): searches see it at the index's next scheduled refresh. Killed, it
leaves the index as it was, merged or not; a rebuild that deletes the index ends it.
"""

from __future__ import annotations

import logging
import pickle
import subprocess
import sys
import time

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors

from searchsvc.backends.opensearch.cluster import cluster_errors, connect, where
from searchsvc.backends.opensearch.generations import Generations
from searchsvc.core.errors import SearchsvcError
from searchsvc.host import alone_until_unchanged, start_detached
from searchsvc.settings import Settings

LOCK_FILE = ".merging.lock"  # in the index folder
_MERGE_WAIT = 600  # seconds for one merge request: it rewrites every segment holding a deleted copy
_PAUSE = 2.0  # seconds between merges while the cluster still keeps deleted copies
log = logging.getLogger(__name__)


def start(settings: Settings) -> subprocess.Popen[bytes] | None:
    """Start merging the published index in a process of its own and return at once (no process
    when `opensearch_merge_wait_s` is 0: the copies then stay until a later change's merge)."""
    if not settings.opensearch_merge_wait_s:
        return None
    return start_detached(__name__, pickle.dumps(settings))


def merge_published(settings: Settings, generations: Generations) -> bool | None:
    """Merge the published index until no deleted copy is left or the wait is over, again while
    new ones come; whether none is left (None: another process was at it)."""

    def leftovers() -> tuple[str, int]:
        index = generations.serving()
        return index, deleted(generations.client, index)

    def merge() -> bool:
        return settle(generations.client, generations.serving(), settings.opensearch_merge_wait_s)

    passes = alone_until_unchanged(settings.index_dir / LOCK_FILE, leftovers, merge)
    return None if passes is None else passes[-1]


def settle(client: OpenSearch, index: str, seconds: float) -> bool:
    """Merge away `index`'s deleted copies, trying for up to `seconds` while the cluster still keeps
    some; return whether none is left (none is, of an index a rebuild deleted meanwhile)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.indices.flush(index=index)  # the copies below the last commit are not kept
            client.indices.forcemerge(index=index, params={"only_expunge_deletes": "true"}, request_timeout=_MERGE_WAIT)
            if not deleted(client, index):
                return True
        except os_errors.NotFoundError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_PAUSE)


def deleted(client: OpenSearch, index: str) -> int:
    """The deleted copies `index` holds, as of its last flush or refresh: none, for an index a
    rebuild deleted meanwhile (gone, or with no shard left to count)."""
    try:
        stats = client.indices.stats(index=index, metric="docs")
    except os_errors.NotFoundError:
        return 0
    return int(stats["_all"]["total"].get("docs", {}).get("deleted", 0))


def main() -> int:
    """The process `start` runs: settings from standard input, a log line to standard error."""
    logging.basicConfig(format="searchsvc merging [%(process)d]: %(message)s")  # the client's lines: warnings only
    log.setLevel(logging.INFO)
    settings: Settings = pickle.load(sys.stdin.buffer)
    cluster = where(settings)
    started = time.monotonic()
    try:
        with cluster_errors(cluster):
            merged = merge_published(settings, Generations(connect(settings), settings.opensearch_index, cluster))
    except SearchsvcError as failed:
        log.error("scores may differ a little from a rebuild's until a later merge: %s", failed.explained())
        return 1
    if merged is False:
        log.warning(
            "deleted copies are left after %d s (opensearch_merge_wait_s): scores differ a little from a "
            "rebuild's until a later change's merge drops them",
            settings.opensearch_merge_wait_s,
        )
    elif merged:
        log.info("deleted copies merged away in %.1f s", time.monotonic() - started)
    return 0
