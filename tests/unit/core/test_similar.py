"""`similar:` clauses apart from the rest of the query, and Rocchio's "like these, unlike those"."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.core.errors import QuerySyntaxError, QueryTooBroad
from searchsvc.core.facet_order import counted_in
from searchsvc.core.model import Hit, SearchRequest
from searchsvc.core.query import Group, SimilarTo, Word, check_term_count, parse, similar_to
from searchsvc.core.ranking import UNLIKE_WEIGHT, rocchio


def test_similar_clauses_are_taken_apart_from_the_words_that_narrow() -> None:
    found = similar_to(parse('similar:2104.05158 -similar:"hep-th/9901001" embedding year:2020'))
    assert found is not None
    assert (found.like, found.unlike) == (("2104.05158",), ("hep-th/9901001",))
    assert isinstance(found.rest, Group) and found.rest.nodes[0] == Word("embedding", None, 45, 54)
    assert similar_to(parse("SIMILAR:a similar:a")) == SimilarTo(("a",), (), None)  # once each
    assert similar_to(parse("embedding")) is None and similar_to(None) is None


@pytest.mark.parametrize(
    ("q", "message"),
    [
        ("a OR similar:x", "cannot be inside OR, NOT or parentheses (column 14)"),
        ("(similar:x b) c", "cannot be inside OR, NOT or parentheses (column 10)"),
        ("similar:x*", "cannot be inside a wildcard (column 9)"),
        ("-similar:x", "needs a similar: beside it"),
    ],
)
def test_similar_where_it_cannot_be_answered_is_refused(q: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        similar_to(parse(q))


def test_rocchio_is_the_liked_mean_minus_a_share_of_the_unliked_mean_as_a_unit_vector() -> None:
    like = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float16)
    unlike = np.array([[0.0, 1.0, 0.0]], dtype=np.float16)
    expected = np.array([0.5, 0.5 - UNLIKE_WEIGHT, 0.0])
    np.testing.assert_allclose(rocchio(like, unlike), expected / np.linalg.norm(expected), rtol=1e-3)
    np.testing.assert_allclose(rocchio(like[:1], np.empty((0, 3))), [1.0, 0.0, 0.0])
    assert np.linalg.norm(rocchio(like, unlike)) == pytest.approx(1.0)


def test_facets_of_a_ranked_list_count_its_papers_and_mark_the_selection() -> None:
    def hit(year: int, subjects: list[str], authors: list[str]) -> Hit:
        return Hit(str(year), "t", "a", year, subjects, authors, 0.5, {})

    hits = [hit(2020, ["cs.LG", "cs.LG"], ["Ada"]), hit(2021, ["cs.IR"], ["Ada", "Bo"]), hit(2021, ["cs.LG"], ["Bo"])]
    facets = counted_in(hits, SearchRequest(author=("ada",), year_from=2021), limit=10)
    assert [(v.value, v.count, v.selected) for v in facets["year"]] == [(2021, 2, True), (2020, 1, False)]
    assert [(v.value, v.count) for v in facets["subject"]] == [("cs.LG", 2), ("cs.IR", 1)]
    assert [(v.value, v.count, v.selected) for v in facets["author"]] == [("Ada", 2, True), ("Bo", 2, False)]


def test_papers_to_be_like_are_not_counted_as_searched_terms() -> None:
    """`max_query_terms` bounds the posting lists a query reads; a `similar:` paper is read by id."""
    check_term_count(parse("similar:a similar:b -similar:c graph"), 1)
    with pytest.raises(QueryTooBroad):
        check_term_count(parse("similar:a graph networks"), 1)
