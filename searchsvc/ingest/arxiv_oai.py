"""Reader for the arXiv OAI-PMH metadata snapshot (`arxiv-metadata-oai-snapshot.json`, JSON lines).

Each line is one arXiv paper: `id`, `title`, `abstract`, `categories` (space-separated),
`authors_parsed` ([last, first, suffix] lists), `versions` (the first one's date is the paper's
date and year), `update_date` (the year of a record without versions), `doi`, and `journal-ref`,
whose journal is the venue (ingest/journal_ref.py). The date is never `update_date`'s: that is
when arXiv last changed the record, not when the paper appeared. The arXiv id goes into the
identifiers; the paper id is derived from the title, as for the arXiv listings on profile pages,
so the same paper from both becomes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, paper_id_for_title
from searchsvc.core.publication import Publication
from searchsvc.core.text import preview
from searchsvc.ingest.fields import FieldProblem, dated, distinct, first_last, one_line, string_field, year_in
from searchsvc.ingest.journal_ref import journal_ref_venue
from searchsvc.ingest.json_records import json_papers


def read_arxiv_oai(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per line of the snapshot."""
    return json_papers(path, lambda obj, where: _paper(obj, where, warn))


def _paper(obj: dict[str, Any], where: SourceLocation, warn: Callable[[str], None]) -> Paper:
    title = one_line(string_field(obj, "title"))
    if not title:
        raise FieldProblem("record has no title")
    arxiv = string_field(obj, "id")
    identifiers = Identifiers.of(arxiv=arxiv, doi_text=string_field(obj, "doi").split(" ")[0])
    if arxiv and not identifiers.arxiv:
        raise FieldProblem(f"'id' {preview(arxiv)} is not an arXiv id such as 2101.11408 or hep-th/9901001")
    if string_field(obj, "doi") and not identifiers.doi:
        warn(f"{where}: 'doi' {preview(string_field(obj, 'doi'))} is not a DOI; ignored")
    created = _first_version(obj)
    year, publication = dated(
        _year(obj, created),
        Publication.of(journal_ref_venue(string_field(obj, "journal-ref")), created),
        lambda m: warn(f"{where}: {m}"),
    )
    return Paper(
        id=paper_id_for_title(title),
        title=title,
        abstract=one_line(string_field(obj, "abstract")),
        year=year,
        subjects=distinct(string_field(obj, "categories").split()),
        authors=_authors(obj),
        sources=[where],
        identifiers=identifiers,
        publication=publication,
    )


def _first_version(obj: dict[str, Any]) -> str:
    """When the first version was made (`Mon, 2 Apr 2007 19:18:42 GMT`): when the paper appeared; '' if not given."""
    versions = obj.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        created = versions[0].get("created")
        if isinstance(created, str):
            return created
    return ""


def _year(obj: dict[str, Any], created: str) -> int | None:
    """The year of the first version, else of the last update."""
    if created.strip():
        return year_in(created, "versions")
    return year_in(string_field(obj, "update_date"), "update_date")


def _authors(obj: dict[str, Any]) -> list[str]:
    parsed = obj.get("authors_parsed")
    if parsed is None:
        return distinct(string_field(obj, "authors").replace(" and ", ", ").split(","))
    if not isinstance(parsed, list) or not all(
        isinstance(p, list) and all(isinstance(s, str) for s in p) for p in parsed
    ):
        raise FieldProblem(
            f"'authors_parsed' must be a list of [last, first, suffix] lists, found {preview(str(parsed))}"
        )
    return distinct(first_last(*(p + ["", "", ""])[:3]) for p in parsed)
