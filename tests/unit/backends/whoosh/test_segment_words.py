"""A segment's word sequences: written once beside it, read back exactly, and refused (so that
phrases fall back to positions) when the file is not what it should be."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from whoosh.filedb.filestore import FileStorage

from searchsvc.backends.whoosh.segment_words import (
    GenerationWords,
    SegmentWords,
    SequenceWriter,
    drop_unused,
    file_name,
    word_hash,
)

FIELD = "abstract_exact"


def _written(folder: Path, documents: dict[int, list[bytes]], doc_count: int, segment: str = "MAIN_a") -> Path:
    """The file a segment's writer leaves: told each document's words, then the field's terms."""
    writer = SequenceWriter(FileStorage(str(folder)), segment, FIELD)
    for docnum, words in documents.items():
        writer.add(docnum, words)
    for term in sorted({word for words in documents.values() for word in words}):
        writer.note_term(term)
    writer.finish(doc_count)
    return folder / file_name(segment, FIELD)


def _holding(path: Path, doc_count: int, docs: list[int], phrase: str) -> list[int] | None:
    found = SegmentWords.read(path, doc_count).holding(np.array(docs, dtype=np.int64), phrase.encode().split())
    return None if found is None else found.tolist()


def test_a_phrase_is_found_only_side_by_side_in_order_within_one_paper(tmp_path: Path) -> None:
    path = _written(
        tmp_path,
        {0: b"neural machine translation".split(), 2: b"translation of the machine".split(), 3: b"neural".split()},
        doc_count=5,  # 1 and 4 have no such field
    )
    everyone = [0, 1, 2, 3, 4]
    assert _holding(path, 5, everyone, "machine translation") == [0]
    assert _holding(path, 5, everyone, "of the machine") == [2]
    assert _holding(path, 5, everyone, "translation machine") == []  # out of order
    assert _holding(path, 5, everyone, "translation neural") == []  # paper 2 ends, paper 3 begins
    assert _holding(path, 5, everyone, "machine neural") == []
    assert _holding(path, 5, [2, 3], "machine translation") == []  # only the papers asked about
    assert _holding(path, 5, [], "machine translation") == []


def test_a_paper_whose_adding_failed_leaves_no_words(tmp_path: Path) -> None:
    writer = SequenceWriter(FileStorage(str(tmp_path)), "MAIN_a", FIELD)
    writer.add(0, [b"first", b"paper"])
    writer.add(1, [b"failed", b"paper"])  # its adding failed after this field: the next takes number 1
    writer.add(1, [b"second", b"paper"])
    writer.finish(2)
    path = tmp_path / file_name("MAIN_a", FIELD)
    assert _holding(path, 2, [0, 1], "second paper") == [1]
    assert _holding(path, 2, [0, 1], "failed paper") == []


def test_words_sharing_a_hash_leave_their_phrases_to_positions(tmp_path: Path) -> None:
    """CRC-32 gives "plumless" and "buckeroo" one hash: a phrase with either is not matched from
    hashes, which could not tell them apart; others are."""
    assert word_hash(b"plumless") == word_hash(b"buckeroo")
    path = _written(tmp_path, {0: b"a plumless cat".split(), 1: b"a buckeroo dog".split()}, doc_count=2)
    assert _holding(path, 2, [0, 1], "a plumless") is None
    assert _holding(path, 2, [0, 1], "buckeroo dog") is None
    assert _holding(path, 2, [0, 1], "a cat") == []
    assert SegmentWords.read(path, 2).shared == {word_hash(b"plumless")}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[3:], id="cut short"),
        pytest.param(lambda data: data[-10:], id="shorter than its trailer"),
        pytest.param(lambda data: data[:-24] + b"NOTWORDS" + data[-16:], id="another file"),
        pytest.param(lambda data: data[:-32] + (10**9).to_bytes(8, "little") + data[-24:], id="ends past the words"),
        pytest.param(lambda data: b"\0\0\0\0" + data, id="longer than its ends say"),
        pytest.param(lambda data: data[:-16] + (10**9).to_bytes(8, "little") + data[-8:], id="counts too many"),
    ],
)
def test_a_damaged_file_is_not_read_and_says_why(tmp_path: Path, caplog: pytest.LogCaptureFixture, damage) -> None:
    path = _written(tmp_path, {0: b"machine translation".split(), 1: b"parsing".split()}, doc_count=2)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING):
        assert GenerationWords(tmp_path).of("MAIN_a", FIELD, 2) is None
    assert "matching phrases in segment MAIN_a from positions" in caplog.text


def test_a_file_of_another_segment_size_is_not_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _written(tmp_path, {0: [b"parsing"]}, doc_count=1)
    with caplog.at_level(logging.WARNING):
        assert GenerationWords(tmp_path).of("MAIN_a", FIELD, 2) is None
    assert "holds 1 documents, not 2" in caplog.text
    assert GenerationWords(tmp_path).of("MAIN_b", FIELD, 1) is None  # none written: positions, silently


def test_the_files_of_segments_merged_away_are_dropped(tmp_path: Path) -> None:
    for segment in ("MAIN_kept", "MAIN_gone"):
        _written(tmp_path, {0: [b"parsing"]}, doc_count=1, segment=segment)
    (tmp_path / "arrays-MAIN_gone.npz").write_bytes(b"")  # not a words file: left alone
    drop_unused(tmp_path, ["MAIN_kept"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["arrays-MAIN_gone.npz", file_name("MAIN_kept", FIELD)]
