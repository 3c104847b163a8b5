"""Whoosh's journal file: what a crash can leave in it (a line cut short, a line of no change)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.backends.whoosh.journal import FileJournal
from searchsvc.core.catalogue import JournalEntry
from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import Paper, SourceLocation


def entry(word: str) -> JournalEntry:
    paper = Paper(f"{word}-00", f"The {word} lattice", "", 2001, sources=[SourceLocation("new.jsonl", 1)])
    return JournalEntry("2026-12-03T00:00:00+00:00", "searchsvc add new.jsonl", [paper])


def test_a_line_cut_short_by_a_crash_is_no_change_and_is_cut_off(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    journal.append(entry("zebra"))
    journal.append(entry("okapi"))
    with journal.path.open("ab") as stream:
        stream.write(b'{"at": "torn')
    assert len(journal) == 2 and list(journal.changes()) == [entry("zebra"), entry("okapi")]
    assert journal.keep_first(1) == 1
    assert list(journal.changes()) == [entry("zebra")] and journal.path.read_bytes().endswith(b"\n")
    journal.append(entry("numbat"))
    assert [change.added[0].id for change in journal.changes()] == ["zebra-00", "numbat-00"]


def test_a_line_that_is_no_change_names_the_file_and_line(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)
    journal.append(entry("zebra"))
    with journal.path.open("ab") as stream:
        stream.write(b'{"at": "2026", "by": "x"}\n')
    with pytest.raises(SourceFormatError, match=r"changes\.jsonl:2: not a change of the journal: KeyError"):
        list(journal.changes())
