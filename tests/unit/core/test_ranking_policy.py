"""The ranking policy (core/ranking.py) and the "did you mean" rule (core/spelling.py), engine-free."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.core import edits, fusion, spelling
from searchsvc.core.deadline import Deadline
from searchsvc.core.errors import SearchTimedOut
from searchsvc.core.query import parse
from searchsvc.core.ranking import Candidates, TierSlice, order_slice, page_slices, rank_page, related_order


class ListSource:
    """Tiers given as lists of (ref, score, vector) in lexical order; records what was asked."""

    def __init__(self, tiers: list[list[tuple[str, float, list[float] | None]]]) -> None:
        self.tiers = tiers
        self.asked: list[tuple[int, int, int, bool]] = []

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[str]:
        self.asked.append((tier, low, high, with_vectors))
        rows = self.tiers[tier][low:high]
        vectors = None
        if with_vectors and all(vector is not None for _, _, vector in rows):
            vectors = np.array([vector for _, _, vector in rows], dtype=np.float16)
        return Candidates([ref for ref, _, _ in rows], np.array([s for _, s, _ in rows]), np.arange(low, high), vectors)


def test_a_page_takes_the_end_of_one_tier_and_the_start_of_the_next() -> None:
    assert page_slices([7, 20], start=5, end=10, window=0) == [TierSlice(0, 5, 7, 5, 7), TierSlice(1, 0, 3, 0, 3)]
    assert page_slices([7, 20], start=10, end=20, window=0) == [TierSlice(1, 3, 13, 3, 13)]
    assert page_slices([0, 4], start=0, end=10, window=0) == [TierSlice(1, 0, 4, 0, 4)]
    assert page_slices([3, 4], start=10, end=20, window=0) == []


def test_with_meaning_a_tier_is_fetched_from_its_first_place_through_the_window() -> None:
    assert page_slices([500], start=10, end=20, window=100) == [TierSlice(0, 10, 20, 0, 100)]
    assert page_slices([500], start=150, end=160, window=100) == [TierSlice(0, 150, 160, 0, 160)]
    assert page_slices([30], start=0, end=10, window=100) == [TierSlice(0, 0, 10, 0, 30)]


def test_meaning_reorders_the_window_and_leaves_the_tail_in_lexical_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fusion, "CANDIDATES", 3)
    near, far = [1.0, 0.0], [0.0, 1.0]
    tier = [("a", 10.0, far), ("b", 9.0, near), ("c", 8.0, near), ("d", 7.0, near), ("e", 1.0, near)]
    found = ListSource([tier]).candidates(0, 0, 5, with_vectors=True)
    query = np.array(near, dtype=np.float32)
    ranked = order_slice(TierSlice(0, 0, 5, 0, 5), found, query)
    assert [placed.ref for placed in ranked] == ["b", "c", "a", "d", "e"]  # d stays below the window of 3
    assert ranked[0].score == pytest.approx(0.9 + fusion.WEIGHT)  # lexical / best + WEIGHT × cosine
    # what placed them: the lexical score, the divisor, the similarity and its rank among the window
    assert (ranked[0].lexical, ranked[0].best_lexical, ranked[0].similarity) == (9.0, 10.0, 1.0)
    assert [placed.similarity_rank for placed in ranked] == [1, 2, 3, None, None]  # b, c tie: lexical place
    # without the query vector the order is the lexical one, with lexical scores
    lexical = order_slice(TierSlice(0, 1, 3, 0, 5), found, None)
    assert [(placed.ref, placed.score, placed.lexical) for placed in lexical] == [("b", 9.0, 9.0), ("c", 8.0, 8.0)]
    assert lexical[0].similarity is None and lexical[0].best_lexical is None


def test_the_query_is_moved_toward_the_paper_a_first_fusion_places_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # b and c are alike to the query and equal in words; c is like a, the best match, and b is not
    tier = [("a", 10.0, [0.8, 0.6, 0.0]), ("b", 5.0, [0.6, 0.0, 0.8]), ("c", 5.0, [0.6, 0.8, 0.0])]
    found = ListSource([tier]).candidates(0, 0, 3, with_vectors=True)
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    ranked = order_slice(TierSlice(0, 0, 3, 0, 3), found, query)
    assert [placed.ref for placed in ranked] == ["a", "c", "b"]
    moved = fusion.fed_back(query, found.vectors[:1])  # type: ignore[index]
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)
    expected = query + fusion.FEEDBACK_WEIGHT * np.array([0.8, 0.6, 0.0])
    assert moved == pytest.approx(expected / np.linalg.norm(expected), abs=1e-3)  # a's vector is float16
    # what the explanation shows is the similarity to that moved query, and it adds up
    for placed in ranked:
        vector = found.vectors[[ref for ref, _, _ in tier].index(placed.ref)].astype(np.float32)  # type: ignore[index]
        assert placed.similarity == pytest.approx(float(vector @ moved), abs=1e-6)
        assert placed.score == pytest.approx(placed.lexical / 10.0 + fusion.WEIGHT * placed.similarity)
    monkeypatch.setattr(fusion, "FEEDBACK_WEIGHT", 0.0)  # without feedback the tie goes to the earlier paper
    assert [placed.ref for placed in order_slice(TierSlice(0, 0, 3, 0, 3), found, query)] == ["a", "b", "c"]


def test_equal_fused_scores_go_to_the_earlier_paper_in_catalogue_order() -> None:
    same = [1.0, 0.0]
    found = Candidates(["x", "y"], np.array([5.0, 5.0]), np.array([7, 3]), np.array([same, same], dtype=np.float16))
    ranked = order_slice(TierSlice(0, 0, 2, 0, 2), found, np.array(same, dtype=np.float32))
    assert [placed.ref for placed in ranked] == ["y", "x"]


def test_the_query_is_embedded_only_when_a_tier_has_every_vector() -> None:
    embedded: list[int] = []

    def query(tier: int) -> np.ndarray:
        embedded.append(1)
        return np.array([1.0, 0.0], dtype=np.float32)

    pending = ListSource([[("a", 2.0, None), ("b", 1.0, [1.0, 0.0])]])
    assert [placed.ref for placed in rank_page([2], 0, 2, pending, query, Deadline(60_000))] == ["a", "b"]
    assert embedded == [] and pending.asked == [(0, 0, 2, True)]
    ready = ListSource([[("a", 2.0, [0.0, 1.0]), ("b", 1.0, [1.0, 0.0])]])
    assert [placed.ref for placed in rank_page([2], 0, 2, ready, query, Deadline(60_000))] == ["b", "a"]
    assert embedded == [1]
    lexical = ListSource([[("a", 2.0, None)], [("b", 1.0, None), ("c", 0.5, None)]])
    assert [placed.ref for placed in rank_page([1, 2], 0, 3, lexical, None, Deadline(60_000))] == ["a", "b", "c"]
    assert lexical.asked == [(0, 0, 1, False), (1, 0, 2, False)]


def test_ranking_stops_at_the_deadline() -> None:
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    source = ListSource([[("a", 1.0, None)], [("b", 1.0, None)]])
    now[0] = 2.0
    with pytest.raises(SearchTimedOut):
        rank_page([1, 1], 0, 2, source, None, deadline)


def test_related_by_meaning_is_nearest_first_without_the_paper_itself() -> None:
    vectors = np.array([[1, 0], [0.6, 0.8], [0.8, 0.6], [0, 1], [0.8, 0.6]], dtype=np.float16)
    assert [i for i, _ in related_order(vectors, vectors[0], 3, exclude=[0])] == [2, 4, 1]
    assert [i for i, _ in related_order(vectors, vectors[0], 10, exclude=[0])] == [2, 4, 1, 3]
    assert related_order(vectors[:1], vectors[0], 5, exclude=[0]) == []


def test_a_respelling_is_the_nearest_then_the_commonest_word_with_the_same_first_letter() -> None:
    options = [("neural", 5), ("natural", 50), ("nerual", 0), ("beural", 900), ("neutral", 7)]
    assert spelling.choose("nerual", [o for o in options if o[0] != "nerual"]) == "neural"  # a swap is one edit
    assert spelling.choose("neutal", options) == "neutral"  # one edit beats the commoner "neural" (two)
    assert spelling.choose("xyzzy", options) is None
    assert spelling.choose("abc", [("abd", 3), ("abe", 3)]) == "abd"  # equal: alphabetical


def test_respelled_words_are_spliced_into_the_query_as_typed() -> None:
    tree = parse('graph nueral "exact phrase" author:smith embeding')
    checks = spelling.checks(tree, lambda text: text.lower().split())
    assert [c.word for c in checks] == ["graph", "nueral", "embeding"]  # not the phrase, not the author
    respelled = spelling.respelled_query(
        'graph nueral "exact phrase" author:smith embeding', {checks[1]: "neural", checks[2]: "embedding"}
    )
    assert respelled == 'graph neural "exact phrase" author:smith embedding'
    assert spelling.respelled_query("anything", {}) is None
    assert spelling.worth_offering(3, 2) and not spelling.worth_offering(2, 2)


def test_short_words_and_numbers_are_not_respelled() -> None:
    assert spelling.checks(parse("ab 2019 cnn"), lambda text: [text.lower()]) == [spelling.Check(8, 11, "cnn")]


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("", "", 0), ("abc", "abc", 0), ("abc", "acb", 1), ("kitten", "sitting", 3), ("ca", "abc", 3), ("a", "", 1)],
)
def test_edit_distance_counts_a_swap_of_neighbours_as_one_edit(a: str, b: str, distance: int) -> None:
    assert edits.edit_distance(a, b) == distance
