"""Reader for arXiv API results (`.atom`, or `.xml` in the Atom namespace): one paper per `<entry>`.

`id` (the arXiv abs page), `title`, `summary`, `author/name`, `arxiv:primary_category` and
`category` terms, `published` (the first version's date, and so the year), `arxiv:doi` and the
links, and `arxiv:journal_ref`'s journal as the venue (ingest/journal_ref.py). The XML is parsed by
defusedxml with DTDs refused, so no entity is ever expanded (a "billion laughs" file stops at its
DOCTYPE) and nothing is fetched; it is fed in blocks and each entry is dropped once read, so
memory does not grow with the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from xml.etree.ElementTree import ParseError
from xml.parsers.expat import ErrorString

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.ingest.fields import FieldProblem, dated, distinct, one_line, year_in
from searchsvc.ingest.journal_ref import journal_ref_venue
from searchsvc.ingest.lines import MAX_LINE_BYTES

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
_BLOCK_BYTES = 1 << 16
# The text of one entry (title, summary, names) is a few kilobytes; more is not a paper record.
MAX_ENTRY_CHARS = MAX_LINE_BYTES
_TEXT = {
    f"{ATOM}id",
    f"{ATOM}title",
    f"{ATOM}summary",
    f"{ATOM}published",
    f"{ATOM}updated",
    f"{ATOM}name",
    f"{ARXIV}doi",
    f"{ARXIV}journal_ref",
}


class _Entry:
    """What one `<entry>` said, as its elements close."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.text: dict[str, str] = {}
        self.authors: list[str] = []
        self.subjects: list[str] = []
        self.links: list[dict[str, str]] = []


class _Target:
    """ElementTree parser target: keeps the open entry only, never the tree."""

    def __init__(self) -> None:
        self.line: Callable[[], int] = lambda: 0  # the parser's current line, once it exists
        self.depth = 0
        self.root = ""
        self.entry: _Entry | None = None
        self.done: list[_Entry] = []
        self._chars: list[str] = []
        self._size = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth == 1:
            self.root = tag
        elif self.depth == 2 and tag == f"{ATOM}entry":
            self.entry = _Entry(self.line())
        elif self.entry is not None:
            if tag == f"{ARXIV}primary_category":
                self.entry.subjects.insert(0, attrib.get("term", ""))
            elif tag == f"{ATOM}category":
                self.entry.subjects.append(attrib.get("term", ""))
            elif tag == f"{ATOM}link":
                self.entry.links.append(dict(attrib))
        self._chars = []

    def data(self, text: str) -> None:
        if self.entry is not None:
            self._size += len(text)
            if self._size > MAX_ENTRY_CHARS:
                raise FieldProblem(f"entry at line {self.entry.line} is longer than {MAX_ENTRY_CHARS:,} characters")
            self._chars.append(text)

    def end(self, tag: str) -> None:
        self.depth -= 1
        entry = self.entry
        if entry is not None:
            if tag == f"{ATOM}entry" and self.depth == 1:
                self.done.append(entry)
                self.entry, self._size = None, 0
            elif tag == f"{ATOM}name":
                entry.authors.append("".join(self._chars))
            elif tag in _TEXT:
                entry.text.setdefault(tag, "".join(self._chars))
        self._chars = []

    def close(self) -> None:
        return None


def read_arxiv_atom(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per entry of the feed, failing on the first malformed one."""
    where = str(path)
    target = _Target()
    parser = DefusedXMLParser(target=target, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    target.line = lambda: parser.parser.CurrentLineNumber
    found = 0
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(_BLOCK_BYTES), b""):
            _feed(where, parser, block)
            if target.root and target.root != f"{ATOM}feed":
                raise SourceFormatError(
                    where,
                    1,
                    f"not an Atom feed: the document is <{_local(target.root)}>, expected <feed> in the Atom namespace",
                )
            for entry in target.done:
                yield _paper(where, entry, warn)
                found += 1
            target.done.clear()
        last_line = parser.parser.CurrentLineNumber  # closing the parser drops its expat object
        _feed(where, parser, None)
    if found == 0:
        raise SourceFormatError(where, last_line, "feed has no entries")


def _feed(where: str, parser: DefusedXMLParser, block: bytes | None) -> None:
    line = parser.parser.CurrentLineNumber
    try:
        parser.feed(block) if block is not None else parser.close()
    except ParseError as exc:
        raise SourceFormatError(
            where, exc.position[0], f"not well-formed XML: {ErrorString(exc.code)} (column {exc.position[1] + 1})"
        ) from None
    except DefusedXmlException as exc:
        raise SourceFormatError(
            where,
            parser.parser.CurrentLineNumber or line,
            f"refused: the XML declares a DTD or entities ({type(exc).__name__}), which an Atom feed never needs",
        ) from None
    except FieldProblem as exc:
        raise SourceFormatError(where, parser.parser.CurrentLineNumber, str(exc)) from None
    except LookupError as exc:  # expat asks the codecs for the declaration's encoding: an unknown name
        raise SourceFormatError(where, line or 1, f"the XML declares an encoding Python does not know: {exc}") from None


def _paper(where: str, entry: _Entry, warn: Callable[[str], None]) -> Paper:
    title = one_line(entry.text.get(f"{ATOM}title"))
    if not title:
        raise SourceFormatError(where, entry.line, "entry has no title")
    try:
        year = year_in(entry.text.get(f"{ATOM}published") or entry.text.get(f"{ATOM}updated"), "published")
    except FieldProblem as exc:
        raise SourceFormatError(where, entry.line, str(exc)) from None
    page = one_line(entry.text.get(f"{ATOM}id"))
    doi_link = next((link.get("href", "") for link in entry.links if link.get("title") == "doi"), "")
    alternate = next((link.get("href", "") for link in entry.links if link.get("rel") == "alternate"), "")
    identifiers = Identifiers.of(arxiv=page, doi_text=one_line(entry.text.get(f"{ARXIV}doi")) or doi_link)
    if not identifiers.arxiv:  # a feed from elsewhere: its own page is the link to the original
        identifiers = Identifiers.of(doi_text=identifiers.doi, url=alternate or page)
    venue = journal_ref_venue(entry.text.get(f"{ARXIV}journal_ref"))
    year, publication = dated(
        year,
        Publication.of(venue, entry.text.get(f"{ATOM}published")),
        lambda m: warn(f"{where}:{entry.line}: {m}"),
    )
    return Paper(
        id=paper_id_for_title(title),
        title=title,
        abstract=one_line(entry.text.get(f"{ATOM}summary")),
        year=year,
        subjects=distinct(entry.subjects),
        authors=distinct(entry.authors),
        sources=[SourceLocation(where, entry.line)],
        identifiers=identifiers,
        publication=publication,
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
