"""Deep pages rank as the first ones do, on both engines (issue #34, item 2).

OpenSearch scores again by BM25F the cluster's first places of a query of plain words
(word_rescoring.POOL for a first page); a page ending at place p is decided by its first
3 × p (candidates.pool_size), up to the `rescore_limit` setting. Past it, a page keeps the
cluster's choice of papers, scored by BM25F: on Whoosh's scale, in order among themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import islice

import pytest
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends.opensearch.word_rescoring import POOL
from tests.helpers.backends import BACKENDS, every_backend
from tests.helpers.paths import SHARED_ACL

RECORDS = 1_700  # the first ACL records, all of them: "language" is in 577, past the 500 places read below


@pytest.fixture(scope="module")
def published(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """Each backend's settings, the first RECORDS ACL records published on it, ranked by words alone."""
    source = tmp_path_factory.mktemp("acl") / "records.jsonl"
    with SHARED_ACL.open(encoding="utf-8") as lines:
        source.write_text("".join(islice(lines, RECORDS)), encoding="utf-8")
    with every_backend(request, tmp_path_factory) as factories:
        yield {kind: made.published([source], semantic_ranking=False) for kind, made in factories.items()}


@pytest.fixture(scope="module")
def both(published: dict[str, dict]) -> dict[str, FlaskClient]:
    return {kind: create_app(overrides).test_client() for kind, overrides in published.items()}


def _ranked(client: FlaskClient, params: dict) -> tuple[int, list[tuple[str, float]]]:
    answer = client.get("/api/search", query_string=params)
    assert answer.status_code == 200, answer.json
    return answer.json["total"], [(hit["id"], hit["score"]) for hit in answer.json["results"]]


@pytest.mark.parametrize(
    "params",
    [
        {"q": "language", "page": 31, "per_page": 10},  # places 301–310: past the first pool
        {"q": "language", "page": 5, "per_page": 100},  # 401–500: a pool of 1,500
        {"q": "neural translation", "page": 2, "per_page": 100},  # both tiers, deep in the second
    ],
    ids=json.dumps,
)
def test_a_deep_page_has_the_same_papers_and_scores_on_both_engines(both: dict[str, FlaskClient], params: dict) -> None:
    (whoosh_total, whoosh), (opensearch_total, opensearch) = (_ranked(both[kind], params) for kind in BACKENDS)
    assert whoosh_total == opensearch_total
    assert len(whoosh) == params["per_page"]
    assert (params["page"] - 1) * params["per_page"] >= POOL or params["q"] == "neural translation"
    assert opensearch == whoosh


def test_past_the_rescore_limit_a_page_is_scored_on_whooshs_scale(published: dict[str, dict]) -> None:
    """With the pool held to POOL places, page 31 is the cluster's choice of papers, but each is
    scored as Whoosh scores it and the page is in order."""
    whoosh = create_app(published["whoosh"]).test_client()
    opensearch = create_app({**published["opensearch"], "rescore_limit": POOL}).test_client()
    total, _ = _ranked(whoosh, {"q": "language"})
    whoosh_scores = dict(
        hit
        for page in range(1, total // 100 + 2)
        for hit in _ranked(whoosh, {"q": "language", "page": page, "per_page": 100})[1]
    )
    _, deep = _ranked(opensearch, {"q": "language", "page": 31, "per_page": 10})
    assert len(deep) == 10
    assert [score for _, score in deep] == sorted((score for _, score in deep), reverse=True)
    assert all(score == whoosh_scores[paper] for paper, score in deep)
