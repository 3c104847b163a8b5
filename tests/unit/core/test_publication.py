"""Publication (issue #31): dates as precise as given in every way sources write them, checked ORCID iDs,
citation counts, the stored round trip, and how two sources' values merge."""

from __future__ import annotations

import pytest

from searchsvc.core.publication import (
    MAX_VENUE_CHARS,
    Publication,
    citation_count,
    date_of,
    is_preprint_server,
    iso_date,
    orcid,
    venue_name,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2021", "2021"),
        ("2021-06", "2021-06"),
        ("2021-6", "2021-06"),
        ("2021-06-29", "2021-06-29"),
        ("2007-10-10T17:58:06Z", "2007-10-10"),  # arXiv Atom's `published`
        ("2021-06-29T10:00:00+02:00", "2021-06-29"),
        ("2021-06-29 10:00", "2021-06-29"),
        ("2007/04/02/", "2007-04-02"),  # RIS
        ("2007///", "2007"),
        ("2007/04//", "2007-04"),
        ("2007/04/02/Spring", "2007-04-02"),
        ("2021-06-01/2021-06-30", "2021-06-01"),  # a biblatex range: its start
        ("Mon, 2 Apr 2007 19:18:42 GMT", "2007-04-02"),  # arXiv OAI's `created`
        ("  2021-06-29\n", "2021-06-29"),
        ("2021-02-30", ""),
        ("2021-13", ""),
        ("0999", ""),
        ("Spring 2007", ""),
        ("June 2021", ""),
        ("soon", ""),
        ("", ""),
        (None, ""),
        ("Mon, 2 Apr 99999999999999999999 19:18:42 GMT", ""),  # overflowed the e-mail date parser
        ("Mon, 2 Apr 2007 19:18:42 +99999999999999999", ""),
    ],
)
def test_iso_date(text: str | None, expected: str) -> None:
    assert iso_date(text) == expected


