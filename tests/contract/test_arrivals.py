"""When each paper entered this index (`added`) and last changed here (`changed`), on both engines:
kept across rebuilds, moved by changes, searched by `added_since` and `sort=added`, and what a feed's
entries, ETag and Last-Modified follow (issue #31)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import feedparser
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings
from tests.helpers.apps import error_of
from tests.helpers.backends import BackendFactory
from tests.helpers.records import made_up_papers, write_jsonl


def _next_second() -> None:
    """Arrivals count whole seconds: what happens next happens in a later one."""
    time.sleep(1.05 - time.time() % 1)


def _arrivals(client: FlaskClient, **params: str) -> dict[str, tuple[str, str]]:
    found = client.get("/api/search", query_string={"per_page": "50", **params})
    assert found.status_code == 200, found.get_data(as_text=True)
    return {hit["id"]: (hit["added"], hit["changed"]) for hit in found.get_json()["results"]}


def _ids(client: FlaskClient, **params: str) -> list[str]:
    return list(_arrivals(client, **params))


def _settings(factory: BackendFactory) -> dict[str, Any]:
    return factory.overrides(semantic_ranking=False)


def test_a_rebuild_keeps_each_papers_arrival_and_moves_changed_only_for_what_changed(
    factory: BackendFactory, tmp_path: Path
) -> None:
    settings = _settings(factory)
    backend = open_backend(load_settings(settings, environ={}))
    papers = made_up_papers("wombat", 3)
    source = write_jsonl(tmp_path / "a.jsonl", papers)
    rebuild(backend, [source])
    client = create_app(settings).test_client()
    first = _arrivals(client)
    assert len(first) == 3 and len(set(first.values())) == 1  # one rebuild: one instant, added = changed
    added, changed = next(iter(first.values()))
    assert added == changed

    _next_second()
    assert rebuild(backend, [source], force=True).rebuilt
    assert _arrivals(client) == first  # nothing looks new, nothing changed

    _next_second()
    papers[1] = {**papers[1], "title": "The wombat lattice, revised"}
    write_jsonl(source, papers)
    newcomer = write_jsonl(tmp_path / "b.jsonl", made_up_papers("numbat", 1))
    rebuild(backend, [source, newcomer])
    now = _arrivals(client)
    assert now["wombat-00"] == first["wombat-00"] and now["wombat-02"] == first["wombat-02"]
    assert now["wombat-01"][0] == added and now["wombat-01"][1] > changed  # kept its arrival, changed later
    assert now["numbat-00"][0] == now["numbat-00"][1] > added
    assert _ids(client, sort="added")[0] == "numbat-00"


def test_added_since_and_the_added_sort_follow_each_change(factory: BackendFactory, tmp_path: Path) -> None:
    settings = _settings(factory)
    backend = open_backend(load_settings(settings, environ={}))
    rebuild(backend, [write_jsonl(tmp_path / "base.jsonl", made_up_papers("wombat", 3))])
    _next_second()
    first = update.add(backend, [write_jsonl(tmp_path / "x.jsonl", made_up_papers("numbat", 1))])
    _next_second()
    second = update.add(backend, [write_jsonl(tmp_path / "y.jsonl", made_up_papers("quoll", 1))])
    assert first.changed_at and second.changed_at and first.changed_at < second.changed_at
    client = create_app(settings).test_client()

    assert set(_ids(client, added_since=first.changed_at)) == {"numbat-00", "quoll-00"}
    assert _ids(client, added_since=second.changed_at) == ["quoll-00"]
    assert _ids(client, added_since="2999-01-01") == []
    assert _ids(client, added_since=first.changed_at, q="lattice", sort="newest") == ["numbat-00", "quoll-00"]
    ordered = _ids(client, sort="added")
    assert ordered[:2] == ["quoll-00", "numbat-00"]
    rebuilt = [paper_id for paper_id in _ids(client, sort="newest") if paper_id.startswith("wombat")]
    assert ordered[2:] == rebuilt  # the rebuild's papers arrived together: ties newest first
    facets = client.get("/api/search", query_string={"added_since": second.changed_at}).get_json()["facets"]
    assert facets["author"] == [{"value": "Quinn Quokka0", "count": 1, "selected": False}]

    # A change to an earlier paper moves its `changed`, never its `added`.
    arrived = _arrivals(client)["numbat-00"]
    _next_second()
    more = {**made_up_papers("numbat", 1)[0], "authors": ["Quinn Quokka0", "Nina Numbat"]}
    third = update.add(backend, [write_jsonl(tmp_path / "z.jsonl", [more])])
    assert third.replaced == ["numbat-00"]
    assert _arrivals(client)["numbat-00"] == (arrived[0], third.changed_at)
    assert _ids(client, added_since=second.changed_at) == ["quoll-00"]  # changed is not added


def test_added_since_must_be_an_instant(factory: BackendFactory, tmp_path: Path) -> None:
    settings = _settings(factory)
    rebuild(
        open_backend(load_settings(settings, environ={})), [write_jsonl(tmp_path / "a.jsonl", made_up_papers("x", 1))]
    )
    client = create_app(settings).test_client()
    for bad in ("yesterday", "2026-02-30", "2026-12-04T25:00:00Z", "2026-12-04T22:04:13+0"):
        error = error_of(client, f"/api/search?added_since={bad}", 400)
        assert "ISO 8601" in error["details"]["added_since"][0], bad
    echoed = client.get("/api/search?added_since=2026-12-04T23:04:13%2B01:00").get_json()["query"]
    assert echoed["added_since"] == "2026-12-04T22:04:13Z"


def test_a_feed_is_a_304_after_a_rebuild_that_changes_nothing_and_lists_an_add_first(
    factory: BackendFactory, tmp_path: Path
) -> None:
    settings = _settings(factory)
    backend = open_backend(load_settings(settings, environ={}))
    source = write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 3))
    rebuild(backend, [source])
    client = create_app(settings).test_client()
    polled = client.get("/feed.atom?q=lattice")
    assert polled.status_code == 200
    tag, modified = polled.headers["ETag"], polled.headers["Last-Modified"]

    _next_second()
    assert not rebuild(backend, [source]).rebuilt  # unchanged sources: nothing published
    assert client.get("/feed.atom?q=lattice", headers={"If-None-Match": tag}).status_code == 304
    rebuild(backend, [source], force=True)  # a new generation of the same papers
    assert client.get("/feed.atom?q=lattice", headers={"If-None-Match": tag}).status_code == 304
    assert client.get("/feed.atom?q=lattice", headers={"If-Modified-Since": modified}).status_code == 304
    elsewhere = [{**made_up_papers("quoll", 1)[0], "title": "Quoll burrows", "abstract": "Not in that search."}]
    update.add(backend, [write_jsonl(tmp_path / "elsewhere.jsonl", elsewhere)])
    assert client.get("/feed.atom?q=lattice", headers={"If-None-Match": tag}).status_code == 304

    _next_second()
    added = update.add(backend, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("numbat", 1))])
    poll = client.get("/feed.atom?q=lattice", headers={"If-None-Match": tag, "If-Modified-Since": modified})
    assert poll.status_code == 200 and poll.headers["ETag"] != tag and poll.headers["Last-Modified"] != modified
    feed = feedparser.parse(poll.data)
    assert not feed.bozo and feed.entries[0].id == "urn:searchsvc:paper:numbat-00"
    assert feed.entries[0].updated == feed.feed.updated == added.changed_at
    assert {entry.updated for entry in feed.entries[1:]} == {_arrivals(client)["wombat-00"][1]}
