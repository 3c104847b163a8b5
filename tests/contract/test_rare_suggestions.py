"""Suggestions find a word held by one paper on both backends, alike (issue #34, item 4).

The collection is made so that a rare word hides from a sample: 600 papers hold "model" in their
title and abstract, and one other holds "modular" in its abstract alone, so it matches a prefix in
one field where the others match in two. On OpenSearch, words are read from samples of the papers
holding a word with the prefix (search_bodies.WORD_SAMPLE papers a shard, best matches first), and
the one paper with "modular" was never in the first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from searchsvc.backends.opensearch.search_bodies import WORD_SAMPLE
from tests.helpers.backends import BACKENDS, every_backend

COMMON = 3 * WORD_SAMPLE  # papers holding "model": more than a sample on each of the test index's 2 shards
RARE = {
    "id": "rare-0",
    "title": "Zeugma",
    "abstract": "A modular zeugma of lattices.",
    "year": 2000,
    "categories": ["math.GR"],
    "authors": ["Zed Rare"],
}


def _records() -> list[dict]:
    common = [
        {
            "id": f"common-{number:04d}",
            "title": f"Model number {number} of the lattice",
            "abstract": f"We model lattices, case {number}.",
            "year": 2001 + number % 19,
            "categories": ["cs.LG"],
            "authors": [f"Ann Author{number % 7}"],
        }
        for number in range(COMMON)
    ]
    return [*common, RARE]


@pytest.fixture(scope="module")
def both(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, FlaskClient]]:
    records = _records()
    with every_backend(request, tmp_path_factory) as factories:
        apps = {kind: made.publish_records(records, semantic_ranking=False) for kind, made in factories.items()}
        yield {kind: app.test_client() for kind, app in apps.items()}


@pytest.mark.parametrize(
    "params",
    [
        {"q": "mod"},
        {"q": "m"},
        {"q": "lattices mod"},  # narrowed by an earlier word every paper holds
        {"q": "mod", "year_to": 2000},  # narrowed by a filter to the rare paper alone
        {"q": "zeugma mod"},
    ],
    ids=lambda params: json.dumps(params),
)
def test_a_word_one_paper_holds_is_suggested_alike_on_both_backends(both: dict[str, FlaskClient], params: dict) -> None:
    whoosh, opensearch = (both[kind].get("/api/suggest", query_string=params).json for kind in BACKENDS)
    assert ("modular", 1) in [(found["value"], found["papers"]) for found in whoosh["suggestions"]]
    assert opensearch == whoosh
