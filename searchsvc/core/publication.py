"""Where and when a paper appeared, how often it is cited, and its authors' ORCID iDs (issue #31).

Sources write each of these many ways (`2007/04/02/`, `Mon, 2 Apr 2007 19:18:42 GMT`, `jun`,
`https://orcid.org/0000-…`); every value is normalised here once, so merging can compare them and
pages and exports can show them without checking again. A value that cannot be read is left out,
as `Identifiers` leaves out a DOI that is not one: these fields describe a paper, none decides
whether it can be searched.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from email.utils import parsedate_to_datetime
from typing import Any

from searchsvc.core.text import fold, one_line

MAX_VENUE_CHARS = 300  # the longest proceedings titles run to about 200 characters
MAX_SOURCE_CHARS = 40  # who counted the citations: "OpenAlex", "Semantic Scholar", a file's name
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS["sept"] = 9  # as often written as "sep"
# ISO dates as precise as given, also with `/` (RIS writes `2007/04/02/`, `2007///` or
# `2007/04/02/Spring`), or with a time after them.
_ISO = re.compile(r"(\d{4})(?:[-/](\d{1,2})(?:[-/](\d{1,2}))?)?(?:/+[^/]*|[T ][\d:.]+(?:Z|[+-][\d:]+)?)?")
_ORCID = re.compile(r"([0-9]{4})-?([0-9]{4})-?([0-9]{4})-?([0-9]{3}[0-9X])")  # ASCII digits: an iD is a link
_ORCID_PREFIX = re.compile(r"^(?:(?:https?://)?(?:www\.)?orcid\.org/|orcid:\s*)", re.IGNORECASE)
# Words that name proceedings in a venue ("Proceedings of ACL 2020", "NeurIPS Workshop on …"),
# and the short names of conferences whose proceedings are often given without them.
_PROCEEDINGS_WORDS = frozenset(
    "proceedings proc conference conf workshop symposium meeting congress colloquium".split()
    + "acl naacl eacl emnlp coling neurips nips icml iclr cvpr iccv eccv aaai ijcai kdd sigir sigmod vldb".split()
)
_WORDS = re.compile(r"[a-z]+")
# Servers that hold preprints: a venue of theirs gives way to a journal's or a conference's.
_PREPRINT_SERVERS = ("arxiv", "corr", "biorxiv", "medrxiv", "ssrn", "chemrxiv", "psyarxiv", "osf preprints")


def iso_date(text: str | None) -> str:
    """The date in `text` in ISO 8601, as precise as it is given (`2021`, `2021-06`, `2021-06-29`),
    or '' if it holds no valid date. Reads ISO dates and times, RIS's `2021/06/29/`, and the
    e-mail style dates of arXiv's OAI records (`Mon, 2 Apr 2007 19:18:42 GMT`)."""
    value = one_line(text)
    if not value:
        return ""
    match = _ISO.fullmatch(value)
    if match is not None:
        return _checked(int(match[1]), int(match[2] or 0), int(match[3] or 0))
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # (huge numbers overflow)
        return ""
    return _checked(parsed.year, parsed.month, parsed.day)


def date_of(year: str | int | None, month: str | None = None, day: str | None = None) -> str:
    """An ISO date from separate parts, as BibTeX gives them: a year, a month by number or name
    (`6`, `jun`, `June`), a day; each part is kept only if the ones before it are and it is valid."""
    year_text = one_line(str(year)) if year is not None else ""
    if not re.fullmatch(r"\d{4}", year_text):
        return ""
    month_text = one_line(month).lower().rstrip(".")
    month_number = int(month_text) if month_text.isdecimal() and len(month_text) <= 2 else _MONTHS.get(month_text, 0)
    day_text = one_line(day)
    day_number = int(day_text) if month_number and day_text.isdecimal() and len(day_text) <= 2 else 0
    # The most precise of year-month-day, year-month and year that is a real date.
    for parts in ((month_number, day_number), (month_number, 0), (0, 0)):
        found = _checked(int(year_text), *parts)
        if found:
            return found
    return ""


