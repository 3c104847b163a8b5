"""Candidates found by meaning (core.ranking.join_by_meaning and the pools they join), engine-free."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.core import fusion
from searchsvc.core.deadline import Deadline
from searchsvc.core.explanation import explained
from searchsvc.core.query import only_describes, parse
from searchsvc.core.ranking import NO_WORDS, Candidates, Nearest, TierSlice, join_by_meaning, order_slice, rank_page

NEAR, FAR, MID = [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]
Row = tuple[str, float, list[float]]


class Source:
    """Tiers as lists of (ref, lexical score, vector) in lexical order, and papers of no words; the
    nearest are found by scanning them all, as an engine's exact scan does."""

    def __init__(self, tiers: list[list[Row]], no_words: list[Row], vectors_ready: bool = True) -> None:
        self.tiers = tiers
        self.no_words = no_words
        self.vectors_ready = vectors_ready
        self.asked: list[tuple[int, int, int]] = []

    def candidates(self, tier: int, low: int, high: int, with_vectors: bool) -> Candidates[str]:
        self.asked.append((tier, low, high))
        rows = self.tiers[tier][low:high]
        vectors = np.array([v for _, _, v in rows], dtype=np.float16).reshape(-1, 2) if with_vectors else None
        ties = np.array([self._tie(ref) for ref, _, _ in rows], dtype=np.int64)
        return Candidates([r for r, _, _ in rows], np.array([s for _, s, _ in rows]), ties, vectors)

    def nearest(self, query: np.ndarray, count: int) -> Nearest[str] | None:
        if not self.vectors_ready:
            return None
        every = [(ref, score, vector, tier) for tier, rows in enumerate(self.tiers) for ref, score, vector in rows]
        every += [(ref, 0.0, vector, NO_WORDS) for ref, _, vector in self.no_words]
        every.sort(key=lambda row: (-float(np.dot(row[2], query)), self._tie(row[0])))
        chosen = every[:count]
        return Nearest(
            [ref for ref, *_ in chosen],
            [ref for ref, *_ in chosen],
            np.array([tier for *_, tier in chosen], dtype=np.int64),
            np.array([score for _, score, _, _ in chosen]),
            np.array([self._tie(ref) for ref, *_ in chosen], dtype=np.int64),
            np.array([vector for _, _, vector, _ in chosen], dtype=np.float16).reshape(-1, 2),
        )

    @staticmethod
    def _tie(ref: str) -> int:
        return sum(ord(c) * 31**i for i, c in enumerate(ref))  # a catalogue rank of its own per paper


def _query(tier: int) -> np.ndarray:
    return np.array(NEAR, dtype=np.float32)


def _page(source: Source, start: int, end: int, count: int, alone: bool) -> tuple[list[str], int]:
    sizes = [len(rows) for rows in source.tiers]
    joining = join_by_meaning(sizes, source, _query, count, alone)
    placed = rank_page(joining.sizes, start, end, source, _query, Deadline(60_000), joining)
    return [found.ref for found in placed], joining.added


@pytest.fixture(autouse=True)
def _small_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fusion, "CANDIDATES", 2)


def test_a_paper_below_the_lexical_candidates_joins_its_own_tiers_pool() -> None:
    tier1 = [("b1", 9.0, FAR), ("b2", 8.0, FAR), ("b3", 7.0, FAR), ("b4", 1.0, NEAR)]
    source = Source([[("a1", 10.0, FAR)], tier1, []], [])
    without, _ = _page(source, 0, 10, 0, alone=False)
    assert without == ["a1", "b1", "b2", "b3", "b4"]  # b4 sits below the two reordered
    joined, added = _page(source, 0, 10, 1, alone=False)
    # b4 is nearest: it joins tier 1's pool and leaves its lexical place; never above tier 0
    assert joined == ["a1", "b4", "b1", "b2", "b3"] and added == 0


