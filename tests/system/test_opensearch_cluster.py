"""The real OpenSearch test cluster itself (tests/helpers/opensearch_cluster.py): two nodes, replicated shards, the
analysis-common filters the backend's mapping uses, and searches that survive a node being killed and restarted.

These are the guarantees the OpenSearch backend's tests build on, so a broken launcher fails here first."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from opensearchpy import OpenSearch

from tests.helpers import opensearch_cluster as launcher
from tests.helpers.opensearch_cluster import QUICK_MERGES_SETTINGS, Cluster

DOCS = 120
WAIT = 120  # seconds: OpenSearch-side bound for health waits; the tests never judge elapsed time


def client_for(*urls: str, retry_on_status: tuple[int, ...] = (502, 503, 504)) -> OpenSearch:
    """A client that fails over between the given nodes: a refused connection or a status in `retry_on_status` is
    retried on the next node rather than surfacing to the caller."""
    return OpenSearch(
        hosts=list(urls),
        retry_on_status=retry_on_status,
        retry_on_timeout=True,
        max_retries=4,
        timeout=30,
    )


@pytest.fixture(scope="module")
def client(opensearch_cluster: Cluster) -> Iterator[OpenSearch]:
    os_client = client_for(*opensearch_cluster.urls)
    yield os_client
    os_client.close()


def wait_green(client: OpenSearch, index: str | None = None) -> dict[str, Any]:
    # opensearch-py takes `timeout` as the HTTP timeout unless `request_timeout` is given as well.
    health = client.cluster.health(
        index=index, wait_for_status="green", wait_for_nodes="2", timeout=f"{WAIT}s", request_timeout=WAIT + 30
    )
    assert health["status"] == "green" and not health["timed_out"], health
    return health


def make_index(client: OpenSearch, name: str, docs: int = 0) -> None:
    """An index with 2 primaries and 1 replica, holding `docs` documents that all match "quokka"."""
    client.indices.create(index=name, body={"settings": {"number_of_shards": 2, "number_of_replicas": 1}})
    if docs:
        actions: list[dict[str, Any]] = []
        for number in range(docs):
            actions.append({"index": {"_index": name, "_id": str(number)}})
            actions.append({"body": f"quokka migration case {number}"})
        response = client.bulk(body=actions, refresh=True)
        assert not response["errors"], response
    wait_green(client, name)


def total_hits(response: dict[str, Any]) -> int:
    assert response["_shards"]["failed"] == 0, response["_shards"]
    return int(response["hits"]["total"]["value"])


def search(client: OpenSearch, index: str, **params: Any) -> dict[str, Any]:
    body = {"query": {"match": {"body": "quokka"}}, "track_total_hits": True}
    return client.search(index=index, body=body, **params)


def wait_for(condition: Callable[[], bool], what: str, bound: float = 120.0) -> None:
    """Bounded wait for progress made by another thread (a hang fails the test instead of blocking the session)."""
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_cluster_has_exactly_two_nodes(opensearch_cluster: Cluster, client: OpenSearch) -> None:
    assert len(opensearch_cluster.urls) == 2
    nodes = client.cat.nodes(format="json", h="name,ip")
    assert sorted(node["name"] for node in nodes) == ["node-0", "node-1"]
    assert {node["ip"] for node in nodes} == {"127.0.0.1"}
    # Each URL is a different node of the same cluster.
    infos = []
    for url in opensearch_cluster.urls:
        with closing(client_for(url)) as node_client:
            infos.append(node_client.info())
    assert sorted(info["name"] for info in infos) == ["node-0", "node-1"]
    assert {info["cluster_name"] for info in infos} == {opensearch_cluster.cluster_name}
    assert {info["version"]["number"] for info in infos} == {"2.19.6"}
    assert client.cluster.health()["number_of_nodes"] == 2


def test_replicated_index_turns_green_with_copies_on_both_nodes(client: OpenSearch) -> None:
    index = "cluster-replicas"
    make_index(client, index)
    try:
        shards = client.cat.shards(index=index, format="json", h="shard,prirep,state,node")
        assert len(shards) == 4 and {s["state"] for s in shards} == {"STARTED"}, shards
        assert {s["node"] for s in shards} == {"node-0", "node-1"}
        for number in ("0", "1"):
            copies = [s for s in shards if s["shard"] == number]
            assert sorted(s["prirep"] for s in copies) == ["p", "r"]
            assert len({s["node"] for s in copies}) == 2, f"shard {number}'s primary and replica share a node"
    finally:
        client.indices.delete(index=index)


def test_every_index_of_the_test_cluster_has_its_deleted_copies_kept_a_second_not_30(client: OpenSearch) -> None:
    """The QUICK_MERGES template (tests/helpers/opensearch_cluster.py) gives every index created the
    short retention-lease sync that TestClusterSettingsPlugin (tests/opensearch-node) makes settable."""
    index = "cluster-quick-merges"
    client.indices.create(index=index)
    try:
        found = client.indices.get_settings(index=index, flat_settings=True)[index]["settings"]
        assert {key: found.get(key) for key in QUICK_MERGES_SETTINGS} == QUICK_MERGES_SETTINGS
    finally:
        client.indices.delete(index=index)


def test_the_launcher_is_built_again_after_any_change_to_its_sources_whatever_their_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale build must not hide a change to tests/opensearch-node: the build's stamp names a digest of
    the sources' names and contents, so an edit that keeps an older time and a removed file count too."""
    project = tmp_path / "opensearch-node"
    (project / "src").mkdir(parents=True)
    (project / "pom.xml").write_text("<project/>")
    main, extra = project / "src" / "Main.java", project / "src" / "Extra.java"
    main.write_text("class Main {}")
    extra.write_text("class Extra {}")
    stamp = project / "target" / "built.stamp"
    monkeypatch.setattr(launcher, "PROJECT", project)
    monkeypatch.setattr(launcher, "BUILT_STAMP", stamp)

    def built_now() -> None:
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(f"{launcher._sources_digest()}\nbuilt in 1.0s\n")

    assert not launcher._is_built()
    built_now()
    assert launcher._is_built()
    old = main.stat().st_mtime - 3600
    main.write_text("class Main { int changed; }")
    os.utime(main, (old, old))  # older than the stamp
    assert not launcher._is_built()
    built_now()
    extra.unlink()
    assert not launcher._is_built()
    built_now()
    stamp.write_text("built in 4.4s\n")  # a stamp of the times-based check before
    assert not launcher._is_built()


