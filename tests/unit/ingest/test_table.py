"""CSV and TSV: an Excel-saved sheet, lists split on ";", and malformed files by line."""

from __future__ import annotations

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
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
