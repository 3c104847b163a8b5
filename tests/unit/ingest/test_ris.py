"""RIS: a Zotero export, names turned to "First Last", identifiers, and each malformed case by line."""

from __future__ import annotations

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
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
