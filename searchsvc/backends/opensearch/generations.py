"""Index generations behind one alias: the rebuild lock, loading, replicas, the alias move, pruning.

A rebuild loads a new index `<alias>-<timestamp>`, checks it, and moves the alias to it in
one `_aliases` call, so searches see the old index or the new one, never a partial one.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import streaming_bulk

from searchsvc.backends.opensearch.cluster import cluster_errors, disk_full, failure_reason
from searchsvc.backends.opensearch.mapping import MAPPING_VERSION
from searchsvc.core.errors import IndexUnavailable, RebuildFailed, RebuildInProgress, StorageFull
from searchsvc.host import running

BULK_CHUNK = 500
_REPLICAS_WAIT = 120  # seconds, for the new index's replicas before the alias moves to it
# How long a search trusts the last check that the published index is one this version reads.
# An index of another version is published only by another version's rebuild, so this is rare.
SERVING_CHECK_SECONDS = 10.0
# The change lock's lease: renewed every quarter of it while the change runs, taken over once it has
# run out by more than the skew allowed between the machines' clocks (NTP keeps them far closer).
LEASE_SECONDS = 120.0
CLOCK_SKEW_SECONDS = 30.0
log = logging.getLogger(__name__)
_HOLDER = "holder"  # the lock's one document
_Version = tuple[int, int]  # a document's sequence number and primary term, for compare-and-set


class Generations:
    """The indices published, one at a time, under `alias`."""

    def __init__(self, client: OpenSearch, alias: str, where: str) -> None:
        self.client = client
        self.alias = alias
        self.where = where
        self._generation = re.compile(rf"{re.escape(alias)}-\d{{8}}t\d{{6}}-\d{{6}}")
        self._checked_at = -float("inf")

    def new_name(self) -> str:
        return f"{self.alias}-{datetime.now(UTC).strftime('%Y%m%dt%H%M%S-%f')}"

    # The rebuild lock ---------------------------------------------------------------

    @contextmanager
    def exclusive(self, kind: str, by: str) -> Iterator[None]:
        """One change (a rebuild or a write: `kind`, `by` which one) per alias at a time, across
        machines: a lock index only one can create, holding a document that says who holds it and
        until when (a lease, renewed while the change runs, so a holder that dies on any machine
        frees it). The document is written only by compare-and-set (its sequence number): of two
        processes taking over a lock run out, one wins."""
        lock = f"{self.alias}-rebuild-lock"
        holder = {
            "kind": kind,
            "by": by,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": now(),
            "token": secrets.token_hex(8),  # this holder's, whatever the host and pid
            "lease_until": time.time() + LEASE_SECONDS,
        }
        with cluster_errors(self.where):
            held = self._take_lock(lock, holder)
            if held is None:
                raise self._refused(lock)
        renewing = _Renewal(lambda version: self._renew(lock, holder, version), held)
        try:
            with cluster_errors(self.where):
                self.prune(keep=None)  # indices left by a rebuild that was killed
            yield
        finally:
            renewing.stop()
            with cluster_errors(self.where):
                if self._lock_holder(lock)[0].get("token") == holder["token"]:  # not taken over meanwhile
                    self.client.indices.delete(index=lock, ignore_unavailable=True)

    def _take_lock(self, lock: str, holder: dict[str, Any]) -> _Version | None:
        """Create the lock, or take over one whose holder is gone; the holder document's version, or
        None when another holds it."""
        body = {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"_meta": holder}}
        try:
            self.client.indices.create(index=lock, body=body)
        except os_errors.RequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
            found, version = self._lock_holder(lock)
            if not _is_stale(found):
                return None
            log.warning("taking over the change lock of %s from a holder gone: %s", self.alias, found)
        else:
            version = None  # the document is written next; the index's record says who holds it until then
        return self._write_holder(lock, holder, version)

    def _write_holder(self, lock: str, holder: dict[str, Any], version: _Version | None) -> _Version | None:
        """Write `holder` over the document at `version` (None: where there is none yet); its new
        version, or None if another wrote it first."""
        try:
            if version is None:
                written = self.client.create(index=lock, id=_HOLDER, body=holder)
            else:
                written = self.client.index(
                    index=lock, id=_HOLDER, body=holder, params={"if_seq_no": version[0], "if_primary_term": version[1]}
                )
        except os_errors.ConflictError:
            return None
        return int(written["_seq_no"]), int(written["_primary_term"])

    def _renew(self, lock: str, holder: dict[str, Any], version: _Version) -> _Version | None:
        """Extend `holder`'s lease over `version`, the one it last wrote; the new version, or None
        (and said) if the lock is no longer its own."""
        holder["lease_until"] = time.time() + LEASE_SECONDS
        renewed = self._write_holder(lock, holder, version)
        if renewed is None:
            log.error("the change lock of %s is no longer this change's: its lease was not renewed in time", self.alias)
        return renewed

    def _lock_holder(self, lock: str) -> tuple[dict[str, Any], _Version | None]:
        """Who holds `lock` and the version of the document saying so; an older lock's (or one whose
        document is not written yet) from the index's record, without a version."""
        found: dict[str, Any] = self.client.get(index=lock, id=_HOLDER, ignore=404)
        if found.get("found") and isinstance(found.get("_source"), dict):
            return found["_source"], (int(found["_seq_no"]), int(found["_primary_term"]))
        mapping: dict[str, Any] = self.client.indices.get_mapping(index=lock, ignore=404)
        meta = mapping.get(lock, {}).get("mappings", {}).get("_meta", {})
        return (meta if isinstance(meta, dict) else {}), None

    def _refused(self, lock: str) -> RebuildInProgress:
        return RebuildInProgress.held_by(
            self._lock_holder(lock)[0],
            f"alias {self.alias!r}",
            f"try again when it ends; if it died, its lock is taken over {LEASE_SECONDS + CLOCK_SKEW_SECONDS:.0f} s "
            "after its last renewal",
        )

    # Loading and publishing -----------------------------------------------------------

    def load(self, actions: Iterable[dict[str, Any]], progress: Callable[[int], None]) -> None:
        """Send bulk actions; the first one the cluster refuses fails the rebuild. Deleting a paper
        that is not there is no failure: an update repairing an interrupted one deletes again."""
        for ok, item in streaming_bulk(self.client, actions, chunk_size=BULK_CHUNK, raise_on_error=False):
            if not ok and item.get("delete", {}).get("status") != 404:
                failed = next(iter(item.values()))
                if disk_full(why := failure_reason(failed.get("error"))):
                    raise StorageFull(f"{self.where}: {why}")
                raise RebuildFailed(
                    f"the cluster refused paper {failed.get('_id')!r}: {why}; the published index is unchanged"
                )
            progress(1)

    def replicate(self, name: str, replicas: int) -> None:
        """Turn on refreshes and replicas (off while loading, for speed), then wait for them."""
        settings = {"index": {"number_of_replicas": replicas, "refresh_interval": None}}
        self.client.indices.put_settings(index=name, body=settings)
        self.client.indices.refresh(index=name)
        health = self.client.cluster.health(
            index=name,
            params={"wait_for_status": "green", "timeout": f"{_REPLICAS_WAIT}s"},
            request_timeout=_REPLICAS_WAIT + 10,
        )
        if health.get("timed_out"):
            raise RebuildFailed(
                f"new index {name} did not get its {replicas} replica(s) within "
                f"{_REPLICAS_WAIT} s (status {health.get('status')}; a cluster needs more nodes than replicas); "
                "not published"
            )

    def check(self, name: str, expected: int) -> None:
        found = self.client.count(index=name)["count"]
        if found != expected:
            raise RebuildFailed(f"new index {name} holds {found} papers, expected {expected}; not published")

    def publish(self, name: str) -> None:
        """Move the alias in one atomic call: no moment without an index, none with two."""
        actions: list[dict[str, Any]] = [{"add": {"index": name, "alias": self.alias}}]
        actions += [{"remove": {"index": old, "alias": self.alias}} for old in self.aliased()]
        self.client.indices.update_aliases(body={"actions": actions})

    def aliased(self) -> list[str]:
        """The indices the alias points at (none before the first rebuild)."""
        found = self.client.indices.get_alias(name=self.alias, ignore=404)  # 404: no alias, not an error
        return [] if found.get("status") == 404 else sorted(found)

    def serving(self) -> str:
        """The published index, if this version of searchsvc can read it (IndexUnavailable before the
        first rebuild, or for an index an older version built: it lacks fields searches now ask for)."""
        return self.serving_mapping()[0]

    def serving_mapping(self) -> tuple[str, dict[str, Any]]:
        """`serving()`, with the index's mappings (its `_meta` says how and when it was built)."""
        indices = self.aliased()
        if not indices:
            raise self.unpublished()
        index = indices[0]
        mappings: dict[str, Any] = self.client.indices.get_mapping(index=index)[index]["mappings"]
        built_with = mappings.get("_meta", {}).get("mapping_version")
        if built_with != MAPPING_VERSION:
            raise IndexUnavailable(
                f"the published index was built with mapping version {built_with}, this version of searchsvc "
                f"reads version {MAPPING_VERSION}: run `searchsvc rebuild`",
                private=f"{self.where}: {index}",
            )
        self._checked_at = time.monotonic()
        return index, mappings

    def unpublished(self) -> IndexUnavailable:
        """The error of a search or status asked before the alias names any index."""
        return IndexUnavailable(
            f"no index is published under alias {self.alias!r} on the OpenSearch cluster: run `searchsvc rebuild`",
            private=self.where,
        )

    def check_serving(self) -> None:
        """`serving()`'s check, at most once every `SERVING_CHECK_SECONDS`: searches go to the alias
        directly, and asking the cluster which index it names on every request would double its cost."""
        if time.monotonic() - self._checked_at >= SERVING_CHECK_SECONDS:
            self.serving()

    def prune(self, keep: str | None) -> None:
        """Delete this alias's generations that it does not point at (and not `keep`)."""
        serving = set(self.aliased()) | {keep}
        existing = self.client.indices.get(index=f"{self.alias}-*", ignore_unavailable=True, allow_no_indices=True)
        for index in existing:
            if self._generation.fullmatch(index) and index not in serving:
                self.client.indices.delete(index=index, ignore_unavailable=True)


