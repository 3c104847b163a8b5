"""Profile pages in the seed format: read exactly, and every malformed page named by file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.ingest.profile import read_profile
from tests.helpers.paths import SEEDS
from tests.helpers.records import profile_page

GOOD = ("arXiv2021", "A Title", "An abstract.", "cs.LG↗")


def read(path: Path) -> tuple[list, list[str]]:
    warnings: list[str] = []
    return list(read_profile(path, warnings.append)), warnings


def test_seed_pages_read_exactly() -> None:
    path = SEEDS / "000_d783616f14c345ab.txt"
    papers, warnings = read(path)
    assert len(papers) == 18
    first = papers[0]
    assert first.title == "SOAP, Muon, and Beyond: Pushing LLM Pretraining Scales"
    assert first.year == 2026
    assert first.subjects == ["cs.LG"]
    assert first.authors == ["Dheevatsa Mudigere"]
    assert first.abstract.startswith("Higher-order optimizers such as Muon and SOAP")
    assert first.abstract.endswith("https://github.com/NVIDIA-NeMo/Emerging-Optimizers")
    assert str(first.sources[0]) == f"{path}:9"
    assert first.id == paper_id_for_title(first.title)
    assert first.publication == Publication(date="2026")  # the year is all a page says of it
    # The page says "At least 19" but holds 18: a warning naming the line, not a failure.
    assert warnings == [f"{path}:7: page states 19 records, found 18"]


def test_seed_records_match_raw_file_layout() -> None:
    """Cross-check the reader against a naive split of the raw text into 4-line blocks."""
    for path in sorted(SEEDS.glob("*.txt")):
        blocks = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][4:]
        papers, _ = read(path)
        assert [p.title for p in papers] == blocks[1::4]
        assert [p.abstract for p in papers] == blocks[2::4]
        assert [f"arXiv{p.year}" for p in papers] == blocks[0::4]
        assert [s + "↗" for p in papers for s in p.subjects] == blocks[3::4]


def test_link_marker_and_several_subjects(write) -> None:
    path = write("p.txt", profile_page("Ada Lovelace", [("arXiv2020", "T", "A.", "cs.LG↗ stat.ML↗, q-bio.NC")]))
    papers, _ = read(path)
    assert papers[0].subjects == ["cs.LG", "stat.ML", "q-bio.NC"]


def test_count_line_is_optional_and_no_warning_when_it_matches(write) -> None:
    text = profile_page("Ada Lovelace", [GOOD])
    path = write("p.txt", text)
    assert read(path)[1] == []
    path = write("q.txt", re.sub(r"At least.*\n\n", "", text))
    papers, warnings = read(path)
    assert len(papers) == 1 and warnings == []


def _error(path: Path) -> SourceFormatError:
    with pytest.raises(SourceFormatError) as caught:
        read(path)
    return caught.value


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line == text)


def test_missing_abstract_names_file_and_line(write) -> None:
    path = write("p.txt", profile_page("Ada", [GOOD, ("arXiv2020", "No Abstract Here", "cs.IR↗"), GOOD]))
    error = _error(path)
    title_line, subject_line = _line_of(path, "No Abstract Here"), _line_of(path, "cs.IR↗")
    assert str(error) == f'{path}:{subject_line}: record "No Abstract Here" (line {title_line}) has no abstract'
    assert (error.path, error.line) == (str(path), _line_of(path, "cs.IR↗"))


def test_missing_subject_names_file_and_line(write) -> None:
    path = write("p.txt", profile_page("Ada", [("arXiv2020", "Subjectless", "Some abstract."), GOOD]))
    error = _error(path)
    assert error.line == _line_of(path, "arXiv2021")
    assert 'record "Subjectless"' in error.problem and "has no subject line" in error.problem


def test_missing_subject_at_end_of_file(write) -> None:
    path = write("p.txt", profile_page("Ada", [GOOD, ("arXiv2020", "Last", "Abstract.")]))
    error = _error(path)
    assert error.line == _line_of(path, "Abstract.")
    assert "has no subject line" in error.problem


@pytest.mark.parametrize("year_line", ["arXiv20x6", "arXiv0999", "arXiv", "arXiv202"])
def test_year_that_is_not_a_year(write, year_line: str) -> None:
    path = write("p.txt", profile_page("Ada", [GOOD, (year_line, "T", "A.", "cs.LG↗")]))
    error = _error(path)
    assert error.line == _line_of(path, year_line)
    assert "is not a year" in error.problem


def test_text_where_a_record_should_start(write) -> None:
    path = write("p.txt", profile_page("Ada", [GOOD]) + "\nstray text\n")
    error = _error(path)
    assert error.line == _line_of(path, "stray text")
    assert "expected a record's year line" in error.problem


@pytest.mark.parametrize(
    ("content", "line", "problem"),
    [
        ("", 1, "file is empty"),
        ("\n\n", 1, "file is empty"),
        ("Not a profile\n", 1, "expected the profile header"),
        ("arXiv subjects\n\nAda\n\nSomething else\n", 5, "expected 'Publications and source records attributed"),
        ("arXiv subjects\n\nAda\n\nPublications and source records attributed to Bob.\n", 5, "attribution names 'Bob'"),
        ("arXiv subjects\n\nAda\n\nPublications and source records attributed to Ada.\n", 5, "has no records"),
    ],
)
def test_malformed_headers(write, content: str, line: int, problem: str) -> None:
    error = _error(write("p.txt", content))
    assert error.line == line
    assert problem in error.problem


def test_not_utf8_names_the_line(write) -> None:
    text = profile_page("Ada", [GOOD, ("arXiv2020", "Caf\udce9", "A.", "cs.LG↗")])
    path = write("p.txt", text.encode("utf-8", "surrogateescape"))
    error = _error(path)
    assert error.line == path.read_bytes().split(b"\n").index(b"Caf\xe9") + 1
    assert error.problem == "not UTF-8 text (byte 4 of the line)"
