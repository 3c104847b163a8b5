"""The request budget's plumbing and the "did you mean" vocabulary, at unit size (the real-size check is
tests/test_request_budget.py)."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from whoosh import query

from searchsvc.backends.whoosh import WhooshBackend, deadline_matching
from searchsvc.backends.whoosh.deadline_collectors import all_scored
from searchsvc.core import edits, spelling
from searchsvc.core.deadline import Deadline, budget, request_budget
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.query import parse
from searchsvc.core.vocabulary import Vocabulary
from tests.helpers.apps import app_for


def _words(rng: random.Random, count: int) -> list[tuple[str, int]]:
    return [("".join(rng.choice("abcde") for _ in range(rng.randint(3, 8))), rng.randint(1, 9)) for _ in range(count)]


def test_the_vocabulary_finds_exactly_the_words_within_two_edits() -> None:
    rng = random.Random(1)
    pairs = _words(rng, 3000)
    vocabulary = Vocabulary.of(pairs)
    papers: dict[str, int] = {}
    for word, count in pairs:
        papers[word] = papers.get(word, 0) + count
    for _ in range(200):
        word = "".join(rng.choice("abcdef") for _ in range(rng.randint(3, 9)))
        expected = {
            (text, n) for text, n in papers.items() if text[0] == word[0] and edits.edit_distance(word, text) <= 2
        }
        assert set(vocabulary.near(word)) == expected, word
        assert vocabulary.papers(word) == papers.get(word, 0)


def test_a_saved_vocabulary_loads_the_same(tmp_path: Path) -> None:
    pairs = [*_words(random.Random(2), 500), ("naïve", 3), ("über", 1)]
    vocabulary = Vocabulary.of(pairs)
    vocabulary.save(tmp_path / "vocabulary.json")
    loaded = Vocabulary.load(tmp_path / "vocabulary.json")
    assert loaded.size == vocabulary.size
    for word in ("naive", "ubre", "abcd", "naïve"):
        assert loaded.near(word) == vocabulary.near(word) and loaded.papers(word) == vocabulary.papers(word)


class _CountingVocabulary(Vocabulary):
    def __init__(self) -> None:
        super().__init__({})
        self.looked_up: list[str] = []

    def near(self, word: str) -> list[tuple[str, int]]:
        self.looked_up.append(word)
        return []


def _checks(query_text: str) -> list[spelling.Check]:
    return spelling.checks(parse(query_text), lambda text: [text.lower()])


def test_respelling_is_bounded_in_words_and_word_length() -> None:
    vocabulary = _CountingVocabulary()
    many = " ".join("".join(random.Random(n).choice(string.ascii_lowercase) for _ in range(5)) for n in range(40))
    spelling.respellings(_checks(many), vocabulary, Deadline(60_000))
    assert len(vocabulary.looked_up) == spelling.MAX_RESPELLED_WORDS
    assert _checks("x" * (spelling.MAX_WORD_LENGTH + 1)) == []
    assert [check.word for check in _checks("y" * spelling.MAX_WORD_LENGTH)] == ["y" * spelling.MAX_WORD_LENGTH]


def test_respelling_stops_at_the_deadline() -> None:
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        spelling.respellings(_checks("qwzzy"), _CountingVocabulary(), deadline)


def test_one_budget_per_request_shared_by_every_backend_call(
    seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with request_budget(1000) as deadline:
        assert budget(5) is deadline
    assert budget(5) is not budget(5)  # outside a request: each call its own
    app = app_for(seed_backend.settings.index_dir)
    backend = app.extensions["searchsvc"].backend
    seen: list[Deadline] = []
    for name in ("answer", "facet_values"):
        original = getattr(backend, name)

        def recording(*args: object, _original: object = original) -> object:
            seen.append(backend._deadline())
            return _original(*args)  # type: ignore[operator]

        monkeypatch.setattr(backend, name, recording)
    assert app.test_client().get("/?q=embedding&find_author=a").status_code == 200
    assert len(seen) == 2 and seen[0] is seen[1]


def test_phrases_read_the_clock_while_they_look_and_otherwise_match_as_whoosh(
    seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deadline_matching, "_SPANS_PER_CHECK", 1)
    searcher = seed_backend._generations.get().searcher
    words = ["embedding", "tables"]
    plain = query.Phrase("abstract_exact", words)
    checked = deadline_matching.CheckedPhrase("abstract_exact", words, Deadline(60_000))
    expected = sorted(searcher.docs_for_query(plain))
    assert expected and sorted(all_scored(searcher, checked, Deadline(60_000))[0].tolist()) == expected
    now = [0.0]
    expired = Deadline(1000, clock=lambda: now[0])
    looking = deadline_matching.CheckedPhrase("abstract_exact", words, expired)
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        looking.matcher(searcher.leaf_searchers()[0][0], searcher.context())


def test_wildcard_words_read_the_clock_and_otherwise_match_and_score_as_whoosh_terms(
    seed_backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    searcher = seed_backend._generations.get().searcher
    words = [text.decode() for text in searcher.reader().expand_prefix("abstract_exact", "em")]
    assert len(words) > 1
    plain = query.Or([query.Term("abstract_exact", word) for word in words])
    steps = deadline_matching.Steps(Deadline(60_000))
    checked = query.Or([deadline_matching.CheckedTerm("abstract_exact", word, steps) for word in words])
    expected = all_scored(searcher, plain, Deadline(60_000))
    found = all_scored(searcher, checked, Deadline(60_000))
    assert len(expected[0]) and expected[0].tolist() == found[0].tolist() and expected[1].tolist() == found[1].tolist()

    monkeypatch.setattr(deadline_matching, "CHECK_EVERY", 1)  # every step through the postings reads the clock
    now = [0.0]
    late = deadline_matching.Steps(Deadline(1000, clock=lambda: now[0]))
    leaf, context = searcher.leaf_searchers()[0][0], searcher.context()
    matcher = deadline_matching.CheckedTerm("abstract_exact", "the", late).matcher(leaf, context)
    assert matcher.is_active()
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        while matcher.is_active():
            matcher.next()
    with pytest.raises(SearchTimedOut):  # nor is another of the thousands of matchers built
        deadline_matching.CheckedTerm("abstract_exact", "the", late).matcher(leaf, context)
