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
    report = rebuild(backend, [SEEDS])
    assert "replayed 1 added and 1 removed from 2 earlier change(s)" in report.summary()
    assert ids(backend, "zebra") == {"zebra-00"} and removed not in ids(backend)
    assert report.papers == 28 and changes.count(backend) == 2
    again = rebuild(backend, [SEEDS])  # and every rebuild after it: a deploy's release phase
    assert again.replayed.changes == 2 and ids(backend, "zebra") == {"zebra-00"} and removed not in ids(backend)


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
    assert rebuild(backend, [SEEDS]).replayed.changes == 1 and ids(backend, "okapi") == set()
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