def _checked(year: int, month: int, day: int) -> str:
    """`year[-month[-day]]` if it is a real date (0 for a part not given), else ''."""
    if not 1000 <= year <= 2999:
        return ""
    try:
        date(year, month or 1, day or 1)
    except ValueError:
        return ""
    if not month:
        return f"{year:04d}"
    return f"{year:04d}-{month:02d}" if not day else f"{year:04d}-{month:02d}-{day:02d}"


def orcid(text: str | None) -> str:
    """The ORCID iD in `text` (`0000-0002-1825-0097`, with or without its https://orcid.org/
    address), checked by its ISO 7064 check digit, or '' if it is not one."""
    value = _ORCID_PREFIX.sub("", one_line(text))
    match = _ORCID.fullmatch(value.upper())
    if match is None:
        return ""
    digits = "".join(match.groups())
    total = 0
    for digit in digits[:-1]:
        total = (total + int(digit)) * 2
    check = (12 - total % 11) % 11
    return "-".join(match.groups()) if digits[-1] == ("X" if check == 10 else str(check)) else ""


def date_parts(iso: str) -> list[int]:
    """The year, month and day `iso` gives, as many as it gives ("2021-06" → [2021, 6]); `iso`
    must be one of `iso_date`'s answers."""
    return [int(part) for part in iso.split("-")]


def date_bounds(iso: str) -> tuple[int, int]:
    """The first and last day a date as precise as `iso_date` gives stands for, each as the number
    YYYYMMDD ("2021-06" → (20210601, 20210630)): how a date filter compares a paper known only by
    its month or year with a day. `iso` must be one of `iso_date`'s answers."""
    year, month, day = (date_parts(iso) + [0, 0])[:3]
    if day:
        return (year * 10000 + month * 100 + day,) * 2
    if month:
        return year * 10000 + month * 100 + 1, year * 10000 + month * 100 + calendar.monthrange(year, month)[1]
    return year * 10000 + 101, year * 10000 + 1231


def citation_count(value: Any) -> int | None:
    """A citation count as a source gives it (a number, or text of digits), or None if unknown."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = one_line(value) if isinstance(value, str) else ""
    return int(text) if text.isdecimal() and len(text) <= 12 else None


def venue_name(text: str | None) -> str:
    """A venue as a page shows it: one line, at most MAX_VENUE_CHARS (cut at a word, with "…")."""
    value = one_line(text)
    if len(value) <= MAX_VENUE_CHARS:
        return value
    return value[: MAX_VENUE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def venue_kind(venue: str) -> str:
    """What a citation calls a paper that appeared in `venue`: "inproceedings" for a conference's or
    workshop's proceedings, "article" for a journal, "misc" for a preprint server or no venue."""
    if not venue or is_preprint_server(venue):
        return "misc"
    words = set(_WORDS.findall(fold(venue)))
    return "inproceedings" if words & _PROCEEDINGS_WORDS else "article"


def is_preprint_server(venue: str) -> bool:
    """Whether `venue` names a preprint server (arXiv, CoRR, bioRxiv, …) rather than where a paper
    was published."""
    folded = fold(venue)
    return any(folded == name or folded.startswith(name + " ") for name in _PREPRINT_SERVERS)


