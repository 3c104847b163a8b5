"""A rebuild from sources: its report, its progress, and a malformed source leaving the published index serving.

What the Whoosh backend does with generations (publish, lock, prune, switch) is in
tests/unit/backends/whoosh/test_generations.py.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.model import SearchRequest
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import export
from tests.helpers.apps import settings_for
from tests.helpers.indexes import MakeIndex, titles
from tests.helpers.paths import SEEDS, SOURCE_SAMPLES
from tests.helpers.records import jsonl, profile_page


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
    with pytest.raises(SourceFormatError, match=r"b\.txt:\d+: record 'Broken' \(line \d+\) has no abstract"):
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
