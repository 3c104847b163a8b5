"""Reader for RIS files (`.ris`), as library catalogues, Zotero, EndNote and publishers export them.

A line-based format, so it is read here line by line (no library keeps line numbers, and one
line of look-ahead is all it needs): `TY  - ` opens a record, `ER  - ` closes it, and a line
that is not a tag continues the previous value.

The venue is the first of `JF`, `T2`, `JO`, `JA`, `J2` the record has (`_VENUES` says why), the
date `DA` (`2007/04/02/`), else `PY` or `Y1` (once `YYYY/MM/DD/other` too).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers, arxiv_id
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.core.text import preview
from searchsvc.ingest.fields import (
    FieldProblem,
    date_in,
    dated,
    distinct,
    one_line,
    surname_first_to_first_last,
    year_in,
)
from searchsvc.ingest.lines import numbered_lines

_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: (.*))?$")
_TITLE, _ABSTRACT = ("TI", "T1", "CT", "BT"), ("AB", "N2")
_AUTHORS, _YEARS, _KEYWORDS, _URLS = ("AU", "A1"), ("PY", "Y1", "DA"), ("KW",), ("UR", "L2")
# Where the paper appeared, the fullest name first: JF is by the RIS specification the journal's
# full name; T2, the secondary title, is the journal of an article and the proceedings or book of a
# paper in one (Zotero and our export write the venue there); JO is a full name for some exporters
# and an abbreviation for others; JA and J2 are abbreviations, taken only when nothing else names it.
_VENUES = ("JF", "T2", "JO", "JA", "J2")
# The date as precise as given: DA is the date proper; PY (and Y1, its old name) was once a whole
# `YYYY/MM/DD/other` date, and is at least the year.
_DATES = ("DA", "PY", "Y1")


def read_ris(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per `TY … ER` record."""
    where = str(path)
    record: dict[str, list[str]] | None = None
    start = last_tag = 0
    tag = ""
    found = 0
    for number, text in numbered_lines(path):
        # Some exporters indent a tag line (" T1  - Title"): still a tag, not the previous value's end.
        match = _TAG.match(text) or _TAG.match(text.lstrip())
        if match is None:
            if text.strip() and record is not None and tag:
                record[tag][-1] += " " + text.strip()  # a value wrapped onto the next line
            elif text.strip():
                raise SourceFormatError(
                    where, number, f"expected a RIS tag line such as 'TY  - JOUR', found {preview(text)}"
                )
            continue
        tag, value = match[1], (match[2] or "").strip()
        if tag == "TY":
            if record is not None:
                raise SourceFormatError(
                    where, number, f"record opened at line {start} has no 'ER  -' line before this one"
                )
            record, start = {"TY": [value]}, number  # a line wrapped after it continues the type
        elif record is None:
            raise SourceFormatError(where, number, f"tag {tag} outside a record: expected 'TY  - ' first")
        elif tag == "ER":
            yield _paper(where, start, record, warn)
            found += 1
            record, tag = None, ""
        else:
            record.setdefault(tag, []).append(value)
        last_tag = number
    if record is not None:
        raise SourceFormatError(where, start, "record has no 'ER  -' line: the file ends inside it")
    if found == 0:
        raise SourceFormatError(where, last_tag or 1, "file has no RIS records (TY  - … ER  - )")


def _paper(where: str, line: int, record: dict[str, list[str]], warn: Callable[[str], None]) -> Paper:
    def first(tags: tuple[str, ...]) -> str:
        return next((one_line(record[t][0]) for t in tags if record.get(t)), "")

    title = first(_TITLE)
    if not title:
        raise SourceFormatError(where, line, "record has no title (TI or T1)")
    try:
        year = year_in(first(_YEARS))
    except FieldProblem as exc:
        raise SourceFormatError(where, line, str(exc)) from None
    urls = [u for tag in _URLS for u in record.get(tag, [])]
    arxiv = next((found for u in urls if (found := arxiv_id(u))), "")
    identifiers = Identifiers.of(arxiv=arxiv, doi_text=first(("DO",)), url=next(iter(urls), ""))
    if first(("DO",)) and not identifiers.doi:
        warn(f"{where}:{line}: DO {preview(first(('DO',)))} is not a DOI; ignored")
    year, publication = dated(
        year, Publication.of(first(_VENUES), _date(record, where, line, warn)), lambda m: warn(f"{where}:{line}: {m}")
    )
    return Paper(
        id=paper_id_for_title(title),
        title=title,
        abstract=first(_ABSTRACT),
        year=year,
        subjects=distinct(record.get("KW", [])),
        authors=distinct(surname_first_to_first_last(a) for tag in _AUTHORS for a in record.get(tag, [])),
        sources=[SourceLocation(where, line)],
        identifiers=identifiers,
        publication=publication,
    )


def _date(record: dict[str, list[str]], where: str, line: int, warn: Callable[[str], None]) -> str:
    """The first of `_DATES` that reads as a date; a `DA` that does not is warned about (a `PY`
    that is only a year with more around it, `c2007`, has given the year already)."""

    def said(message: str) -> None:
        warn(f"{where}:{line}: {message}")

    for tag in _DATES:
        given = one_line(record[tag][0]) if record.get(tag) else ""
        found = date_in(given, tag, said if tag == "DA" else _unsaid)
        if found:
            return found
    return ""


def _unsaid(message: str) -> None:
    """What a `PY` that is not a date is told: nothing (its year was read)."""
