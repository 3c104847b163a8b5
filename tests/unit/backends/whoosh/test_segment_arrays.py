"""Each segment's arrays are written once, beside it, and an open reads only the segments it lacks
(issue #30: at 300,000 papers a worker re-read every facet column after each change)."""

from __future__ import annotations

import json
import logging
import random
import shutil
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend, segment_arrays, segment_words
from searchsvc.backends.whoosh.facets import ValueTable
from searchsvc.backends.whoosh.generations import FILES, MANIFEST, GenerationStore
from searchsvc.backends.whoosh.schema import PAIR_FIELDS
from searchsvc.backends.whoosh.unmapped import open_index
from searchsvc.backends.whoosh.updates import MAX_SMALL_SEGMENTS
from searchsvc.core.facet_order import alphabetical_key
from searchsvc.core.model import SearchRequest
from searchsvc.operations import update
from searchsvc.operations.search import search
from tests.helpers.indexes import MakeIndex
from tests.helpers.records import made_up_papers, write_jsonl


def _generation(index_dir: Path) -> Path:
    store = GenerationStore(index_dir)
    return store.generations / store.published_name()


def _segment_files(generation: Path) -> set[str]:
    return {path.stem for path in generation.glob("MAIN_*.seg")}  # the segment ids


def _array_files(generation: Path) -> set[str]:
    prefix = segment_arrays.FILE_PREFIX
    return {path.name.removeprefix(prefix).removesuffix(".npz") for path in generation.glob(f"{prefix}*.npz")}


def _answer(backend) -> list[object]:  # type: ignore[no-untyped-def]
    found = search(backend, SearchRequest(q="", per_page=100, subject=("cs.LG",)))
    return [[hit.id for hit in found.hits], found.facets]


def _word_files(generation: Path) -> set[str]:
    return {path.name for path in generation.glob(f"{segment_words.FILE_PREFIX}*")}


def _expected_word_files(generation: Path) -> set[str]:
    return {segment_words.file_name(s, field) for s in _segment_files(generation) for field in PAIR_FIELDS}


def test_every_segment_has_its_arrays_and_word_sequences_and_a_merged_segment_loses_them(
    make_index: MakeIndex, index_dir: Path, tmp_path: Path
) -> None:
    backend = make_index(made_up_papers("wombat", 30), semantic_ranking=False)
    assert _array_files(_generation(index_dir)) == _segment_files(_generation(index_dir))
    assert _word_files(_generation(index_dir)) == _expected_word_files(_generation(index_dir))
    for number in range(MAX_SMALL_SEGMENTS + 2):  # enough small segments to be merged into one
        update.add(backend, [write_jsonl(tmp_path / f"{number}.jsonl", made_up_papers(f"numbat{number}", 1))])
        generation = _generation(index_dir)
        assert _array_files(generation) == _segment_files(generation)
        assert _word_files(generation) == _expected_word_files(generation)
    assert len(_segment_files(generation)) < MAX_SMALL_SEGMENTS  # the merge happened
    # The merged papers' phrases are found from the merged segment's sequences.
    assert [hit.id for hit in search(backend, SearchRequest(q='"the numbat0 lattice"')).hits] == ["numbat0-00"]
    assert search(backend, SearchRequest(q='"lattice numbat0"')).total == 0


def test_a_reopen_reads_only_the_new_segment(
    make_index: MakeIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = make_index(made_up_papers("wombat", 30), semantic_ranking=False)
    search(backend, SearchRequest(q="wombat"))  # the published generation is open
    read: list[str] = []
    real_read = segment_arrays.read
    monkeypatch.setattr(segment_arrays, "read", lambda g, r: read.append(r.segment().segment_id()) or real_read(g, r))
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 3))])
    assert len(search(backend, SearchRequest(q="numbat")).hits) == 3
    assert len(read) == 1  # the update's segment; the others were the previous generation's


def test_a_generation_without_arrays_is_read_from_its_columns_alike(make_index: MakeIndex, index_dir: Path) -> None:
    """An index built before the arrays existed: the same answers, from Whoosh's columns."""
    papers = [{**paper, "categories": ["cs.LG"]} for paper in made_up_papers("wombat", 30)]
    backend = make_index(papers, semantic_ranking=False)
    expected = _answer(backend)
    generation = _generation(index_dir)
    manifest = json.loads((generation / MANIFEST).read_text())
    for path in generation.glob(f"{segment_arrays.FILE_PREFIX}*"):
        path.unlink()
        del manifest[FILES][path.name]
    (generation / MANIFEST).write_text(json.dumps(manifest))
    assert _answer(WhooshBackend(backend.settings)) == expected  # a process opening it afresh


def test_whole_number_columns_are_read_from_the_arrays_file(
    make_index: MakeIndex, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Citation counts and arrivals are numbers in the file: read back as such, not refused and read
    again from the columns (as every segment holding a citation count was on 4 December)."""
    papers = [{**paper, "citations": number} for number, paper in enumerate(made_up_papers("wombat", 5))]
    backend = make_index(papers, semantic_ranking=False)
    monkeypatch.setattr(segment_arrays, "of_segment", lambda reader: pytest.fail("read from the columns"))
    found = search(WhooshBackend(backend.settings), SearchRequest(q="", sort="cited"))
    assert [hit.publication.citations for hit in found.hits] == [4, 3, 2, 1, 0]
    generation = _generation(index_dir)
    ix = open_index(generation)
    with ix.reader() as reader:
        arrays = segment_arrays.read(generation, reader)
    ix.close()
    assert sorted(arrays.numbers("citations").tolist()) == [0, 1, 2, 3, 4]
    assert len(set(arrays.numbers("added").tolist())) == 1 and arrays.numbers("added")[0] > 1_700_000_000


def test_a_value_table_extended_step_by_step_orders_values_as_one_sort() -> None:
    rng = random.Random(30)
    names = [f"{rng.choice(['', 'de ', 'Van '])}{rng.choice('aAbBéÉz')}{rng.randint(0, 40)}" for _ in range(400)]
    table = ValueTable.empty()
    for start in range(0, len(names), 37):
        table = table.extended(names[start : start + 37])
    assert table.values == list(dict.fromkeys(names))
    alphabetical = sorted(table.values, key=alphabetical_key)
    assert [
        table.values[i] for i in sorted(range(len(table.values)), key=table.display_rank.__getitem__)
    ] == alphabetical
    assert sorted(table.display_rank.tolist()) == list(range(len(table.values)))
    assert table.extended(names[:10]) is table  # nothing new: the same table, not a copy


def test_phrases_read_word_sequences_from_the_generation_served_once_the_previous_is_removed(
    make_index: MakeIndex, index_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A re-open keeps the sequences it had read (each segment's file is linked into the new
    generation), and reads them from there: the generation they were first read from is removed
    once no reader holds it, as a running server's churn showed (500s on every such phrase)."""
    backend = make_index(made_up_papers("wombat", 30), semantic_ranking=False)
    first = _generation(index_dir)
    assert search(backend, SearchRequest(q='"the wombat lattice"')).total == 30  # its sequences read
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 3))])
    assert search(backend, SearchRequest(q='"the numbat lattice"')).total == 3  # the new generation open
    shutil.rmtree(first)  # as pruning does
    with caplog.at_level(logging.WARNING):
        assert search(backend, SearchRequest(q='"the wombat lattice"')).total == 30
        assert search(backend, SearchRequest(q='"lattice the wombat"')).total == 0
    assert "from positions" not in caplog.text
