"""Whoosh generations: atomic publish, a failed build leaves the previous index serving, locking, pruning,
hot swap, damaged or outdated generations, and pruning only what is a generation.

The rebuild's report, progress and source errors: tests/unit/ingest/test_rebuild.py."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend, generations, indexing
from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.core.errors import IndexUnavailable, RebuildFailed, RebuildInProgress, StorageFull
from searchsvc.core.model import SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.ingest.collection import Collection
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from tests.helpers.apps import settings_for
from tests.helpers.indexes import MakeIndex, build_index, titles
from tests.helpers.paths import SEEDS
from tests.helpers.rebuild_lock import process_holding_rebuild_lock
from tests.helpers.records import jsonl, made_up_papers


class _Part:
    """Papers `start` to `end` of a collection, as `write_index` reads a collection."""

    def __init__(self, collection: Collection, start: int, end: int) -> None:
        self.collection, self.start, self.end = collection, start, end

    def __len__(self) -> int:
        return self.end - self.start

    def catalogue(self, start: int = 0, end: int | None = None) -> Iterator[tuple[Paper, int]]:
        return self.collection.catalogue(self.start + start, self.start + (len(self) if end is None else end))

    def sizes(self) -> list[int]:
        return self.collection.sizes()[self.start : self.end]


@pytest.fixture
def backend(make_index: MakeIndex) -> WhooshBackend:
    return make_index(sources=[SEEDS])


@pytest.mark.reliability
def test_build_failing_half_way_leaves_previous_index(backend: WhooshBackend, monkeypatch) -> None:
    before = backend.status()
    served = titles(backend)
    real_write = indexing.write_index

    def write_then_fail(directory, collection, memory_mb, progress):
        real_write(directory, _Part(collection, 0, 5), memory_mb, progress)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("searchsvc.backends.whoosh.backend.write_index", write_then_fail)
    with pytest.raises(StorageFull) as failed:
        rebuild(backend, [SEEDS], force=True)
    assert str(backend.store.generations) in failed.value.explained(), "the operator learns where"
    assert "cannot write the new generation" in failed.value.explained() and "No space left" in failed.value.explained()
    assert backend.status() == before
    assert titles(backend) == served
    assert os.listdir(backend.store.generations) == [before["generation"]]  # partial generation removed


@pytest.mark.reliability
def test_generation_failing_its_check_is_not_published(backend: WhooshBackend, monkeypatch) -> None:
    before = backend.status()
    real_write = indexing.write_index
    monkeypatch.setattr(
        "searchsvc.backends.whoosh.backend.write_index",
        lambda directory, collection, memory_mb, progress: real_write(
            directory, _Part(collection, 1, len(collection)), memory_mb, progress
        ),
    )
    with pytest.raises(RebuildFailed, match="new generation holds 27 papers, expected 28; not published"):
        rebuild(backend, [SEEDS], force=True)
    assert backend.status() == before


def test_second_rebuild_fails_fast_while_one_holds_the_lock(backend: WhooshBackend) -> None:
    with backend.store.rebuild_lock("rebuild"):
        with pytest.raises(
            RebuildInProgress, match=rf"another change to .* is running \(a rebuild; pid {os.getpid()} on "
        ):
            rebuild(backend, [SEEDS])
    rebuild(backend, [SEEDS])  # the lock is released with its holder


def test_a_change_refused_while_a_write_holds_the_lock_says_a_write_runs(
    make_index: MakeIndex, write, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #36: a rebuild refused while `searchsvc add` held the lock said "another rebuild"."""
    backend = make_index(made_up_papers("wombat", 3), semantic_ranking=False)
    refused: list[RebuildInProgress] = []
    applying = backend.apply

    def apply(*args, **kwargs):  # type: ignore[no-untyped-def]
        with pytest.raises(RebuildInProgress) as caught:  # a rebuild started meanwhile, in another process
            rebuild(WhooshBackend(backend.settings), [SEEDS])
        refused.append(caught.value)
        return applying(*args, **kwargs)

    monkeypatch.setattr(backend, "apply", apply)
    added = write("new.jsonl", jsonl([{"id": "n1", "title": "Brand New Paper", "year": 2030}]))
    update.add(backend, [added])
    [busy] = refused
    root, host = backend.settings.index_dir, socket.gethostname()
    assert busy.message == (
        f"another change to {root} is running (a write: searchsvc add {added}; pid {os.getpid()} on {host}); "
        "try again when it has finished"
    )
    assert busy.details == {"running": "write"}


def test_a_lock_held_by_an_earlier_version_says_either_may_run(tmp_path: Path) -> None:
    """Its record is the holder's pid alone: the kind of change is not known."""
    store = GenerationStore(tmp_path / "index")
    with store.rebuild_lock("rebuild"):
        (store.root / "rebuild.lock").write_text("4242")
        with pytest.raises(RebuildInProgress, match=r"\(a rebuild or a write; pid 4242\); try again"):
            with store.rebuild_lock("write"):
                pass


@pytest.mark.reliability
def test_lock_of_a_killed_rebuild_does_not_block(tmp_path: Path) -> None:
    """flock dies with its process: a SIGKILLed holder leaves no stale lock behind."""
    store = GenerationStore(tmp_path / "index")
    with process_holding_rebuild_lock(store.root) as holder:
        with pytest.raises(RebuildInProgress, match=rf"pid {holder.pid}"):
            with store.rebuild_lock("rebuild"):
                pass
    with store.rebuild_lock("rebuild"):
        pass


