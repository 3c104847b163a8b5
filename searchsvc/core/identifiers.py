"""A paper's identifiers elsewhere (arXiv id, DOI, web address), normalised and made safe to link.

Sources write the same identifier many ways (`arXiv:2001.01234v2`, `https://doi.org/10.1/ABC`,
`doi:10.1/abc`); normalising here lets merging compare them and lets every page and export
build links from values that were checked once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

# New-style (2007 on: 0704.0001, 2001.01234) and old-style (hep-th/9901001, math.GT/0309136) ids.
_ARXIV = re.compile(r"(\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?")
_ARXIV_PREFIX = re.compile(r"^(?:arxiv:|https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE)
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_DOI_PREFIX = re.compile(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/)", re.IGNORECASE)
# An address pasted without its scheme (`arxiv.org/abs/…`, `doi.org/10.…`).
_WITHOUT_SCHEME = re.compile(r"^(?:www\.|export\.)?(?:arxiv\.org|(?:dx\.)?doi\.org)/", re.IGNORECASE)
# DOIs are short (the longest registered are about 300 characters); a longer value is not one.
MAX_DOI_CHARS = 300
# Browsers and servers commonly cap URLs near 2,000 characters; a longer "URL" is not a link to a paper.
MAX_URL_CHARS = 2000
_LINK_SCHEMES = ("http", "https")
# Characters a DOI may keep unescaped in the path of https://doi.org/<doi>.
_DOI_PATH_SAFE = "/:;()._-~"


def arxiv_id(text: str) -> str:
    """The arXiv id in `text` without its version suffix (`2001.01234v2` → `2001.01234`), or ''."""
    value = _ARXIV_PREFIX.sub("", text.strip()).removesuffix(".pdf")
    match = _ARXIV.fullmatch(value)
    return match[1] if match else ""


def doi(text: str) -> str:
    """The DOI in `text`, lowercase (DOIs are case-insensitive) and without a resolver prefix, or ''."""
    value = text.strip()
    if _DOI_PREFIX.match(value):
        value = unquote(_DOI_PREFIX.sub("", value))
    value = value.lower()
    return value if len(value) <= MAX_DOI_CHARS and _DOI.fullmatch(value) else ""


def web_url(text: str) -> str:
    """`text` if it is an absolute http(s) address a page may link to, else '' (no `javascript:`, no `data:`)."""
    value = text.strip()
    if not value or len(value) > MAX_URL_CHARS or any(c.isspace() or not c.isprintable() for c in value):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:
        return ""
    return value if parts.scheme.lower() in _LINK_SCHEMES and parts.hostname else ""


class Link(NamedTuple):
    """A link to the original: what a page shows (`label`), where it goes, and the identifier it stands for."""

    label: str
    href: str
    identifier: str


@dataclass(frozen=True, slots=True)
class Identifiers:
    """What identifies a paper outside this service; each '' when no source gave it."""

    arxiv: str = ""
    doi: str = ""
    url: str = ""

    @classmethod
    def of(cls, arxiv: str = "", doi_text: str = "", url: str = "") -> Identifiers:
        """Identifiers from raw source values, each normalised (a value that is not valid is dropped)."""
        return cls(arxiv_id(arxiv) if arxiv else "", doi(doi_text) if doi_text else "", web_url(url) if url else "")

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any] | None) -> Identifiers:
        """Identifiers as `stored()` kept them (absent before engines stored them: none), checked again:
        what an index holds on disk is not trusted to be a safe link."""
        stored = stored if isinstance(stored, Mapping) else {}
        values = {f.name: stored.get(f.name) for f in fields(cls)}
        return cls.of(*(value if isinstance(value, str) else "" for value in values.values()))

    def stored(self) -> dict[str, str]:
        """The known identifiers only, as engines store them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    def filled_from(self, other: Identifiers) -> Identifiers:
        """These identifiers with the ones they lack taken from `other`."""
        missing = {f.name: getattr(other, f.name) for f in fields(self) if not getattr(self, f.name)}
        return replace(self, **missing)

    def merge_keys(self) -> list[str]:
        """Keys under which two records are the same paper (the URL is not one: mirrors differ)."""
        return [
            key for key in (f"arxiv:{self.arxiv}" if self.arxiv else "", f"doi:{self.doi}" if self.doi else "") if key
        ]

    def links(self) -> list[Link]:
        """Each link to the original: arXiv, DOI, then the source's own page."""
        found = []
        if self.arxiv:
            found.append(Link("arXiv", f"https://arxiv.org/abs/{self.arxiv}", self.arxiv))
        if self.doi:
            found.append(Link("DOI", "https://doi.org/" + quote(self.doi, safe=_DOI_PATH_SAFE), self.doi))
        if self.url:
            found.append(Link("Source", self.url, self.url))
        return found


class Pasted(NamedTuple):
    """An identifier a whole query is (issue #33): the key merging files the paper under, and how a
    page names it."""

    key: str  # "arxiv:1909.02107" or "doi:10.1145/3394486.3403059" (`Identifiers.merge_keys`)
    label: str  # "arXiv:1909.02107" or "DOI 10.1145/3394486.3403059"


def pasted(query: str) -> Pasted | None:
    """The arXiv id or DOI `query` is, whole (old and new arXiv ids, with or without `arXiv:` or a
    version; a DOI with or without `doi:`; their arxiv.org, doi.org and dx.doi.org addresses), or
    None: a query with anything else in it is searched as words."""
    value = query.strip()
    if not value or len(value) > MAX_URL_CHARS or any(c.isspace() for c in value):
        return None
    if _WITHOUT_SCHEME.match(value):
        value = "https://" + value
    found = Identifiers.of(arxiv=value, doi_text=value)
    if found.arxiv:
        return Pasted(f"arxiv:{found.arxiv}", f"arXiv:{found.arxiv}")
    if found.doi:
        return Pasted(f"doi:{found.doi}", f"DOI {found.doi}")
    return None
