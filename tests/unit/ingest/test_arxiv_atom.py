"""arXiv Atom: a real API response, and every hostile or broken file refused cleanly, in bounded memory."""

from __future__ import annotations

import resource
import time

import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.ingest.arxiv_atom import MAX_ENTRY_CHARS, read_arxiv_atom
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
