"""Embedding spread over processes (issue #34): `searchsvc embed --shard I/N` processes write their
vectors as they go (on the real 2-node cluster into the index itself; on Whoosh into parts of the
one vector store), a shard SIGKILLed after a checkpoint and started again embeds only what it had
not saved, and the result is one process's vectors, which on OpenSearch a rebuild on a machine
with an empty vector store finds in the cluster."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy import OpenSearch

from searchsvc.backends import open_backend
from searchsvc.backends.opensearch.mapping import CONTENT_KEY, EMBEDDED, VECTOR
from searchsvc.backends.opensearch.vectors import MISSING, decoded
from searchsvc.operations.rebuild import rebuild
from searchsvc.semantic.selection import vector_store
from searchsvc.semantic.shards import Shard
from searchsvc.semantic.store import load, load_file, lookup, part_files
from searchsvc.settings import load_settings
from tests.helpers.backends import BackendFactory
from tests.helpers.paths import REPO, SHARED_ACL
from tests.helpers.servers import environment, kill_once

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records"),
]

PAPERS = 160  # a few seconds a shard on one core
CHUNK = 8
# The real command with a checkpoint after every CHUNK papers, instead of every 30 s, so the test
# reaches one in seconds, and each paper embedded counted in the file named first (as the progress
# bar counts it: vectors the encoder gave back), which outlives a SIGKILL.
_COUNTED = f"""
import sys
from contextlib import contextmanager
from searchsvc import cli
from searchsvc.semantic import embedding
embedding.CHUNK, embedding.CHECKPOINT_SECONDS = {CHUNK}, 0.0
counts = open(sys.argv[1], "a", buffering=1)

@contextmanager
def counting(phase, total):
    yield lambda n: counts.write(f"{{n}}\\n") if phase == "embedding" else None

cli._progress_bar = counting
cli.main(sys.argv[2:], prog_name="searchsvc")
"""


@pytest.fixture(scope="module")
def factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = BackendFactory("opensearch", request, tmp_path_factory)
    yield made
    made.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("acl") / "papers.jsonl"
    with SHARED_ACL.open(encoding="utf-8") as records:
        path.write_text("".join(line for line, _ in zip(records, range(PAPERS), strict=False)), encoding="utf-8")
    return path


def _vectors(client: OpenSearch, alias: str) -> dict[str, tuple[str, np.ndarray | None]]:
    """Each paper's content key and vector (None while it has none), by id."""
    client.indices.refresh(index=alias)
    hits = client.search(index=alias, body={"size": 10_000, "_source": [CONTENT_KEY, VECTOR]})["hits"]["hits"]
    found = {hit["_id"]: hit["_source"] for hit in hits}
    return {paper: (doc[CONTENT_KEY], decoded(doc[VECTOR]) if VECTOR in doc else None) for paper, doc in found.items()}


def _embedded(client: OpenSearch, alias: str) -> int:
    return client.count(index=alias, body={"query": {"term": {EMBEDDED: True}}})["count"]


def _shard(overrides: dict[str, Any], shard: str, counts: Path) -> subprocess.Popen[str]:
    """`searchsvc embed --shard` with the settings `overrides` names, counting what it embeds into `counts`."""
    env = environment(**{f"SEARCHSVC_{name.upper()}": str(value) for name, value in overrides.items()})
    command = [sys.executable, "-c", _COUNTED, str(counts), "embed", "--shard", shard]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _counted(path: Path) -> int:
    return sum(int(line) for line in path.read_text().split()) if path.exists() else 0


def _finished(process: subprocess.Popen[str]) -> int:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return int(re.fullmatch(r"(\d+) paper\(s\) embedded \(shard \d/\d\)\n", out)[1])