def analyze(client: OpenSearch, text: str, *filters: str | dict[str, Any], **body: Any) -> list[str]:
    request = {"tokenizer": "standard", "filter": list(filters), "text": text, **body}
    return [token["token"] for token in client.indices.analyze(body=request)["tokens"]]


def test_analysis_common_filters_work(client: OpenSearch) -> None:
    """The filters come from the analysis-common module (CommonAnalysisPlugin): core OpenSearch has none of them."""
    english = {"type": "stemmer", "language": "english"}
    assert analyze(client, "running studies connected", english) == ["run", "studi", "connect"]
    assert analyze(client, "Café naïve Ångström", "asciifolding") == ["Cafe", "naive", "Angstrom"]
    assert analyze(client, "Deep LEARNING Works", "lowercase") == ["deep", "learning", "works"]
    # The chain the backend's mapping uses, defined in index settings and applied through the index's analyzer.
    index = "cluster-analysis"
    settings = {
        "analysis": {
            "filter": {"english_stemmer": english},
            "analyzer": {
                "paper_text": {"tokenizer": "standard", "filter": ["lowercase", "asciifolding", "english_stemmer"]}
            },
        }
    }
    client.indices.create(index=index, body={"settings": settings})
    try:
        tokens = client.indices.analyze(index=index, body={"analyzer": "paper_text", "text": "Naïve Bayes Classifiers"})
        assert [t["token"] for t in tokens["tokens"]] == ["naiv", "bay", "classifi"]
    finally:
        client.indices.delete(index=index)


@pytest.mark.parametrize("victim", ["data node", "cluster manager"])
def test_searches_survive_a_killed_node_and_restart_restores_the_cluster(
    opensearch_cluster: Cluster, client: OpenSearch, victim: str
) -> None:
    """SIGKILL one node while searches run through a client that knows both nodes: every search still answers with
    every hit (the survivor holds a copy of each shard). With two nodes only one is in the voting configuration, so
    losing the cluster manager leaves no manager (writes and health block) while searches still work; `restart`
    must bring both cases back to 2 nodes and green, for the tests that run later in the session.

    A search whose fetch phase was sent to the node as it died is not retried on the other copy by OpenSearch: it
    comes back partial, or as a 500 when every shard failed. Forbidding partial results turns the first case into
    the second, and the client retries 500s (searches are idempotent), so every search answers whole."""
    index = f"cluster-failover-{victim.replace(' ', '-')}"
    make_index(client, index, DOCS)
    manager = opensearch_cluster.cluster_manager()
    assert client.cat.cluster_manager(format="json", h="node")[0]["node"] == opensearch_cluster.specs[manager].name
    killed = manager if victim == "cluster manager" else 1 - manager
    searcher = client_for(*opensearch_cluster.urls, retry_on_status=(500, 502, 503, 504))
    outcomes: list[dict[str, Any] | BaseException] = []
    after_kill: list[dict[str, Any] | BaseException] = []  # outcomes of searches started after the kill
    killed_now = threading.Event()
    stop = threading.Event()

    def search_loop() -> None:
        while not stop.is_set():
            started_after_kill = killed_now.is_set()
            try:
                outcome: dict[str, Any] | BaseException = search(searcher, index, allow_partial_search_results=False)
            except BaseException as exc:  # recorded and asserted on below, in the test's thread
                outcome = exc
            outcomes.append(outcome)
            if started_after_kill:
                after_kill.append(outcome)

    thread = threading.Thread(target=search_loop, name="search-loop", daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(outcomes) >= 20, "20 searches before the kill")
        opensearch_cluster.kill(killed)
        killed_now.set()
        wait_for(lambda: len(after_kill) >= 60, "60 searches started after the kill")
    finally:
        stop.set()
        thread.join(timeout=60)
        searcher.close()
        if not opensearch_cluster.is_running(killed):  # later tests need both nodes even if this one failed
            opensearch_cluster.restart(killed)
    assert not thread.is_alive()
    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert not errors, errors[:3]
    responses = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    assert [total_hits(response) for response in responses] == [DOCS] * len(outcomes)

    wait_green(client, index)
    assert client.cluster.health()["number_of_nodes"] == 2
    for url in opensearch_cluster.urls:  # each node, the restarted one too, answers with every hit
        with closing(client_for(url)) as node_client:
            assert total_hits(search(node_client, index)) == DOCS
    client.indices.delete(index=index)
