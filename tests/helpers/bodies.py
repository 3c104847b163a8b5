"""Write-API bodies of title-only papers in every text format the readers read: the smallest records
each format allows, so a body of a given size holds as many papers as it can."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from xml.sax.saxutils import escape

from tests.helpers.records import profile_page

_ATOM_ENTRY = (
    "<entry><id>http://arxiv.org/abs/{arxiv}v1</id><title>{title}</title><summary></summary>"
    "<published>2020-01-01T00:00:00Z</published></entry>"
)
_ARXIV_NUMBERS = itertools.count()  # an arXiv id is a paper: every Atom entry made here gets its own


def _arxiv_id() -> str:
    number = next(_ARXIV_NUMBERS)
    return f"{2001 + number // 100_000}.{number % 100_000:05d}"


# media type -> the body of the titles given
FORMATS: dict[str, Callable[[list[str]], str]] = {
    "application/x-ndjson": lambda titles: "".join(json.dumps({"title": title}) + "\n" for title in titles),
    "application/x-bibtex": lambda titles: "".join(
        f"@article{{{title.replace(' ', '-')},\n  title = {{{title}}}\n}}\n" for title in titles
    ),
    "application/x-research-info-systems": lambda titles: "".join(
        f"TY  - JOUR\nTI  - {title}\nER  - \n" for title in titles
    ),
    "text/csv": lambda titles: "title\n" + "".join(f"{title}\n" for title in titles),
    "text/tab-separated-values": lambda titles: "title\n" + "".join(f"{title}\n" for title in titles),
    "application/atom+xml": lambda titles: (
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        + "".join(_ATOM_ENTRY.format(arxiv=_arxiv_id(), title=escape(title)) for title in titles)
        + "</feed>\n"
    ),
    "text/plain": lambda titles: profile_page(
        "Quinn Quokka", [("arXiv2020", title, "An abstract.", "cs.LG") for title in titles]
    ),
}


def titles(word: str, count: int) -> list[str]:
    """`count` distinct titles made of `word` and a number, as short as titles get."""
    return [f"{word} {number}" for number in range(count)]


def body(content_type: str, word: str, count: int) -> bytes:
    return FORMATS[content_type](titles(word, count)).encode("utf-8")


def largest_body(content_type: str, word: str, limit: int, most_records: int) -> tuple[bytes, int]:
    """The body of as many papers as fit in `limit` bytes and `most_records` records, and how many."""
    per_paper = len(body(content_type, word, 200)) / 200
    count = min(int(limit / per_paper), most_records)
    while len(made := body(content_type, word, count)) > limit:
        count -= max(1, (len(made) - limit) // int(per_paper) + 1)
    while count < most_records and len(bigger := body(content_type, word, count + 1)) <= limit:
        made, count = bigger, count + 1
    return made, count
