"""Which queries OpenSearch rescores by BM25F, and the statistics it reads from the cluster's answer.

That the scores equal the Whoosh backend's is checked on the real cluster
(tests/contract/test_both_backends_agree.py) and by `bench/relevance.py --opensearch`.
"""

from __future__ import annotations

import pytest

from searchsvc.backends.opensearch.word_rescoring import (
    ScoredWord,
    WordRescorer,
    WordStatistics,
    plain_words,
    statistics,
    statistics_aggs,
)
from searchsvc.core.query import parse


@pytest.mark.parametrize(
    ("q", "typed", "grouped"),
    [
        ("embedding", (("embedding", ("title", "abstract")),), False),
        (
            "memory-efficient tables",
            (("memory-efficient", ("title", "abstract")), ("tables", ("title", "abstract"))),
            True,
        ),
        ("title:graph neural", (("graph", ("title",)), ("neural", ("title", "abstract"))), True),
    ],
)
def test_plain_words_are_rescored(q: str, typed: tuple, grouped: bool) -> None:
    words = plain_words(parse(q))
    assert words is not None
    assert (words.typed, words.grouped) == (typed, grouped)


@pytest.mark.parametrize(
    "q", ['"embedding tables"', "embed*", "author:naumov training", "year:2020 memory", "a NOT b", "a OR b", "a AND b"]
)
def test_anything_but_plain_words_keeps_the_clusters_scores(q: str) -> None:
    assert plain_words(parse(q)) is None


def test_statistics_are_read_from_the_global_aggregation() -> None:
    aggs = statistics_aggs([ScoredWord("embed", ("title", "abstract"), "embed")])
    assert set(aggs["bm25f"]["aggs"]["papers"]["filters"]["filters"]) == {"title:embed", "abstract:embed"}
    answer = {
        "bm25f": {
            "doc_count": 4,
            "papers": {"buckets": {"title:embed": {"doc_count": 1}, "abstract:embed": {"doc_count": 3}}},
            "title": {"value": 40.0},
            "abstract": {"value": 400.0},
        }
    }
    found = statistics(answer)
    assert found is not None
    assert found.papers == 4
    assert found.frequency == {("title", "embed"): 1, ("abstract", "embed"): 3}
    assert found.average_length == {"title": 10.0, "abstract": 100.0}


def test_an_index_without_length_subfields_is_not_rescored() -> None:
    answer = {"bm25f": {"doc_count": 4, "papers": {"buckets": {}}, "title": {"value": 0.0}, "abstract": {"value": 0.0}}}
    assert statistics(answer) is None


class _CountingSearches:
    """Answers a `counting` search of ids as the cluster would: each hit's named scores are the counts of the
    words asked for (the `counts` subfields' similarity), its `fields` the fields' lengths."""

    def __init__(self, papers: dict[str, dict[str, dict[str, int]]]) -> None:
        self.papers = papers  # id → field → every word's count
        self.asked = 0

    def search(self, body: dict, scored: bool = True, named_scores: bool = False, index: str | None = None) -> dict:
        assert named_scores and index == "i"
        self.asked += 1
        named = {
            query["term"][field]["_name"] for query in body["post_filter"]["bool"]["should"] for field in query["term"]
        }
        hits = []
        for paper in body["query"]["ids"]["values"]:
            counts = self.papers[paper]
            matched = {f"{field}:{term}": float(n) for field, terms in counts.items() for term, n in terms.items()}
            lengths = {f"{field}.length": [sum(terms.values())] for field, terms in counts.items()}
            kept = {name: score for name, score in matched.items() if name in named}
            hits.append({"_index": "i", "_id": paper, "matched_queries": kept, "fields": lengths})
        return {"hits": {"hits": hits}}


def test_the_parts_of_each_score_add_up_to_it() -> None:
    """`parts` takes apart what `scores` computes, for a group of words (with the coordination bonus)."""
    words = [ScoredWord("embed", ("title", "abstract"), "embed"), ScoredWord("tabl", ("title", "abstract"), "tables")]
    stats = WordStatistics(
        10, {("title", "embed"): 2, ("abstract", "embed"): 5, ("abstract", "tabl"): 3}, {"title": 8.0, "abstract": 90.0}
    )
    searches = _CountingSearches(
        {
            "a": {"title": {"embed": 1, "x": 6}, "abstract": {"embed": 3, "tabl": 2, "y": 80}},
            "b": {"title": {"z": 9}, "abstract": {"tabl": 1, "y": 120}},
        }
    )
    rescorer = WordRescorer(words, True, stats, searches)  # type: ignore[arg-type]  # the one method it calls
    docs = [{"_index": "i", "_id": "a"}, {"_index": "i", "_id": "b"}]
    scores, parts = rescorer.scores(docs), rescorer.parts(docs)
    assert searches.asked == 1  # the parts are of the words `scores` read: not asked for again
    for score, found in zip(scores, parts, strict=True):
        assert sum(part.total for part in found.words) + found.coordination == pytest.approx(score, abs=1e-9)
    assert parts[0].coordination > parts[1].coordination == 0.0  # b matches one (word, field) pair: no bonus
    assert parts[1].words[0].fields == {"title": 0.0, "abstract": 0.0}  # b has no "embed"
    assert parts[0].words[1].fields["title"] == 0.0 < parts[0].words[1].fields["abstract"]
