"""Finding source files and reading them in order, whatever their format."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.core.errors import SearchsvcError, SourceFormatError
from searchsvc.ingest.sources import discover, read_records
from tests.helpers.paths import SEEDS


def test_discover_sorts_and_filters(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ["b/2.txt", "a.jsonl", "notes.md", "b/1.jsonl"]:
        (tmp_path / name).write_text("x")
    found = discover([tmp_path / "b", tmp_path])
    assert found == [tmp_path / "a.jsonl", tmp_path / "b/1.jsonl", tmp_path / "b/2.txt"]


def test_discover_rejects_unknown_and_missing(tmp_path: Path) -> None:
    (tmp_path / "x.docx").write_text("x")
    with pytest.raises(SourceFormatError, match=r"x\.docx:1: unsupported source format '\.docx': accepted are .*BibTeX"):
        discover([tmp_path / "x.docx"])
    with pytest.raises(SearchsvcError, match=r"missing\.txt: no such file or folder"):
        discover([tmp_path / "missing.txt"])


def test_read_records_streams_every_file_in_order() -> None:
    files = discover([SEEDS])
    papers = list(read_records(files, lambda message: None))
    assert len(papers) == 36
    assert [p.sources[0].path for p in papers] == [str(files[0])] * 18 + [str(files[1])] * 18
