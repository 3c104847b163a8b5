"""BM25F's arithmetic, shared by both engines: lengths as Whoosh stores them, the bonus, the rounding."""

from __future__ import annotations

import numpy as np
import pytest
from whoosh.util.numeric import byte_to_length, length_to_byte

from searchsvc.backends import bm25f


def test_stored_lengths_are_whooshs_one_byte_lengths() -> None:
    lengths = np.arange(0, 120_000)
    expected = np.array([byte_to_length(length_to_byte(int(n))) for n in lengths], dtype=np.float64)
    assert np.array_equal(bm25f.stored_lengths(lengths), expected)
    assert list(bm25f.stored_lengths([11, 10])) == [12.0, 10.0]
    codes = np.arange(256)
    assert np.array_equal(bm25f.length_of_byte(codes), [byte_to_length(int(code)) for code in codes])


def test_the_coordination_bonus_rewards_matching_more_of_the_words() -> None:
    total = np.array([2.0, 2.0])
    bonus = bm25f.coordinated(total, np.array([1, 3]), term_count=4, scale=bm25f.COORDINATION)
    assert bonus[1] > bonus[0]
    # Whoosh's CoordMatcher: (score + (matching - 1) / (terms - scale)²) × (terms - 1) / terms
    assert bonus[1] == (2.0 + 2 / (4 - 0.9) ** 2) * 3 / 4
    assert bm25f.coordinated(total, np.array([1, 1]), term_count=0, scale=0.9) is total


def test_idf_gives_words_in_most_papers_almost_nothing() -> None:
    assert bm25f.idf(1000, 990) < 0.02 < 1 < bm25f.idf(1000, 3)


def test_scores_are_rounded_so_sums_in_another_order_tie() -> None:
    a, b = 0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1
    assert a != b
    assert bm25f.rounded(np.array([a]))[0] == bm25f.rounded(np.array([b]))[0]


def test_a_words_parts_by_field_add_up_to_its_score_and_the_bonus_to_the_coordinated_sum() -> None:
    words = [("embed", 2.0, {"title": 1.5, "abstract": 0.7}), ("tabl", 3.0, {"title": 0.0, "abstract": 2.2})]
    alone = bm25f.word_parts(words, None, 0)
    embed, table = alone.words
    assert embed.total == pytest.approx(bm25f.saturated(2.2, 2.0))
    assert embed.fields["title"] / embed.fields["abstract"] == pytest.approx(1.5 / 0.7)  # by frequency share
    assert table.fields == {"title": 0.0, "abstract": pytest.approx(bm25f.saturated(2.2, 3.0))}
    assert alone.coordination == 0.0
    grouped = bm25f.word_parts(words, bm25f.COORDINATION, 4)  # 3 of the query's 4 (word, field) pairs match
    raw = np.array([bm25f.saturated(2.2, 2.0) + bm25f.saturated(2.2, 3.0)])
    expected = bm25f.coordinated(raw, np.array([3]), 4, bm25f.COORDINATION)[0]
    assert sum(part.total for part in grouped.words) + grouped.coordination == pytest.approx(expected, abs=1e-12)
    assert grouped.coordination == pytest.approx(2 / (4 - bm25f.COORDINATION) ** 2 * 3 / 4)


def test_a_word_the_paper_lacks_is_given_with_nothing_in_each_field() -> None:
    (missing,) = bm25f.word_parts([("graph", 2.0, {"title": 0.0, "abstract": 0.0})], None, 0).words
    assert missing.fields == {"title": 0.0, "abstract": 0.0}


def test_a_scored_word_is_named_as_the_query_wrote_it() -> None:
    assert bm25f.shown_word("Memory", "memori", 1) == "Memory"
    assert bm25f.shown_word("memory-efficient", "effici", 2) == "memory-efficient: effici"
