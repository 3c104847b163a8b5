"""What only OpenSearch's updates have: writes through the alias, a change published by its
`_meta`, and an update killed or refused half-way, which leaves the published papers serving
and is repaired by the next one (searchsvc/backends/opensearch/updates.py).

Each check ends by comparing the updated index with a fresh rebuild of the same records, by
the ids, scores, totals and facet counts of a set of searches.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy import OpenSearch

from searchsvc import create_app
from searchsvc.backends.opensearch import OpenSearchBackend, merging, vectors
from searchsvc.backends.opensearch import backend as opensearch_backend
from searchsvc.backends.opensearch.mapping import MAPPING_VERSION, VECTOR
from searchsvc.backends.opensearch.updates import CHANGES, PENDING
from searchsvc.core.errors import PaperNotFound, RebuildFailed
from searchsvc.core.model import SearchRequest
from searchsvc.core.progress import no_progress
from searchsvc.operations import update
from searchsvc.operations.published import COLLECTIONS
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from searchsvc.semantic.selection import rebuild_encoder
from searchsvc.semantic.store import content_key, load, lookup, paper_text
from searchsvc.settings import load_settings
from searchsvc.settings.write_tokens import entry_for, new_token
from tests.helpers.backends import BackendFactory, merged
from tests.helpers.opensearch_cluster import QUICK_MERGES_PRIORITY
from tests.helpers.paths import REPO
from tests.helpers.records import jsonl, made_up_papers, write_jsonl

WORDS = (
    "lattice quokka migration wombat spectral graph neural kernel sparse entropy bayesian tensor "
    "ocean river signal noise robust convex sampling gradient"
).split()
SUBJECTS = ["cs.LG", "q-bio.PE", "stat.ML", "physics.ao-ph", "math.OC"]
AUTHORS = ["Ada Quokka", "Bo Wombat", "Cy Numbat", "Di Bilby", "Ed Dingo", "Fay Emu", "Gus Koala", "Hal Possum"]
QUERIES = [
    SearchRequest(q="lattice"),
    SearchRequest(q="neural kernel"),
    SearchRequest(q="we study the sparse graph of the ocean signal with a robust convex method"),
    SearchRequest(q='"quokka migration"'),
    SearchRequest(q="spec*"),
    SearchRequest(q="wombat OR river"),
    SearchRequest(q="graph NOT neural"),
    SearchRequest(q="entropy", subject=("stat.ML",)),
    SearchRequest(q="signal", author=("Cy Numbat",), year_from=2005, year_to=2015),
    SearchRequest(q="sampling", sort="newest"),
    SearchRequest(sort="oldest"),
    *(SearchRequest(q="gradient tensor", page=page) for page in (1, 2, 3)),
    *(SearchRequest(sort="newest", page=page) for page in (1, 2, 3)),
]


@pytest.fixture
def factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendFactory]:
    made = BackendFactory("opensearch", request, tmp_path_factory)
    yield made
    made.close()


@pytest.fixture
def cluster(factory: BackendFactory) -> Iterator[OpenSearch]:
    client = OpenSearch(hosts=factory.urls)
    yield client
    client.close()


class Records:
    """Deterministic records over a small vocabulary: ties and varied word frequencies."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.made: list[dict[str, Any]] = []
        self.touched: set[str] = set()  # ids of the papers later records joined

    def new(self) -> dict[str, Any]:
        rng, number = self.rng, len(self.made)
        record: dict[str, Any] = {
            "id": f"p{number:04d}",
            "title": " ".join(rng.choices(WORDS, k=rng.randint(2, 5))),
            "abstract": " ".join(rng.choices(WORDS + ["the", "of", "we"], k=rng.randint(6, 25))),
            "year": rng.randint(2000, 2012),
            "categories": rng.sample(SUBJECTS, rng.randint(1, 2)),
            "authors": rng.sample(AUTHORS, rng.randint(1, 3)),
            "doi": f"10.1000/x{number}",
            "arxiv": f"1{number % 10}01.{number:05d}",
        }
        self.made.append(record)
        return record

    def batch(self, untouchable: set[str]) -> list[dict[str, Any]]:
        """Ten records: new papers, and records joining earlier ones by id, DOI or arXiv id."""
        rng = self.rng
        earlier = [r for r in self.made if r["id"] not in untouchable]
        batch = [self.new() for _ in range(4)]
        for known in rng.sample(earlier, 6):
            self.touched.add(known["id"])
            kind = rng.choice(["id", "doi", "arxiv"])
            joining: dict[str, Any] = {"title": known["title"] if kind != "doi" else f"{rng.choice(WORDS)} revisited"}
            if kind == "id":
                joining |= {"id": known["id"], "authors": [rng.choice(AUTHORS)], "categories": [rng.choice(SUBJECTS)]}
            else:
                joining[kind] = known[kind]
                joining["abstract"] = " ".join(rng.choices(WORDS, k=8))
            batch.append(joining)
        return batch


