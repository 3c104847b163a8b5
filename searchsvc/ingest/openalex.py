"""Reader for OpenAlex works as JSON lines (one work object a line, as the API's `results` or the snapshot hold them).

`display_name` (or `title`), the abstract rebuilt from `abstract_inverted_index`, `publication_year`,
`authorships` (and each author's `orcid`), topics (or, in older records, concepts) as subjects, `doi`,
an arXiv id where a location is an arXiv page, the primary location's source as the venue (in older
records `host_venue`), `publication_date`, and `cited_by_count` as OpenAlex's citation count. The
paper id is derived from the title, so the same paper read from another source becomes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.core.identifiers import Identifiers, arxiv_id
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.core.text import preview
from searchsvc.ingest.fields import FieldProblem, dated, distinct, one_line, year_in
from searchsvc.ingest.json_records import json_papers

# Positions beyond this are not an abstract (the longest run to a few thousand words); the
# rebuilt list is allocated up to the largest position, so it is capped before that.
MAX_ABSTRACT_WORDS = 20_000
# Concepts are scored 0..1 for every level of a deep hierarchy; the top-level ones (0 and 1) are the subjects.
MAX_CONCEPT_LEVEL = 1
CITATIONS_SOURCE = "OpenAlex"  # who counted `cited_by_count`


def read_openalex(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per work."""
    return json_papers(path, lambda obj, where: _paper(obj, where, warn))


def _paper(obj: dict[str, Any], where: SourceLocation, warn: Callable[[str], None]) -> Paper:
    title = one_line(_string(obj.get("display_name")) or _string(obj.get("title")))
    if not title:
        raise FieldProblem("work has no display_name or title")
    year = obj.get("publication_year")
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
        raise FieldProblem(f"'publication_year' must be an integer, found {preview(str(year))}")
    doi_text = _string(obj.get("doi"))
    identifiers = Identifiers.of(arxiv=_arxiv(obj), doi_text=doi_text, url=_landing_page(obj))
    if doi_text and not identifiers.doi:
        warn(f"{where}: 'doi' {preview(doi_text)} is not a DOI; ignored")
    authors = [_get(a, "author") for a in _list(obj, "authorships")]
    venue = _string(_get(obj.get("primary_location"), "source", "display_name"))
    publication = Publication.of(
        venue or _string(_get(obj.get("host_venue"), "display_name")),
        _string(obj.get("publication_date")),
        obj.get("cited_by_count"),
        CITATIONS_SOURCE,
        _orcids(authors),
    )
    read_year = year_in(str(year), "publication_year") if year is not None else None
    paper_year, publication = dated(read_year, publication, lambda m: warn(f"{where}: {m}"))
    return Paper(
        id=paper_id_for_title(title),
        title=title,
        abstract=_abstract(obj.get("abstract_inverted_index")),
        year=paper_year,
        subjects=_subjects(obj),
        authors=distinct(_string(_get(a, "display_name")) for a in authors),
        sources=[where],
        identifiers=identifiers,
        publication=publication,
    )


def _orcids(authors: list[Any]) -> dict[str, str]:
    """Each author's ORCID iD (`https://orcid.org/0000-…`) by the name kept for that authorship."""
    found: dict[str, str] = {}
    for author in authors:
        name, given = one_line(_string(_get(author, "display_name"))), _string(_get(author, "orcid"))
        if name and given:
            found.setdefault(name, given)
    return found


def _abstract(index: Any) -> str:
    """The text of an inverted index {word: [positions]}: each word put back at its positions."""
    if index is None:
        return ""
    if not isinstance(index, dict):
        raise FieldProblem("'abstract_inverted_index' must be an object of word: [positions]")
    placed: dict[int, str] = {}
    for word, positions in index.items():
        if not isinstance(positions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 <= p < MAX_ABSTRACT_WORDS for p in positions
        ):
            raise FieldProblem(
                f"'abstract_inverted_index' positions of {preview(word)} must be integers"
                f" from 0 to {MAX_ABSTRACT_WORDS - 1}"
            )
        for position in positions:
            placed[position] = word
    return one_line(" ".join(placed[p] for p in sorted(placed)))


def _subjects(obj: dict[str, Any]) -> list[str]:
    topics = [_string(t.get("display_name")) for t in _list(obj, "topics") if isinstance(t, dict)]
    if topics:
        return distinct(topics)
    return distinct(
        _string(c.get("display_name"))
        for c in _list(obj, "concepts")
        if isinstance(c, dict) and isinstance(c.get("level"), int) and c["level"] <= MAX_CONCEPT_LEVEL
    )


def _arxiv(obj: dict[str, Any]) -> str:
    """An arXiv id from a location's landing page (OpenAlex lists arXiv as a location, not an id)."""
    locations = [obj.get("primary_location"), *_list(obj, "locations")]
    for location in locations:
        found = arxiv_id(_string(_get(location, "landing_page_url")))
        if found:
            return found
    return ""


def _landing_page(obj: dict[str, Any]) -> str:
    return _string(_get(obj.get("primary_location"), "landing_page_url"))


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _list(obj: dict[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldProblem(f"{key!r} must be a list, found {preview(str(value))}")
    return value


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
