"""Reader for profile pages: one person's publication list, as in `seeds/*.txt`.

Layout (blank lines between the parts are ignored)::

    arXiv subjects
    NAME
    Publications and source records attributed to NAME.
    At least N recordsLinked to original sources        (optional)
    arXiv2024                                            } one record:
    Title                                                } year, title,
    Abstract, one line                                   } abstract and
    cs.LG↗                                               } subject line

A record's year line is all a page says of its publication: its date is that year (no venue,
citations or ORCID iDs; "arXiv" names where the page found it, not where it was published).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.core.text import preview
from searchsvc.ingest.fields import dated
from searchsvc.ingest.lines import numbered_lines

HEADER = "arXiv subjects"
_ATTRIBUTION = re.compile(r"^Publications and source records attributed to (?P<name>.+?)\.?$")
_STATED_COUNT = re.compile(r"^At least (?P<count>\d+) record")
_YEAR_LINE = re.compile(r"^arXiv(?P<year>\S*)$")
_YEAR = re.compile(r"^[12]\d{3}$")
# An arXiv category (cs.LG, q-bio.NC, hep-th, cond-mat.stat-mech), with the page's link marker.
_SUBJECT = r"[a-z]+(?:-[a-z]+)?(?:\.[A-Za-z]+(?:-[a-z]+)?)?↗?"
_SUBJECT_LINE = re.compile(rf"^{_SUBJECT}(?:[\s,]+{_SUBJECT})*$")
_LINK_MARKER = "↗"

Line = tuple[int, str]


def read_profile(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield the records of one profile page; the page's person is an author of each."""
    lines = _content_lines(path)
    name = _read_header(path, lines)
    stated = _read_stated_count(lines)
    found = 0
    while lines.peek() is not None:
        yield _read_record(path, lines, name, warn)
        found += 1
    if found == 0:
        raise SourceFormatError(str(path), lines.last_number, "profile page has no records")
    if stated is not None and stated[1] != found:
        warn(f"{path}:{stated[0]}: page states {stated[1]} records, found {found}")


class _Lines:
    """The non-blank lines of a file with one line of look-ahead."""

    def __init__(self, source: Iterator[Line]) -> None:
        self._source = source
        self._next: Line | None = None
        self.last_number = 1

    def peek(self) -> Line | None:
        if self._next is None:
            self._next = next(self._source, None)
        return self._next

    def take(self) -> Line | None:
        line = self.peek()
        self._next = None
        if line is not None:
            self.last_number = line[0]
        return line


def _content_lines(path: Path) -> _Lines:
    return _Lines((n, text.strip()) for n, text in numbered_lines(path) if text.strip())


def _read_header(path: Path, lines: _Lines) -> str:
    header = lines.take()
    if header is None:
        raise SourceFormatError(str(path), 1, "file is empty: expected a profile page")
    if header[1] != HEADER:
        raise SourceFormatError(
            str(path), header[0], f"expected the profile header {HEADER!r}, found {preview(header[1])}"
        )
    name_line = lines.take()
    if name_line is None:
        raise SourceFormatError(str(path), header[0], "profile page ends before the person's name")
    attribution = lines.take()
    match = _ATTRIBUTION.match(attribution[1]) if attribution else None
    if attribution is None or match is None:
        number = attribution[0] if attribution else name_line[0]
        found = preview(attribution[1]) if attribution else "the end of the file"
        raise SourceFormatError(
            str(path), number, f"expected 'Publications and source records attributed to NAME.', found {found}"
        )
    if match["name"] != name_line[1]:
        raise SourceFormatError(
            str(path),
            attribution[0],
            f"attribution names {match['name']!r} but the page is for {name_line[1]!r}",
        )
    return name_line[1]


def _read_stated_count(lines: _Lines) -> tuple[int, int] | None:
    """The optional 'At least N records' line, as (line number, N)."""
    line = lines.peek()
    if line is None or not (match := _STATED_COUNT.match(line[1])):
        return None
    lines.take()
    return line[0], int(match["count"])


def _read_record(path: Path, lines: _Lines, author: str, warn: Callable[[str], None]) -> Paper:
    where = str(path)
    year_line = lines.take()
    assert year_line is not None, "called only while lines remain"
    number, text = year_line
    year_match = _YEAR_LINE.match(text)
    if year_match is None:
        raise SourceFormatError(where, number, f"expected a record's year line 'arXiv<YEAR>', found {preview(text)}")
    if not _YEAR.match(year_match["year"]):
        raise SourceFormatError(where, number, f"{year_match['year']!r} is not a year (in {text!r})")

    title = lines.take()
    if title is None or _YEAR_LINE.match(title[1]):
        raise SourceFormatError(where, title[0] if title else number, "record has no title after its year line")
    record = f"record {preview(title[1])} (line {title[0]})"

    abstract = lines.take()
    if abstract is None or _YEAR_LINE.match(abstract[1]) or _SUBJECT_LINE.match(abstract[1]):
        raise SourceFormatError(where, abstract[0] if abstract else title[0], f"{record} has no abstract")

    subjects = lines.peek()
    if subjects is None or not _SUBJECT_LINE.match(subjects[1]):
        raise SourceFormatError(
            where,
            subjects[0] if subjects else abstract[0],
            f"{record} has no subject line such as 'cs.LG↗'" + (f", found {preview(subjects[1])}" if subjects else ""),
        )
    lines.take()

    year, publication = dated(int(year_match["year"]), Publication(), lambda m: warn(f"{where}:{number}: {m}"))
    return Paper(
        id=paper_id_for_title(title[1]),
        title=title[1],
        abstract=abstract[1],
        year=year,
        subjects=_parse_subjects(subjects[1]),
        authors=[author],
        sources=[SourceLocation(where, number)],
        publication=publication,
    )


def _parse_subjects(line: str) -> list[str]:
    tokens = re.split(r"[\s,]+", line.replace(_LINK_MARKER, " "))
    return list(dict.fromkeys(token for token in tokens if token))
