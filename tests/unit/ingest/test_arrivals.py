"""A rebuild's arrivals (`core.arrival`): kept from the previous generation's collection file by id
or, for a paper under a new id, by a merge key; never lost to a file it cannot read."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation
from searchsvc.ingest import collection as collection_module
from searchsvc.ingest.merging import merge_records

EARLIER, LATER = "2026-11-01T10:00:00+00:00", "2026-12-04T10:00:00+00:00"


def _paper(paper_id: str, title: str, doi: str = "") -> Paper:
    return Paper(
        paper_id, title, "An abstract.", 2020, sources=[SourceLocation("a.jsonl", 1)], identifiers=Identifiers(doi=doi)
    )


def _arrivals(records: list[Paper], tmp_path: Path, at: str, previous: Path | None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(collection_module, "now", lambda: at)
    with merge_records(records, lambda message: None, tmp_path, previous=previous) as merged:
        return {paper.id: (paper.arrival.added, paper.arrival.changed) for paper in merged if paper.arrival}


def _kept(records: list[Paper], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The collection file of a rebuild of `records` at EARLIER, as a rebuild keeps it."""
    monkeypatch.setattr(collection_module, "now", lambda: EARLIER)
    path = tmp_path / "kept.sqlite"
    merged = merge_records(records, lambda message: None, tmp_path)
    merged.keep(path)
    merged.close()
    return path


def test_a_rebuild_keeps_arrivals_by_id_and_moves_changed_where_the_paper_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = [_paper("p1", "Kept as it was"), _paper("p2", "To be revised"), _paper("p3", "To be dropped")]
    previous = _kept(before, tmp_path, monkeypatch)
    # The same paper read from another file and line is the same paper: sources do not count.
    same = Paper("p1", "Kept as it was", "An abstract.", 2020, sources=[SourceLocation("b.jsonl", 9)])
    now = [same, _paper("p2", "Revised"), _paper("p4", "New")]
    assert _arrivals(now, tmp_path, LATER, previous, monkeypatch) == {
        "p1": (EARLIER, EARLIER),
        "p2": (EARLIER, LATER),
        "p4": (LATER, LATER),
    }


def test_a_paper_under_a_new_id_keeps_its_arrival_through_a_shared_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = _kept([_paper("zz-preprint", "A paper", doi="10.1/x")], tmp_path, monkeypatch)
    # A record with a smaller id of its own joins it by DOI: the paper's id is now "aa-published".
    joined = [_paper("zz-preprint", "A paper", doi="10.1/x"), _paper("aa-published", "A paper", doi="10.1/x")]
    assert _arrivals(joined, tmp_path, LATER, previous, monkeypatch) == {"aa-published": (EARLIER, LATER)}


def test_a_previous_file_that_cannot_be_read_makes_every_paper_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    records = [_paper("p1", "One"), _paper("p2", "Two")]
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with caplog.at_level(logging.WARNING):
        assert _arrivals(records, tmp_path, LATER, damaged, monkeypatch) == {
            "p1": (LATER, LATER),
            "p2": (LATER, LATER),
        }
    assert "cannot be read" in caplog.text
    older = _kept(records, tmp_path, monkeypatch)  # written before arrivals existed: no table
    with sqlite3.connect(older) as db:
        db.execute("DROP TABLE arrival")
    assert set(_arrivals(records, tmp_path, LATER, older, monkeypatch).values()) == {(LATER, LATER)}
    assert set(_arrivals(records, tmp_path, LATER, tmp_path / "gone.sqlite", monkeypatch).values()) == {(LATER, LATER)}