@dataclass(frozen=True, slots=True)
class Publication:
    """What the sources say of a paper beyond its text; each empty when no source gave it."""

    venue: str = ""
    date: str = ""  # ISO 8601, as precise as the source: "2021", "2021-06" or "2021-06-29"
    citations: int | None = None
    citations_source: str = ""  # who counted them ("OpenAlex"), so a count can be weighed
    orcids: Mapping[str, str] = field(default_factory=dict)  # author name → ORCID iD

    @classmethod
    def of(
        cls,
        venue: str | None = "",
        date_text: str | None = "",
        citations: Any = None,
        citations_source: str = "",
        orcids: Mapping[str, str | None] | None = None,
    ) -> Publication:
        """A publication from raw source values, each normalised (a value that is not valid is dropped)."""
        count = citation_count(citations)
        checked = {one_line(name): orcid(value) for name, value in (orcids or {}).items()}
        return cls(
            venue=venue_name(venue),
            date=iso_date(date_text),
            citations=count,
            citations_source=one_line(citations_source)[:MAX_SOURCE_CHARS] if count is not None else "",
            orcids={name: value for name, value in checked.items() if name and value},
        )

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any] | None) -> Publication:
        """A publication as `stored()` kept it (absent in records written before it existed:
        empty), checked again: what an index or a journal holds on disk is not trusted."""
        if not stored or not isinstance(stored, Mapping):
            return _NONE  # most papers: nothing to check
        orcids = stored.get("orcids")
        text = {key: value if isinstance(value := stored.get(key), str) else "" for key in ("venue", "date", "source")}
        return cls.of(
            text["venue"],
            text["date"],
            stored.get("citations"),
            text["source"],
            {k: v for k, v in orcids.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(orcids, Mapping)
            else None,
        )

    def stored(self, authors: list[str] | None = None) -> dict[str, Any]:
        """The known values only, as engines store them and JSON lines hold them; ORCID iDs only
        for `authors` when given (a name left out by a limit takes its iD with it)."""
        found: dict[str, Any] = {}
        if self.venue:
            found["venue"] = self.venue
        if self.date:
            found["date"] = self.date
        if self.citations is not None:
            found["citations"] = self.citations
            if self.citations_source:
                found["source"] = self.citations_source
        orcids = self.orcids if authors is None else self.orcids_of(authors)
        if orcids:
            found["orcids"] = dict(orcids)
        return found

    def orcids_of(self, authors: list[str]) -> dict[str, str]:
        """The ORCID iDs of `authors`, in their order (a name a limit left out has none)."""
        return {name: self.orcids[name] for name in authors if name in self.orcids}

    @property
    def year(self) -> int | None:
        """The year of `date`, or None if no date is known."""
        return int(self.date[:4]) if self.date else None

    def merged_with(self, other: Publication, year: int | None) -> Publication:
        """These values and `other`'s, as merging keeps them for one paper of year `year` (the
        year merging kept, None if unknown): the more precise date of that year, a published
        venue over a preprint server's and the fuller name of two (`_venue_rank`), the larger
        citation count with its source, each author's ORCID iD from whichever gives it. So the
        same records give the same publication in whatever order they are read."""
        merged = self
        # Ties go to the smaller value (the earlier date, the source first alphabetically, the
        # smaller iD), never to the first read.
        if other.date and (year is None or other.year == year) and _better(other.date, self.date):
            merged = replace(merged, date=other.date)
        ours, theirs = _venue_rank(self.venue), _venue_rank(other.venue)
        if theirs > ours or (theirs == ours and other.venue < self.venue):
            merged = replace(merged, venue=other.venue)
        if other.citations is not None and (
            self.citations is None
            or (other.citations, self.citations_source) > (self.citations, other.citations_source)
        ):
            merged = replace(merged, citations=other.citations, citations_source=other.citations_source)
        # A name with no iD here, or with a larger one ("~" sorts after every iD).
        if any(self.orcids.get(name, "~") > value for name, value in other.orcids.items()):
            orcids = dict(self.orcids)
            for name, value in other.orcids.items():
                orcids[name] = min(orcids.get(name, value), value)
            merged = replace(merged, orcids=orcids)
        return merged


def _better(date: str, than: str) -> bool:
    """Whether a merge keeps `date` over `than`: the more precise, then the earlier."""
    return len(date) > len(than) or (len(date) == len(than) and date < than)


def _venue_rank(venue: str) -> tuple[bool, bool, int]:
    """Which of two venues merging keeps (the larger; equal ones: the first alphabetically, so no
    reading order decides): a known one, then a published one, then the fuller name ("Physical
    Review D" over arXiv's journal-ref "Phys.Rev.D")."""
    return (bool(venue), not is_preprint_server(venue), len(venue))


_NONE = Publication()
