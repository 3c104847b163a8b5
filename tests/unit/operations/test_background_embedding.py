"""Embedding after a write, in a process of its own: it embeds what the published index lacks, one
process at a time, and no change published while it runs is left unembedded."""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.progress import ProgressFactory
from searchsvc.host import alone
from searchsvc.operations import background_embedding, update
from searchsvc.operations.background_embedding import embed_pending
from searchsvc.semantic.shards import Shard
from searchsvc.settings import load_settings
from tests.helpers.apps import settings_for
from tests.helpers.indexes import MakeIndex
from tests.helpers.records import made_up_papers, write_jsonl


def served_with_meaning(make_index: MakeIndex, index_dir: Path, count: int = 3) -> WhooshBackend:
    """An index built with ranking by meaning off, opened with it on: every paper lacks its vector."""
    make_index(made_up_papers("wombat", count), semantic_ranking=False)
    backend = WhooshBackend(settings_for(index_dir))
    assert backend.status()["semantic_ranking"] == "pending"
    return backend


def fresh(backend: WhooshBackend) -> WhooshBackend:
    """Another process's view of the same index (a backend caches the generation it serves)."""
    return WhooshBackend(backend.settings)


def test_it_embeds_every_paper_the_published_index_lacks(make_index: MakeIndex, index_dir: Path) -> None:
    backend = served_with_meaning(make_index, index_dir)
    assert embed_pending(backend) == 3
    assert fresh(backend).status()["semantic_ranking"] == "on"
    assert embed_pending(backend) == 0  # nothing left: a second run embeds nothing


def test_a_process_finding_another_at_work_leaves_at_once(make_index: MakeIndex, index_dir: Path) -> None:
    backend = served_with_meaning(make_index, index_dir)
    lock = backend.settings.vector_store_dir / background_embedding.LOCK_FILE
    with alone(lock) as held:
        assert held
        assert embed_pending(fresh(backend)) is None
    assert fresh(backend).status()["semantic_ranking"] == "pending"


class _WriteWhileEmbedding:
    """The backend, with `write` published once while the first pass embeds: after its papers were
    read, before the lock is released, as a write through the API can."""

    def __init__(self, backend: WhooshBackend, write: Callable[[], None]) -> None:
        self.backend, self.settings, self._write = backend, backend.settings, write

    def published(self) -> str | None:
        return self.backend.published()

    def embed(self, progress: ProgressFactory, shard: Shard | None = None) -> int:
        embedded = self.backend.embed(progress, shard)
        write, self._write = self._write, lambda: None
        write()
        return embedded


def test_a_change_published_while_it_embeds_is_embedded_too(
    make_index: MakeIndex, index_dir: Path, tmp_path: Path
) -> None:
    backend = served_with_meaning(make_index, index_dir)
    newcomers: list[int | None] = []

    def write() -> None:  # what a write through the API does: publish, then start a process
        report = update.add(backend, [write_jsonl(tmp_path / "new.jsonl", made_up_papers("numbat", 2))], embed=False)
        assert report.semantic_ranking == "pending"
        newcomers.append(embed_pending(fresh(backend)))  # finds the lock taken and leaves

    assert embed_pending(_WriteWhileEmbedding(backend, write)) == 5  # type: ignore[arg-type]
    assert newcomers == [None]
    served = fresh(backend).status()
    assert served["doc_count"] == 5 and served["semantic_ranking"] == "on"


def test_the_process_a_write_starts_embeds_its_papers(make_index: MakeIndex, index_dir: Path) -> None:
    """`start` runs the real process, settings handed over whole (this index_dir is in no variable)."""
    backend = served_with_meaning(make_index, index_dir, count=2)
    background_embedding.start(backend.settings)
    for _attempt in range(600):  # 60 s at most: the process loads the encoder first
        if fresh(backend).status()["semantic_ranking"] == "on":
            break
        time.sleep(0.1)
    status = fresh(backend).status()
    assert status["semantic_ranking"] == "on" and status["embedded_papers"] == 2


def test_a_process_that_cannot_start_is_logged_and_the_change_stands(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #36: past the change's publishing, a failure to start the embedding was a 500."""

    def cannot_start(module: str, data: bytes) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(background_embedding, "start_detached", cannot_start)
    with caplog.at_level(logging.ERROR):
        background_embedding.start(load_settings(environ={"SEARCHSVC_INDEX_DIR": "unused"}))
    assert "the change stands" in caplog.text and "Resource temporarily unavailable" in caplog.text


def test_a_command_finding_another_process_embedding_leaves_its_papers_to_it(
    make_index: MakeIndex, index_dir: Path, tmp_path: Path
) -> None:
    """`searchsvc add` and `remove` waited for a write's background embedding to release the store
    (30 s at 300,000 papers under load) to find, mostly, nothing left to embed: now the process at
    work takes the command's papers in its next pass, and the command says they are pending."""
    backend = served_with_meaning(make_index, index_dir)
    assert embed_pending(backend) == 3
    lock = backend.settings.vector_store_dir / background_embedding.LOCK_FILE
    with alone(lock) as held:
        assert held
        report = update.add(fresh(backend), [write_jsonl(tmp_path / "new.jsonl", made_up_papers("okapi", 2))])
    assert report.added == ["okapi-00", "okapi-01"] and report.embedded == 0
    assert report.semantic_ranking == "pending"
    assert embed_pending(fresh(backend)) == 2  # what the process at work would have found on its next pass
    assert update.remove(fresh(backend), ["okapi-00"]).semantic_ranking == "on"
