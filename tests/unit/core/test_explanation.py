"""A score taken apart (core/explanation.py): the parts add up to the lexical score and the score shown."""

from __future__ import annotations

import pytest

from searchsvc.core import fusion
from searchsvc.core.explanation import LexicalParts, WordPart, explained
from searchsvc.core.ranking import Placed

PARTS = LexicalParts((WordPart("embed", {"title": 1.0, "abstract": 0.5}), WordPart("tabl", {"title": 2.0})), 0.25)


def test_words_come_largest_first_and_the_rest_of_the_lexical_score_is_other() -> None:
    found = explained(Placed("a", 4.0, 0, 4.0), PARTS)
    assert [part.word for part in found.words] == ["tabl", "embed"]
    assert found.other == pytest.approx(4.0 - 3.5 - 0.25)
    assert found.fields == ["title", "abstract"]
    assert (found.meaning, found.best_lexical, found.similarity_rank) == (None, None, None)
    assert found.score == found.lexical == 4.0  # ranked by words alone: the lexical score is the score


def test_with_meaning_the_score_is_lexical_over_the_best_plus_weight_times_similarity() -> None:
    placed = Placed("a", 3.0 / 6.0 + fusion.WEIGHT * 0.4, 1, 3.0, 6.0, 0.4, 2)
    found = explained(placed, LexicalParts((WordPart("graph", {"title": 2.0, "abstract": 1.0}),), 0.0))
    assert found.meaning == pytest.approx(fusion.WEIGHT * 0.4)
    assert found.lexical / found.best_lexical + found.meaning == pytest.approx(found.score)
    assert found.other == 0.0 and found.similarity_rank == 2 and found.tier_label.startswith("matches some")


def test_a_paper_the_engine_cannot_take_apart_has_its_whole_lexical_score_as_other() -> None:
    found = explained(Placed("a", 2.5, 2, 2.5), None)
    assert found.words == () and found.coordination == 0.0 and found.other == 2.5
