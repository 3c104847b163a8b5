"""What only the OpenSearch backend has: a real 2-node cluster, shards on both nodes, alias moves,
rebuild locks, a node dying mid-search, and the cluster's own refusals.

The behaviour both backends share is tested once, against both, in tests/contract/; what needs no cluster
in tests/unit/backends/opensearch/.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from searchsvc import create_app
from searchsvc.backends.opensearch import OpenSearchBackend, generations, search_bodies
from searchsvc.backends.opensearch.cluster import QueryRejected
from searchsvc.backends.opensearch.mapping import MAPPING_VERSION
from searchsvc.backends.opensearch.search_bodies import Plan
from searchsvc.core.errors import RebuildFailed, RebuildInProgress
from searchsvc.core.model import SearchRequest
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from searchsvc.settings import load_settings
from tests.helpers.apps import error_of
from tests.helpers.backends import BackendFactory
from tests.helpers.opensearch_cluster import Cluster
from tests.helpers.paths import REPO, SEEDS
from tests.helpers.records import made_up_papers, write_jsonl


@pytest.fixture
def factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendFactory]:
    made = BackendFactory("opensearch", request, tmp_path_factory)
    yield made
    made.close()


@pytest.fixture
def cluster_client(opensearch_cluster: Cluster) -> Iterator[OpenSearch]:
    client = OpenSearch(hosts=opensearch_cluster.urls)
    yield client
    client.close()


def test_the_published_index_spreads_over_both_nodes(factory: BackendFactory, cluster_client: OpenSearch) -> None:
    settings = factory.settings()
    rebuild(OpenSearchBackend(settings), [SEEDS])
    assert cluster_client.cluster.health()["number_of_nodes"] == 2
    (index,) = cluster_client.indices.get_alias(name=settings.opensearch_index)
    shards = cluster_client.cat.shards(index=index, format="json")
    assert len(shards) == 4  # 2 primaries, each with 1 replica
    assert {shard["state"] for shard in shards} == {"STARTED"}
    assert len({shard["node"] for shard in shards}) == 2
    for number in ("0", "1"):  # each shard's two copies live on different nodes
        assert len({shard["node"] for shard in shards if shard["shard"] == number}) == 2


def test_a_rebuild_moves_the_alias_and_deletes_the_old_index(
    factory: BackendFactory, cluster_client: OpenSearch, tmp_path: Path
) -> None:
    settings = factory.settings()
    backend = OpenSearchBackend(settings)
    first = rebuild(backend, [write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 3))]).generation
    second = rebuild(backend, [write_jsonl(tmp_path / "b.jsonl", made_up_papers("numbat", 5))]).generation
    assert second != first
    assert list(cluster_client.indices.get_alias(name=settings.opensearch_index)) == [second]
    assert not cluster_client.indices.exists(index=first)
    assert search(backend, SearchRequest(q="numbat")).total == 5
    assert search(backend, SearchRequest(q="wombat")).total == 0
    assert backend.status()["generation"] == second


@pytest.mark.reliability
def test_an_index_built_by_an_older_version_is_a_503_asking_for_a_rebuild(
    factory: BackendFactory, cluster_client: OpenSearch, tmp_path: Path
) -> None:
    """An older version's index lacks fields searches now use (identifiers, the length subfields
    of BM25F): it would serve wrong scores and no links, silently."""
    overrides = factory.overrides()
    settings = load_settings(overrides, environ={})
    rebuild(OpenSearchBackend(settings), [write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 3))])
    (index,) = cluster_client.indices.get_alias(name=settings.opensearch_index)
    meta = cluster_client.indices.get_mapping(index=index)[index]["mappings"]["_meta"]
    cluster_client.indices.put_mapping(index=index, body={"_meta": {**meta, "mapping_version": 3}})
    client = create_app(overrides).test_client()
    for url in ("/api/search?q=wombat", "/readyz", "/api/suggest?q=wom", "/api/papers/x"):
        error = error_of(client, url, 503)
        assert error["message"] == (
            f"the published index was built with mapping version 3, this version of searchsvc reads version "
            f"{MAPPING_VERSION}: run `searchsvc rebuild`"
        ), url
    rebuild(OpenSearchBackend(settings), [write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 3))])
    fresh = create_app(overrides).test_client()
    assert fresh.get("/api/search?q=wombat").json["total"] == 3


@pytest.mark.reliability
def test_a_rebuild_failing_half_way_leaves_the_alias_where_it_was(
    factory: BackendFactory, cluster_client: OpenSearch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = factory.settings()
    backend = OpenSearchBackend(settings)
    serving = rebuild(backend, [write_jsonl(tmp_path / "a.jsonl", made_up_papers("wombat", 3))]).generation
    load = OpenSearchBackend._load

    def load_then_fail(self: OpenSearchBackend, name: str, papers, progress) -> None:  # type: ignore[no-untyped-def]
        load(self, name, list(papers)[:2], progress)
        raise RebuildFailed("the cluster went away half-way")

    monkeypatch.setattr(OpenSearchBackend, "_load", load_then_fail)
    with pytest.raises(RebuildFailed):
        rebuild(backend, [write_jsonl(tmp_path / "b.jsonl", made_up_papers("numbat", 5))])
    assert list(cluster_client.indices.get_alias(name=settings.opensearch_index)) == [serving]
    assert list(cluster_client.indices.get(index=f"{settings.opensearch_index}-2*")) == [serving]  # no partial index
    assert search(backend, SearchRequest(q="wombat")).total == 3


@pytest.mark.reliability
def test_one_rebuild_at_a_time_and_a_dead_rebuilds_lock_is_taken_over(factory: BackendFactory) -> None:
    settings = factory.settings()
    with OpenSearchBackend(settings).exclusive_change("rebuild"):
        with pytest.raises(
            RebuildInProgress, match=rf"another change to .* is running \(a rebuild; pid {os.getpid()} on "
        ):
            with OpenSearchBackend(settings).exclusive_change("write", "searchsvc remove"):
                pass
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    backend = OpenSearchBackend(settings)
    lock = f"{settings.opensearch_index}-rebuild-lock"
    holder = {"host": socket.gethostname(), "pid": int(dead.stdout), "started": "earlier"}
    backend.client.indices.create(index=lock, body={"mappings": {"_meta": holder}})
    with backend.exclusive_change("rebuild"):  # the process holding it is gone: the lock is stale
        pass


@pytest.mark.reliability
def test_a_lock_whose_lease_ran_out_is_taken_over_from_any_machine_and_a_live_one_is_kept(
    factory: BackendFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A change that died on another machine held every change of the alias until someone deleted
    its lock by hand: its lease now runs out. One that renews its lease keeps the lock."""
    settings = factory.settings()
    backend = OpenSearchBackend(settings)
    lock = f"{settings.opensearch_index}-rebuild-lock"
    elsewhere = {"kind": "write", "host": "another-machine", "pid": 1, "token": "theirs", "started": "earlier"}
    backend.client.indices.create(index=lock)
    backend.client.index(index=lock, id="holder", body={**elsewhere, "lease_until": time.time() + 600})
    with pytest.raises(RebuildInProgress, match=r"pid 1 on another-machine.*taken over 150 s after its last renewal"):
        with backend.exclusive_change("rebuild"):
            pass
    backend.client.index(index=lock, id="holder", body={**elsewhere, "lease_until": time.time() - 600})
    with backend.exclusive_change("rebuild"):
        assert backend.client.get(index=lock, id="holder")["_source"]["host"] == socket.gethostname()
    assert "taking over the change lock" in caplog.text and "another-machine" in caplog.text
    assert not backend.client.indices.exists(index=lock)


