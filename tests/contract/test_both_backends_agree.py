"""Both backends side by side: the same questions on the same seeds, the same answers.

The one suite each backend passes on its own is tests/contract/test_contract.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from searchsvc import create_app
from searchsvc.backends.opensearch.word_rescoring import plain_words
from searchsvc.core.query import parse
from tests.helpers.apps import error_of
from tests.helpers.backends import BACKENDS, every_backend
from tests.helpers.explanations import assert_adds_up
from tests.helpers.paths import SEEDS

SAME_ANSWERS = [
    {},
    {"q": "compositional embeddings"},
    {"q": "embedding table compression", "per_page": 5},
    {"q": "memory-efficient recommendation"},
    {"q": '"embedding tables"'},
    {"q": "embed*"},
    {"q": "author:naumov training"},
    {"q": "year:2020-2022 memory"},
    {"q": "recommendation NOT embedding"},
    {"q": "training AND inference"},
    {"q": "deep learning OR hashing"},
    {"q": "compostional embedings"},
    {"q": "recomendation", "per_page": 30},  # typos (core.typos): found through "recommendation", ranked as it
    {"q": "embedding tabels hardwre", "per_page": 30},  # typed words first, then what only the typos find
    {"q": "trainnig AND inferense"},
    {"q": "deep learning recommendation models", "per_page": 30},  # also DLRM (core.synonyms)
    {"q": "DLRM training", "per_page": 30},  # also its long forms, as phrases
    {"q": "recommendation", "subject": ["cs.LG", "cs.ir"], "author": "maxim naumov"},
    {"q": "", "year_from": 2020, "year_to": 2023, "sort": "oldest", "per_page": 7, "page": 2},
    {"q": "training", "sort": "newest", "per_page": 5, "page": 3},
    {"q": "shampoo", "subject": "cs.NI", "author": "Nobody"},
    {"q": "the"},
]


# Plain words, which both engines score alike (BM25F), with the papers nearest them in meaning:
# describing words (papers holding none of them may join), typos (the last tier), filters, a deep page.
BY_MEANING = [
    {"q": "compositional embeddings", "per_page": 30},
    {"q": "memory-efficient recommendation", "per_page": 30},
    {"q": "a memory-efficient way to train deep learning recommendation models with embeddings", "per_page": 100},
    {"q": "embedding tabels hardwre", "per_page": 30},
    {"q": "recommendation", "year_from": 2020, "per_page": 30},
    {"q": "training", "per_page": 5, "page": 3},
]
NEAREST = 10  # of the 28 seed papers: enough that some holding none of the words join


SAME_ERRORS = [
    "q=embedding+AND",
    "q=year:abc",
    "q=(unclosed+AND+x",
    "q=em*bed",
    "per_page=0",
    "page=101&per_page=100",
]


@pytest.fixture(scope="module")
def published(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """Each backend's settings, the seeds published on it."""
    # Both rank by meaning too, from one vector store: the same vectors fused the same way.
    vectors = str(tmp_path_factory.mktemp("shared-vectors"))
    with every_backend(request, tmp_path_factory) as factories:
        yield {kind: made.published([SEEDS], vector_store=vectors) for kind, made in factories.items()}


@pytest.fixture(scope="module")
def both(published: dict[str, dict]) -> dict[str, FlaskClient]:
    return {kind: create_app(overrides).test_client() for kind, overrides in published.items()}


@pytest.fixture(scope="module")
def both_finding_by_meaning(published: dict[str, dict]) -> dict[str, FlaskClient]:
    """The same indexes, the papers nearest each query in meaning joining its candidates."""
    return {
        kind: create_app({**overrides, "meaning_candidates": NEAREST}).test_client()
        for kind, overrides in published.items()
    }


@pytest.fixture(scope="module")
def both_by_words(published: dict[str, dict]) -> dict[str, FlaskClient]:
    """The same indexes, ranked by their words alone."""
    return {
        kind: create_app({**overrides, "semantic_ranking": False}).test_client()
        for kind, overrides in published.items()
    }


