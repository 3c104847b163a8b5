"""Plain-word searches scored with numpy give exactly what Whoosh's matchers give."""

from __future__ import annotations

import json
import random
import re

import pytest

from searchsvc.backends.whoosh import WhooshBackend, word_scores
from searchsvc.core.model import SearchRequest
from tests.helpers.indexes import build_index
from tests.helpers.paths import SHARED_ACL

pytestmark = pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records")


def _queries(records: list[dict], count: int) -> list[SearchRequest]:
    """Title words, pasted abstract sentences (hyphens, parentheses, repeated words), some filtered."""
    rng = random.Random(7)
    found = [
        SearchRequest(q="machine translation"),
        SearchRequest(q="memory-efficient neural machine translation", per_page=30),
        SearchRequest(q="parsing parsing"),
        SearchRequest(q="xyzzyq translation"),  # a word no paper has
        SearchRequest(q="the of"),  # stop words only
        SearchRequest(q="translation", page=3),
        SearchRequest(q="neural model", subject=("acl",), year_from=2019),
    ]
    while len(found) < count:
        record = rng.choice(records)
        if rng.random() < 0.5:
            words = record["title"].split()
            start = rng.randrange(len(words))
            q = " ".join(words[start : start + rng.choice((1, 2, 3))])
        else:
            sentences = re.split(r"(?<=[.!?])\s+", record.get("abstract") or "x")
            q = rng.choice(sentences)[:400]
        found.append(SearchRequest(q=q, year_from=record.get("year") if rng.random() < 0.2 else None))
    return found


@pytest.fixture(scope="module")
def acl_backend(tmp_path_factory: pytest.TempPathFactory) -> tuple[WhooshBackend, list[dict]]:
    work = tmp_path_factory.mktemp("word_scores")
    with SHARED_ACL.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(3000), lines, strict=False)]
    source = work / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # Lexical ranking only: the numpy and Whoosh scoring paths are what is compared.
    return build_index(work / "index", sources=[source], semantic_ranking=False), records


def _view(backend: WhooshBackend, request: SearchRequest) -> tuple:
    result = backend.search(request)
    return result.total, [(h.id, h.score) for h in result.hits], result.facets, result.suggestion


def test_numpy_scores_match_whoosh_matchers(acl_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, records = acl_backend
    requests = _queries(records, 80)
    plan = word_scores.plan
    planned = []
    monkeypatch.setattr(word_scores, "plan", lambda *args: planned.append(plan(*args)) or planned[-1])
    fast = [_view(backend, r) for r in requests]
    assert sum(p is not None for p in planned) > 60
    monkeypatch.setattr(word_scores, "plan", lambda compiled, searcher: None)
    slow = [_view(backend, r) for r in requests]
    for request, a, b in zip(requests, fast, slow, strict=True):
        assert a == b, request.q


def test_plain_words_take_the_numpy_path_and_phrases_do_not(acl_backend) -> None:
    backend, _ = acl_backend
    gen = backend._generations.get()
    from searchsvc.backends.whoosh.querying import QueryCompiler
    from searchsvc.core.query import parse

    compiler = QueryCompiler(gen.searcher.reader(), 300)
    for q in (
        "translation",
        "neural machine translation",
        "memory-efficient models",
        "a (pasted) sentence: yes",
        "title:parsing",
    ):
        assert word_scores.plan(compiler.compile(parse(q)), gen.searcher) is not None, q
    for q in ('"machine translation"', "transl*", "neural -translation", "parsing year:2016", "a OR b"):
        assert word_scores.plan(compiler.compile(parse(q)), gen.searcher) is None, q


def test_posting_cache_is_bounded(acl_backend) -> None:
    backend, _ = acl_backend
    gen = backend._generations.get()
    postings = word_scores.Postings(gen.searcher, limit=50)
    for word in (b"translat", b"pars", b"model", b"neural"):
        ids, weights = postings.get("abstract", word)
        assert len(ids) == len(weights) == gen.searcher.doc_frequency("abstract", word)
    assert postings._cached <= max(50, len(ids))


def test_pruning_no_longer_changes_scores(acl_backend) -> None:
    """Whoosh's collector prunes matchers as its top N fills; the coordination bonus used to
    recount the query's terms after each pruning, so a paper's score depended on when it was
    scored. Now the top N of the collector and the scores of every match agree."""
    from searchsvc.backends.whoosh.deadline_collectors import all_scored, top_scored
    from searchsvc.backends.whoosh.querying import QueryCompiler
    from searchsvc.core.deadline import Deadline
    from searchsvc.core.query import parse

    backend, _ = acl_backend
    gen = backend._generations.get()
    compiler = QueryCompiler(gen.searcher.reader(), 300)
    for q in ("a corpus of annotated dialogues for spoken language understanding", "neural machine translation"):
        scored = compiler.compile(parse(q)).scored
        docs, scores = all_scored(gen.searcher, scored, Deadline(60_000))
        pairs = zip(scores.tolist(), docs.tolist(), strict=True)
        everything = sorted(pairs, key=lambda pair: (-pair[0], pair[1]))[:10]
        assert top_scored(gen.searcher, scored, 10, Deadline(60_000)) == everything, q
