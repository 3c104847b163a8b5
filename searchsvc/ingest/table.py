"""Reader for spreadsheets saved as CSV (`.csv`) or TSV (`.tsv`) with a header row.

Columns `title` (required), `abstract`, `year`, `authors` and `subjects` (each separated by `;`,
`\\;` being a `;` within a name or subject and `\\\\` a backslash), and optionally `id`, `doi`, `url`,
`arxiv`, `venue` (or `journal`, or `booktitle`), `date` (ISO 8601: `2021`, `2021-06`, `2021-06-29`),
`citations` and `citations_source` (who counted them), as our CSV export writes them; others are
ignored, names are case-insensitive.
UTF-8 with or without a byte-order mark (as Excel saves it). A cell our CSV export marked with a
leading `'` against formula injection (`'=…`, `'-…`, `''…`) is read without the mark.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.export import csv_items, csv_text
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, id_problem, paper_id_for_title
from searchsvc.core.publication import Publication, citation_count
from searchsvc.core.text import preview
from searchsvc.ingest.fields import FieldProblem, date_in, dated, distinct, one_line, year_in
from searchsvc.ingest.lines import numbered_lines

COLUMNS = (
    *("title", "abstract", "year", "authors", "subjects", "id", "doi", "url", "arxiv"),
    *("venue", "journal", "booktitle", "date", "citations", "citations_source"),
)
_VENUES = ("venue", "journal", "booktitle")  # the first of these columns a row fills is its venue


def read_table(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per row after the header; blank rows are skipped."""
    where = str(path)
    lines = (text + "\n" for _, text in numbered_lines(path))
    rows = csv.reader(lines, delimiter="\t" if path.suffix.lower() == ".tsv" else ",", strict=True)
    try:
        header = [cell.strip().lower() for cell in next(rows, [])]
        if "title" not in header:
            raise SourceFormatError(
                where,
                rows.line_num or 1,
                "the first row must name the columns, one of them 'title' (also: " + ", ".join(COLUMNS[1:]) + ")",
            )
        columns = {name: header.index(name) for name in COLUMNS if name in header}
        found = 0
        for row in rows:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) > len(header):
                raise SourceFormatError(
                    where, rows.line_num, f"row has {len(row)} cells, the header names {len(header)}"
                )
            cells = {name: one_line(csv_text(row[i])) if i < len(row) else "" for name, i in columns.items()}
            try:
                yield _paper(cells, SourceLocation(where, rows.line_num), warn)
            except FieldProblem as exc:
                raise SourceFormatError(where, rows.line_num, str(exc)) from None
            found += 1
    except csv.Error as exc:
        raise SourceFormatError(
            where, rows.line_num, f"not valid {'TSV' if path.suffix.lower() == '.tsv' else 'CSV'}: {exc}"
        ) from None
    if found == 0:
        raise SourceFormatError(where, rows.line_num or 1, "file has no rows after the header")


def _paper(cells: dict[str, str], where: SourceLocation, warn: Callable[[str], None]) -> Paper:
    title = cells.get("title", "")
    if not title:
        raise FieldProblem("row has no title")
    given_id = cells.get("id", "")
    if given_id and (problem := id_problem(given_id)):
        raise FieldProblem(f"'id' {preview(given_id)} {problem}")
    identifiers = Identifiers.of(arxiv=cells.get("arxiv", ""), doi_text=cells.get("doi", ""), url=cells.get("url", ""))
    for name in ("arxiv", "doi", "url"):
        if cells.get(name) and not getattr(identifiers, name):
            warn(f"{where}: {name} {preview(cells[name])} is not valid; ignored")
    date = date_in(cells.get("date", ""), "date", lambda message: warn(f"{where}: {message}"))
    citations = cells.get("citations", "")
    if citations and citation_count(citations) is None:
        warn(f"{where}: citations {preview(citations)} is not a count; ignored")
    venue = next((cells[name] for name in _VENUES if cells.get(name)), "")
    publication = Publication.of(venue, date, citations, cells.get("citations_source", ""))
    year, publication = dated(year_in(cells.get("year")), publication, lambda m: warn(f"{where}: {m}"))
    return Paper(
        id=given_id or paper_id_for_title(title),
        title=title,
        abstract=cells.get("abstract", ""),
        year=year,
        subjects=distinct(csv_items(cells.get("subjects", ""))),
        authors=distinct(csv_items(cells.get("authors", ""))),
        sources=[where],
        identifiers=identifiers,
        publication=publication,
    )
