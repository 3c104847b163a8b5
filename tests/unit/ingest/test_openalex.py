"""OpenAlex works: the abstract rebuilt from its inverted index, authorships, concepts, and bad works by line."""

from __future__ import annotations

import json

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
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
