"""Typo tolerance's rule (core.typos): which words may be typos, what each also matches, and the
query that matches it, with the words as typed kept for the first tiers."""

from __future__ import annotations

import pytest

from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.query import AllOf, Group, Not, Respelled, Word, as_typed, meaning, parse, widened, words
from searchsvc.core.typos import MAX_ALTERNATIVES, alternatives, respelled, typo_checks

VOCABULARY = {
    "recommendation": 40,
    "recommendations": 25,
    "recommandation": 2,
    "model": 90,
    "mode": 30,
    "models": 60,
    "modal": 5,
    "tables": 12,
    "table2": 3,
    "transformer": 50,
    "transformers": 20,
    "transformed": 9,
    "translator": 4,
}


def lookup(word: str) -> list[tuple[str, int]] | None:
    """A vocabulary as an engine gives it: None for a word some paper holds, else every word."""
    return None if word in VOCABULARY else list(VOCABULARY.items())


def lowercase(text: str) -> list[str]:
    return text.lower().split()


def respell(q: str, deadline: Deadline | None = None) -> object:
    return respelled(parse(q), lowercase, lookup, deadline or Deadline(5000))


def test_a_word_no_paper_holds_also_matches_the_words_one_edit_away() -> None:
    found = respell("Recomendation")
    assert found == Respelled(
        Word("Recomendation", None, 0, 13), ("recommendation", "recommendations", "recommandation")
    )
    assert respell("modle") == Respelled(Word("modle", None, 0, 5), ("model", "mode"))  # a swap is one edit


def test_two_edits_only_from_nine_letters() -> None:
    assert alternatives("trasformer", VOCABULARY.items()) == ("transformer", "transformers", "transformed")
    assert alternatives("trnsfrmer", VOCABULARY.items()) == ("transformer",)  # nine letters, two edits
    # Six letters: "model" and "models" are one edit away; "mode" and "modal" two, too far.
    assert alternatives("modesl", VOCABULARY.items()) == ("model", "models")


def test_nearer_first_then_commoner_then_alphabetical_at_most_a_few() -> None:
    options = [("abcdef", 1), ("abcdeg", 7), ("abcdeh", 7), ("abcdei", 3), ("abcdfgh", 99), ("bbcdex", 99)]
    assert MAX_ALTERNATIVES == 3
    assert alternatives("abcdex", options) == ("abcdeg", "abcdeh", "abcdei")
    assert alternatives("abcdex", [*options, ("abcdef", 9)]) == (
        "abcdef",
        "abcdeg",
        "abcdeh",
    )  # a word given twice adds up


@pytest.mark.parametrize(
    "q",
    [
        "mod",  # fewer than five letters
        "tabl3",  # digits: a number or an id, not a typo
        "20211",
        "Model",  # some paper holds it
        '"modle"',  # quoted: exactly these words
        "-modle",  # excluded words stay as typed
        "author:modle",  # names and values are not respelled
        "subject:modle",
        "modle*",
        "zzzzzzz",  # nothing near
    ],
)
def test_what_is_never_respelled(q: str) -> None:
    assert not widened(respell(q))  # type: ignore[arg-type]


def test_a_group_keeps_its_other_words_and_the_words_as_typed() -> None:
    tree = respell("recomendation tables NOT modle")
    assert isinstance(tree, Group)
    assert tree.nodes[0] == Respelled(
        Word("recomendation", None, 0, 13), alternatives("recomendation", VOCABULARY.items())
    )
    assert tree.nodes[1:] == parse("recomendation tables NOT modle").nodes[1:]  # type: ignore[union-attr]
    assert as_typed(tree) == parse("recomendation tables NOT modle")
    assert [word.text for word in words(tree)] == ["recomendation", "tables"]  # "did you mean" checks the typed words
    assert meaning(tree) == "recommendation tables"  # the likeliest word meant, for ranking by meaning
    inner = respell("title:modle AND tables")
    assert isinstance(inner, AllOf) and inner.nodes[0] == Respelled(Word("modle", "title", 6, 11), ("model", "mode"))
    assert not widened(Not(Word("modle", None, 0, 5)))


def test_a_respelled_word_searches_its_alternatives_as_one_word_of_several_parts() -> None:
    tree = respell("recomendation")
    assert isinstance(tree, Respelled)
    assert tree.searched == Word("recommendation recommendations recommandation", None, 0, 13)


def test_typo_checks_are_spelling_checks_of_five_letters_or_more() -> None:
    assert [check.word for check in typo_checks(parse("a mode modle x2222 tables"), lowercase)] == ["modle", "tables"]


def test_each_lookup_checks_the_deadline() -> None:
    clock = iter([0.0, 0.0, 10.0]).__next__
    with pytest.raises(SearchTimedOut):
        respell("recomendation modle", Deadline(1000, clock=clock))
