"""What users write is data (issue #30): a change made by `add`/`remove` or the write API outlives
every rebuild until someone discards it on purpose, on each engine, through the engine's journal
(`Backend.journal`: a file beside a Whoosh index, an index in the OpenSearch cluster)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc import create_app
from searchsvc.backends import Backend, open_backend
from searchsvc.core.model import SearchRequest
from searchsvc.operations import changes, update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from searchsvc.settings import load_settings
from searchsvc.settings.write_tokens import entry_for, new_token
from tests.helpers.backends import BackendFactory
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl, made_up_papers, write_jsonl


def ids(backend: Backend, q: str = "") -> set[str]:
    return {hit.id for hit in search(backend, SearchRequest(q=q, per_page=100)).hits}


def seeds_then_changed(factory: BackendFactory, tmp_path: Path) -> tuple[Backend, str]:
    """The seeds published, a made-up paper added and the newest seed paper removed: (backend, its id)."""
    backend = open_backend(factory.settings(semantic_ranking=False))
    rebuild(backend, [SEEDS])
    newest = search(backend, SearchRequest(sort="newest", per_page=1)).hits[0].id
    assert update.add(backend, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("zebra", 1))]).added == ["zebra-00"]
    assert update.remove(backend, [newest]).removed == [newest]
    return backend, newest


def test_a_rebuild_replays_the_changes_after_its_sources_and_says_so(factory: BackendFactory, tmp_path: Path) -> None:
    backend, removed = seeds_then_changed(factory, tmp_path)
    report = rebuild(backend, [SEEDS], force=True)
    assert "replayed 1 added and 1 removed from 2 earlier change(s)" in report.summary()
    assert ids(backend, "zebra") == {"zebra-00"} and removed not in ids(backend)
    assert report.papers == 28 and changes.count(backend) == 2
    again = rebuild(backend, [SEEDS])  # and every rebuild after it: a deploy's release phase, publishing nothing
    assert not again.rebuilt and "up to date with its 2 source file(s), 2 change(s) and settings" in again.summary()
    assert ids(backend, "zebra") == {"zebra-00"} and removed not in ids(backend) and changes.count(backend) == 2


def test_a_rebuild_after_changes_to_unchanged_sources_publishes_nothing_and_keeps_them(
    factory: BackendFactory, tmp_path: Path
) -> None:
    """Issue #35: the published generation holds the sources and the changes; a deploy's rebuild
    keeps both as they are, and one changed source rebuilds with the changes replayed."""
    backend, removed = seeds_then_changed(factory, tmp_path)
    published = backend.published()
    report = rebuild(backend, [SEEDS])
    assert not report.rebuilt and report.kept == 2 and backend.published() == published
    assert ids(backend, "zebra") == {"zebra-00"} and changes.count(backend) == 2
    more = write_jsonl(tmp_path / "more.jsonl", made_up_papers("okapi", 1))
    report = rebuild(backend, [SEEDS, more])
    assert report.rebuilt and report.reason == "the sources changed" and report.replayed.changes == 2
    assert ids(backend, "okapi") == {"okapi-00"} and ids(backend, "zebra") == {"zebra-00"}
    assert removed not in ids(backend)
    assert rebuild(backend, [SEEDS, more], discard_changes=True).reason == "the changes it includes are discarded"
    assert ids(backend, "zebra") == set() and changes.count(backend) == 0
    assert not rebuild(backend, [SEEDS, more], discard_changes=True).rebuilt  # nothing left to discard


def test_discarding_the_changes_restores_the_sources_papers(factory: BackendFactory, tmp_path: Path) -> None:
    backend, removed = seeds_then_changed(factory, tmp_path)
    report = rebuild(backend, [SEEDS], discard_changes=True)
    assert report.discarded == 2 and "2 earlier change(s) discarded" in report.summary()
    assert ids(backend, "zebra") == set() and removed in ids(backend)
    assert changes.count(backend) == 0 and rebuild(backend, [SEEDS]).replayed.changes == 0


def test_exported_changes_as_a_source_give_the_same_papers(factory: BackendFactory, tmp_path: Path) -> None:
    backend = open_backend(factory.settings(semantic_ranking=False))
    rebuild(backend, [SEEDS])
    update.add(backend, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("zebra", 3))])
    replayed = {hit.id: hit for hit in search(backend, SearchRequest(per_page=100)).hits}
    assert changes.export(backend, tmp_path / "exported.jsonl") == (3, 0)
    rebuild(backend, [SEEDS, tmp_path / "exported.jsonl"], discard_changes=True)
    assert {hit.id: hit for hit in search(backend, SearchRequest(per_page=100)).hits} == replayed


def test_changes_through_the_write_api_are_replayed_and_listed(factory: BackendFactory, tmp_path: Path) -> None:
    token = new_token()
    overrides = factory.overrides(semantic_ranking=False, write_token_hashes=[entry_for("curator", token)])
    backend = open_backend(load_settings(overrides, environ={}))
    rebuild(backend, [SEEDS])
    client = create_app(overrides).test_client()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    assert client.post("/api/papers", data=jsonl(made_up_papers("zebra", 2)), headers=headers).status_code == 200
    assert client.delete("/api/papers/zebra-01", headers=headers).status_code == 200
    assert client.get("/readyz").get_json()["changes"] == 2
    rebuild(backend, [SEEDS])
    assert ids(backend, "zebra") == {"zebra-00"}
    assert [(change.by, [p.id for p in change.added], change.removed) for change in changes.kept(backend)] == [
        ("POST /api/papers by curator", ["zebra-00", "zebra-01"], []),
        ("DELETE /api/papers by curator", [], ["zebra-01"]),
    ]


def test_a_change_journaled_but_never_published_is_no_change(factory: BackendFactory, tmp_path: Path) -> None:
    """A process killed between journaling a change and publishing it: neither a rebuild nor the
    list sees it, and the next change or rebuild cuts it off."""
    backend = open_backend(factory.settings(semantic_ranking=False))
    rebuild(backend, [SEEDS])
    update.add(backend, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("zebra", 1))])
    journal = backend.journal()
    (published,) = journal.changes()
    okapi = dataclasses.replace(published.added[0], id="okapi-00", title="The okapi lattice")
    unpublished = dataclasses.replace(published, added=[okapi])

    journal.append(unpublished)  # and then the process died
    assert len(journal) == 2 and changes.count(backend) == 1
    assert [c.added[0].id for c in changes.kept(backend)] == ["zebra-00"]
    report = rebuild(backend, [SEEDS])  # up to date: it drops the change as a rebuild would
    assert not report.rebuilt and (report.kept, report.discarded) == (1, 1) and ids(backend, "okapi") == set()
    assert [c.added[0].id for c in journal.changes()] == ["zebra-00"]
    journal.append(unpublished)  # again
    assert rebuild(backend, [SEEDS], force=True).replayed.changes == 1 and ids(backend, "okapi") == set()
    assert [c.added[0].id for c in journal.changes()] == ["zebra-00"]
    journal.append(unpublished)  # again
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 1))])
    assert [c.added[0].id for c in journal.changes()] == ["zebra-00", "numbat-00"] and changes.count(backend) == 2
    assert ids(backend, "okapi") == set()


@pytest.fixture
def opensearch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendFactory]:
    made = BackendFactory("opensearch", request, tmp_path_factory)
    yield made
    made.close()


def test_on_opensearch_the_journal_is_the_cluster_s_for_every_machine(
    opensearch: BackendFactory, tmp_path: Path
) -> None:
    """Every web node and a deploy's release phase see one journal: another index folder on the
    same alias lists the changes this one wrote, and a rebuild from there replays them."""
    settings = opensearch.overrides(semantic_ranking=False)
    here = open_backend(load_settings(settings, environ={}))
    rebuild(here, [SEEDS])
    newest = search(here, SearchRequest(sort="newest", per_page=1)).hits[0].id
    update.add(here, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("zebra", 1))])
    update.remove(here, [newest])
    elsewhere = {**settings, "index_dir": tmp_path / "another-machine"}
    there = open_backend(load_settings(elsewhere, environ={}))

    listed = [([p.id for p in change.added], change.removed) for change in changes.kept(there)]
    assert listed == [(["zebra-00"], []), ([], [newest])]
    assert create_app(elsewhere).test_client().get("/readyz").get_json()["changes"] == 2
    report = rebuild(there, [SEEDS])
    assert report.replayed.changes == 2 and ids(there, "zebra") == {"zebra-00"} and newest not in ids(there)
    assert changes.count(here) == 2 and not list(here.settings.index_dir.glob("changes*"))


def test_a_write_sent_again_under_its_idempotency_key_is_made_once(factory: BackendFactory, tmp_path: Path) -> None:
    """Issue #36: a client that got no answer sends the write again with the same key, or asks
    GET /api/changes/<key>; either way it learns what was done, and nothing is done twice, even
    across a rebuild. A key is its writer's, and one sent with another request is refused."""
    token, other = new_token(), new_token()
    overrides = factory.overrides(
        semantic_ranking=False, write_token_hashes=[entry_for("curator", token), entry_for("importer", other)]
    )
    backend = open_backend(load_settings(overrides, environ={}))
    rebuild(backend, [SEEDS])
    client = create_app(overrides).test_client()

    def headers(key: str, who: str = token) -> dict[str, str]:
        return {"Authorization": f"Bearer {who}", "Content-Type": "application/x-ndjson", "Idempotency-Key": key}

    body = jsonl(made_up_papers("zebra", 2))
    assert client.get("/api/changes/add-1", headers=headers("")).status_code == 404  # not made yet
    first = client.post("/api/papers", data=body, headers=headers("add-1"))
    assert first.status_code == 200 and first.get_json()["added"] == ["zebra-00", "zebra-01"]
    assert first.get_json()["replayed"] is False
    again = client.post("/api/papers", data=body, headers=headers('"add-1"'))  # the draft's quoted form
    assert again.status_code == 200 and again.get_json()["replayed"] is True
    told = client.get("/api/changes/add-1", headers=headers(""))
    for answer in (again.get_json(), told.get_json()):
        assert answer["added"] == ["zebra-00", "zebra-01"] and answer["changed_at"] == first.get_json()["changed_at"]
    assert changes.count(backend) == 1

    gone = client.delete("/api/papers/zebra-01", headers=headers("remove-1"))
    assert gone.status_code == 200 and gone.get_json()["removed"] == ["zebra-01"]
    retried = client.delete("/api/papers/zebra-01", headers=headers("remove-1"))  # not a 404: it was removed
    assert (
        retried.status_code == 200 and retried.get_json()["removed"] == ["zebra-01"] and retried.get_json()["replayed"]
    )
    assert changes.count(backend) == 2

    reused = client.post("/api/papers", data=jsonl(made_up_papers("okapi", 1)), headers=headers("add-1"))
    assert reused.status_code == 422 and reused.get_json()["error"]["code"] == "idempotency_key_reused"
    assert ids(backend, "okapi") == set()
    theirs = client.post("/api/papers", data=jsonl(made_up_papers("okapi", 1)), headers=headers("add-1", other))
    assert theirs.status_code == 200 and theirs.get_json()["added"] == ["okapi-00"]  # another writer's key
    assert client.get("/api/changes/remove-1", headers=headers("", other)).status_code == 404

    rebuild(backend, [SEEDS], force=True)  # the journal, keys and all, outlives a rebuild
    after = client.post("/api/papers", data=body, headers=headers("add-1"))
    assert after.status_code == 200 and after.get_json()["replayed"] is True and changes.count(backend) == 3
    assert ids(backend, "zebra") == {"zebra-00"}


