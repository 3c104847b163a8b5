"""Updates (`searchsvc add` / `remove`) give the same search results as a rebuild of the same
final sources: ids, scores, totals and facet counts, on each engine."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from searchsvc import create_app
from searchsvc.backends import open_backend
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import load_settings
from tests.helpers.backends import BackendFactory, merged
from tests.helpers.records import write_jsonl

_WORDS = (
    "sparse dense embedding table graph neural network attention transformer memory compression "
    "hashing retrieval ranking query index segment learning model training inference latency "
    "quantization pruning distillation recommendation vision language speech protein molecule"
).split()
_SUBJECTS = ["cs.LG", "cs.IR", "cs.CL", "cs.CV", "q-bio.BM"]
_AUTHORS = [f"Author {letter}" for letter in "ABCDEFGHIJKL"]
ADDS, PER_ADD, BASE = 50, 10, 300
QUERIES: list[dict[str, Any]] = [
    {"q": "embedding table"},
    {"q": "sparse neural retrieval with learned hashing for recommendation under memory limits"},
    {"q": "graph", "page": "2"},
    {"q": "attention", "page": "3"},
    {"q": '"neural network"'},
    {"q": "quant*"},
    {"q": "graph OR protein OR speech"},
    {"q": "model -vision"},
    {"q": "learning", "subject": "cs.LG"},
    {"q": "index", "year_from": "2010", "year_to": "2012"},
    {"q": "memory", "author": "Author C"},
    {"q": "", "sort": "newest", "page": "2"},
    {"q": "", "sort": "oldest"},
    {"q": "training", "sort": "newest"},
    {"q": "zyxwv sparse graph embedding"},  # a word only p0000 holds, which the removals test removes
]


def _record(rng: random.Random, number: int) -> dict[str, Any]:
    words = rng.choices(_WORDS, k=rng.randint(3, 7)) + (["zyxwv"] if number == 0 else [])
    return {
        "id": f"p{number:04d}",
        "title": " ".join(words).capitalize(),
        "abstract": " ".join(rng.choices(_WORDS, k=rng.randint(0, 30))),
        "year": rng.choice([None, *range(2008, 2016)]),
        "categories": rng.sample(_SUBJECTS, rng.randint(1, 2)),
        "authors": rng.sample(_AUTHORS, rng.randint(1, 3)),
        "doi": f"10.1000/x{number}" if number % 3 == 0 else None,
    }


def _batches(folder: Path) -> tuple[Path, list[Path]]:
    """A base file and ADDS files of PER_ADD records; some add records list a paper already read
    (by id, or by DOI under another id) with more authors or another year, so it is replaced."""
    rng = random.Random(18)
    base = write_jsonl(folder / "000-base.jsonl", [_record(rng, n) for n in range(BASE)])
    adds = []
    for batch in range(ADDS):
        records = [_record(rng, BASE + batch * PER_ADD + n) for n in range(PER_ADD)]
        known = rng.randrange(BASE)
        records[0] = {**_record(rng, known), "authors": [_AUTHORS[batch % 12]]}  # same id: merged
        if batch % 5 == 0:  # another paper's title and DOI, under a new id: merged by DOI
            other = _record(random.Random(18), 0)
            records[1] = {**records[1], "title": other["title"], "doi": other["doi"], "year": 2016}
        adds.append(write_jsonl(folder / f"add-{batch:03d}.jsonl", records))
    return base, adds


def _quick(factory: BackendFactory) -> dict[str, Any]:
    """Settings for every change but the last: on OpenSearch, no merge of the deleted copies (the
    last change's merge drops them all, and only the end state is compared)."""
    return {"opensearch_merge_wait_s": 0} if factory.kind == "opensearch" else {}


def _results(app: Flask, queries: list[dict[str, Any]] = QUERIES) -> list[dict[str, Any]]:
    client = app.test_client()
    found = []
    for params in queries:
        response = client.get("/api/search", query_string={**params, "per_page": "20"})
        assert response.status_code == 200, (params, response.get_data(as_text=True))
        body = response.get_json()
        found.append(
            {
                "query": params,
                "total": body["total"],
                "hits": [(hit["id"], hit["score"]) for hit in body["results"]],
                "facets": body["facets"],
            }
        )
    return found


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return _batches(tmp_path_factory.mktemp("update-sources"))


def test_fifty_adds_search_like_a_rebuild_of_the_same_sources(
    factory: BackendFactory, sources: tuple[Path, list[Path]]
) -> None:
    base, adds = sources
    updated = factory.overrides(semantic_ranking=False)
    backend = open_backend(load_settings({**updated, **_quick(factory)}, environ={}))
    rebuild(backend, [base])
    replaced = 0
    for number, path in enumerate(adds):
        if number == len(adds) - 1:
            backend = open_backend(load_settings(updated, environ={}))
        report = update.add(backend, [path])
        assert report.records == PER_ADD and report.changed_at is not None
        replaced += len(report.replaced)
    assert replaced >= ADDS  # every batch relists a paper
    merged(backend)

    rebuilt = factory.overrides(semantic_ranking=False)
    rebuild(open_backend(load_settings(rebuilt, environ={})), [base, *adds])

    expected = _results(create_app(rebuilt))
    assert _results(create_app(updated)) == expected
    assert any(result["total"] > 20 for result in expected)  # the queries reach past one page


def test_removals_search_like_a_rebuild_without_those_papers(
    factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rng = random.Random(7)
    records = [_record(rng, n) for n in range(BASE)]
    folder = tmp_path_factory.mktemp("removal-sources")
    updated = factory.overrides(semantic_ranking=False)
    rebuild(open_backend(load_settings(updated, environ={})), [write_jsonl(folder / "all.jsonl", records)])
    gone = {f"p{n:04d}" for n in range(0, BASE, 7)}
    for last, chunk in enumerate((sorted(gone)[:10], sorted(gone)[10:])):
        backend = open_backend(load_settings({**updated, **({} if last else _quick(factory))}, environ={}))
        report = update.remove(backend, [*chunk, "no-such-paper"])
        assert sorted(report.removed) == chunk
        assert report.missing == ["no-such-paper"]

    later = write_jsonl(folder / "later.jsonl", [_record(rng, BASE + n) for n in range(PER_ADD)])
    assert len(update.add(backend, [later]).added) == PER_ADD  # new papers, numbered after every record
    merged(backend)

    rebuilt = factory.overrides(semantic_ranking=False)
    kept = write_jsonl(folder / "kept.jsonl", [r for r in records if r["id"] not in gone])
    rebuild(open_backend(load_settings(rebuilt, environ={})), [kept, later])

    assert _results(create_app(updated)) == _results(create_app(rebuilt))
    status = open_backend(load_settings(updated, environ={})).status()
    assert status["doc_count"] == BASE - len(gone) + PER_ADD
    assert (status["records"], status["merged"]) == (BASE - len(gone) + PER_ADD, 0)  # less the removed ones


RENAMED = {"authors": ["AUTHOR C", "Zed Zebra"], "year": 1950}  # a case variant, a new author, a year of its own
QUERIES_AFTER_RENAMING = [
    {"q": "", "author": "author c"},
    {"q": "", "author": "Zed Zebra"},
    {"q": "", "year_from": "1950", "year_to": "2009"},
    {"q": "graph", "year_to": "1950"},
]


def test_a_server_that_stays_up_answers_like_a_fresh_one_after_every_change(
    factory: BackendFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A worker that served the previous generation opens the next from what it already holds
    (backends/whoosh/segment_arrays.py, facets.ValueTable); its answers must be a fresh process's,
    also for values whose papers are all gone and for values that differ only in case."""
    rng = random.Random(30)
    folder = tmp_path_factory.mktemp("reopen-sources")
    settings = factory.overrides(semantic_ranking=False)
    records = [_record(rng, n) for n in range(BASE)]
    rebuild(
        open_backend(load_settings({**settings, **_quick(factory)}, environ={})),
        [write_jsonl(folder / "base.jsonl", records)],
    )
    staying_up = create_app({**settings, **_quick(factory)})
    backend = open_backend(load_settings({**settings, **_quick(factory)}, environ={}))
    odd = {**_record(rng, 9000), **RENAMED}
    changes = [
        lambda: update.add(backend, [write_jsonl(folder / "odd.jsonl", [odd])]),
        lambda: update.add(backend, [write_jsonl(folder / "more.jsonl", [_record(rng, 9001 + n) for n in range(5)])]),
        lambda: update.remove(backend, [odd["id"], "p0003", "p0004"]),
        lambda: update.add(backend, [write_jsonl(folder / "back.jsonl", [{**odd, "id": "p9100", "year": 2011}])]),
    ]
    queries = QUERIES + QUERIES_AFTER_RENAMING
    for change in changes:
        assert change().changed_at is not None
        assert _results(staying_up, queries) == _results(create_app({**settings, **_quick(factory)}), queries)

    # A value whose papers are all gone (the year 1950) is absent, as from a rebuild of the same papers.
    rebuilt = factory.overrides(semantic_ranking=False)
    final = [r for r in records if r["id"] not in ("p0003", "p0004")]
    sources = [write_jsonl(folder / "final.jsonl", final), folder / "more.jsonl", folder / "back.jsonl"]
    rebuild(open_backend(load_settings(rebuilt, environ={})), sources)
    after = QUERIES_AFTER_RENAMING
    assert [r["facets"] for r in _results(staying_up, after)] == [
        r["facets"] for r in _results(create_app(rebuilt), after)
    ]
