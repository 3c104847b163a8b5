from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import paper_id_for_title
from searchsvc.ingest.jsonl import read_jsonl
from tests.helpers.paths import SHARED_ACL
from tests.helpers.records import jsonl

RECORD = {
    "id": "2016.acl-1.1",
    "title": "Neural  Parsing\n of Text",
    "abstract": "We parse.",
    "year": 2016,
    "categories": ["acl", "cs.CL"],
    "authors": ["Zoë Müller", "Perlis, A. J.", "Zoë Müller", " "],
    "booktitle": "ignored",
    "doi": None,
}


def read(path: Path) -> list:
    return list(read_jsonl(path, lambda message: None))


def test_reads_fields_and_ignores_extras(write) -> None:
    path = write("r.jsonl", jsonl([RECORD, {"id": 7, "title": "Second", "year": "1999"}]))
    first, second = read(path)
    assert first.id == "2016.acl-1.1"
    assert first.title == "Neural Parsing of Text"  # whitespace folded
    assert first.abstract == "We parse."
    assert first.year == 2016
    assert first.subjects == ["acl", "cs.CL"]
    assert first.authors == ["Zoë Müller", "Perlis, A. J."]  # commas kept, duplicates and blanks dropped
    assert str(first.sources[0]) == f"{path}:1"
    assert (second.id, second.abstract, second.year, second.subjects, second.authors) == ("7", "", 1999, [], [])


def test_blank_lines_skipped_and_line_numbers_kept(write) -> None:
    path = write("r.jsonl", "\n" + jsonl([RECORD]) + "   \n" + jsonl([dict(RECORD, id="b")]))
    assert [str(p.sources[0]) for p in read(path)] == [f"{path}:2", f"{path}:4"]


def test_missing_id_is_derived_from_the_title(write) -> None:
    path = write("r.jsonl", jsonl([{"title": "Compositional Embeddings"}]))
    assert read(path)[0].id == paper_id_for_title("Compositional Embeddings")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "x", "title": "T"', "invalid JSON: Expecting ',' delimiter (column 25)"),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"id": "x"}', "record has no title"),
        ('{"id": "x", "title": "  "}', "record has no title"),
        ('{"id": "x", "title": 5}', "'title' must be a string, found 5"),
        ('{"id": "x", "title": "T", "year": "20x6"}', "'year' must be a year such as 2021 or null, found \"20x6\""),
        ('{"id": "x", "title": "T", "year": 99999}', "'year' must be a year such as 2021 or null, found 99999"),
        ('{"id": "x", "title": "T", "year": true}', "'year' must be a year such as 2021 or null, found true"),
        ('{"id": "x", "title": "T", "authors": "Ada"}', "'authors' must be a list of strings, found \"Ada\""),
        ('{"id": "x", "title": "T", "categories": [1]}', "'categories' must be a list of strings, found [1]"),
        ('{"id": ["x"], "title": "T"}', "'id' must be a string or an integer, found [\"x\"]"),
        ("[" * 100_000, "JSON nested too deeply"),
        (
            '{"id": "x", "title": "T", "abstract": "a \\ud800 b"}',
            "text holds \\ud800, half of a UTF-16 surrogate pair alone, which is not a character",
        ),
        (
            '{"id": "x", "title": "T", "authors": ["\\udfff"]}',
            "text holds \\udfff, half of a UTF-16 surrogate pair alone, which is not a character",
        ),
    ],
)
def test_malformed_line_names_file_and_line(write, line: str, problem: str) -> None:
    path = write("r.jsonl", jsonl([RECORD]) + line + "\n" + jsonl([RECORD]))
    with pytest.raises(SourceFormatError) as caught:
        read(path)
    assert str(caught.value) == f"{path}:2: {problem}"


def test_empty_file_and_not_utf8(write) -> None:
    with pytest.raises(SourceFormatError, match=r"e\.jsonl:1: file has no records"):
        read(write("e.jsonl", ""))
    bad = jsonl([RECORD]).encode() + b'{"title": "\xff"}\n'
    with pytest.raises(SourceFormatError, match=r"b\.jsonl:2: not UTF-8 text \(byte 12 of the line\)"):
        read(write("b.jsonl", bad))


def test_reader_is_lazy(write) -> None:
    """Records stream: the first is yielded before a later malformed line is even read."""
    path = write("r.jsonl", jsonl([RECORD]) + "not json\n")
    records = read_jsonl(path, lambda message: None)
    assert next(records).id == RECORD["id"]
    with pytest.raises(SourceFormatError):
        next(records)


def test_reads_the_first_shared_acl_records() -> None:
    records = read_jsonl(SHARED_ACL, lambda message: None)
    first = [next(records) for _ in range(200)]
    records.close()
    with SHARED_ACL.open(encoding="utf-8") as stream:
        raw = [json.loads(line) for line, _ in zip(stream, range(200), strict=False)]
    assert [p.id for p in first] == [r["id"] for r in raw]
    assert [p.year for p in first] == [r["year"] for r in raw]


def test_an_escaped_surrogate_pair_is_one_character(write) -> None:
    (paper,) = read(write("r.jsonl", '{"id": "x", "title": "Smile \\ud83d\\ude00"}\n'))
    assert paper.title == "Smile \U0001f600"
