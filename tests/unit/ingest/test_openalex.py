"""OpenAlex works: the abstract rebuilt from its inverted index, authorships, concepts, and bad works by line."""

from __future__ import annotations

import json

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.publication import Publication
from searchsvc.ingest.openalex import MAX_ABSTRACT_WORDS, read_openalex
from tests.helpers.paths import SOURCE_SAMPLES


def test_real_work() -> None:
    (work,) = read_openalex(SOURCE_SAMPLES / "openalex-works.jsonl", lambda m: None)
    assert work.title.startswith("The state of OA: a large-scale analysis")
    assert work.abstract.startswith("Despite growing interest in Open Access (OA) to scholarly literature, there is")
    assert work.abstract.endswith("determines OA status for 67 million articles.")
    assert work.year == 2018 and len(work.authors) == 9 and work.authors[2] == "Vincent Larivière"
    assert work.subjects == ["Computer science"]  # only top-level concepts
    assert work.identifiers == Identifiers("", "10.7717/peerj.4375", "https://doi.org/10.7717/peerj.4375")
    assert work.publication == Publication(
        venue="PeerJ",
        date="2018-02-13",
        citations=394,
        citations_source="OpenAlex",
        orcids={"Heather A. Piwowar": "0000-0003-1613-5981", "Jason Priem": "0000-0001-6187-6610"},
    )


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"primary_location": None, "publication_year": 2020}, Publication(date="2020")),
        ({"primary_location": {"source": None}, "cited_by_count": None}, Publication()),
        ({"primary_location": {"source": {"display_name": None}}}, Publication()),
        ({"host_venue": {"display_name": "Nature"}}, Publication(venue="Nature")),  # older records
        ({"cited_by_count": 0}, Publication(citations=0, citations_source="OpenAlex")),
        ({"cited_by_count": "many", "publication_date": "2020-02-30"}, Publication()),  # dropped
        ({"publication_date": "2020-05-01"}, Publication(date="2020-05-01")),  # the year from it
        (
            {
                "authorships": [
                    {"author": {"display_name": " Ada  Lovelace ", "orcid": "https://orcid.org/0000-0002-1825-0097"}},
                    {"author": {"display_name": "Bad Check", "orcid": "https://orcid.org/0000-0002-1825-0098"}},
                    {"author": {"display_name": "No iD", "orcid": None}},
                    {"author": None},
                ]
            },
            Publication(orcids={"Ada Lovelace": "0000-0002-1825-0097"}),
        ),
    ],
)
def test_venue_date_citations_and_orcids(write, fields: dict, expected: Publication) -> None:
    (paper,) = read_openalex(write("w.jsonl", json.dumps({"display_name": "T", **fields}) + "\n"), lambda m: None)
    assert paper.publication == expected
    assert paper.year == expected.year


def test_a_date_of_another_year_is_left_out(write) -> None:
    path = write(
        "w.jsonl", json.dumps({"display_name": "T", "publication_year": 2019, "publication_date": "2018-12-01"})
    )
    warnings: list[str] = []
    (paper,) = read_openalex(path, warnings.append)
    assert (paper.year, paper.publication.date) == (2019, "2019")
    assert warnings == [f"{path}:1: date 2018-12-01 is not in the year 2019; ignored"]


def test_topics_are_preferred_and_arxiv_locations_give_the_id(write) -> None:
    work = {
        "display_name": "T",
        "topics": [{"display_name": "Recommender Systems"}],
        "locations": [{"landing_page_url": "https://arxiv.org/abs/1906.00091v2"}],
    }
    (paper,) = read_openalex(write("w.jsonl", json.dumps(work) + "\n"), lambda m: None)
    assert paper.subjects == ["Recommender Systems"] and paper.identifiers.arxiv == "1906.00091"


@pytest.mark.parametrize(
    "work, problem",
    [
        ({"publication_year": 2020}, "work has no display_name or title"),
        ({"title": "T", "publication_year": "2020"}, "'publication_year' must be an integer"),
        (
            {"title": "T", "abstract_inverted_index": {"w": [MAX_ABSTRACT_WORDS]}},
            "'abstract_inverted_index' positions of \"w\" must be integers",
        ),
        ({"title": "T", "abstract_inverted_index": ["w"]}, "'abstract_inverted_index' must be an object"),
        ({"title": "T", "authorships": "Ada"}, "'authorships' must be a list"),
    ],
)
def test_malformed_works_name_their_line(write, work, problem: str) -> None:
    path = write(
        "bad.jsonl", json.dumps({"title": "Fine", "id": "https://openalex.org/W1"}) + "\n" + json.dumps(work) + "\n"
    )
    with pytest.raises(SourceFormatError, match=rf"^{path}:2: {problem}"):
        list(read_openalex(path, lambda m: None))