def test_rebuild_prunes_old_generations_but_not_one_being_read(backend: WhooshBackend) -> None:
    store = backend.store
    first = store.current_name()
    hold = store.hold_current()  # a reader (e.g. another worker) still on the first generation
    rebuild(backend, [SEEDS], force=True)
    second = store.current_name()
    assert second != first
    assert sorted(os.listdir(store.generations)) == sorted([first, second])
    hold.release()
    rebuild(backend, [SEEDS], force=True)
    assert os.listdir(store.generations) == [store.current_name()]


@pytest.mark.reliability
def test_partial_generation_of_a_killed_rebuild_is_cleaned_up(backend: WhooshBackend) -> None:
    leftover = backend.store.new_generation()  # as a SIGKILLed rebuild would leave it: no manifest
    (leftover / "junk.seg").write_bytes(b"x" * 100)
    rebuild(backend, [SEEDS])
    assert not leftover.exists()


def test_running_backend_switches_to_a_new_generation(backend: WhooshBackend, tmp_path: Path, write) -> None:
    assert len(titles(backend)) == 28
    other = WhooshBackend(settings_for(backend.settings.index_dir))  # e.g. the rebuild command's process
    rebuild(other, [write("new.jsonl", jsonl([{"id": "n1", "title": "Brand New Paper", "year": 2030}]))])
    assert titles(backend) == {"Brand New Paper"}


def test_search_without_a_published_index(tmp_path: Path) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "empty"))
    with pytest.raises(IndexUnavailable, match="no index is published: run `searchsvc rebuild`"):
        search(backend, SearchRequest())


def test_serving_backend_keeps_its_generation_until_it_switches(backend: WhooshBackend) -> None:
    """A process serving generation 1 keeps it alive through a rebuild, and lets go on its next search."""
    store = backend.store
    first = store.current_name()
    titles(backend)  # the serving process opens generation 1
    rebuilder = WhooshBackend(settings_for(backend.settings.index_dir))
    rebuild(rebuilder, [SEEDS], force=True)
    assert first in os.listdir(store.generations)  # still read: not pruned
    titles(backend)  # next request: switches to generation 2 and releases generation 1
    rebuild(rebuilder, [SEEDS], force=True)
    assert first not in os.listdir(store.generations)


# Whoosh leaves the file handle of a compound segment it fails to parse for the garbage collector.
@pytest.mark.reliability
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_damaged_generation_is_reported_not_crashed_on(backend: WhooshBackend) -> None:
    generation = backend.store.generations / backend.store.current_name()
    for segment in generation.glob("*.seg"):
        with segment.open("r+b") as stream:
            stream.truncate(segment.stat().st_size // 2)
    fresh = WhooshBackend(settings_for(backend.settings.index_dir))
    with pytest.raises(IndexUnavailable, match=rf"cannot open index generation {generation.name}: "):
        search(fresh, SearchRequest())
    rebuild(fresh, [SEEDS])  # a successful rebuild recovers without a restart
    assert search(fresh, SearchRequest()).total == 28


@pytest.mark.reliability
def test_index_built_by_another_schema_version_asks_for_a_rebuild(backend: WhooshBackend) -> None:
    manifest_path = backend.store.generations / backend.store.current_name() / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps(dict(manifest, schema_version=manifest["schema_version"] - 1)))
    fresh = WhooshBackend(settings_for(backend.settings.index_dir))
    with pytest.raises(IndexUnavailable, match=r"built with schema version \d+, .* run `searchsvc rebuild`"):
        search(fresh, SearchRequest())


@pytest.mark.reliability
def test_a_rebuild_in_the_wrong_folder_deletes_nothing_of_anyone_elses(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    theirs = folder / "generations" / "thesis"  # someone's folder that happens to be called generations
    theirs.mkdir(parents=True)
    (theirs / "chapter1.tex").write_text("\\chapter{One}", encoding="utf-8")
    backend = build_index(folder, sources=[SEEDS])
    rebuild(backend, [SEEDS], force=True)  # the second prunes the first generation
    assert (theirs / "chapter1.tex").read_text(encoding="utf-8") == "\\chapter{One}"
    assert len(list((folder / "generations").iterdir())) == 2  # theirs and the published one


@pytest.mark.reliability
def test_a_fresh_process_hashes_only_the_files_changed_since_their_bytes_were_checked(
    backend: WhooshBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer records each file's stat with its digest; a process opening the generation
    hashes the files whose inode, size, mtime or ctime differ (at 300,000 papers hashing the whole
    generation was half of a fresh open), and damage made since is still found."""
    hashed: list[str] = []
    digest = generations._digest
    monkeypatch.setattr(generations, "_digest", lambda path: hashed.append(path.name) or digest(path))
    monkeypatch.setattr(generations, "_DIGESTS", {})  # nothing remembered by this process
    store = GenerationStore(backend.settings.index_dir)
    store.hold_current().release()
    assert hashed == []
    segment = next((store.generations / store.current_name()).glob("*.seg"))
    segment.write_bytes(segment.read_bytes())  # the same bytes, written again: checked again
    store.hold_current().release()
    assert hashed == [segment.name]
    hashed.clear()
    store.hold_current().release()  # and recorded as checked
    assert hashed == []
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    with pytest.raises(IndexUnavailable, match="its files are damaged"):
        store.hold_current()
    assert hashed == [segment.name]