@pytest.mark.reliability
def test_a_change_renews_its_lease_while_it_runs(factory: BackendFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generations, "LEASE_SECONDS", 2.0)
    monkeypatch.setattr(generations, "CLOCK_SKEW_SECONDS", 0.0)
    settings = factory.settings()
    lock = f"{settings.opensearch_index}-rebuild-lock"
    backend = OpenSearchBackend(settings)
    with backend.exclusive_change("rebuild"):
        first = backend.client.get(index=lock, id="holder")["_source"]["lease_until"]
        time.sleep(3.0)  # past the first lease: only a renewal keeps the lock
        with pytest.raises(RebuildInProgress), OpenSearchBackend(settings).exclusive_change("write", "searchsvc add"):
            pass
        assert backend.client.get(index=lock, id="holder")["_source"]["lease_until"] > first


@pytest.mark.reliability
def test_of_two_taking_over_a_lock_one_wins_and_a_holder_that_lost_its_lock_leaves_it(
    factory: BackendFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The holder document is written by compare-and-set: two processes that both found the lease
    run out cannot both write over the version they read."""
    settings = factory.settings()
    backend = OpenSearchBackend(settings)
    lock = f"{settings.opensearch_index}-rebuild-lock"
    with backend.exclusive_change("rebuild"):
        found = backend.client.get(index=lock, id="holder")
        version = (found["_seq_no"], found["_primary_term"])
        taker = backend.generations
        assert taker._write_holder(lock, {"token": "first", "lease_until": time.time() + 600}, version) is not None
        assert taker._write_holder(lock, {"token": "second", "lease_until": time.time() + 600}, version) is None
        assert taker._renew(lock, {"token": "ours"}, version) is None  # the holder learns it lost the lock
    assert "no longer this change's" in caplog.text
    assert backend.client.get(index=lock, id="holder")["_source"]["token"] == "first"  # not deleted by the loser
    backend.client.indices.delete(index=lock)


def test_the_command_line_rebuilds_and_searches_the_cluster(factory: BackendFactory) -> None:
    settings = factory.settings()
    environment = dict(
        os.environ,
        SEARCHSVC_BACKEND="opensearch",
        SEARCHSVC_OPENSEARCH_URL=",".join(settings.opensearch_url),
        SEARCHSVC_OPENSEARCH_INDEX=settings.opensearch_index,
        SEARCHSVC_VECTOR_STORE=settings.vector_store,
    )
    command = [sys.executable, "-m", "searchsvc"]
    built = subprocess.run([*command, "rebuild"], cwd=REPO, env=environment, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "28 papers indexed" in built.stdout
    found = subprocess.run(
        [*command, "search", "compositional embeddings"], cwd=REPO, env=environment, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    assert "Compositional Embeddings Using Complementary Partitions" in found.stdout


@pytest.mark.reliability
def test_searches_go_on_while_a_node_dies(factory: BackendFactory, opensearch_cluster: Cluster) -> None:
    """SIGKILL one of the two nodes during a loop of searches: every search still answers in full.

    The node killed is the one that is not the cluster manager, so the cluster promotes the
    replicas of its shards on the other node (with two nodes only the manager votes).
    """
    client = factory.publish([SEEDS]).test_client()
    expected = client.get("/api/search?q=training").json["total"]
    answers: list[tuple[int, int | None]] = []
    enough_before, enough_after = threading.Event(), threading.Event()
    killed = threading.Event()

    def search_loop() -> None:
        after = 0
        while after < 40:
            response = client.get("/api/search?q=training&subject=cs.LG")
            plain = client.get("/api/search?q=training")
            answers.append((plain.status_code, (plain.json or {}).get("total")))
            answers.append((response.status_code, None))
            if len(answers) >= 20:
                enough_before.set()
            if killed.is_set():
                after += 1
        enough_after.set()

    loop = threading.Thread(target=search_loop)
    loop.start()
    try:
        assert enough_before.wait(120)
        victim = 1 - opensearch_cluster.cluster_manager()
        opensearch_cluster.kill(victim)
        killed.set()
        assert enough_after.wait(300)
    finally:
        loop.join(300)
        for node in range(2):
            if not opensearch_cluster.is_running(node):
                opensearch_cluster.restart(node)
    failures = [answer for answer in answers if answer[0] != 200]
    assert failures == [], failures
    assert {total for _status, total in answers if total is not None} == {expected}
    assert len(answers) >= 100


@pytest.mark.reliability
def test_a_wildcard_the_cluster_will_not_expand_is_a_400(factory: BackendFactory) -> None:
    """2,600 words start with `zq`: on either shard more than the cluster's clause limit (1,024)
    for one wildcard. (The cluster applies its own limit, per shard, instead of max_wildcard_terms.)"""
    records = [
        {"id": str(n), "title": f"Paper {n}", "abstract": " ".join(f"zq{n:04d}{k}" for k in range(10))}
        for n in range(260)
    ]
    client = factory.publish_records(records).test_client()
    error = error_of(client, "/api/search?q=zq*", 400)
    assert error["code"] == "query_too_broad"
    assert "type more letters" in error["message"]
    assert client.get("/api/search?q=zq0001*").json["total"] == 1


@pytest.mark.reliability
def test_a_query_the_cluster_refuses_is_a_400_with_its_reason(
    factory: BackendFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query the service sends is well-formed; should the cluster refuse one anyway (a
    newer cluster, a plugin), the user gets a 400 with the cluster's reason, not a 500."""
    settings = factory.settings()
    backend = OpenSearchBackend(settings)
    rebuild(backend, [SEEDS])
    with pytest.raises(QueryRejected, match="the search cluster refused this query: .*no_such_query"):
        backend.searches.search({"query": {"no_such_query": {}}})
    app = create_app(factory.overrides(opensearch_index=settings.opensearch_index))
    monkeypatch.setattr(search_bodies, "plan", lambda request, tree: Plan(None, {"no_such_query": {}}, None, None, {}))
    error = error_of(app.test_client(), "/api/search?q=x", 400)
    assert error["code"] == "query_rejected" and "no_such_query" in error["message"]
