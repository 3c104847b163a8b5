"""A search's papers most recently added as an Atom 1.0 document (RFC 4287), written with ElementTree.

ElementTree escapes every text and attribute; what it does not refuse are characters XML 1.0
cannot hold at all (most C0 controls, U+FFFE, U+FFFF, lone surrogates), which a record may
carry and which would make the whole feed unreadable: they are dropped here.

Links are root-relative (`/papers/<id>`): a feed reader resolves them against the feed's own
address, so no link is built from the request's Host header, which the client chooses. Ids
are URNs made from the paper id (entries) and the search (feed), so they stay the same across
rebuilds, hosts and proxies, as Atom asks of ids.

Titles and abstracts are their plain reading (`core.tex.plain`: `$\\alpha$-divergence` reads
`α-divergence`), as a page's <title> is: feed readers show text, not TeX, and few render MathML.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote
from xml.etree import ElementTree

from searchsvc.core.paper import Paper
from searchsvc.core.publication import date_parts
from searchsvc.core.tex import plain

ATOM = "http://www.w3.org/2005/Atom"
MEDIA_TYPE = "application/atom+xml"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

ElementTree.register_namespace("", ATOM)


@dataclass(frozen=True)
class FeedHead:
    """What the feed says of itself."""

    title: str
    search_pairs: Sequence[tuple[str, str]]  # the search, as canonical query parameters: the feed's identity
    self_link: str  # this feed
    page_link: str  # the same search on the search page
    updated: str  # RFC 3339: when the latest of its entries changed (core.arrival)


def feed_id(search_pairs: Sequence[tuple[str, str]]) -> str:
    """The same search gets the same id whatever the order of its parameters."""
    canonical = "&".join(f"{quote(name)}={quote(value)}" for name, value in sorted(search_pairs))
    return "urn:searchsvc:feed:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def entry_id(paper_id: str) -> str:
    return "urn:searchsvc:paper:" + quote(paper_id, safe="")


def atom_feed(head: FeedHead, papers: Sequence[Paper], paper_link: Callable[[str], str]) -> bytes:
    """The feed as UTF-8 bytes; `paper_link` gives a paper page's path from the paper's id."""
    feed = ElementTree.Element(_tag("feed"))
    _text(feed, "id", feed_id(head.search_pairs))
    _text(feed, "title", head.title)
    _text(feed, "updated", head.updated)
    _link(feed, "self", head.self_link, MEDIA_TYPE)
    _link(feed, "alternate", head.page_link, "text/html")
    _person(feed, "searchsvc")  # Atom wants a feed author when an entry may have none
    _text(feed, "generator", "searchsvc")
    for paper in papers:
        entry = ElementTree.SubElement(feed, _tag("entry"))
        _text(entry, "id", entry_id(paper.id))
        _text(entry, "title", plain(paper.title))
        _text(entry, "updated", paper.arrival.changed if paper.arrival else head.updated)
        if paper.publication.date:  # its first day, as RFC 3339 wants a whole date and time
            _text(entry, "published", _first_instant(paper.publication.date))
        _link(entry, "alternate", paper_link(paper.id), "text/html")
        for name in paper.authors:
            _person(entry, name)
        for subject in paper.subjects:
            ElementTree.SubElement(entry, _tag("category"), term=_xml_text(subject))
        if paper.abstract:
            _text(entry, "summary", plain(paper.abstract))
    return ElementTree.tostring(feed, encoding="utf-8", xml_declaration=True)


def _first_instant(iso: str) -> str:
    """The first moment of a date as precise as the sources give it: "2021-06" → "2021-06-01T00:00:00Z"."""
    year, month, day = (date_parts(iso) + [1, 1])[:3]
    return f"{year:04d}-{month:02d}-{day:02d}T00:00:00Z"


def _tag(name: str) -> str:
    return f"{{{ATOM}}}{name}"


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("", text)


def _text(parent: ElementTree.Element, name: str, text: str) -> None:
    ElementTree.SubElement(parent, _tag(name)).text = _xml_text(text)


def _link(parent: ElementTree.Element, rel: str, href: str, media_type: str) -> None:
    ElementTree.SubElement(parent, _tag("link"), rel=rel, href=href, type=media_type)


def _person(parent: ElementTree.Element, name: str) -> None:
    _text(ElementTree.SubElement(parent, _tag("author")), "name", name)
