"""Reader for the arXiv OAI-PMH metadata snapshot (`arxiv-metadata-oai-snapshot.json`, JSON lines).

Each line is one arXiv paper: `id`, `title`, `abstract`, `categories` (space-separated),
`authors_parsed` ([last, first, suffix] lists), `versions` (the first one's date is the year),
`update_date`, `doi`. The arXiv id goes into the identifiers; the paper id is derived from the
title, as for the arXiv listings on profile pages, so the same paper from both becomes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.ingest.fields import FieldProblem, distinct, first_last, one_line, preview, year_in
from searchsvc.ingest.json_records import json_papers


def read_arxiv_oai(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per line of the snapshot."""
    return json_papers(path, lambda obj, where: _paper(obj, where, warn))


def _paper(obj: dict[str, Any], where: SourceLocation, warn: Callable[[str], None]) -> Paper:
    title = one_line(_string(obj, "title"))
    if not title:
        raise FieldProblem("record has no title")
    arxiv = _string(obj, "id")
    identifiers = Identifiers.of(arxiv=arxiv, doi_text=_string(obj, "doi").split(" ")[0])
    if arxiv and not identifiers.arxiv:
        raise FieldProblem(f"'id' {preview(arxiv)} is not an arXiv id such as 2101.11408 or hep-th/9901001")
    if _string(obj, "doi") and not identifiers.doi:
        warn(f"{where}: 'doi' {preview(_string(obj, 'doi'))} is not a DOI; ignored")
    return Paper(
        id=paper_id_for_title(title),
        title=title,
        abstract=one_line(_string(obj, "abstract")),
        year=_year(obj),
        subjects=distinct(_string(obj, "categories").split()),
        authors=_authors(obj),
        sources=[where],
        identifiers=identifiers,
    )


def _string(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise FieldProblem(f"{key!r} must be a string, found {preview(str(value))}")
    return value


def _year(obj: dict[str, Any]) -> int | None:
    """The year of the first version (when the paper appeared), else of the last update."""
    versions = obj.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        created = versions[0].get("created")
        if isinstance(created, str) and created.strip():
            return year_in(created, "versions")
    return year_in(_string(obj, "update_date"), "update_date")


def _authors(obj: dict[str, Any]) -> list[str]:
    parsed = obj.get("authors_parsed")
    if parsed is None:
        return distinct(_string(obj, "authors").replace(" and ", ", ").split(","))
    if not isinstance(parsed, list) or not all(
        isinstance(p, list) and all(isinstance(s, str) for s in p) for p in parsed
    ):
        raise FieldProblem(
            f"'authors_parsed' must be a list of [last, first, suffix] lists, found {preview(str(parsed))}"
        )
    return distinct(first_last(*(p + ["", "", ""])[:3]) for p in parsed)
