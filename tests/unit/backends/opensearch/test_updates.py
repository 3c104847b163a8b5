"""An OpenSearch update's labels, the ids it writes and the `_meta` that publishes it, without a cluster.

Writing through the alias, and a killed update's repair, are tested on the cluster in
tests/contract/test_updates_opensearch_only.py.
"""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends.opensearch import updates
from searchsvc.core.catalogue import Change
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation
from searchsvc.ingest.collection import MergeStore


def _paper(paper_id: str, title: str = "A paper") -> Paper:
    return Paper(paper_id, title, "", 2020, [], [], [SourceLocation("s.jsonl", 1)], Identifiers())


def test_a_label_counts_the_updates_and_a_rebuilt_index_is_its_own_name() -> None:
    assert updates.label("idx-1", {"mapping_version": 4}) == "idx-1"
    assert updates.label("idx-1", {updates.CHANGES: 3}) == "idx-1.3"


def test_an_update_writes_again_the_ids_an_interrupted_one_left() -> None:
    change = Change(deleted=["b", "old-c"], added=[_paper("c"), _paper("a")])
    assert updates.touched(change, {}) == ["a", "b", "c", "old-c"]
    assert updates.touched(change, {updates.PENDING: ["z", "b"]}) == ["a", "b", "c", "old-c", "z"]


def test_the_ids_left_are_indexed_as_the_collection_holds_them_or_deleted(tmp_path: Path) -> None:
    store = MergeStore(tmp_path)
    for number, paper_id in enumerate(["kept", "changed"], start=1):
        store.put(number, _paper(paper_id), "a paper", paper_id, True)
    with store.finish(2) as collection:
        change = Change(deleted=["changed"], added=[_paper("changed", "New title")])
        papers = updates.rewritten(collection, change, ["changed", "gone", "kept"])
        assert [(p.id, p.title) for p in papers] == [("changed", "New title"), ("kept", "A paper")]


def test_the_meta_that_publishes_an_update_keeps_the_mapping_version_and_drops_the_ids(tmp_path: Path) -> None:
    store = MergeStore(tmp_path)
    store.put(1, _paper("a"), "a paper", "a", True)
    with store.finish(1) as collection:
        before = {"mapping_version": 4, "sources": ["s.jsonl"], updates.CHANGES: 1, updates.PENDING: ["a"]}
        published = updates.published_meta(before, collection, {"added_from": ["new.jsonl"]})
    assert published["mapping_version"] == 4 and published["sources"] == ["s.jsonl"]
    assert published[updates.CHANGES] == 2 and updates.PENDING not in published
    assert published["doc_count"] == 1 and published["last_change"] == {"added_from": ["new.jsonl"]}
    assert published["changed_at"]
