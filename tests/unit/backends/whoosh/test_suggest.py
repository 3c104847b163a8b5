"""Suggestions as you type on the Whoosh backend: built from the generation's vocabulary and author
arrays, counted among the papers the earlier words and the filters find."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.backends import Backend
from searchsvc.backends.whoosh import suggesting
from searchsvc.core.deadline import request_budget
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.model import SearchRequest, SuggestRequest
from searchsvc.core.suggestions import Suggestion, most_papers_first
from searchsvc.operations.search import suggest
from tests.conftest import MakeIndex

RECORDS = [
    {
        "id": "1",
        "title": "Graph networks",
        "abstract": "Networks of graphs.",
        "authors": ["Maxim Naumov"],
        "year": 2020,
    },
    {"id": "2", "title": "Network pruning", "abstract": "The pruning of a network.", "authors": ["Grace Nakamura"]},
    {"id": "3", "title": "Neural nets", "abstract": "Nets.", "authors": ["Maxim Naumov", "Ada Lovelace"], "year": 2021},
]


def suggested(backend: Backend, q: str, **filters: object) -> list[Suggestion]:
    return suggest(backend, SuggestRequest(q, SearchRequest(**filters), 8))


def test_words_rank_by_papers_and_authors_by_their_papers(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    found = suggested(backend, "Na")
    assert [(s.kind, s.value, s.papers) for s in found] == [
        ("author", "Maxim Naumov", 2),
        ("author", "Grace Nakamura", 1),
    ]
    assert found[0].text == 'author:"Maxim Naumov"'
    words = [(s.value, s.papers) for s in suggested(backend, "ne") if s.kind == "word"]
    # Title and abstract counted apart, as the vocabulary counts for "did you mean": ties alphabetical.
    assert words == [("nets", 2), ("network", 2), ("networks", 2), ("neural", 1)]
    assert suggested(backend, "ne")[1].text == "network"


def test_earlier_words_narrow_the_completions_to_their_papers(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    after_graph = suggested(backend, "graphs Na")  # "graphs" finds paper 1 alone (stemmed, as a search does)
    assert [(s.kind, s.value, s.papers, s.text) for s in after_graph] == [
        ("author", "Maxim Naumov", 1, 'graphs author:"Maxim Naumov"')
    ]
    assert [(s.value, s.papers) for s in suggested(backend, "pruning ne")] == [("network", 2)]
    assert suggested(backend, "wombat ne") == []  # no paper holds the earlier word: nothing to complete among


def test_filters_narrow_the_completions_to_their_papers(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    assert [(s.value, s.papers) for s in suggested(backend, "ne", year_from=2021)] == [("nets", 2), ("neural", 1)]
    by_nakamura = suggested(backend, "n", author=("Grace Nakamura",))
    assert [(s.kind, s.value, s.papers) for s in by_nakamura] == [
        ("word", "network", 2),
        ("author", "Grace Nakamura", 1),
    ]
    assert suggested(backend, "lo", subject=("cs.XX",)) == []


def test_stop_words_and_finished_words_get_no_suggestions(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    assert [s.value for s in suggested(backend, "th")] == []  # "the" finds nothing on its own
    assert suggested(backend, "graph ") == [] and suggested(backend, '"graph') == []


@pytest.mark.parametrize("q", ["ne", "graphs ne"])
def test_suggestions_read_the_request_deadline(make_index: MakeIndex, q: str) -> None:
    backend = make_index(RECORDS)
    suggested(backend, q)  # the generation is open
    with request_budget(0), pytest.raises(SearchTimedOut):  # a budget already spent
        suggested(backend, q)


class _CountingPostings:
    """Postings of words over six papers, counting the lists read."""

    def __init__(self, docs: dict[str, list[int]]) -> None:
        self.docs, self.read = docs, 0

    def get(self, field: str, text: bytes) -> tuple[np.ndarray, np.ndarray]:
        self.read += 1
        ids = self.docs.get(text.decode()) if field == "title_exact" else None
        return np.array(ids or [], dtype=np.int64), np.ones(len(ids or []))


def test_words_are_counted_most_common_first_until_none_left_can_place(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = {"alpha": [0, 1, 2, 3, 4], "beta": [0, 1, 2, 3], "gamma": [4, 5], "delta": [5], "omega": [0]}
    candidates = [(word, len(papers)) for word, papers in docs.items()]  # most papers in all first
    among = np.array([True, True, True, False, False, False])
    postings = _CountingPostings(docs)
    found = suggesting._counted_words(candidates, among, postings, 2, lambda: None)
    assert most_papers_first(found, 2) == [("alpha", 3), ("beta", 3)]
    assert postings.read == 2 * 2  # gamma (2 papers in all) cannot beat 3: nothing after beta is read
    # Lower counts read further: delta (1 paper in all) is the first that cannot beat the two found.
    postings = _CountingPostings(docs)
    found = suggesting._counted_words(candidates, ~among, postings, 2, lambda: None)
    assert most_papers_first(found, 2) == [("alpha", 2), ("gamma", 2)] and postings.read == 3 * 2
    # The postings bound stops early, even where a later word would have placed.
    monkeypatch.setattr(suggesting, "WORD_POSTINGS", 9)
    postings = _CountingPostings(docs)
    assert suggesting._counted_words(candidates, ~among, postings, 2, lambda: None) == [("alpha", 2), ("beta", 1)]
    assert postings.read == 2 * 2