@pytest.mark.parametrize("params", SAME_ANSWERS, ids=lambda params: json.dumps(params))
def test_both_backends_give_the_same_totals_facets_suggestions_and_first_result(
    both: dict[str, FlaskClient], params: dict
) -> None:
    whoosh, opensearch = (both[kind].get("/api/search", query_string=params).json for kind in BACKENDS)
    for document in (whoosh, opensearch):
        document.pop("took_ms")
    assert opensearch["total"] == whoosh["total"]
    assert opensearch["facets"] == whoosh["facets"]
    assert opensearch["suggestion"] == whoosh["suggestion"]
    assert opensearch["pages"] == whoosh["pages"]
    ids = {
        kind: [hit["id"] for hit in document["results"]]
        for kind, document in zip(BACKENDS, (whoosh, opensearch), strict=True)
    }
    assert len(ids["opensearch"]) == len(ids["whoosh"])
    phrases_added = any(len(form.split()) > 1 for also in whoosh["also_searched"] for form in also["forms"])
    if (
        params.get("sort") in ("newest", "oldest")
        or not params.get("q")
        or (plain_words(parse(params["q"])) and not phrases_added)
    ):
        # Date order and its ties are fully defined; plain words (and the one-word forms added to
        # them: core.synonyms) score BM25F on both engines (backends/bm25f.py), fused with the
        # same vectors: the same papers, scores and order.
        assert [hit["score"] for hit in opensearch["results"]] == [hit["score"] for hit in whoosh["results"]]
        assert ids["opensearch"] == ids["whoosh"]
    elif ids["whoosh"]:
        # Other queries keep each engine's scores (Lucene's BM25 per field on Whoosh, the cluster's
        # on OpenSearch), so papers close in score may swap: the same first paper, or the first two
        # swapped (with bge-small's weight the meaning part can leave them a few per cent apart, within
        # the engines' difference in lexical scores), and at most one paper swapped across the page's edge.
        if ids["opensearch"][0] != ids["whoosh"][0]:
            assert ids["opensearch"][:2] == ids["whoosh"][1::-1]
        assert len(set(ids["opensearch"]) ^ set(ids["whoosh"])) <= 2


@pytest.mark.parametrize(
    "params",
    [
        {"q": "embed"},
        {"q": "training NAUM"},
        {"q": "recommendation m", "year_from": 2020},
        {"q": "c", "subject": "cs.LG", "author": "Maxim Naumov"},
        {"q": '"deep learning" rec'},
    ],
    ids=lambda params: json.dumps(params),
)
def test_both_backends_suggest_the_same_completions(both: dict[str, FlaskClient], params: dict) -> None:
    whoosh, opensearch = (both[kind].get("/api/suggest", query_string=params).json for kind in BACKENDS)
    assert whoosh["suggestions"] and opensearch == whoosh


def test_both_backends_find_the_same_papers_like_these(both: dict[str, FlaskClient]) -> None:
    """`similar:` and /api/similar: the same papers, places and scores (the same stored vectors)."""
    whoosh = both["whoosh"]
    liked = [
        whoosh.get("/api/search", query_string={"q": q}).json["results"][0]["id"] for q in ("checkpointing", "DLRM")
    ]
    unliked = whoosh.get("/api/search", query_string={"q": "compositional embeddings"}).json["results"][0]["id"]
    requests = [
        ("/api/similar", [("id", liked[0]), ("id", liked[1]), ("not", unliked), ("per_page", "100")]),
        ("/api/search", [("q", f'similar:"{liked[0]}" training'), ("year_from", "2020"), ("per_page", "100")]),
        ("/api/papers/" + liked[1] + "/related", []),
    ]
    for path, params in requests:
        answers = [both[kind].get(path, query_string=params).json for kind in BACKENDS]
        found = [[(hit["id"], hit["score"]) for hit in answer["results"]] for answer in answers]
        assert found[0] and found[0] == found[1], path
        assert answers[0].get("facets") == answers[1].get("facets")


