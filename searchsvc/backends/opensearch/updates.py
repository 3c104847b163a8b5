"""Updates written into the published index through its alias (`searchsvc add` and `remove`).

Writes through an alias are not atomic, but bulk writes by id can be repeated. So before its
first write an update records in the index's `_meta` the ids it will write (`PENDING`), and
the same `_meta` write that publishes it (`CHANGES` + 1) removes them. An update that died
half-way leaves them behind, and the next one writes those ids again as its own collection
holds them: its collection is the published one, the one the dead update started from.
Refreshes are held while writing, so searches see a change at one refresh (docs/scaling.md
says what a reader can still see half-way).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from searchsvc.backends.opensearch.mapping import EXPUNGE_EVERY_DELETE
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.ports import JOURNAL_ENTRIES
from searchsvc.core.catalogue import Catalogue, Change
from searchsvc.core.paper import Paper

CHANGES = "changes"  # in _meta: updates published since the index was built
PENDING = "pending_ids"  # in _meta: the ids an update is writing; left behind only by one that died
HELD: Dsl = {"index": {"refresh_interval": "-1", **EXPUNGE_EVERY_DELETE}}  # also for indices built before it
RESUMED: Dsl = {"index": {"refresh_interval": None}}  # the default, as `Generations.replicate` leaves it


def label(index: str, meta: dict[str, Any]) -> str:
    """The published generation's name: the index's, then `<index>.<n>` after its n-th update
    (each names its collection file, so each update needs a new one)."""
    changes = int(meta.get(CHANGES, 0))
    return f"{index}.{changes}" if changes else index


def touched(change: Change, meta: dict[str, Any]) -> list[str]:
    """The ids this update writes: its own, and those an interrupted update may have half-written."""
    ids = [*change.deleted, *(paper.id for paper in change.added), *meta.get(PENDING, [])]
    return sorted(set(ids))


def rewritten(collection: Catalogue, change: Change, ids: list[str]) -> list[Paper]:
    """The papers to index: the change's, and the other touched ids' as the collection holds them."""
    papers = {paper.id: paper for paper in change.added}
    for paper_id in ids:
        if paper_id not in papers:
            try:
                papers[paper_id] = collection[paper_id]
            except KeyError:
                continue
    return list(papers.values())


def deletions(index: str, ids: list[str]) -> list[Dsl]:
    return [{"_op_type": "delete", "_index": index, "_id": paper_id} for paper_id in ids]


def published_meta(meta: dict[str, Any], collection: Catalogue, provenance: dict[str, Any]) -> dict[str, Any]:
    """The `_meta` that publishes an update: one more change, no pending ids, the new counts (the
    journal's entries included)."""
    kept = {key: value for key, value in meta.items() if key != PENDING}
    return {
        **kept,
        CHANGES: int(meta.get(CHANGES, 0)) + 1,
        "changed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "last_change": provenance,
        "doc_count": len(collection),
        "records": collection.records,
        "merged": collection.merged,
        JOURNAL_ENTRIES: collection.journal_entries,  # the change's entry, published with it
    }