def assert_same_answers(backend: OpenSearchBackend, other: OpenSearchBackend) -> None:
    for mine, theirs in zip(answers(backend), answers(other), strict=True):
        assert mine == theirs


def answers(backend: OpenSearchBackend) -> list[Any]:
    """Every query's hits (id, score), total and facet counts."""
    found = []
    for request in QUERIES:
        result = search(backend, request)
        facets = {name: [(v.value, v.count, v.selected) for v in values] for name, values in result.facets.items()}
        found.append((request, [(hit.id, hit.score) for hit in result.hits], result.total, facets))
    return found


def rebuilt(factory: BackendFactory, files: list[Path], vector_store: str) -> OpenSearchBackend:
    """A fresh index of `files`, with the update's vectors: loaded with them, none rewritten."""
    backend = OpenSearchBackend(factory.settings(vector_store=vector_store))
    rebuild(backend, files)
    return backend


def meta(cluster: OpenSearch, backend: OpenSearchBackend) -> dict[str, Any]:
    (index,) = backend.generations.aliased()
    return cluster.indices.get_mapping(index=index)[index]["mappings"]["_meta"]


UPDATES = 8  # adds of ten records (4 new papers, 6 joining earlier ones); the 4th is followed by a removal


def test_updates_ranked_by_meaning_too_match_a_rebuild_and_are_published_by_meta(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path
) -> None:
    """test_updates.py's check with what only OpenSearch does: `embed` rewrites each update's new
    papers with their vectors, leaving deleted copies that the last update's merge must drop (after
    the answer); each update is published as `<index>.<n>` in `_meta`."""
    records = Records(seed=18)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(300)])
    vectors = str(tmp_path / "vectors")
    settings = factory.overrides(vector_store=vectors, opensearch_merge_wait_s=0)
    backend = OpenSearchBackend(load_settings(settings, environ={}))
    rebuild(backend, [base])
    removed: set[str] = set()
    files, replaced = [], []
    for number in range(UPDATES):
        files.append(write_jsonl(tmp_path / f"update-{number:02d}.jsonl", records.batch(removed)))
        if number == UPDATES - 1:  # the last update starts the merge that makes scores a rebuild's
            backend = OpenSearchBackend(load_settings({**settings, "opensearch_merge_wait_s": 60}, environ={}))
        report = update.add(backend, [files[-1]])
        assert len(report.added) >= 4
        replaced += report.replaced
        if number % 7 == 3:  # papers no record joined: a rebuild without their records has the rest
            alone = [f"p{n:04d}" for n in range(300) if f"p{n:04d}" not in removed | records.touched]
            gone = sorted(records.rng.sample(alone, 3))
            removed.update(gone)
            assert update.remove(backend, gone).removed == gone
    kept = [r for r in map(json.loads, base.read_text().splitlines()) if r["id"] not in removed]
    fresh = rebuilt(factory, [write_jsonl(tmp_path / "base-kept.jsonl", kept), *files], vectors)
    merged(backend)

    assert len(replaced) > 20
    assert_same_answers(backend, fresh)
    written = meta(cluster, backend)
    assert written["mapping_version"] == MAPPING_VERSION
    assert written[CHANGES] == UPDATES + 1 and PENDING not in written  # and one removal, after the 4th
    assert written["doc_count"] == backend.status()["doc_count"] == fresh.status()["doc_count"]
    label = backend.published()
    assert label == f"{backend.generations.aliased()[0]}.{UPDATES + 1}" == backend.status()["generation"]
    kept = sorted(p.name for p in (backend.settings.index_dir / COLLECTIONS).iterdir())
    assert kept == [f"{label}.acronyms.json", f"{label}.sqlite"]
    assert cluster.indices.stats(index=backend.generations.aliased()[0])["_all"]["total"]["docs"]["deleted"] == 0