@pytest.mark.parametrize("params", BY_MEANING, ids=lambda params: json.dumps(params))
def test_both_backends_find_the_same_papers_by_meaning_in_the_same_places(
    both: dict[str, FlaskClient], both_finding_by_meaning: dict[str, FlaskClient], params: dict
) -> None:
    """`meaning_candidates`: the same papers join on both engines, with the same scores and parts."""
    whoosh, opensearch = (
        both_finding_by_meaning[kind].get("/api/search", query_string={**params, "explain": "true"}).json
        for kind in BACKENDS
    )
    assert whoosh["results"]
    for part in ("total", "facets", "pages", "suggestion"):
        assert opensearch[part] == whoosh[part], part
    assert [(hit["id"], hit["score"], hit["explanation"]) for hit in opensearch["results"]] == [
        (hit["id"], hit["score"], hit["explanation"]) for hit in whoosh["results"]
    ]
    for hit in whoosh["results"]:
        assert_adds_up(hit)


def test_papers_holding_none_of_the_words_join_on_both_backends(
    both: dict[str, FlaskClient], both_finding_by_meaning: dict[str, FlaskClient]
) -> None:
    """What the comparison above compares is not only the words' answer: found by meaning, papers
    of none of the query's words are shown and counted, on each engine."""
    params = {"q": "compositional embeddings", "per_page": 30, "explain": "true"}
    for kind in BACKENDS:
        words = both[kind].get("/api/search", query_string=params).json
        meaning = both_finding_by_meaning[kind].get("/api/search", query_string=params).json
        alone = [hit["id"] for hit in meaning["results"] if hit["explanation"]["lexical"] == 0]
        assert alone and meaning["total"] == words["total"] + len(alone), kind


def test_plain_words_rank_every_place_alike_on_both_backends(both: dict[str, FlaskClient]) -> None:
    """A pasted sentence over all 28 seed papers: every place, score and tier the same, not only a page."""
    params = {
        "q": "a memory-efficient way to train deep learning recommendation models with embeddings",
        "per_page": 100,
    }
    whoosh, opensearch = (both[kind].get("/api/search", query_string=params).json for kind in BACKENDS)
    assert whoosh["total"] > 20
    assert [(hit["id"], hit["score"]) for hit in opensearch["results"]] == [
        (hit["id"], hit["score"]) for hit in whoosh["results"]
    ]


@pytest.mark.parametrize("query", SAME_ERRORS)
def test_both_backends_refuse_the_same_requests_the_same_way(both: dict[str, FlaskClient], query: str) -> None:
    whoosh, opensearch = (error_of(both[kind], f"/api/search?{query}", 400) for kind in BACKENDS)
    assert opensearch == whoosh


# Why each result is where it is (explain=true): plain words, a hyphenated word's parts, typos (tier 2),
# a repeated word, other one-word forms (core.synonyms), and a phrase (explained as a whole).
EXPLAINED = [
    "compositional embeddings",
    "memory-efficient recommendation",
    "embedding tabels hardwre",
    "training training inference",
    "deep learning recommendation models",
    '"embedding tables"',
]


@pytest.mark.parametrize("q", EXPLAINED)
@pytest.mark.parametrize("ranking", ["meaning", "words"])
def test_both_backends_explain_each_result_with_the_same_parts(
    both: dict[str, FlaskClient], both_by_words: dict[str, FlaskClient], q: str, ranking: str
) -> None:
    clients = both if ranking == "meaning" else both_by_words
    params = {"q": q, "explain": "true", "per_page": 30}
    whoosh, opensearch = (clients[kind].get("/api/search", query_string=params).json["results"] for kind in BACKENDS)
    assert whoosh
    for hit in whoosh + opensearch:
        assert_adds_up(hit)
        assert (hit["explanation"]["meaning"] is not None) == (ranking == "meaning")
    if plain_words(parse(q)):
        # Plain words score BM25F on both engines, from the same arithmetic: the same parts.
        assert [(hit["id"], hit["explanation"]) for hit in opensearch] == [
            (hit["id"], hit["explanation"]) for hit in whoosh
        ]
        assert all(hit["explanation"]["words"] and abs(hit["explanation"]["other"]) <= 1e-6 for hit in whoosh)
    else:
        # Another query keeps each engine's own score (see above): explained whole, as `other`.
        assert all(hit["explanation"]["words"] == [] for hit in whoosh + opensearch)
