"""Suggestions as you type on the Whoosh backend: built from the generation's vocabulary and author arrays."""

from __future__ import annotations

import pytest

from searchsvc.core.deadline import request_budget
from searchsvc.core.errors import SearchTimedOut
from tests.conftest import MakeIndex

RECORDS = [
    {"id": "1", "title": "Graph networks", "abstract": "Networks of graphs.", "authors": ["Maxim Naumov"]},
    {"id": "2", "title": "Network pruning", "abstract": "The pruning of a network.", "authors": ["Grace Nakamura"]},
    {"id": "3", "title": "Neural nets", "abstract": "Nets.", "authors": ["Maxim Naumov", "Ada Lovelace"]},
]


def test_words_rank_by_papers_and_authors_by_their_papers(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    found = backend.suggest("deep Na", 8)
    assert [(s.kind, s.value, s.papers) for s in found] == [
        ("author", "Maxim Naumov", 2),
        ("author", "Grace Nakamura", 1),
    ]
    assert found[0].text == 'deep author:"Maxim Naumov"'
    words = [(s.value, s.papers) for s in backend.suggest("ne", 8) if s.kind == "word"]
    # Title and abstract counted apart, as the vocabulary counts for "did you mean": ties alphabetical.
    assert words == [("nets", 2), ("network", 2), ("networks", 2), ("neural", 1)]
    assert backend.suggest("ne", 8)[1].text == "network"


def test_stop_words_and_finished_words_get_no_suggestions(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    assert [s.value for s in backend.suggest("th", 8)] == []  # "the" finds nothing on its own
    assert backend.suggest("graph ", 8) == [] and backend.suggest('"graph', 8) == []


def test_suggestions_read_the_request_deadline(make_index: MakeIndex) -> None:
    backend = make_index(RECORDS)
    backend.suggest("ne", 8)  # the generation is open
    with request_budget(0), pytest.raises(SearchTimedOut):  # a budget already spent
        backend.suggest("ne", 8)