def test_a_shard_killed_after_a_checkpoint_loses_only_its_unsaved_batch(
    factory: BackendFactory, source: Path, tmp_path: Path
) -> None:
    whole = factory.overrides()
    assert rebuild(open_backend(load_settings(whole, environ={})), [source]).embedded == PAPERS  # one process
    sharded = factory.overrides()
    rebuild(open_backend(load_settings({**sharded, "semantic_ranking": False}, environ={})), [source])
    client = OpenSearch(hosts=factory.urls)
    keys = {paper: key for paper, (key, _vector) in _vectors(client, sharded["opensearch_index"]).items()}
    first = Shard(1, 2).holds(np.array([bytes.fromhex(key) for key in keys.values()], dtype="S16"))
    size = int(first.sum())
    assert 2 * CHUNK < size < PAPERS - 2 * CHUNK

    victim = _shard(sharded, "1/2", tmp_path / "killed")
    kill_once(victim, lambda: _embedded(client, sharded["opensearch_index"]), "shard", pause_s=0.02)
    # Every copy as the cluster holds it after the kill: a scheduled refresh may have shown the
    # victim's last bulk on one shard copy before its own refresh reached every copy.
    client.indices.refresh(index=sharded["opensearch_index"])
    saved = _embedded(client, sharded["opensearch_index"])
    assert 0 < saved < size, f"killed before the shard's end, after a checkpoint: {saved} of {size} saved"

    again = _shard(sharded, "1/2", tmp_path / "again")  # beside the other shard
    other = _shard(sharded, "2/2", tmp_path / "other")
    embedded_again, embedded_other = _finished(again), _finished(other)
    assert embedded_again <= size - saved and embedded_other == PAPERS - size
    assert _counted(tmp_path / "killed") + _counted(tmp_path / "again") <= size + CHUNK  # one batch lost at most
    assert _counted(tmp_path / "again") == embedded_again and _counted(tmp_path / "other") == embedded_other

    reference = _vectors(client, whole["opensearch_index"])
    found = _vectors(client, sharded["opensearch_index"])
    assert (
        found.keys() == reference.keys()
        and client.count(index=sharded["opensearch_index"], body={"query": MISSING})["count"] == 0
    )
    for paper, (key, vector) in reference.items():
        assert found[paper][0] == key and vector is not None
        assert np.array_equal(found[paper][1], vector), paper

    # Another machine, its vector store empty, rebuilding: every vector is taken from the cluster.
    elsewhere = {**sharded, "vector_store": str(tmp_path / "empty-store")}
    report = rebuild(open_backend(load_settings(elsewhere, environ={})), [source], force=True)
    assert report.embedded == 0
    rebuilt = _vectors(client, sharded["opensearch_index"])
    assert all(np.array_equal(rebuilt[paper][1], vector) for paper, (_key, vector) in reference.items())


def test_whoosh_shards_share_one_store_and_a_killed_one_loses_only_its_unsaved_batch(
    source: Path, tmp_path: Path
) -> None:
    """On Whoosh the shards of one machine append parts to the index folder's vector store side by side."""
    whole = {"index_dir": tmp_path / "whole", "vector_store": tmp_path / "whole-vectors"}
    assert rebuild(open_backend(load_settings(whole, environ={})), [source]).embedded == PAPERS  # one process
    sharded = {"index_dir": tmp_path / "sharded", "vector_store": tmp_path / "sharded-vectors"}
    rebuild(open_backend(load_settings({**sharded, "semantic_ranking": False}, environ={})), [source])
    store = vector_store(load_settings(sharded, environ={}))
    reference = load(vector_store(load_settings(whole, environ={})))
    size = int(Shard(1, 2).holds(reference.keys).sum())

    victim = _shard(sharded, "1/2", tmp_path / "killed")
    kill_once(victim, lambda: sum(len(load_file(part).keys) for part in part_files(store)), "shard", pause_s=0.02)
    saved = len(load(store).keys)
    assert 0 < saved < size

    again, other = _shard(sharded, "1/2", tmp_path / "again"), _shard(sharded, "2/2", tmp_path / "other")
    embedded_again, embedded_other = _finished(again), _finished(other)
    assert embedded_again == size - saved and embedded_other == PAPERS - size
    assert _counted(tmp_path / "killed") + _counted(tmp_path / "again") <= size + CHUNK

    found = load(store)
    assert len(found.keys) == PAPERS and not store.exists()  # parts alone, left to the next whole run
    rows, there = lookup(found, reference.keys)
    assert there.all() and np.array_equal(found.vectors[rows], reference.vectors)
    assert open_backend(load_settings(sharded, environ={})).status()["semantic_ranking"] == "on"
