"""The change journal of an OpenSearch index, in the cluster: every web node and every machine
that rebuilds (a deploy's release phase) sees the same one.

One document per entry in the index `<alias>-changes`, its sequence number (1, 2, …) as `_id` and
in `seq`, the rest as `JournalEntry.record` keeps it (in `_source` only: nothing searches it). An
entry is written with `op_type=create`, so a number is never taken twice, and `refresh=wait_for`:
once `append` returns it is on every copy of its shard (each fsyncs its translog per request) and
visible to the next reader, before its change is published. The published index's `_meta` keeps
how many entries it includes (`JOURNAL_ENTRIES`, written by the very `_meta` write or alias move
that publishes); an entry past that count is a change never published, cut by the next change or
rebuild (`keep_first`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import bulk

from searchsvc.backends.opensearch.cluster import cluster_errors
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.core.catalogue import JournalEntry

SUFFIX = "-changes"  # the journal of alias `a` is the index `a-changes` (never a generation's name)
_PAGE = 200  # entries a read asks for at once: an entry holds up to `max_write_records` papers
# Only the number and a keyed write's writer and key are searched; the rest is kept in `_source`.
_KEYED: Dsl = {"properties": {"writer": {"type": "keyword"}, "key": {"type": "keyword"}}}
_MAPPING: Dsl = {"dynamic": False, "properties": {"seq": {"type": "long"}, "idempotency": _KEYED}}


class IndexJournal:
    """The journal of the index behind `alias`: a `backends.ports.Journal`."""

    def __init__(self, client: OpenSearch, alias: str, where: str, replicas: int) -> None:
        self.client = client
        self.index = f"{alias}{SUFFIX}"
        self.where = where
        self.replicas = replicas

    def changes(self, first: int | None = None) -> Iterator[JournalEntry]:
        """The entries in order of their numbers, the first `first` of them (None: all), read a page
        at a time."""
        after: list[Any] = []
        while True:
            hits = self._page(first, after)
            for hit in hits:
                yield JournalEntry.from_record(hit["_source"], self.index, int(hit["_id"]))
            if len(hits) < _PAGE:
                return
            after = hits[-1]["sort"]

    def __len__(self) -> int:
        with cluster_errors(self.where):
            found = self.client.count(index=self.index, ignore_unavailable=True)
        return int(found["count"])

    def append(self, entry: JournalEntry) -> None:
        """Add `entry` as number len + 1, on every copy before this returns; an entry a killed
        writer left unseen is counted first (refreshed), so its number clashes instead of vanishing."""
        with cluster_errors(self.where):
            self._create()
            self.client.indices.refresh(index=self.index)
            seq = len(self) + 1
            document = {**entry.record(), "seq": seq}
            self.client.index(index=self.index, id=str(seq), body=document, op_type="create", refresh="wait_for")

    def keep_first(self, count: int) -> int:
        """Delete the entries numbered past `count`; return how many were deleted. By id, a page at a
        time (not `_delete_by_query`, which the cluster's optional reindex module serves)."""
        deleted = 0
        with cluster_errors(self.where):
            self.client.indices.refresh(index=self.index, ignore_unavailable=True)  # a killed writer's too
            while past := self._page(count, [], past=True):
                actions = ({"_op_type": "delete", "_index": self.index, "_id": hit["_id"]} for hit in past)
                bulk(self.client, actions, refresh=True)
                deleted += len(past)
        return deleted

    def find(self, writer: str, key: str, first: int) -> JournalEntry | None:
        keyed: list[Dsl] = [
            {"term": {"idempotency.writer": writer}},
            {"term": {"idempotency.key": key}},
            {"range": {"seq": {"lte": first}}},
        ]
        body: Dsl = {"query": {"bool": {"filter": keyed}}, "sort": [{"seq": "desc"}], "size": 1}
        with cluster_errors(self.where):
            found = self.client.search(index=self.index, body=body, ignore_unavailable=True)
        hits = found["hits"]["hits"]
        if not hits:
            return None
        entry = JournalEntry.from_record(hits[0]["_source"], self.index, int(hits[0]["_id"]))
        return entry if entry.keyed(writer, key) else None

    def _page(self, first: int | None, after: list[Any], past: bool = False) -> list[dict[str, Any]]:
        """Entries in order: up to number `first` (None: all), after the sort values `after`; or
        with `past`, those numbered past `first`, their ids only."""
        bound = {"gt" if past else "lte": first}
        query: Dsl = {"range": {"seq": bound}} if first is not None else {"match_all": {}}
        body: Dsl = {"query": query, "sort": [{"seq": "asc"}], "size": _PAGE, "_source": not past}
        if after:
            body["search_after"] = after
        with cluster_errors(self.where):
            found = self.client.search(index=self.index, body=body, ignore_unavailable=True)
        hits: list[dict[str, Any]] = found["hits"]["hits"]
        return hits

    def _create(self) -> None:
        """The journal's index, made by the first append (one shard: it is small and read in order)."""
        body = {"settings": {"number_of_shards": 1, "number_of_replicas": self.replicas}, "mappings": _MAPPING}
        if self.client.indices.exists(index=self.index):
            # A journal made before writes carried idempotency keys learns to search them.
            self.client.indices.put_mapping(index=self.index, body=_MAPPING)
            return
        try:
            self.client.indices.create(index=self.index, body=body)
        except os_errors.RequestError as exc:  # made meanwhile by another writer: as good
            if exc.error != "resource_already_exists_exception":
                raise
