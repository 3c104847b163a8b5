"""Ranking by meaning on the OpenSearch backend, on the real 2-node test cluster: vectors that
travel with the published index, the pending → on states of a rebuild, and the same fused
ranking and related papers as the Whoosh backend from the same vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from searchsvc.backends import Backend, open_backend
from searchsvc.backends.opensearch import OpenSearchBackend
from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import SearchRequest
from searchsvc.core.progress import no_progress
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import related, search
from searchsvc.semantic.store import StoredVectors, content_key, load, paper_text, save, store_file
from searchsvc.settings import load_settings
from tests.helpers.backends import BackendFactory
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl, made_up_papers

NATURAL_QUERIES = [
    "embedding table compression",
    "FP8 training",
    "checkpointing recommendation models",
    "fault tolerant training on many GPUs",
    "near-memory processing for recommendation",
    "network topology for distributed training",
    "disaggregated inference",
    "compositional embeddings",
]


@pytest.fixture(scope="module")
def factory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendFactory]:
    made = BackendFactory("opensearch", request, tmp_path_factory)
    yield made
    made.close()


@pytest.fixture(scope="module")
def engines(factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Backend]:
    """The seeds on both engines, ranked by meaning with one vector store (Whoosh embeds them)."""
    store = str(tmp_path_factory.mktemp("shared-vectors"))
    index_dir = tmp_path_factory.mktemp("index")
    whoosh = WhooshBackend(load_settings({"index_dir": index_dir, "vector_store": store}, environ={}))
    assert rebuild(whoosh, [SEEDS]).embedded == 28
    opensearch = OpenSearchBackend(factory.settings(vector_store=store))
    assert rebuild(opensearch, [SEEDS]).embedded == 0  # loaded with the stored vectors
    return {"whoosh": whoosh, "opensearch": opensearch}


def records_file(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text(jsonl(records), encoding="utf-8")
    return path


def test_semantic_ranking_is_pending_until_embedded_and_an_unchanged_rebuild_embeds_nothing(
    factory: BackendFactory, tmp_path: Path
) -> None:
    backend = OpenSearchBackend(factory.settings())
    source = records_file(tmp_path, made_up_papers("wombat", 3))
    with monkeypatch_embed(backend):
        rebuild(backend, [source])
    assert backend.status()["semantic_ranking"] == "pending"
    assert search(backend, SearchRequest(q="wombat")).total == 3  # searchable meanwhile, lexically
    assert backend.embed(no_progress) == 3
    assert backend.status()["semantic_ranking"] == "on"
    again = rebuild(backend, [source])
    assert again.embedded == 0
    assert backend.status()["semantic_ranking"] == "on"
    off = OpenSearchBackend(factory.settings(opensearch_index=backend.alias, semantic_ranking=False))
    assert off.status()["semantic_ranking"] == "off"


@pytest.mark.parametrize("query", NATURAL_QUERIES)
def test_both_engines_rank_by_meaning_alike(engines: dict[str, Backend], query: str) -> None:
    """The same vectors fused the same way. Lexical scores differ in detail (one BM25F score per
    word on Whoosh, per-field BM25 summed on OpenSearch), so close papers may swap further down."""
    whoosh, opensearch = (search(engines[kind], SearchRequest(q=query)) for kind in ("whoosh", "opensearch"))
    assert opensearch.total == whoosh.total
    assert opensearch.hits[0].id == whoosh.hits[0].id
    ids = {kind: {hit.id for hit in result.hits} for kind, result in (("w", whoosh), ("o", opensearch))}
    assert len(ids["w"] ^ ids["o"]) <= 2  # at most one paper swapped across the page's edge
    lexical = search(_lexical(engines["opensearch"]), SearchRequest(q=query))
    assert [hit.score for hit in opensearch.hits] != [hit.score for hit in lexical.hits]  # fused, not lexical


def test_related_papers_by_meaning_agree_on_both_engines(engines: dict[str, Backend]) -> None:
    """Both engines scan every paper's vector (OpenSearch in the cluster: nearest.py), so the
    lists are the same papers with the same scores in the same order, the liked paper's most
    distinctive words marked in them (each engine chooses its own: Whoosh's key terms, the
    cluster's tf-idf)."""
    for paper in search(engines["whoosh"], SearchRequest(q="recommendation", per_page=8)).hits:
        found = {kind: related(engines[kind], paper.id, 5) for kind in ("whoosh", "opensearch")}
        for hits in found.values():
            assert any("<mark>" in text for hit in hits for text in hit.highlights.values())
        whoosh, opensearch = ([(hit.id, hit.score) for hit in hits] for hits in found.values())
        assert len(opensearch) == 5 and opensearch == whoosh
        assert [score for _id, score in opensearch] == sorted((score for _id, score in opensearch), reverse=True)
    lexical = related(_lexical(engines["opensearch"]), paper.id, 5)
    assert [hit.id for hit in lexical] != [paper_id for paper_id, _score in opensearch]  # more_like_this's order
    assert any("<mark>" in text for hit in lexical for text in hit.highlights.values())


def test_a_paper_without_a_vector_leaves_its_tier_lexical(
    engines: dict[str, Backend], factory: BackendFactory, tmp_path: Path
) -> None:
    """Only a tier whose candidates all have vectors is fused; the others rank by words alone."""
    opensearch = engines["opensearch"]
    lacking = search(opensearch, SearchRequest(q="compositional embeddings")).hits[0]
    stored = load(opensearch.vector_store)
    keep = stored.keys != content_key(paper_text(lacking.title, lacking.abstract))
    assert np.count_nonzero(~keep) == 1
    save(store_file(tmp_path, opensearch.vector_store.stem), StoredVectors(stored.keys[keep], stored.vectors[keep]))
    partial = OpenSearchBackend(factory.settings(vector_store=str(tmp_path)))
    with monkeypatch_embed(partial):
        rebuild(partial, [SEEDS])  # loads every paper with its stored vector: all but one
    assert partial.status()["semantic_ranking"] == "pending"
    lexical = _lexical(partial)

    def scores(backend: Backend, query: str) -> list[tuple[str, float | None]]:
        return [(hit.id, hit.score) for hit in search(backend, SearchRequest(q=query, per_page=30)).hits]

    # Tier 0 (both words) holds the paper: lexical. Tier 1 (one word) has every vector: fused.
    words = dict(scores(lexical, "compositional embeddings"))
    ranked = scores(partial, "compositional embeddings")
    as_lexical = [words[paper_id] == score for paper_id, score in ranked]
    assert (lacking.id, words[lacking.id]) in ranked
    assert as_lexical == sorted(as_lexical, reverse=True) and not all(as_lexical)
    # A search none of whose candidates lacks a vector is fused.
    words = dict(scores(lexical, "network topology"))
    assert lacking.id not in words
    assert all(words[paper_id] != score for paper_id, score in scores(partial, "network topology"))


@contextmanager
def monkeypatch_embed(backend: OpenSearchBackend) -> Iterator[None]:
    """A rebuild that publishes without embedding (as if the rebuild died while embedding)."""
    backend.embed = lambda progress: 0  # type: ignore[method-assign]
    try:
        yield
    finally:
        del backend.embed


def _lexical(backend: Backend) -> Backend:
    """The same published index, ranked by words alone."""
    return open_backend(replace(backend.settings, semantic_ranking=False))
