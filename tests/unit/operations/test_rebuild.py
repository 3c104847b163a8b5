"""A rebuild from sources: its report, its progress, and a malformed source leaving the published index serving.

What the Whoosh backend does with generations (publish, lock, prune, switch) is in
tests/unit/backends/whoosh/test_generations.py.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.errors import SearchsvcError, SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.model import SearchRequest
from searchsvc.operations import fingerprint
from searchsvc.operations.published import collection_file
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import export
from tests.helpers.apps import settings_for
from tests.helpers.indexes import MakeIndex, titles
from tests.helpers.paths import SEEDS, SOURCE_SAMPLES
from tests.helpers.records import jsonl, made_up_papers, profile_page


def test_rebuild_reports_and_publishes(tmp_path: Path) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index"))  # nothing published yet: the rebuild is what is tested
    warnings: list[str] = []
    report = rebuild(backend, [SEEDS], warn=warnings.append)
    assert (report.records, report.papers, report.merged) == (36, 28, 8)
    assert len(report.warnings) == 2 and warnings == report.warnings
    status = backend.status()
    assert status["doc_count"] == 28 and status["generation"] == report.generation
    assert status["records"] == 36 and status["merged"] == 8
    assert status["sources"] == [str(p) for p in sorted(SEEDS.glob("*.txt"))]


@pytest.mark.reliability
def test_malformed_source_fails_and_previous_index_keeps_serving(make_index: MakeIndex, write) -> None:
    backend = make_index(sources=[SEEDS])
    before = backend.status()
    served = titles(backend)
    good = write("a.jsonl", jsonl([{"id": "n1", "title": "New Paper"}]))
    bad = write(
        "b.txt", profile_page("Ada", [("arXiv2020", "Fine", "A.", "cs.LG↗"), ("arXiv2021", "Broken", "cs.IR↗")])
    )
    with pytest.raises(SourceFormatError, match=r'b\.txt:\d+: record "Broken" \(line \d+\) has no abstract'):
        rebuild(backend, [good, bad])
    assert backend.status() == before
    assert titles(backend) == served
    assert os.listdir(backend.store.generations) == [before["generation"]]


def test_progress_is_reported_for_reading_indexing_and_embedding(tmp_path: Path) -> None:
    seen: dict[str, list] = {}

    @contextmanager
    def record(phase: str, total: int | None):
        seen[phase] = [total, 0]

        def advance(n: int) -> None:
            seen[phase][1] += n

        yield advance

    rebuild(WhooshBackend(settings_for(tmp_path / "index")), [SEEDS], progress=record)
    assert seen == {"reading": [None, 36], "indexing": [28, 28], "embedding": [28, 28]}


def test_rebuild_over_mixed_formats_reports_each_and_stores_identifiers(tmp_path: Path) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    report = rebuild(backend, [SEEDS, SOURCE_SAMPLES / "mixed"])
    assert report.by_format == {"profile pages": 36, "BibTeX": 3, "arXiv Atom": 2, "CSV/TSV": 3}
    assert (report.records, report.papers, report.merged, report.without_abstract) == (44, 31, 13, 2)
    summary = report.summary()
    assert "44 records read (3 BibTeX, 3 CSV/TSV, 2 arXiv Atom, 36 profile pages), 31 papers indexed" in summary
    assert "(2 without an abstract, found by title only)" in summary
    stored = {p.title: p.identifiers for p in export(backend, SearchRequest(q=""), 100)}
    assert len(stored) == 31
    assert stored["A Paper Only in the Spreadsheet"] == Identifiers(url="https://example.org/papers/1")
    compositional = next(title for title in stored if title.startswith("Compositional Embeddings Using"))
    assert stored[compositional].arxiv == "1909.02107"
    assert sum(1 for ids in stored.values() if ids.stored()) == 4  # the .bib-only paper has none


# A rebuild of what the published generation was made from publishes nothing (issue #35) ----------------------


def rebuilt(backend: WhooshBackend, sources: list[Path], **options: bool) -> str:
    """Rebuild; the generation published after it, which must be a new one iff the report says it rebuilt."""
    before = backend.published()
    report = rebuild(backend, sources, **options)
    assert report.generation == backend.published()
    assert (report.generation != before) is report.rebuilt, report.summary()
    return report.reason if report.rebuilt else report.summary()


def test_a_rebuild_of_unchanged_sources_publishes_nothing_and_says_so(tmp_path: Path, write) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    sources = [write("a.jsonl", jsonl(made_up_papers("zebra", 3))), write("b.jsonl", jsonl(made_up_papers("okapi", 2)))]
    assert rebuilt(backend, sources) == ""  # the first: nothing was published, nothing to explain
    generation = backend.published()
    again = rebuild(backend, sources)
    assert not again.rebuilt and again.generation == generation and (again.records, again.papers) == (0, 0)
    assert re.fullmatch(
        rf"index generation {generation} is up to date with its 2 source file\(s\) and settings; nothing rebuilt "
        r"\(--force rebuilds anyway\), 0 embedded, \d+\.\d s",
        again.summary(),
    )
    assert os.listdir(backend.store.generations) == [generation]
    assert rebuilt(backend, sources, force=True) == "--force was given"
    assert "; rebuilt because --force was given" in rebuild(backend, sources, force=True).summary()


def test_one_byte_changed_in_one_source_rebuilds(tmp_path: Path, write) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    first = write("a.jsonl", jsonl(made_up_papers("zebra", 3)))
    second = write("b.jsonl", jsonl(made_up_papers("okapi", 2)))
    rebuild(backend, [first, second])
    second.write_bytes(second.read_bytes().replace(b"okapi lattice, part 1", b"okapi lattice, part 7"))
    assert rebuilt(backend, [first, second]) == "the sources changed"
    assert "The okapi lattice, part 7" in titles(backend)
    assert rebuilt(backend, [first]) == "the sources changed"  # one file fewer
    renamed = first.rename(first.with_name("c.jsonl"))
    assert rebuilt(backend, [renamed]) == "the sources changed"  # a source is its name too (its format)


def test_a_setting_that_shapes_the_index_rebuilds_one_that_does_not_does_not(tmp_path: Path, write) -> None:
    source = write("a.jsonl", jsonl([{"id": "long", "title": "word " * 150}, *made_up_papers("zebra", 2)]))

    def backend(**settings: object) -> WhooshBackend:
        return WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False, **settings))

    rebuild(backend(), [source])
    assert not rebuild(backend(search_time_limit_ms=900, build_memory_mb=64), [source]).rebuilt
    assert rebuilt(backend(max_title_chars=100), [source]) == "the settings that shape the index changed"
    assert max(len(title) for title in titles(backend(max_title_chars=100))) <= 100


def test_what_reads_or_indexes_papers_changing_rebuilds(tmp_path: Path, write, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deploy of new reading or indexing code rebuilds: the code part of the fingerprint (its text
    is followed in tests/unit/operations/test_fingerprint.py) is another here."""
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    source = write("a.jsonl", jsonl(made_up_papers("zebra", 2)))
    rebuild(backend, [source])
    monkeypatch.setattr(fingerprint, "running_code_digest", lambda roots, version: "another")
    assert rebuilt(backend, [source]) == "the code that reads or indexes papers changed"


