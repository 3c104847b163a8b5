"""arXiv Atom: a real API response, and every hostile or broken file refused cleanly, in bounded memory."""

from __future__ import annotations

import resource
import time

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.publication import Publication
from searchsvc.ingest.arxiv_atom import MAX_ENTRY_CHARS, read_arxiv_atom
from searchsvc.ingest.journal_ref import journal_ref_venue
from tests.helpers.paths import SOURCE_SAMPLES
from tests.helpers.records import BILLION_LAUGHS

FEED = '<feed xmlns="http://www.w3.org/2005/Atom">{}</feed>'


def test_real_api_response() -> None:
    first, second = read_arxiv_atom(SOURCE_SAMPLES / "arxiv-api.atom", lambda m: None)
    assert first.title == (
        "On coincidence of Alday-Maldacena-regularized $σ$-model and Nambu-Goto areas of minimal surfaces"
    )
    assert first.abstract.startswith("For the $\\sigma$-model and Nambu-Goto actions, values of the Alday-")
    assert (first.year, first.subjects, first.authors) == (2007, ["hep-th"], ["A. Popolitov"])
    assert first.identifiers == Identifiers("0710.2073", "10.1134/s0021364007210011", "")
    assert str(first.sources[0]).endswith("arxiv-api.atom:8")
    assert second.authors == ["David Prendergast", "M. Nolan", "J. C. Greer"]  # affiliations are not names
    assert second.subjects == ["cond-mat.str-el"]
    assert second.identifiers.arxiv == "cond-mat/0102536"
    # the journal of journal_ref, and the first version's date (`published`, not `updated`)
    assert first.publication == Publication(venue="JETP Lett.", date="2007-10-10")
    assert second.publication == Publication(venue="J. Chem. Phys.", date="2001-02-28")


@pytest.mark.parametrize(
    "journal_ref, venue",
    [
        ("JETP Lett.86:559-561,2008", "JETP Lett."),
        ("J. Chem. Phys. 115, 1626 (2001)", "J. Chem. Phys."),
        ("Phys.Rev.D76:013009,2007", "Phys.Rev.D"),
        ("Software: Practice and Experience 51 (8), 2021", "Software: Practice and Experience"),
        ("Int.J.Mod.Phys.A22:4587-4599,2007", "Int.J.Mod.Phys.A"),
        ("JHEP 0709:001,2007", "JHEP"),
        ("Phys. Rev. Lett. 99, 021802 (2007); Erratum-ibid. 100, 019901 (2008)", "Phys. Rev. Lett."),
        ("J. Stat. Mech. (2007) P10001", "J. Stat. Mech."),
        ("Nature, vol. 521, pp. 436-444, 2015", "Nature"),
        ("A&A 471, L1 (2007)", "A&A"),
        (
            "Proc. of the 23rd Int. Conf. on Machine Learning (ICML 2006), pp. 1-8",
            "Proc. of the 23rd Int. Conf. on Machine Learning",
        ),
        ("F1000Research 5, 123 (2016)", "F1000Research"),
        # nothing before the number reads as a name: the whole line
        ("Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing, 1-10", None),
        ("2019 IEEE International Conference on Robotics and Automation (ICRA)", None),
        ("Physical Review D", None),
        ("  JETP Lett.\n  86:559-561,2008 ", "JETP Lett."),
        ("", ""),
    ],
)
def test_the_venue_of_a_journal_ref(journal_ref: str, venue: str | None) -> None:
    assert journal_ref_venue(journal_ref) == (venue if venue is not None else journal_ref)


def test_an_entry_without_journal_ref_or_published(write) -> None:
    path = write("f.atom", FEED.format("<entry><title>T</title><updated>2008-01-02T00:00:00Z</updated></entry>"))
    (paper,) = read_arxiv_atom(path, lambda m: None)
    assert (paper.year, paper.publication) == (2008, Publication(date="2008"))  # the update's year, not its date


@pytest.mark.reliability
def test_billion_laughs_is_refused_at_once(write) -> None:
    path = write("bomb.atom", BILLION_LAUGHS)
    started, peak_before = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SourceFormatError, match=rf"^{path}:2: refused: the XML declares a DTD"):
        list(read_arxiv_atom(path, lambda m: None))
    assert time.monotonic() - started < 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 50_000  # KiB: nothing expanded


@pytest.mark.reliability
def test_external_entity_is_refused(write) -> None:
    path = write(
        "xxe.atom",
        '<?xml version="1.0"?>\n<!DOCTYPE f [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
        + FEED.format("<entry><title>&x;</title></entry>"),
    )
    with pytest.raises(SourceFormatError, match="refused"):
        list(read_arxiv_atom(path, lambda m: None))


@pytest.mark.reliability
def test_one_huge_entry_stops_at_the_entry_limit(write) -> None:
    path = write(
        "huge.atom",
        FEED.format("<entry><title>T</title><summary>" + "x" * (MAX_ENTRY_CHARS + 10) + "</summary></entry>"),
    )
    with pytest.raises(SourceFormatError, match=rf"^{path}:1: entry at line 1 is longer than"):
        list(read_arxiv_atom(path, lambda m: None))


@pytest.mark.parametrize(
    "content, line, problem",
    [
        (FEED.format("<entry>\n<id>http://arxiv.org/abs/1</id></entry>"), 1, "entry has no title"),
        (
            FEED.format("\n<entry><title>T</title><published>soon</published></entry>"),
            2,
            "'published' must hold a year",
        ),
        (FEED.format("<entry><title>T</entry>"), 1, "not well-formed XML: mismatched tag"),
        ("<rss><channel/></rss>", 1, "not an Atom feed: the document is <rss>"),
        (FEED.format(""), 1, "feed has no entries"),
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", 1, "not well-formed XML"),
        (
            '<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>T</title>\n',
            2,
            "not well-formed XML: no element found",
        ),
    ],
)
def test_malformed_feeds_name_their_line(write, content, line: int, problem: str) -> None:
    path = write("bad.atom", content)
    with pytest.raises(SourceFormatError, match=rf"^{path}:{line}: {problem}"):
        list(read_arxiv_atom(path, lambda m: None))