@pytest.mark.parametrize(
    "parts, expected",
    [
        ((2021,), "2021"),
        (("2021", "6"), "2021-06"),
        ((2021, "jun"), "2021-06"),
        ((2021, "June", "29"), "2021-06-29"),
        ((2021, "Sept.", "3"), "2021-09-03"),
        ((2021, "6", "31"), "2021-06"),  # no 31 June: the month is still known
        ((2021, "13"), "2021"),
        ((2021, "Spring"), "2021"),
        ((2021, None, "3"), "2021"),  # a day without a month says nothing
        ((2021, "²"), "2021"),  # a digit to str.isdigit, not to int(): raised ValueError
        ((2021, "6", "²"), "2021-06"),
        ((2021, "9" * 30), "2021"),  # raised OverflowError
        ((None, "jun"), ""),
        (("20x1", "jun"), ""),
    ],
)
def test_date_of_bibtex_parts(parts: tuple, expected: str) -> None:
    assert date_of(*parts) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0000-0002-1825-0097", "0000-0002-1825-0097"),  # ORCID's own example
        ("https://orcid.org/0000-0002-1825-0097", "0000-0002-1825-0097"),
        ("http://www.orcid.org/0000000218250097", "0000-0002-1825-0097"),
        ("orcid.org/0000-0002-1825-0097", "0000-0002-1825-0097"),
        ("ORCID: 0000-0002-1825-0097", "0000-0002-1825-0097"),
        ("0000-0002-1694-233x", "0000-0002-1694-233X"),  # check digit 10 is X
        ("0000-0002-1825-0098", ""),  # wrong check digit
        ("0000-0002-1694-2330", ""),
        ("0000-0002-1825-009", ""),
        ("https://example.org/0000-0002-1825-0097", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_orcid_checks_its_check_digit(text: str | None, expected: str) -> None:
    assert orcid(text) == expected


@pytest.mark.parametrize(
    "value, expected",
    [(394, 394), (0, 0), ("394", 394), (" 12 ", 12), (-1, None), (True, None), (3.0, None), ("many", None)]
    + [("1,234", None), ("²", None), (None, None), ("9" * 13, None)],
)
def test_citation_count(value: object, expected: int | None) -> None:
    assert citation_count(value) == expected


def test_venue_names_are_one_line_and_limited() -> None:
    assert venue_name("  Physical\n Review   D ") == "Physical Review D"
    long = venue_name("Proceedings " * 100)
    assert len(long) <= MAX_VENUE_CHARS and long.endswith("Proceedings…")


@pytest.mark.parametrize(
    "venue, expected",
    [("arXiv", True), ("arXiv preprint arXiv:2101.11408", True), ("CoRR", True), ("bioRxiv", True)]
    + [("Physical Review D", False), ("ArXiving Studies", False), ("", False)],
)
def test_preprint_servers(venue: str, expected: bool) -> None:
    assert is_preprint_server(venue) is expected


def test_of_normalises_and_drops_what_is_not_valid() -> None:
    found = Publication.of(
        " Physical\nReview D ",
        "2007/04/02/",
        "394",
        "OpenAlex",
        {"C. Balázs": "https://orcid.org/0000-0002-1825-0097", "E. L. Berger": "0000-0002-1825-0098", " ": "x"},
    )
    assert found == Publication(
        "Physical Review D", "2007-04-02", 394, "OpenAlex", {"C. Balázs": "0000-0002-1825-0097"}
    )
    assert found.year == 2007
    assert Publication.of(date_text="someday", citations=-5, citations_source="OpenAlex") == Publication()
    assert Publication().year is None


def test_stored_round_trip() -> None:
    found = Publication("PeerJ", "2018-02-13", 394, "OpenAlex", {"Heather A. Piwowar": "0000-0003-1613-5981"})
    stored = found.stored()
    assert stored == {
        "venue": "PeerJ",
        "date": "2018-02-13",
        "citations": 394,
        "source": "OpenAlex",
        "orcids": {"Heather A. Piwowar": "0000-0003-1613-5981"},
    }
    assert Publication.from_stored(stored) == found
    assert found.stored(["Jason Priem"]) == {k: v for k, v in stored.items() if k != "orcids"}
    assert Publication().stored() == {} and Publication.from_stored({}) == Publication()
    assert Publication.from_stored(None) == Publication()


def test_from_stored_checks_again() -> None:
    tampered = {"venue": 5, "date": "2021-02-30", "citations": "x", "source": "Me", "orcids": {"A": "bad", 1: "x"}}
    assert Publication.from_stored(tampered) == Publication()
    assert Publication.from_stored({"orcids": ["not", "a", "mapping"], "date": "2021"}) == Publication(date="2021")


def test_merged_with_keeps_the_more_precise_date_of_the_year() -> None:
    year_only, day = Publication(date="2007"), Publication(date="2007-04-02")
    assert year_only.merged_with(day, 2007).date == "2007-04-02"
    assert day.merged_with(year_only, 2007).date == "2007-04-02"
    assert year_only.merged_with(Publication(date="2008-01-02"), 2007).date == "2007"  # another year's
    assert Publication().merged_with(day, None).date == "2007-04-02"


def test_merged_with_prefers_a_published_venue_to_a_preprint_server() -> None:
    arxiv, journal = Publication(venue="arXiv"), Publication(venue="Physical Review D")
    assert arxiv.merged_with(journal, 2007).venue == "Physical Review D"
    assert Publication(venue="CoRR").merged_with(journal, 2007).venue == "Physical Review D"
    assert journal.merged_with(arxiv, 2007).venue == "Physical Review D"
    abbreviated = Publication(venue="Phys.Rev.D")
    assert journal.merged_with(abbreviated, 2007).venue == "Physical Review D"  # the fuller name, in either order
    assert abbreviated.merged_with(journal, 2007).venue == "Physical Review D"
    same_length = Publication(venue="Physical Review E")
    assert journal.merged_with(same_length, 2007).venue == same_length.merged_with(journal, 2007).venue
    assert Publication().merged_with(arxiv, 2007).venue == "arXiv"


def test_merged_with_keeps_the_larger_count_with_its_source() -> None:
    few, many = (
        Publication(citations=10, citations_source="Crossref"),
        Publication(citations=394, citations_source="OpenAlex"),
    )
    assert few.merged_with(many, None) == many
    assert many.merged_with(few, None) == many
    assert Publication().merged_with(few, None) == few
    assert few.merged_with(Publication(), None) == few


def test_merged_with_fills_in_orcids() -> None:
    first = Publication(orcids={"A": "0000-0002-1825-0097"})
    other = Publication(orcids={"A": "0000-0003-1613-5981", "B": "0000-0001-6187-6610"})
    assert first.merged_with(other, None).orcids == {"A": "0000-0002-1825-0097", "B": "0000-0001-6187-6610"}
    assert other.merged_with(Publication(), None) is other  # nothing to add: unchanged


def test_merged_with_is_the_same_in_either_order_when_values_tie() -> None:
    """Equal precision, equal counts, two iDs for one name: the smaller value, whichever is read first."""
    first = Publication.of("", "2007-04-02", 5, "OpenAlex", {"A": "0000-0002-1825-0097", "B": "0000-0003-1613-5981"})
    second = Publication.of("", "2007-04-01", 5, "Crossref", {"A": "0000-0001-6187-6610"})
    assert first.merged_with(second, 2007) == second.merged_with(first, 2007)
    merged = first.merged_with(second, 2007)
    assert (merged.date, merged.citations, merged.citations_source) == ("2007-04-01", 5, "Crossref")
    assert merged.orcids == {"A": "0000-0001-6187-6610", "B": "0000-0003-1613-5981"}
