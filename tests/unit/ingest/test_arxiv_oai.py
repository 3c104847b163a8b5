"""arXiv OAI snapshot: real records, the year from the first version, and malformed lines by number."""

from __future__ import annotations

import json

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.publication import Publication
from searchsvc.ingest.arxiv_oai import read_arxiv_oai
from tests.helpers.paths import SOURCE_SAMPLES


def test_real_snapshot_records() -> None:
    first, second = read_arxiv_oai(SOURCE_SAMPLES / "arxiv-oai-snapshot.jsonl", lambda m: None)
    assert first.title == "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    assert first.authors == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]
    assert (first.year, first.subjects) == (2007, ["hep-ph"])
    assert first.abstract.startswith("A fully differential calculation") and "\n" not in first.abstract
    assert first.identifiers == Identifiers("0704.0001", "10.1103/physrevd.76.013009", "")
    assert (second.year, second.subjects, second.authors) == (2021, ["cs.DS", "cs.MS"], ["Daniel Lemire"])
    # the journal of journal-ref, and the first version's date (not update_date, the last change)
    assert first.publication == Publication(venue="Phys.Rev.D", date="2007-04-02")
    assert second.publication == Publication(venue="Software: Practice and Experience", date="2021-01-11")


def test_a_record_without_versions_has_the_update_year_only(write) -> None:
    record = {"id": "0704.0001", "title": "T", "update_date": "2008-11-26", "journal-ref": "Phys. Rev. D 76, 1"}
    (paper,) = read_arxiv_oai(write("s.jsonl", json.dumps(record) + "\n"), lambda m: None)
    assert (paper.year, paper.publication) == (2008, Publication(venue="Phys. Rev. D", date="2008"))


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"id": "0704.0001"}, "record has no title"),
        ({"id": "not-an-id", "title": "T"}, "'id' \"not-an-id\" is not an arXiv id"),
        ({"id": "0704.0001", "title": "T", "versions": [{"created": "someday"}]}, "'versions' must hold a year"),
        ({"id": "0704.0001", "title": "T", "authors_parsed": "Doe, J."}, "'authors_parsed' must be a list"),
        ({"id": "0704.0001", "title": 5}, "'title' must be a string"),
        ({"id": "0704.0001", "title": "T", "journal-ref": ["J"]}, "'journal-ref' must be a string"),
    ],
)
def test_malformed_records_name_their_line(write, record, problem: str) -> None:
    path = write("bad.jsonl", "\n" + json.dumps(record) + "\n")
    with pytest.raises(SourceFormatError, match=rf"^{path}:2: {problem}"):
        list(read_arxiv_oai(path, lambda m: None))
