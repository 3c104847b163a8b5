"""A real `searchsvc add` SIGKILLed while it merges or writes its generation: the previous
generation keeps serving, and the next add runs at once and publishes the whole change."""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.backends.whoosh.generations import GenerationStore
from searchsvc.core.model import SearchRequest
from searchsvc.operations import changes, update
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from tests.helpers.apps import settings_for
from tests.helpers.paths import SEEDS, SHARED_ACL
from tests.helpers.records import made_up_papers, write_jsonl
from tests.helpers.servers import SEARCHSVC, environment
from tests.system.test_killed_rebuild import lock_is_free, slice_of_acl, wait_for

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records"),
]
BASE, ADDED = 1000, 2000  # each phase of the add lasts far longer than the 5 ms poll


def merging(index_dir: Path) -> bool:
    """The add holds a scratch copy of the collection and has no generation of its own yet."""
    return any(index_dir.glob(".rebuild-papers-*")) and len(list((index_dir / "generations").iterdir())) == 1


def writing(index_dir: Path) -> bool:
    """The add's new generation folder exists, unfinished."""
    return len(list((index_dir / "generations").iterdir())) == 2


@pytest.mark.parametrize("phase", [merging, writing], ids=["merging", "writing"])
def test_a_killed_add_leaves_the_previous_generation_serving_and_the_next_add_succeeds(
    phase,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    records = slice_of_acl(tmp_path / "acl.jsonl", BASE + ADDED).read_text(encoding="utf-8").splitlines(keepends=True)
    base, added = tmp_path / "base.jsonl", tmp_path / "added.jsonl"
    base.write_text("".join(records[:BASE]), encoding="utf-8")
    added.write_text("".join(records[BASE:]), encoding="utf-8")
    index_dir = tmp_path / "index"
    backend = WhooshBackend(settings_for(index_dir, semantic_ranking=False))
    rebuild(backend, [base])
    store = GenerationStore(index_dir)
    published = store.published_name()
    serving = search(backend, SearchRequest(q="translation")).total

    env = environment(SEARCHSVC_INDEX_DIR=str(index_dir), SEARCHSVC_SEMANTIC_RANKING="false")
    with subprocess.Popen([str(SEARCHSVC), "add", str(added)], env=env, stdout=subprocess.DEVNULL) as victim:
        try:
            wait_for(lambda: phase(index_dir), victim, phase.__name__)
        finally:
            victim.kill()
            victim.wait()

    assert store.published_name() == published
    assert search(WhooshBackend(backend.settings), SearchRequest(q="translation")).total == serving
    assert lock_is_free(index_dir)
    report = update.add(backend, [added])
    assert report.changed_at is not None and len(report.added) + len(report.replaced) > 0
    assert backend.status()["doc_count"] == WhooshBackend(backend.settings).status()["doc_count"]
    assert not any(index_dir.glob(".rebuild-papers-*"))  # the killed add's scratch copy is gone too
    assert store.published_name() == report.generation != published
    kept = sorted(p.name for p in (index_dir / "collections").iterdir())
    assert kept == [f"{report.generation}.acronyms.json", f"{report.generation}.sqlite"]


def test_killed_adds_never_leave_a_change_half_applied_or_journaled_but_unpublished(tmp_path: Path) -> None:
    """20 `searchsvc add`s SIGKILLed at random moments (issue #30): after each, the added papers
    are served exactly when the journal lists the change, and a rebuild serves the same papers."""
    index_dir = tmp_path / "index"
    backend = WhooshBackend(settings_for(index_dir, semantic_ranking=False))
    rebuild(backend, [SEEDS])
    env = environment(SEARCHSVC_INDEX_DIR=str(index_dir), SEARCHSVC_SEMANTIC_RANKING="false")
    rng = random.Random(30)
    outcomes = []
    for attempt in range(20):
        # A word of its own, whatever the stemmer does: "okapie" and "okapis" were both "okapi", and a
        # search for one found the other's papers whenever both adds had been published.
        word = f"okapi{chr(ord('a') + attempt)}x"
        added = write_jsonl(tmp_path / f"{word}.jsonl", made_up_papers(word, 3))
        with subprocess.Popen([str(SEARCHSVC), "add", str(added)], env=env, stdout=subprocess.DEVNULL) as victim:
            time.sleep(rng.uniform(0.0, 2.5))  # starting the command takes about a second, the add a fraction
            victim.kill()
        serving = WhooshBackend(backend.settings)  # a fresh reader of what is published now
        found = {hit.id for hit in search(serving, SearchRequest(q=word, exact=True)).hits}
        listed = [change for change in changes.kept(serving) if change.added and word in change.added[0].id]
        assert found in (set(), {f"{word}-0{n}" for n in range(3)}), found  # all of the change or none
        assert bool(found) == bool(listed), (attempt, found, listed)
        outcomes.append(bool(found))
    before = {hit.id for hit in search(WhooshBackend(backend.settings), SearchRequest(per_page=100)).hits}
    rebuild(backend, [SEEDS], force=True)  # from the sources and the journal again, not the updates' generation
    assert {hit.id for hit in search(WhooshBackend(backend.settings), SearchRequest(per_page=100)).hits} == before
    print(f"{sum(outcomes)} of {len(outcomes)} adds were published before their kill")  # shown with -s