def test_every_place_of_a_tier_shows_each_paper_once_on_every_page() -> None:
    tier = [(f"p{i}", 100.0 - i, NEAR if i % 3 == 0 else FAR) for i in range(12)]
    source = Source([tier, [], []], [])
    whole, _ = _page(source, 0, 12, 4, alone=False)
    assert sorted(whole) == sorted(ref for ref, _, _ in tier)
    pages = [ref for start in range(0, 12, 5) for ref in _page(source, start, start + 5, 4, alone=False)[0]]
    assert pages == whole


def test_tier_0_keeps_its_first_place_from_its_own_candidates() -> None:
    # t1 is the exact title match: far from the query's vector here, as a short query's can be
    tier0 = [("t1", 10.0, MID), ("t2", 9.0, FAR), ("t3", 0.1, NEAR)]
    source = Source([tier0, [], []], [])
    placed, _ = _page(source, 0, 3, 1, alone=False)
    assert placed[0] == "t1" and placed[1] == "t3"


def test_papers_of_no_words_join_the_last_non_empty_tier_and_count_in_the_total() -> None:
    source = Source([[("a1", 10.0, FAR)], [("b1", 5.0, FAR), ("b2", 4.0, FAR)], []], [("z1", 0.0, NEAR)])
    alone, added = _page(source, 0, 10, 2, alone=True)
    assert alone == ["a1", "z1", "b1", "b2"] and added == 1
    kept_out, added = _page(source, 0, 10, 2, alone=False)
    assert kept_out == ["a1", "b1", "b2"] and added == 0


def test_a_query_that_finds_nothing_by_its_words_finds_nothing_by_meaning() -> None:
    source = Source([[], [], []], [("z1", 0.0, NEAR)])
    assert _page(source, 0, 10, 5, alone=True) == ([], 0)


def test_nothing_joins_while_the_vectors_are_pending() -> None:
    source = Source([[("a1", 10.0, FAR), ("a2", 9.0, FAR), ("a3", 1.0, NEAR)], [], []], [], vectors_ready=False)
    assert _page(source, 0, 10, 5, alone=True) == (["a1", "a2", "a3"], 0)


def test_a_deep_page_is_fetched_far_enough_for_the_papers_that_left_it() -> None:
    tier = [(f"p{i:02}", 100.0 - i, NEAR if i in (7, 8) else FAR) for i in range(20)]
    source = Source([tier, [], []], [])
    page, _ = _page(source, 10, 15, 2, alone=False)
    # p07 and p08 moved up into the pool of 4: p02-p06 and p09 fill places 4-9, so the page starts at p10
    assert page == ["p10", "p11", "p12", "p13", "p14"]
    assert source.asked[-1] == (0, 0, 17)


def test_only_a_query_that_describes_lets_papers_of_no_words_in() -> None:
    assert only_describes(parse("graph neural networks"))
    assert only_describes(parse('"graph neural" OR parsing embed*'))
    for narrowing in ("graph -neural", "graph AND neural", "author:smith graph", "year:2020 graph", "title:graph"):
        assert not only_describes(parse(narrowing)), narrowing


def test_the_encoders_weight_orders_the_pool_and_is_the_one_explained() -> None:
    rows = [("lexical", 10.0, FAR), ("near", 5.0, NEAR)]
    found = Source([rows, [], []], []).candidates(0, 0, 2, with_vectors=True)
    query = np.array(NEAR, dtype=np.float32)
    part = TierSlice(0, 0, 2, 0, 2)
    assert [p.ref for p in order_slice(part, found, query, weight=0.25)] == ["lexical", "near"]  # 1.0 > 0.5 + 0.25
    heavy = order_slice(part, found, query, weight=fusion.weight("bge-small-int8"))
    assert [p.ref for p in heavy] == ["near", "lexical"]
    assert fusion.weight("bge-small-int8") > fusion.weight("onnx-int8") == fusion.WEIGHT
    explanation = explained(heavy[0], None)
    assert explanation.weight == fusion.weight("bge-small-int8")
    assert explanation.meaning == pytest.approx(explanation.weight * 1.0)
