from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.core.paper import Paper, paper_id_for_title
from searchsvc.core.publication import Publication
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


def test_reads_the_publication(write) -> None:
    record = {
        **RECORD,
        "venue": " Proceedings of\nACL ",
        "date": "2016-08-07",
        "citations": 12,
        "citations_source": "OpenAlex",
        "orcids": {"Zoë Müller": "https://orcid.org/0000-0002-1825-0097", "Perlis, A. J.": None},
    }
    nulls = {
        "title": "Second",
        "venue": None,
        "date": None,
        "citations": None,
        "citations_source": None,
        "orcids": None,
    }
    first, second = read(write("r.jsonl", jsonl([record, nulls])))
    assert first.publication == Publication(
        "Proceedings of ACL", "2016-08-07", 12, "OpenAlex", {"Zoë Müller": "0000-0002-1825-0097"}
    )
    assert (second.year, second.publication) == (None, Publication())
    (dated,) = read(write("d.jsonl", jsonl([{"title": "T", "date": "2021-06"}])))
    assert (dated.year, dated.publication.date) == (2021, "2021-06")  # no year: the date's


def test_values_that_are_not_valid_are_left_out_with_a_warning(write) -> None:
    record = {
        "title": "T",
        "year": 2021,
        "authors": ["Ada"],
        "date": "2021-02-30",
        "citations": -3,
        "citations_source": "OpenAlex",
        "orcids": {"Ada": "0000-0002-1825-0098", "Bob": "0000-0002-1825-0097"},
    }
    path = write("r.jsonl", jsonl([record, {"title": "U", "year": 2021, "date": "2020-01"}]))
    warnings: list[str] = []
    first, second = read_jsonl(path, warnings.append)
    assert (first.publication, second.publication) == (Publication(date="2021"), Publication(date="2021"))
    assert warnings == [
        f"{path}:1: 'date' \"2021-02-30\" is not a date; ignored",
        f"{path}:1: 'citations' -3 is not a count; ignored",
        f'{path}:1: \'orcids\' of "Ada": "0000-0002-1825-0098" is not an ORCID iD; ignored',
        f"{path}:1: 'orcids' names \"Bob\", who is not one of the 'authors'; ignored",
        f"{path}:2: date 2020-01 is not in the year 2021; ignored",
    ]


def test_our_export_reimports_the_publication(write) -> None:
    paper = Paper(
        "p-1",
        "T",
        "",
        2018,
        authors=["Heather A. Piwowar", "Jason Priem"],
        publication=Publication("PeerJ", "2018-02-13", 394, "OpenAlex", {"Heather A. Piwowar": "0000-0003-1613-5981"}),
    )
    (back,) = read(write("e.jsonl", "".join(EXPORT_FORMATS["jsonl"].write([paper]))))
    assert (back.year, back.authors, back.publication) == (paper.year, paper.authors, paper.publication)


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
        ('{"title": "T", "venue": ["ACL"]}', "'venue' must be a string, found [\"ACL\"]"),
        ('{"title": "T", "date": 2021}', "'date' must be a string, found 2021"),
        ('{"title": "T", "citations": "12"}', "'citations' must be a whole number or null, found \"12\""),
        ('{"title": "T", "citations": 1.5}', "'citations' must be a whole number or null, found 1.5"),
        ('{"title": "T", "citations": true}', "'citations' must be a whole number or null, found true"),
        ('{"title": "T", "citations_source": 1}', "'citations_source' must be a string, found 1"),
        (
            '{"title": "T", "orcids": ["0000-0002-1825-0097"]}',
            "'orcids' must be an object of author name: ORCID iD, or null, found [\"0000-0002-1825-0097\"]",
        ),
        (
            '{"title": "T", "orcids": {"Ada": 5}}',
            "'orcids' must be an object of author name: ORCID iD, or null, found {\"Ada\": 5}",
        ),
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