_KILLED_ADD = """
import json, os, signal, sys
from pathlib import Path
from searchsvc.backends.opensearch import OpenSearchBackend
from searchsvc.operations import update
from searchsvc.settings import load_settings
from searchsvc.settings.write_tokens import entry_for, new_token

def load_half_then_die(self, name, papers, progress):
    papers = list(papers)
    sent(self, name, papers[: len(papers) // 2], progress)
    os.kill(os.getpid(), signal.SIGKILL)  # between the index writes, after the deletions

sent, OpenSearchBackend._load = OpenSearchBackend._load, load_half_then_die
settings = load_settings(json.loads(sys.argv[1]), environ={})
update.add(OpenSearchBackend(settings), [Path(sys.argv[2])])
"""


def test_a_killed_update_leaves_the_published_papers_serving_and_the_next_one_repairs_it(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path
) -> None:
    records = Records(seed=7)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(200)])
    vectors = str(tmp_path / "vectors")
    settings = factory.overrides(vector_store=vectors)
    backend = OpenSearchBackend(load_settings(settings, environ={}))
    rebuild(backend, [base])
    first = write_jsonl(tmp_path / "first.jsonl", records.batch(set()))
    update.add(backend, [first])
    merged(backend)  # and a merge running on beside the killed add must not show its papers either
    before, label = answers(backend), backend.published()
    batches = records.batch(set()) + records.batch(set())
    killed = write_jsonl(tmp_path / "killed.jsonl", batches)
    new_id = batches[10]["id"]  # a new paper no later record joins

    shown = {key: str(value) for key, value in settings.items()}
    run = subprocess.run(
        [sys.executable, "-c", _KILLED_ADD, json.dumps(shown), str(killed)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr

    assert backend.published() == label  # the interrupted change was never published
    assert (backend.settings.index_dir / COLLECTIONS / f"{label}.sqlite").is_file()
    assert meta(cluster, backend)[PENDING]  # what the next update writes again
    assert answers(backend) == before  # refreshes held: nothing of the half-written change shows
    with pytest.raises(PaperNotFound):
        backend.paper(new_id)

    # Another add, not the killed one again: the papers it half-wrote must go back as they were.
    after = write_jsonl(tmp_path / "next.jsonl", records.batch(set()))
    (index,) = backend.generations.aliased()
    assert label == f"{index}.1"
    assert update.add(backend, [after]).generation == backend.published() == f"{index}.2"
    assert PENDING not in meta(cluster, backend)
    with pytest.raises(PaperNotFound):
        backend.paper(new_id)
    merged(backend)
    assert_same_answers(backend, rebuilt(factory, [base, first, after], vectors))


def test_an_update_the_cluster_refuses_half_way_changes_nothing_searches_see(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = Records(seed=9)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(200)])
    vectors = str(tmp_path / "vectors")
    backend = OpenSearchBackend(factory.settings(vector_store=vectors))
    rebuild(backend, [base])
    merged(backend)  # the rebuild's embedding rewrote every paper: scores change when the merge drops their copies
    before, label = answers(backend), backend.published()
    refused = write_jsonl(tmp_path / "refused.jsonl", records.batch(set()))
    documents = opensearch_backend.vectors.documents

    def one_refused(papers: Any, store: Path, *earlier: Any) -> Iterator[dict[str, Any]]:
        for number, document in enumerate(documents(papers, store, *earlier)):
            yield document | ({"unmapped": 1} if number == 5 else {})  # the mapping is strict

    monkeypatch.setattr(opensearch_backend.vectors, "documents", one_refused)
    with pytest.raises(RebuildFailed, match="refused paper"):
        update.add(backend, [refused])
    monkeypatch.undo()

    assert backend.published() == label
    assert answers(backend) == before
    update.add(backend, [refused])  # run again
    merged(backend)
    assert_same_answers(backend, rebuilt(factory, [base, refused], vectors))


def test_a_paper_replaced_while_the_index_is_embedded_never_gets_the_old_text_s_vector(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path
) -> None:
    """A write's papers are embedded beside later writes (operations/background_embedding.py): a
    vector computed for a paper's text is written only into that version of the paper."""
    built = factory.overrides(semantic_ranking=False, opensearch_merge_wait_s=0)
    first, *others = made_up_papers("wombat", 4)  # the first built without its abstract, which a write adds
    rebuild(
        OpenSearchBackend(load_settings(built, environ={})),
        [write_jsonl(tmp_path / "a.jsonl", [{**first, "abstract": ""}, *others])],
    )
    backend = OpenSearchBackend(load_settings({**built, "semantic_ranking": True}, environ={}))
    encoder = partial(rebuild_encoder, backend.settings)
    writes = []

    @contextmanager
    def writing_meanwhile(texts: int) -> Iterator[Any]:  # the catalogue is read: now a write replaces a paper
        if not writes:
            writes.append(update.add(backend, [write_jsonl(tmp_path / "b.jsonl", [first])], embed=False))
        with encoder(texts) as encode_chunks:
            yield encode_chunks

    store = backend.vector_store
    embedded = vectors.embed_index(backend.client, backend.generations, store, writing_meanwhile, no_progress)
    assert embedded == (4, 3)  # 4 texts embedded, 3 papers rewritten: not the one the write replaced
    assert writes[0].replaced == ["wombat-00"]
    assert backend.searches.count(vectors.MISSING) == 1  # the new version: no vector yet, not the old one's
    assert backend.status()["semantic_ranking"] == "pending"
    assert backend.embed(no_progress) == 1
    source = cluster.get(index=backend.alias, id="wombat-00")["_source"]
    stored = load(store)
    row, found = lookup(stored, np.array([content_key(paper_text(first["title"], first["abstract"]))]))
    assert found[0] and np.array_equal(vectors.decoded(source[VECTOR]), stored.vectors[row[0]])
    assert backend.status()["semantic_ranking"] == "on"


def test_a_write_answers_once_searchable_and_its_merge_follows_in_the_background(
    factory: BackendFactory, tmp_path: Path
) -> None:
    """Issue #30, item 5: a write answers at its refresh, so the first search after the answer
    finds its paper; the old copies of the papers it replaced are merged away after the answer,
    by a process of its own, and then every score is a fresh load's."""
    records = Records(seed=30)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(200)])
    token = new_token()
    overrides = factory.overrides(semantic_ranking=False, write_token_hashes=[entry_for("curator", token)])
    backend = OpenSearchBackend(load_settings(overrides, environ={}))
    rebuild(backend, [base])
    written = [*made_up_papers("zebra", 1), *records.batch(set())]  # a new paper; others replacing older ones
    client = create_app(overrides).test_client()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}

    answer = client.post("/api/papers", data=jsonl(written), headers=headers)
    found = client.get("/api/search", query_string={"q": "zebra"})

    assert answer.status_code == 200 and answer.get_json()["replaced"]
    assert [hit["id"] for hit in found.get_json()["results"]] == ["zebra-00"]
    merged(backend)
    fresh = OpenSearchBackend(factory.settings(semantic_ranking=False))
    rebuild(fresh, [base, write_jsonl(tmp_path / "written.jsonl", written)])
    assert_same_answers(backend, fresh)


