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


class _TermVectors:
    """A client answering `mtermvectors` with fixed word counts per document and field."""

    def __init__(self, counts: list[dict[str, dict[str, int]]]) -> None:
        self.counts = counts
        self.asked = 0

    def mtermvectors(self, body: dict, params: dict) -> dict:
        self.asked += 1
        vectors = [
            {field: {"terms": {term: {"term_freq": n} for term, n in terms.items()}} for field, terms in counts.items()}
            for counts in self.counts
        ]
        return {"docs": [{"term_vectors": found} for found in vectors]}


def test_the_parts_of_each_score_add_up_to_it() -> None:
    """`parts` takes apart what `scores` computes, for a group of words (with the coordination bonus)."""
    words = [ScoredWord("embed", ("title", "abstract"), "embed"), ScoredWord("tabl", ("title", "abstract"), "tables")]
    stats = WordStatistics(
        10, {("title", "embed"): 2, ("abstract", "embed"): 5, ("abstract", "tabl"): 3}, {"title": 8.0, "abstract": 90.0}
    )
    client = _TermVectors(
        [
            {"title": {"embed": 1, "x": 6}, "abstract": {"embed": 3, "tabl": 2, "y": 80}},
            {"title": {"z": 9}, "abstract": {"tabl": 1, "y": 120}},
        ]
    )
    rescorer = WordRescorer(words, True, stats, client)  # type: ignore[arg-type]  # the one method it calls
    docs = [{"_index": "i", "_id": "a"}, {"_index": "i", "_id": "b"}]
    scores, parts = rescorer.scores(docs), rescorer.parts(docs)
    assert client.asked == 1  # the parts are of the words `scores` read: not asked for again
    for score, found in zip(scores, parts, strict=True):
        assert sum(part.total for part in found.words) + found.coordination == pytest.approx(score, abs=1e-9)
    assert parts[0].coordination > parts[1].coordination == 0.0  # b matches one (word, field) pair: no bonus
    assert parts[1].words[0].fields == {"title": 0.0, "abstract": 0.0}  # b has no "embed"
    assert parts[0].words[1].fields["title"] == 0.0 < parts[0].words[1].fields["abstract"]
