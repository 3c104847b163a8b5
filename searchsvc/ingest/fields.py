"""Field rules every third-party reader applies alike: one-line text, years, dates, names, lists."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from searchsvc.core.paper import Paper
from searchsvc.core.publication import Publication, iso_date
from searchsvc.core.text import composed, one_line, preview

__all__ = ["one_line"]  # the readers' rule, kept in core.text so a search's filters fold alike

MIN_YEAR, MAX_YEAR = 1000, 2999
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
# BibTeX keywords are separated by "," or ";" (CSV lists have their own rule: core.export.csv_items).
_LIST_SEPARATORS = re.compile(r"\s*[;,]\s*")


class FieldProblem(Exception):
    """A field that cannot be read; the reader adds the file and line (or entry)."""


def composed_paper(paper: Paper) -> Paper:
    """`paper` with its text, names, subjects and venue in composed form (`core.text.composed`),
    whichever reader read it; the same paper when they already are (almost always)."""
    publication = paper.publication
    before = (paper.title, paper.abstract, paper.authors, paper.subjects, publication.venue, dict(publication.orcids))
    title, abstract, venue = composed(paper.title), composed(paper.abstract), composed(publication.venue)
    authors, subjects = [composed(name) for name in paper.authors], [composed(s) for s in paper.subjects]
    orcids = {composed(name): orcid for name, orcid in publication.orcids.items()}
    if (title, abstract, authors, subjects, venue, orcids) == before:
        return paper
    publication = replace(publication, venue=venue, orcids=orcids)
    return replace(paper, title=title, abstract=abstract, authors=authors, subjects=subjects, publication=publication)


def year_in(text: str | None, field: str = "year") -> int | None:
    """The first four-digit year in `text` ("2019", "2019-05-01", "Mon, 2 Apr 2007 ..."), or None if empty."""
    value = one_line(text)
    if not value:
        return None
    match = _YEAR.search(value)
    if match is None or not MIN_YEAR <= int(match[1]) <= MAX_YEAR:
        raise FieldProblem(f"{field!r} must hold a year such as 2021, found {preview(value)}")
    return int(match[1])


def date_in(text: str, field: str, warn: Callable[[str], None]) -> str:
    """The ISO date in `text` (`core.publication.iso_date`), or '' with a warning naming `field`
    (through `warn`, which the reader gives its location) when `text` holds none."""
    found = iso_date(text)
    if text and not found:
        warn(f"{field} {preview(text)} is not a date; ignored")
    return found


def dated(year: int | None, publication: Publication, warn: Callable[[str], None]) -> tuple[int | None, Publication]:
    """A record's year and its publication's date made to agree (issue #31), as every reader needs.

    The year is the record's own (`year`, `PY`, `publication_year`): filters, facets and ranking use
    it, so a date of another year is dropped (with a warning through `warn`, which the reader gives
    its location) rather than the year changed. A record without a year takes its date's. A record
    whose source gives only a year has that year as its date, so `date` is as precise as the source
    whichever reader read it (`2021`, as BibTeX's `year` without a `month` gives).
    """
    if publication.date and year is not None and publication.year != year:
        warn(f"date {publication.date} is not in the year {year}; ignored")
        publication = replace(publication, date="")
    if year is None:
        return publication.year, publication
    if not publication.date:
        publication = replace(publication, date=f"{year:04d}")
    return year, publication


def split_list(text: str | None) -> list[str]:
    """The distinct, non-empty items of a list separated by "," or ";", in order."""
    return distinct(_LIST_SEPARATORS.split(text or ""))


def distinct(items: Iterable[str]) -> list[str]:
    """Items with whitespace folded, empty ones dropped, each once, in order."""
    return list(dict.fromkeys(item for item in (one_line(i) for i in items) if item))


def first_last(last: str, first: str, suffix: str = "") -> str:
    """A name as the profile pages give it: "First Last" (with a suffix such as "Jr." after it)."""
    return one_line(" ".join((first, last, suffix)))


def surname_first_to_first_last(name: str) -> str:
    """ "Naumov, Maxim" → "Maxim Naumov" (and "Last, Jr., First" → "First Last Jr."); other names unchanged."""
    parts = [part.strip() for part in name.split(",")]
    if len(parts) == 2:
        return first_last(parts[0], parts[1])
    if len(parts) == 3:
        return first_last(parts[0], parts[2], parts[1])
    return one_line(name)


def string_field(obj: dict[str, Any], key: str) -> str:
    """A JSON record's text field as given ("" when absent or null); FieldProblem if it is not text."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldProblem(f"'{key}' must be a string, found {json.dumps(value)[:60]}")
    return value