def test_a_damaged_generation_or_missing_merge_state_is_rebuilt(tmp_path: Path, write) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False))
    source = write("a.jsonl", jsonl(made_up_papers("zebra", 2)))
    rebuild(backend, [source])
    segment = next((backend.store.generations / str(backend.published())).glob("*.seg"))
    segment.write_bytes(segment.read_bytes()[:-1])  # as `searchsvc rebuild` is the advice a server then gives
    assert rebuilt(backend, [source]) == "the published generation is damaged, unreadable, or older than fingerprints"
    collection_file(backend, str(backend.published())).unlink()  # as `add` then asks for one rebuild
    assert rebuilt(backend, [source]) == "the published generation's merge state is not on this machine"
    assert not rebuild(backend, [source]).rebuilt


def test_nothing_rebuilt_still_embeds_what_the_published_papers_lack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild killed or failed while embedding, or ranking by meaning turned on since: the next
    rebuild publishes nothing but finishes the embedding (ranking by meaning shapes no generation)."""
    index_dir = tmp_path / "index"
    failing = WhooshBackend(settings_for(index_dir))
    monkeypatch.setattr(failing, "embed", lambda progress: (_ for _ in ()).throw(OSError("no space left")))
    with pytest.raises(SearchsvcError, match=r"is published, but its papers could not be embedded: no space left"):
        rebuild(failing, [SEEDS])
    report = rebuild(WhooshBackend(settings_for(index_dir)), [SEEDS])
    assert not report.rebuilt and report.embedded == 28 and ", 28 embedded in " in report.summary()
    assert WhooshBackend(settings_for(index_dir)).status()["semantic_ranking"] == "on"
    assert rebuild(WhooshBackend(settings_for(index_dir)), [SEEDS]).embedded == 0