@contextmanager
def real_retention(cluster: OpenSearch, alias: str) -> Iterator[None]:
    """Indexes of `alias` created meanwhile keep deleted copies as long as a real cluster does (until
    its next retention-lease sync, up to ~30 s), not the test cluster's second or two: a template of
    higher priority than its quick merges' (tests/helpers/opensearch_cluster.py), which sets nothing.
    A merge started right after an update then goes on asking for a while."""
    name = f"real-retention-{alias}"
    body = {"index_patterns": [f"{alias}-*"], "priority": QUICK_MERGES_PRIORITY + 1}
    cluster.indices.put_index_template(name=name, body=body)
    try:
        yield
    finally:
        cluster.indices.delete_index_template(name=name)


def test_a_merge_killed_or_outlived_by_its_index_breaks_no_write_and_no_rebuild(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path
) -> None:
    records = Records(seed=31)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(200)])
    quiet = factory.overrides(semantic_ranking=False, opensearch_merge_wait_s=0)  # merges started here only
    backend = OpenSearchBackend(load_settings(quiet, environ={}))
    merges = load_settings({**quiet, "opensearch_merge_wait_s": 60}, environ={})
    with real_retention(cluster, backend.alias):  # the merges below are still at work when killed or outlived
        rebuild(backend, [base])
    files = [write_jsonl(tmp_path / f"update-{n}.jsonl", records.batch(set())) for n in range(3)]  # read after base

    def merging_now() -> subprocess.Popen[bytes]:
        """A merge process, once it is at work (it has flushed the index)."""
        index = backend.generations.serving()

        def flushes() -> int:
            return int(cluster.indices.stats(index=index, metric="flush")["_all"]["total"]["flush"]["total"])

        before = flushes()
        process = merging.start(merges)
        assert process is not None
        while flushes() == before:
            assert process.returncode is None, "the merge process ended before it flushed"  # reaped by start's thread
            time.sleep(0.05)
        return process

    update.add(backend, [files[0]])
    killed = merging_now()
    killed.kill()
    assert killed.wait() == -signal.SIGKILL
    assert update.add(backend, [files[1]]).replaced  # and searches answer, at once
    assert merging.start(merges) is not None
    merged(backend)
    fresh = OpenSearchBackend(factory.settings(semantic_ranking=False))
    rebuild(fresh, [base, *files[:2]])
    assert_same_answers(backend, fresh)

    update.add(backend, [files[2]])
    outlived = merging_now()
    report = rebuild(backend, [base, *files])  # deletes the index it merges
    assert outlived.wait(timeout=300) == 0
    assert backend.published() == report.generation and cluster.indices.exists(index=report.generation)


