"""RIS: a Zotero export, names turned to "First Last", identifiers, and each malformed case by line."""

from __future__ import annotations

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.export import ris_record
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication
from searchsvc.ingest.ris import read_ris
from tests.helpers.paths import SOURCE_SAMPLES


def test_real_zotero_export() -> None:
    first, second = read_ris(SOURCE_SAMPLES / "zotero-export.ris", lambda m: None)
    assert first.title == "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    assert first.authors == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]
    assert (first.year, first.subjects) == (2007, ["High Energy Physics - Phenomenology"])
    assert first.identifiers == Identifiers(
        "0704.0001", "10.1103/physrevd.76.013009", "http://arxiv.org/abs/0704.0001v2"
    )
    assert (
        second.abstract == "With disks and networks providing gigabytes per second ...."
    )  # a value wrapped onto two lines
    assert str(second.sources[0]).endswith("zotero-export.ris:16")
    assert first.publication == Publication(venue="Physical Review D", date="2007-04-02")  # DA
    assert second.publication == Publication(venue="Software: Practice and Experience", date="2021")  # PY


@pytest.mark.parametrize(
    "tags, venue, date",
    [
        ("PY  - 2007\nDA  - 2007/04/02/\n", "", "2007-04-02"),  # DA, however the tags are ordered
        ("DA  - 2007/04//\nPY  - 2007\n", "", "2007-04"),
        ("PY  - 2007///\n", "", "2007"),
        ("Y1  - 2007/04/02/Spring\n", "", "2007-04-02"),  # PY's old name, once a whole date
        ("PY  - 2007/04/02/\n", "", "2007-04-02"),
        ("JO  - Phys. Rev. D\nT2  - Physical Review D\nPY  - 2007\n", "Physical Review D", "2007"),
        ("JA  - Phys. Rev. D\nJF  - Physical Review D\nJO  - PRD\n", "Physical Review D", ""),  # JF first
        ("JA  - Phys. Rev. D\nJO  - PRD\n", "PRD", ""),
        ("J2  - Phys. Rev. D\nJA  - PRD\n", "PRD", ""),
        ("J2  - Phys. Rev. D\n", "Phys. Rev. D", ""),
    ],
)
def test_venue_and_date(write, tags: str, venue: str, date: str) -> None:
    warnings: list[str] = []
    (paper,) = read_ris(write("d.ris", f"TY  - JOUR\nTI  - T\n{tags}ER  - \n"), warnings.append)
    assert paper.publication == Publication(venue=venue, date=date)
    assert paper.year == (int(date[:4]) if date else None) and warnings == []


def test_a_da_that_is_no_date_gives_way_to_py_with_a_warning(write) -> None:
    path = write("d.ris", "TY  - JOUR\nTI  - T\nDA  - Spring 2007\nPY  - 2007\nER  - \n")
    warnings: list[str] = []
    (paper,) = read_ris(path, warnings.append)
    assert (paper.year, paper.publication.date) == (2007, "2007")
    assert warnings == [f'{path}:1: DA "Spring 2007" is not a date; ignored']


def test_a_date_of_another_year_than_py_is_left_out(write) -> None:
    path = write("d.ris", "TY  - JOUR\nTI  - T\nPY  - 2008\nDA  - 2007/10/10/\nER  - \n")
    warnings: list[str] = []
    (paper,) = read_ris(path, warnings.append)
    assert (paper.year, paper.publication.date) == (2008, "2008")
    assert warnings == [f"{path}:1: date 2007-10-10 is not in the year 2008; ignored"]


def test_our_export_reimports_venue_and_date(write) -> None:
    paper = Paper("p", "T", "", 2007, publication=Publication(venue="Physical Review D", date="2007-04-02"))
    (back,) = read_ris(write("e.ris", ris_record(paper)), lambda m: None)
    assert (back.year, back.publication) == (2007, paper.publication)


@pytest.mark.parametrize(
    "content, line, problem",
    [
        ("TY  - JOUR\nAU  - Doe, J.\nER  - \n", 1, "record has no title"),
        ("TY  - JOUR\nTI  - T\nPY  - someday\nER  - \n", 1, "'year' must hold a year"),
        ("TY  - JOUR\nTI  - T\n", 1, "record has no 'ER  -' line"),
        ("TY  - JOUR\nTI  - T\nTY  - JOUR\n", 3, "record opened at line 1 has no 'ER  -'"),
        ("TI  - T\nER  - \n", 1, "tag TI outside a record"),
        ("just some text\n", 1, "expected a RIS tag line"),
        ("\n\n", 1, "file has no RIS records"),
    ],
)
def test_malformed_records_name_their_line(write, content: str, line: int, problem: str) -> None:
    path = write("bad.ris", content)
    with pytest.raises(SourceFormatError, match=rf"^{path}:{line}: {problem}"):
        list(read_ris(path, lambda m: None))


def test_an_indented_tag_line_after_the_type_is_a_tag(write) -> None:
    """Some exporters indent tag lines; right after `TY  - ` this raised KeyError (issue #36)."""
    path = write("indented.ris", "TY  - JOUR\n T1  - Leading space title\n AU  - Quokka, Quinn\nER  - \n")
    [paper] = read_ris(path, lambda message: None)
    assert (paper.title, paper.authors) == ("Leading space title", ["Quinn Quokka"])


def test_a_line_wrapped_after_the_type_continues_it(write) -> None:
    [paper] = read_ris(write("wrapped.ris", "TY  - JOUR\n  continued\nTI  - A title\nER  - \n"), lambda message: None)
    assert paper.title == "A title"
