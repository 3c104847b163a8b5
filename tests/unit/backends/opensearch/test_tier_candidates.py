"""A rescored pool's page, asked for its ids first and then in full, keeps each paper with its own score; a fusion's
candidates are highlighted only where shown."""

from __future__ import annotations

from typing import Any

import numpy as np

from searchsvc.backends.opensearch.candidates import TierCandidates, pool_size
from searchsvc.backends.opensearch.word_rescoring import MARGIN, POOL


def _doc(paper: str, year: int, score: float) -> dict[str, Any]:
    return {"_index": "papers", "_id": paper, "_score": score, "_source": {"id": paper, "year": year}}


class _Plan:
    post_filter: dict[str, Any] = {"match_all": {}}

    def tier_query(self, tier: int) -> dict[str, Any]:
        return {"match": {"title": "words"}}


class _Searches:
    """The cluster: a light search gives the pool in its own order; the search by ids leaves out `gone`."""

    def __init__(self, pool: list[dict[str, Any]], gone: set[str]) -> None:
        self.pool, self.gone, self.bodies, self.asked_how = pool, gone, [], []

    def search(self, body: dict[str, Any], scored: bool = True, named_scores: bool = False) -> dict[str, Any]:
        self.bodies.append(body)
        self.asked_how.append((scored, named_scores))
        ids = body["query"].get("bool", {}).get("filter", {}).get("ids", {}).get("values")
        if ids is None:
            found = self.pool[body["from"] : body["from"] + body["size"]]
        else:
            found = [doc for doc in self.pool if doc["_id"] in ids and doc["_id"] not in self.gone]
            found = [{**doc, "highlight": {}} for doc in found] if "highlight" in body else found
        return {"hits": {"hits": found}}

    def msearch(self, bodies: list[dict[str, Any]], scored: bool = True) -> list[dict[str, Any]]:
        assert not scored
        answers = [self.search(body, scored)["hits"]["hits"] for body in bodies]
        mark = {"title": ["<mark>x</mark>"]}
        return [{"hits": {"hits": [{**doc, "highlight": mark} for doc in hits]}} for hits in answers]

    def asked(self, ask: Any) -> Any:
        return ask()


class _Rescorer:
    """BM25F twice the cluster's score: the cluster gives its pool in the reverse order."""

    def counting(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "counting": True}

    def scores(self, docs: list[dict[str, Any]]) -> np.ndarray:
        return np.array([2.0 * doc["_score"] for doc in docs])


def test_a_page_of_a_rescored_pool_keeps_each_paper_with_its_score_when_one_is_gone() -> None:
    pool = [_doc(f"p{i}", 2020, float(i)) for i in range(6)]  # the cluster's order: p0 (score 0) first
    searches = _Searches(pool, gone={"p4"})
    tiers = TierCandidates(searches, _Plan(), True, {}, _Rescorer(), None, 3000)  # type: ignore[arg-type]
    found = tiers.candidates(0, 0, 3, with_vectors=False)
    # BM25F puts p5, p4, p3 first; p4 was removed between the two requests.
    assert [doc["_id"] for doc in found.refs] == ["p5", "p3"]
    assert found.scores.tolist() == [10.0, 6.0]
    light, full = searches.bodies
    assert light["_source"] == ["id", "year"] and "highlight" not in light
    assert light["counting"]  # the pool comes with what BM25F reads of each paper
    assert "highlight" in full and "counting" not in full
    # The pool is chosen by the whole index's scores; the page's documents keep the pool's order and scores.
    assert searches.asked_how == [(True, True), (False, False)]


def test_a_pool_is_three_times_the_page_within_its_bounds() -> None:
    assert pool_size(10, 1500) == POOL
    assert pool_size(310, 1500) == MARGIN * 310
    assert pool_size(1000, 1500) == 1500


def test_a_fusions_candidates_are_highlighted_only_where_shown() -> None:
    """With vectors (a fusion's 100 candidates) the fetch highlights nothing; `marked` asks for the shown ones'
    highlights by their tier's query, in one request, and leaves documents already highlighted alone."""
    pool = [_doc(f"p{i}", 2020, float(i)) for i in range(6)]
    searches = _Searches(pool, gone=set())
    tiers = TierCandidates(searches, _Plan(), True, {}, _Rescorer(), None, 3000)  # type: ignore[arg-type]
    found = tiers.candidates(0, 0, 6, with_vectors=True)
    full = searches.bodies[-1]
    assert "highlight" not in full and all("highlight" not in doc for doc in found.refs)
    shown = tiers.marked(found.refs[:2])
    assert [doc["_id"] for doc in shown] == ["p5", "p4"]
    assert all(doc["highlight"] == {"title": ["<mark>x</mark>"]} for doc in shown)
    asked = searches.bodies[-1]
    assert asked["query"]["bool"]["filter"] == {"ids": {"values": ["p5", "p4"]}} and "highlight" in asked
    before = len(searches.bodies)
    assert tiers.marked(shown) == shown and len(searches.bodies) == before  # nothing left to ask for

    page = TierCandidates(searches, _Plan(), True, {}, _Rescorer(), None, 3000)  # type: ignore[arg-type]
    docs = page.candidates(0, 0, 3, with_vectors=False).refs  # a page without fusion: highlighted at once
    assert all("highlight" in doc for doc in docs) and page.marked(docs) == docs
