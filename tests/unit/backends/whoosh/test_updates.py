"""Updates on Whoosh: a new generation that links the previous one's files and leaves them as they were."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from searchsvc.backends.whoosh import generation_cache, live_statistics
from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.core.deadline import request_budget
from searchsvc.core.errors import IndexUnavailable
from searchsvc.core.model import SearchRequest
from searchsvc.core.paper import catalogue_key
from searchsvc.operations import update
from searchsvc.operations.search import search
from tests.helpers.indexes import MakeIndex
from tests.helpers.records import made_up_papers, write_jsonl


def _checksums(generation: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(generation.iterdir())}


def _ids(backend, q: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [hit.id for hit in search(backend, SearchRequest(q=q, per_page=100)).hits]


def test_an_update_leaves_the_served_generation_byte_identical_and_shares_its_segments(
    make_index: MakeIndex, index_dir: Path, tmp_path: Path
) -> None:
    backend = make_index(made_up_papers("wombat", 30), semantic_ranking=False)
    store = GenerationStore(index_dir)
    previous = store.generations / store.published_name()
    before = _checksums(previous)
    found_before = _ids(backend, "wombat")

    report = update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 5))])
    update.remove(backend, ["wombat-03"])

    assert report.added == [f"numbat-{n:02d}" for n in range(5)]
    assert _checksums(previous) == before  # still there: this test's backend holds it open
    current = store.generations / store.published_name()
    shared = [name for name in before if name.endswith(".seg") and (current / name).exists()]
    assert shared and all((current / name).stat().st_ino == (previous / name).stat().st_ino for name in shared)
    assert "wombat-03" not in _ids(backend, "wombat") and len(_ids(backend, "wombat")) == len(found_before) - 1
    assert len(_ids(backend, "numbat")) == 5


def test_an_excluded_word_excludes_a_segments_first_match(make_index: MakeIndex) -> None:
    """Whoosh's AndNotMatcher let a segment's first match through when the excluded word's
    postings began earlier (compiling._AndNotMatcher); documents are numbered newest first."""
    backend = make_index(
        [
            {"id": "a", "title": "Vision only", "abstract": "", "year": 2020},
            {"id": "b", "title": "Model and vision", "abstract": "", "year": 2019},
            {"id": "c", "title": "Model alone", "abstract": "", "year": 2018},
        ],
        semantic_ranking=False,
    )
    assert _ids(backend, "model -vision") == ["c"]


def test_doc_order_is_the_catalogue_order_of_the_live_papers(make_index: MakeIndex, tmp_path: Path) -> None:
    records = [
        {"id": f"x{n % 7}-{n}", "title": f"Paper {n}", "abstract": "", "year": None if n % 5 == 0 else 2000 + n % 4}
        for n in range(40)
    ]
    backend = make_index(records, semantic_ranking=False)
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", [{**records[3], "year": 1999}])])
    update.remove(backend, ["x1-1"])
    gen = backend._generations.get()
    stored = {d: gen.searcher.stored_fields(d) for d in range(gen.searcher.doc_count_all()) if gen.order.live[d]}
    newest = sorted(stored, key=lambda d: catalogue_key(stored[d].get("year"), stored[d]["id"]))
    oldest = sorted(stored, key=lambda d: catalogue_key(stored[d].get("year"), stored[d]["id"], newest=False))
    assert gen.order.by_newest.tolist() == newest and gen.order.by_oldest.tolist() == oldest
    assert gen.order.rank[newest].tolist() == list(range(len(newest)))
    assert len(stored) == 39 and not gen.order.live.all()  # the replaced and the removed paper are deleted


def test_a_searcher_remembers_live_document_frequencies_within_its_bound(
    make_index: MakeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scoring asks for a word's document frequency a few times per search, so the searcher
    remembers it: still without the deleted papers, and never more words than its bound."""
    backend = make_index(made_up_papers("wombat", 30), semantic_ranking=False)
    update.remove(backend, ["wombat-03"])
    searcher = backend._generations.get().searcher
    monkeypatch.setattr(live_statistics, "REMEMBERED_FREQUENCIES", 3)
    assert searcher.doc_frequency("title", "wombat") == 29
    assert searcher.doc_frequency("title", b"wombat") == 29  # remembered, the same either way
    for word in ("lattic", "studi", "migrat", "case", "quokka"):
        searcher.doc_frequency("abstract", word)
        assert len(searcher._frequencies) <= 3
    assert searcher.doc_frequency("abstract", "quokka") == 29


class SlowOpen:
    """OpenGeneration, once `hold` is called held at its start until `release` is set (or failing
    then, with `fail`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started, self.release, self.fail = threading.Event(), threading.Event(), False
        self._real = generation_cache.OpenGeneration
        self._monkeypatch = monkeypatch

    def hold(self, fail: bool = False) -> None:
        self.fail = fail
        self._monkeypatch.setattr(generation_cache, "OpenGeneration", self)

    def __call__(self, *args: Any) -> generation_cache.OpenGeneration:
        self.started.set()
        assert self.release.wait(60)
        if self.fail:
            args[0].release()
            raise IndexUnavailable("cannot open index generation: it cannot be read")
        return self._real(*args)


@pytest.fixture
def slow_open(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowOpen]:
    slow = SlowOpen(monkeypatch)
    yield slow
    slow.release.set()  # the process's one opening thread is free for the next test, whatever happened


def test_a_generation_slow_to_open_is_opened_beside_the_one_served(
    make_index: MakeIndex, tmp_path: Path, slow_open: SlowOpen
) -> None:
    """Issue #30: a request waits for a newly published generation only for half of what is left of
    its budget, then is answered from the generation served until then; once open, it is served."""
    backend = make_index(made_up_papers("wombat", 3), semantic_ranking=False)
    served = backend.status()["generation"]
    slow_open.hold()
    report = update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 2))])
    with request_budget(300):  # waits 150 ms of it for the open, then answers
        assert sorted(_ids(backend, "wombat")) == ["wombat-00", "wombat-01", "wombat-02"]
        assert _ids(backend, "numbat") == []
        assert backend.status()["generation"] == served
    assert slow_open.started.is_set()
    slow_open.release.set()
    assert sorted(_ids(backend, "numbat")) == ["numbat-00", "numbat-01"]
    assert backend.status()["generation"] == report.generation


def test_a_generation_that_fails_to_open_beside_is_not_hidden_by_the_one_before(
    make_index: MakeIndex, tmp_path: Path, slow_open: SlowOpen, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = make_index(made_up_papers("wombat", 3), semantic_ranking=False)
    assert _ids(backend, "wombat")
    slow_open.hold(fail=True)
    update.add(backend, [write_jsonl(tmp_path / "more.jsonl", made_up_papers("numbat", 2))])
    slow_open.release.set()
    with pytest.raises(IndexUnavailable, match="cannot be read"):
        _ids(backend, "numbat")
    monkeypatch.undo()  # readable again: the next request opens it
    assert sorted(_ids(backend, "numbat")) == ["numbat-00", "numbat-01"]
