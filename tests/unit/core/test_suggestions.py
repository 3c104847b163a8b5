"""Suggestions as you type: the prefix lookup against a plain scan, and which word a query completes."""

from __future__ import annotations

import random

from searchsvc.backends.whoosh.completion import Completions
from searchsvc.core.suggestions import Suggestion, Typed, combine, typed
from searchsvc.core.text import word_tails


def _scan(entries: list[tuple[str, int]], prefix: str, limit: int) -> list[tuple[str, int]]:
    """The answer by brute force: every text with a word starting with `prefix`, best first."""
    found = [(text, papers) for text, papers in entries if any(t.startswith(prefix) for t in word_tails(text))]
    return sorted(found, key=lambda entry: (-entry[1], entry[0]))[:limit]


def test_top_completions_equal_a_full_scan_ranked_by_papers_then_alphabetically() -> None:
    rng = random.Random(7)
    names = {
        " ".join("".join(rng.choice("abc") for _ in range(rng.randint(1, 4))) for _ in range(2)) for _ in range(3000)
    }
    entries = [(name, rng.randint(1, 20)) for name in sorted(names)]
    completions = Completions.of(entries, keys=word_tails)
    for prefix in ["a", "b", "ab", "abc", "cab", "c", "ba", "zz", "aaaa"]:
        for limit in (1, 3, 8, 50):
            assert completions.top(prefix, limit) == _scan(entries, prefix, limit), (prefix, limit)


def test_a_text_found_by_two_of_its_words_is_listed_once() -> None:
    completions = Completions.of([("Li Li", 5), ("Li Wei", 3), ("Lin Ma", 1)], keys=word_tails)
    assert completions.top("li", 8) == [("Li Li", 5), ("Li Wei", 3), ("Lin Ma", 1)]
    assert completions.top("li", 2) == [("Li Li", 5), ("Li Wei", 3)]
    assert completions.top("", 8) == [] and completions.top("x", 8) == []


def test_the_last_word_is_completed_and_the_rest_kept_as_typed() -> None:
    assert typed("neural Mach") == Typed("neural ", "Mach") and Typed("neural ", "Mach").prefix == "mach"
    assert typed("Müll") == Typed("", "Müll") and Typed("", "Müll").prefix == "mull"
    assert typed("  graph") == Typed("  ", "graph") and Typed("  ", "graph").prefix == "graph"


def test_nothing_is_completed_after_a_space_or_inside_syntax() -> None:
    for q in ["", " ", "neural ", '"neural net', "title:gra", "embed*", "-noise", "a(b"]:
        assert typed(q) is None, q


def test_words_come_first_and_authors_keep_a_share_of_the_places() -> None:
    start = Typed("deep ", "na")
    words = [(f"na{i}", 100 - i) for i in range(10)]
    authors = [("Maxim Naumov", 3), ('Nadia "Na" Smith', 2), ("Nan Li", 1)]
    chosen = combine(start, words, authors, 8)
    assert [s.kind for s in chosen] == ["word"] * 6 + ["author"] * 2
    assert chosen[0] == Suggestion("deep na0", "word", "na0", 100)
    assert chosen[-2] == Suggestion('deep author:"Maxim Naumov"', "author", "Maxim Naumov", 3)
    assert chosen[-1].text == 'deep author:"Nadia  Na  Smith"'
    assert [s.kind for s in combine(start, words[:2], authors, 8)] == ["word"] * 2 + ["author"] * 3
