"""Word completions on OpenSearch: rounds of samples until no paper holds a word not found yet,
each bounded (search_bodies.WORD_ROUNDS, COUNTED_WORDS, REGEX_CHARS) and given the request's budget."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from searchsvc.backends.opensearch import search_bodies, suggesting
from searchsvc.backends.opensearch.mapping import TEXT_FIELDS
from searchsvc.backends.opensearch.querying import MATCH_ALL
from searchsvc.core.suggestions import Typed

TIMEOUT = {"timeout": "123ms"}


class Cluster:
    """Answers the suggestion requests: `rounds` lists each sample's words (title, abstract) and
    whether the sample held every paper the round matched; every word is in 2 papers."""

    def __init__(self, rounds: list[tuple[list[str], list[str], bool]]) -> None:
        self.rounds = iter(rounds)
        self.bodies: list[dict[str, Any]] = []

    def search(self, body: dict[str, Any], scored: bool = True) -> dict[str, Any]:
        assert not scored  # a sample of constant-score matches and counts: no word statistics needed
        self.bodies.append(body)
        aggs = body["aggs"]
        if "authors" in aggs:
            return {"aggregations": {"authors": {"buckets": []}}}
        if "papers" in aggs:
            counted = {name: {"doc_count": 1} for name in aggs["papers"]["filters"]["filters"]}
            return {"aggregations": {"papers": {"buckets": counted}}}
        title, abstract, whole = next(self.rounds)
        sampled = {"title": title, "abstract": abstract}
        sample = {field: {"buckets": [{"key": word} for word in sampled[field]]} for field in TEXT_FIELDS}
        total = 400 if whole else 9_000
        return {"hits": {"total": {"value": total}}, "aggregations": {"sample": {"doc_count": 400, **sample}}}


def _suggested(cluster: Cluster, checks: list[str]) -> list[tuple[str, int]]:
    searches: Any = cluster
    found = suggesting.suggestions(searches, Typed("", "mo"), MATCH_ALL, 8, lambda: TIMEOUT, lambda: checks.append("x"))
    return [(suggestion.value, suggestion.papers) for suggestion in found]


def test_rounds_go_on_while_papers_hold_words_not_found_and_leave_found_words_out() -> None:
    cluster = Cluster([(["model"], ["model", "mode"], False), ([], ["modular"], True)])
    checks: list[str] = []
    assert _suggested(cluster, checks) == [("mode", 2), ("model", 2), ("modular", 2)]
    samples = [body for body in cluster.bodies if "sample" in body["aggs"]]
    assert len(samples) == 2
    second = samples[1]["aggs"]["sample"]["aggs"]["title"]["significant_text"]["include"]
    assert second == "mo(.*&~((de)|(del)))"  # what the first round found is left out
    assert all(body["timeout"] == TIMEOUT["timeout"] for body in cluster.bodies)
    assert len(checks) == 3  # before each sample and the count


def test_a_whole_first_sample_is_the_only_one() -> None:
    cluster = Cluster([(["model"], ["modular"], True)])
    assert _suggested(cluster, []) == [("model", 2), ("modular", 2)]
    assert sum("sample" in body["aggs"] for body in cluster.bodies) == 1


def test_rounds_are_bounded_however_many_papers_are_left() -> None:
    words = (f"mo{number:03d}x" for number in itertools.count())
    endless = [([next(words)], [], False) for _ in range(100)]
    cluster = Cluster(endless)
    _suggested(cluster, [])
    assert sum("sample" in body["aggs"] for body in cluster.bodies) == search_bodies.WORD_ROUNDS


def test_words_counted_are_bounded_per_key_press() -> None:
    many = [f"mo{number:03d}" for number in range(search_bodies.SAMPLED_WORDS)]
    cluster = Cluster([(many, [f"{word}z" for word in many], False), (["never"], [], True)])
    _suggested(cluster, [])
    counted = cluster.bodies[-1]["aggs"]["papers"]["filters"]["filters"]
    assert len(counted) == len(TEXT_FIELDS) * search_bodies.COUNTED_WORDS
    assert sum("sample" in body["aggs"] for body in cluster.bodies) == 1  # no room left for a second round


@pytest.mark.parametrize("found", [[], ["model"], ["mo"]])
def test_the_words_left_out_are_named_in_lucenes_syntax(found: list[str]) -> None:
    body = search_bodies.word_completions("mo", MATCH_ALL, found, 10)
    assert body is not None
    regexp = body["query"]["bool"]["should"][0]["regexp"]["title.exact"]
    expected = {(): "mo.*", ("model",): "mo(.*&~((del)))", ("mo",): "mo(.*&~(()))"}[tuple(found)]
    assert regexp == {"value": expected, "flags": "INTERSECTION|COMPLEMENT"}


def test_no_round_once_the_words_found_no_longer_fit_a_regular_expression() -> None:
    found = [f"mo{number:04d}" for number in range(search_bodies.REGEX_CHARS // 6)]
    assert search_bodies.word_completions("mo", MATCH_ALL, found, 10) is None