def test_a_keyed_change_journaled_but_never_published_is_made_by_its_retry(
    factory: BackendFactory, tmp_path: Path
) -> None:
    """The worker died between journaling and publishing: the key tells of no change, and the retry
    makes it, once."""
    token = new_token()
    overrides = factory.overrides(semantic_ranking=False, write_token_hashes=[entry_for("curator", token)])
    backend = open_backend(load_settings(overrides, environ={}))
    rebuild(backend, [SEEDS])
    client = create_app(overrides).test_client()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson", "Idempotency-Key": "k-9"}
    body = jsonl(made_up_papers("zebra", 1))
    assert client.post("/api/papers", data=body, headers=headers).status_code == 200
    journal = backend.journal()
    (made,) = journal.changes()
    assert made.idempotency is not None
    died = dataclasses.replace(made, idempotency=dataclasses.replace(made.idempotency, key="k-10"))
    journal.append(died)  # and then the process died, before publishing

    assert client.get("/api/changes/k-10", headers=headers).status_code == 404
    retried = client.post("/api/papers", data=body, headers={**headers, "Idempotency-Key": "k-10"})
    assert retried.status_code == 200 and retried.get_json()["replayed"] is False  # made, not replayed
    assert retried.get_json()["unchanged"] == ["zebra-00"]  # the same paper as k-9's: nothing to publish
    assert [c.idempotency.key for c in journal.changes() if c.idempotency] == ["k-9"]
