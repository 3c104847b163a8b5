"""The parallel index build: segments written by several processes give the same search results as one writer,
and the files beside the index that the writers gather are those the index holds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from searchsvc.backends.whoosh import WhooshBackend, indexing, segment_arrays
from searchsvc.backends.whoosh.generation_vectors import KEYS_FILE, text_of
from searchsvc.backends.whoosh.spelling import VOCABULARY_FILE, vocabulary
from searchsvc.core.model import SearchRequest
from searchsvc.core.vocabulary import Vocabulary
from searchsvc.operations.search import related, search
from searchsvc.semantic.store import content_key
from tests.helpers.indexes import build_index
from tests.helpers.paths import SHARED_ACL

QUERIES = [
    SearchRequest(),
    SearchRequest(sort="oldest"),
    SearchRequest(q="machine translation"),
    SearchRequest(q="parsing", per_page=50),
    SearchRequest(q='"neural network"'),
    SearchRequest(q="transl*"),
    SearchRequest(q="the of and"),  # stop words: everything ties, newer papers first
    SearchRequest(q="word embeddings", year_from=2018, year_to=2020),
    SearchRequest(q="a corpus of annotated dialogues for the evaluation of spoken language understanding"),
]


def _records(count: int) -> list[dict]:
    with SHARED_ACL.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(count), lines, strict=False)]
    for record in records[::7]:  # many papers of one year, so order ties are decided by the id
        record["year"] = 2000
    records[3]["year"] = None
    return records


def _backend(tmp_path: Path, name: str, source: Path, processes: int, monkeypatch: pytest.MonkeyPatch) -> WhooshBackend:
    monkeypatch.setattr(indexing, "PROCESSES", processes)
    # Lexical ranking only: the segments are what is compared (test_semantic_ranking.py covers the rest).
    return build_index(tmp_path / name, sources=[source], semantic_ranking=False)


@pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records")
def test_segments_written_in_parallel_search_like_one_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexing, "MIN_PAPERS_PER_PROCESS", 100)
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _records(700)), encoding="utf-8")
    one = _backend(tmp_path, "one", source, 1, monkeypatch)
    three = _backend(tmp_path, "three", source, 3, monkeypatch)
    assert len(three._generations.get().searcher.reader().leaf_readers()) == 3
    assert len(one._generations.get().searcher.reader().leaf_readers()) == 1
    for request in QUERIES:
        expected, found = search(one, request), search(three, request)
        assert [(h.id, h.score, h.highlights) for h in found.hits] == [
            (h.id, h.score, h.highlights) for h in expected.hits
        ], request
        assert (found.total, found.facets, found.suggestion) == (expected.total, expected.facets, expected.suggestion)
    assert [h.id for h in related(three, search(one, QUERIES[2]).hits[0].id, 5)] == [
        h.id for h in related(one, search(one, QUERIES[2]).hits[0].id, 5)
    ]


@pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records")
def test_the_files_the_writers_gather_are_those_read_back_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each writer process writes its segment's arrays and hands back its papers' content keys and
    its words: the same as what the parent used to read back from the finished index."""
    monkeypatch.setattr(indexing, "MIN_PAPERS_PER_PROCESS", 100)
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _records(400)), encoding="utf-8")
    backend = _backend(tmp_path, "three", source, 3, monkeypatch)
    generation = backend.store.generations / backend.store.published_name()
    searcher = backend._generations.get().searcher
    leaves = searcher.reader().leaf_readers()
    assert len(leaves) == 3
    keys = np.load(generation / KEYS_FILE)
    expected = [content_key(text_of(searcher, docnum)) for docnum in range(searcher.doc_count_all())]
    assert np.array_equal(keys, np.array(expected, dtype=keys.dtype))  # as numpy holds them (no trailing NULs)
    saved, read_back = tmp_path / "saved.json", tmp_path / "read.json"
    Vocabulary.load(generation / VOCABULARY_FILE).save(saved)
    vocabulary(searcher).save(read_back)
    assert sorted(map(json.dumps, json.loads(saved.read_text()))) == sorted(
        map(json.dumps, json.loads(read_back.read_text()))
    )
    for leaf, _offset in leaves:
        assert (generation / segment_arrays.file_name(leaf.segment().segment_id())).exists()
        written, columns = segment_arrays.read(generation, leaf), segment_arrays.of_segment(leaf)
        assert written.ids.tolist() == columns.ids.tolist()
        assert written.facets.keys() == columns.facets.keys()
        for name, entries in columns.facets.items():
            found = written.facets[name]
            assert found.values == entries.values, name
            assert found.doc.tolist() == entries.doc.tolist() and found.value.tolist() == entries.value.tolist(), name


class _Sized:
    """A collection as `_runs` sees it: its papers' sizes, newest first."""

    def __init__(self, sizes: list[int]) -> None:
        self._sizes = sizes

    def __len__(self) -> int:
        return len(self._sizes)

    def sizes(self) -> list[int]:
        return self._sizes


def test_runs_are_contiguous_cover_every_paper_and_hold_as_much_text() -> None:
    assert indexing._runs(_Sized([1] * 10), 4) == [(0, 10)]  # too few papers to fork for
    assert indexing._runs(_Sized([1] * 12_001), 2) == [(0, 6001), (6001, 12_001)]
    assert indexing._runs(_Sized([1] * 12_000), 8) == [(0, 6000), (6000, 12_000)]
    assert indexing._runs(_Sized([1] * 11_999), 8) == [(0, 11_999)]
    # Newer papers with abstracts, older ones titles only: the first run holds fewer papers.
    assert indexing._runs(_Sized([3] * 9000 + [1] * 12_000), 2) == [(0, 6500), (6500, 21_000)]
    assert indexing._runs(_Sized([10**6] + [1] * 12_000), 2) == [(0, 6000), (6000, 12_001)]  # never below the minimum