def _is_stale(holder: dict[str, Any]) -> bool:
    """A lock whose holder is gone: its lease ran out (past the clocks' allowed skew), or it was
    taken on this machine by a process that no longer runs (a killed change, at once)."""
    lease = holder.get("lease_until")
    if isinstance(lease, int | float) and time.time() > lease + CLOCK_SKEW_SECONDS:
        return True
    if holder.get("host") != socket.gethostname():
        return False
    try:
        pid = int(holder.get("pid", 0))
    except (TypeError, ValueError):
        return False
    return pid > 0 and not running(pid)


class _Renewal:
    """`renew(version)` every `LEASE_SECONDS / 4` in a thread of its own, over the version it last
    wrote (from `version`), until stopped or until it gives none (the lock is no longer its
    holder's). A failed renewal is logged and tried again: a cluster out of reach for a whole lease
    fails the change's own requests too."""

    def __init__(self, renew: Callable[[_Version], _Version | None], version: _Version) -> None:
        self._renew = renew
        self._version = version
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="searchsvc-lock-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(LEASE_SECONDS / 4):
            try:
                renewed = self._renew(self._version)
            except Exception as exc:  # the cluster out of reach for a moment: the next turn tries again
                log.warning("could not renew the change lock's lease: %s: %s", type(exc).__name__, exc)
                continue
            if renewed is None:
                return
            self._version = renewed

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
