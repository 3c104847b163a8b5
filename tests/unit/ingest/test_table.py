"""CSV and TSV: an Excel-saved sheet, lists split on ";", and malformed files by line."""

from __future__ import annotations

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.export import EXPORT_FORMATS
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication
from searchsvc.ingest.table import read_table
from tests.helpers.paths import SOURCE_SAMPLES


def test_excel_saved_csv() -> None:
    warnings: list[str] = []
    first, second = read_table(SOURCE_SAMPLES / "spreadsheet.csv", warnings.append)
    assert (first.title, first.year, first.subjects, first.authors) == (
        "Number Parsing at a Gigabyte per Second",
        2021,
        ["cs.DS", "cs.MS"],
        ["Daniel Lemire"],
    )
    assert first.identifiers == Identifiers("", "10.1002/spe.2984", "https://arxiv.org/abs/2101.11408")
    assert second.authors == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"] and second.abstract == ""
    assert second.identifiers.doi == "10.1103/physrevd.76.013009"
    assert warnings == [] and str(second.sources[0]).endswith("spreadsheet.csv:3")
    assert first.publication == Publication(venue="Software: Practice and Experience", date="2021")
    assert second.publication == Publication(venue="Physical Review D", date="2007-04-02")  # citations: empty


def test_venue_date_and_citations_columns(write) -> None:
    path = write(
        "p.csv",
        "Title,Journal,BookTitle,Date,Citations,Citations_Source\n"
        "A,J. Chem. Phys.,B,2001-02-28,12,Crossref\n"
        "B,,Proc. of KDD,2020-08,7,\n"
        "C,,,2019,,Crossref\n",
    )
    a, b, c = read_table(path, lambda m: None)
    assert a.publication == Publication("J. Chem. Phys.", "2001-02-28", 12, "Crossref")
    assert b.publication == Publication("Proc. of KDD", "2020-08", 7, "")  # who counted: not said
    assert c.publication == Publication(date="2019")  # a source without a count is nothing
    assert (a.year, b.year, c.year) == (2001, 2020, 2019)  # the year from the date


def test_bad_date_and_count_are_dropped_with_a_warning_and_another_year_too(write) -> None:
    path = write("p.csv", "title,year,date,citations\nA,2021,02/04/2021,1.5k\nB,2021,2020-06-01,3\n")
    warnings: list[str] = []
    a, b = read_table(path, warnings.append)
    assert (a.publication, a.year) == (Publication(date="2021"), 2021)
    assert (b.publication, b.year) == (Publication(date="2021", citations=3), 2021)
    assert warnings == [
        f'{path}:2: date "02/04/2021" is not a date; ignored',
        f'{path}:2: citations "1.5k" is not a count; ignored',
        f"{path}:3: date 2020-06-01 is not in the year 2021; ignored",
    ]


def test_our_csv_export_reimports_the_publication(write) -> None:
    paper = Paper(
        "p-1",
        "T",
        "",
        2018,
        authors=["Heather A. Piwowar"],
        publication=Publication("PeerJ", "2018-02-13", 394, "OpenAlex", {"Heather A. Piwowar": "0000-0003-1613-5981"}),
    )
    (back,) = read_table(write("e.csv", "".join(EXPORT_FORMATS["csv"].write([paper]))), lambda m: None)
    assert (back.year, back.publication) == (
        2018,
        Publication("PeerJ", "2018-02-13", 394, "OpenAlex"),
    )  # no ORCID column


def test_tsv_with_ids_and_quoted_newlines(write) -> None:
    path = write("t.tsv", 'ID\tTitle\tAbstract\n2016.acl-1.1\tFirst\t"two\nlines"\n\nx-2\tSecond\t\n')
    papers = list(read_table(path, lambda m: None))
    assert [(p.id, p.title, p.abstract) for p in papers] == [
        ("2016.acl-1.1", "First", "two lines"),
        ("x-2", "Second", ""),
    ]
    assert [p.sources[0].line for p in papers] == [3, 5]


def test_bad_link_is_dropped_with_a_warning(write) -> None:
    warnings: list[str] = []
    (paper,) = read_table(write("a.csv", "title,url\nT,javascript:alert(1)\n"), warnings.append)
    assert paper.identifiers == Identifiers() and len(warnings) == 1 and "url" in warnings[0]


@pytest.mark.parametrize(
    "content, line, problem",
    [
        ("name,year\nT,2020\n", 1, "the first row must name the columns, one of them 'title'"),
        ("title,year\nT,2020,extra\n", 2, "row has 3 cells, the header names 2"),
        ("title,year\n,2020\n", 2, "row has no title"),
        ("title,year\nT,soon\n", 2, "'year' must hold a year"),
        ("id,title\n<script>,T\n", 2, "'id' \"<script>\" may hold only"),
        ("title\n", 1, "file has no rows after the header"),
        ('title,abstract\nT,"' + "x" * 200_000 + '"\n', 2, "not valid CSV: field larger than field limit"),
    ],
)
def test_malformed_rows_name_their_line(write, content: str, line: int, problem: str) -> None:
    path = write("bad.csv", content)
    with pytest.raises(SourceFormatError, match=rf"^{path}:{line}: {problem}"):
        list(read_table(path, lambda m: None))
