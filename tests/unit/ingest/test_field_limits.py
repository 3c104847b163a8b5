"""Field lengths are limited once, for every reader, a rebuild and a write alike, each cut a warning at
its record (issue #36: a 252 KB title made a 508 KB search answer and a 3.2 s paper page)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.ingest.field_limits import FieldLimits, limited
from searchsvc.ingest.sources import read_records
from searchsvc.operations import update
from searchsvc.operations.rebuild import rebuild
from tests.helpers.apps import settings_for
from tests.helpers.reader_samples import READERS
from tests.helpers.records import jsonl

TINY = FieldLimits(title_chars=6, abstract_chars=30, authors=1, author_name_chars=12, subjects=1, subject_chars=5)
WHERE = SourceLocation("papers.jsonl", 7)


def record(title: str = "A title", paper_id: str = "", abstract: str = "", **lists: list[str]) -> Paper:
    paper = Paper(paper_id or paper_id_for_title(title), title, abstract, None, sources=[WHERE])
    paper.authors, paper.subjects = lists.get("authors", []), lists.get("subjects", [])
    return paper


@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_keeps_its_records_within_the_limits(reader: str, tmp_path: Path) -> None:
    name, sample = READERS[reader]
    path = tmp_path / name
    path.write_bytes(sample)
    warnings: list[str] = []
    counts: Counter[str] = Counter()
    papers = list(read_records([path], warnings.append, counts, TINY))
    assert counts.keys() == {reader}
    for paper in papers:
        assert len(paper.title) <= 6 and paper.title.endswith("…")
        assert len(paper.abstract) <= 30 and len(paper.authors) <= 1 and len(paper.subjects) <= 1
        assert all(len(name) <= 12 for name in paper.authors) and all(len(s) <= 5 for s in paper.subjects)
    assert sum("title of" in warning for warning in warnings) == len(papers)
    assert all(warning.startswith(f"{path}:") for warning in warnings), warnings


def test_a_long_text_is_cut_at_a_word_and_says_so() -> None:
    warnings: list[str] = []
    paper = limited(record("Deep learning " * 10_000, abstract=""), FieldLimits(100, 40, 9, 99, 9, 99), warnings.append)
    assert paper.title == ("Deep learning " * 7).rstrip() + "…"  # 98 characters: whole words
    assert paper.id == paper_id_for_title(paper.title)  # made from the title kept, as a re-import makes it
    assert warnings == ["papers.jsonl:7: title of 140,000 characters cut to 100 (max_title_chars)"]
    one_word = limited(record("x" * 500, paper_id="own-id"), FieldLimits(100, 40, 9, 99, 9, 99), lambda m: None)
    assert one_word.title == "x" * 99 + "…" and one_word.id == "own-id"  # an id from the source is kept


def test_long_names_are_left_out_and_the_first_authors_kept() -> None:
    warnings: list[str] = []
    names = ["Ann Lee", "A" * 300, "Bo Li", "Cy Do", "B" * 250]
    paper = limited(
        record(authors=names, subjects=["cs.CL", "x" * 300, "cs.LG"]),
        FieldLimits(100, 40, 2, 200, 5, 200),
        warnings.append,
    )
    assert (paper.authors, paper.subjects) == (["Ann Lee", "Bo Li"], ["cs.CL", "cs.LG"])
    assert warnings == [
        "papers.jsonl:7: author names longer than 200 characters left out (max_author_name_chars): 2, "
        f'the first "{"A" * 40}…"',
        "papers.jsonl:7: 3 authors, the first 2 kept (max_authors)",
        f'papers.jsonl:7: subjects longer than 200 characters left out (max_subject_chars): 1, the first "{"x" * 40}…"',
    ]


def test_a_paper_within_the_limits_is_unchanged() -> None:
    warnings: list[str] = []
    paper = record("A title", abstract="An abstract.", authors=["Ann Lee"], subjects=["cs.CL"])
    limited(paper, FieldLimits.of(settings_for(Path("index"))), warnings.append)
    assert (paper.title, paper.abstract, paper.authors, paper.subjects, warnings) == (
        "A title",
        "An abstract.",
        ["Ann Lee"],
        ["cs.CL"],
        [],
    )


def test_a_rebuild_and_a_write_limit_alike_by_the_settings(tmp_path: Path, write) -> None:
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False, max_title_chars=100))
    built = rebuild(backend, [write("long.jsonl", jsonl([{"id": "long-1", "title": "Rebuilt words " * 1000}]))])
    body = write("body.csv", "id,title\nlong-2," + "Written words " * 1000 + "\n")  # as the write API saves a body
    added = update.add(backend, [body], origin="POST /api/papers by tester", embed=False)
    for paper_id, words in (("long-1", "Rebuilt words "), ("long-2", "Written words ")):
        assert backend.paper(paper_id).title == (words * 7).rstrip() + "…"  # 98 characters: whole words
    assert built.warnings == [
        f"{tmp_path}/sources/long.jsonl:1: title of 13,999 characters cut to 100 (max_title_chars)"
    ]
    assert added.warnings == [f"{body}:2: title of 13,999 characters cut to 100 (max_title_chars)"]


def test_a_merged_paper_keeps_within_the_limits_and_says_where(tmp_path: Path, write) -> None:
    """Issue #36's leftover: two records of one paper, each within `max_authors`, merged into one
    past it; a rebuild and a write limit it alike, warned about at the record that passed it."""
    backend = WhooshBackend(settings_for(tmp_path / "index", semantic_ranking=False, max_authors=3))
    first = {"id": "p-1", "title": "One paper", "authors": ["A. One", "B. Two"]}
    second = {"id": "p-1", "title": "One paper", "authors": ["C. Three", "D. Four"]}
    built = rebuild(backend, [write("two.jsonl", jsonl([first, second]))])
    assert backend.paper("p-1").authors == ["A. One", "B. Two", "C. Three"]
    assert built.warnings == [
        f"{tmp_path}/sources/two.jsonl:2, merged with {tmp_path}/sources/two.jsonl:1: 4 authors, the first 3 kept "
        "(max_authors)"
    ]
    body = write("body.jsonl", jsonl([{**second, "authors": ["E. Five", "F. Six"]}]))
    added = update.add(backend, [body], origin="POST /api/papers by tester", embed=False)
    assert backend.paper("p-1").authors == ["A. One", "B. Two", "C. Three"]
    assert added.warnings == [
        f"{body}:1, merged with {tmp_path}/sources/two.jsonl:1: 5 authors, the first 3 kept (max_authors)"
    ]