def test_the_copies_a_rebuild_s_embedding_rewrote_are_counted_until_the_merge_drops_them(
    factory: BackendFactory, cluster: OpenSearch, tmp_path: Path
) -> None:
    """Issue #34, item 4: a rebuild publishes its papers, then `embed` rewrites each new one with its
    vector, leaving a deleted copy per paper and shard copy that Lucene counts in word statistics.
    `status()` counts them (`/readyz`, `/metrics`, `searchsvc status`), so what is left to merge is
    seen, and waited for, until the merge the embedding started drops them: then scores are a fresh
    load's."""
    records = Records(seed=34)
    base = write_jsonl(tmp_path / "base.jsonl", [records.new() for _ in range(100)])
    vectors = str(tmp_path / "vectors")  # empty: every paper is embedded, and rewritten, after publishing
    held = factory.overrides(vector_store=vectors, opensearch_merge_wait_s=0)  # no merge yet: the count holds
    backend = OpenSearchBackend(load_settings(held, environ={}))

    report = rebuild(backend, [base])
    index = backend.generations.serving()
    left = backend.status()["deleted_copies"]

    assert report.embedded == 100
    assert left == merging.deleted(cluster, index) >= 100  # a copy per paper, on each shard copy
    assert create_app(held).test_client().get("/readyz").get_json()["deleted_copies"] == left
    assert merging.start(load_settings({**held, "opensearch_merge_wait_s": 60}, environ={})) is not None
    merged(backend)
    assert backend.status()["deleted_copies"] == 0
    assert_same_answers(backend, rebuilt(factory, [base], vectors))
