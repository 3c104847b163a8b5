"""Reader for JSON-lines record files, the format of `shared/data/*/corpus.jsonl`.

One object a line: `id`, `title`, `abstract`, `year`, `categories` (the subjects) and
`authors`, and optionally `doi`, `arxiv` and `url`, and where and when the paper appeared
(issue #31): `venue` (a string), `date` (a string, ISO 8601 as precise as known: `2021`,
`2021-06` or `2021-06-29`), `citations` (a whole number) with `citations_source` (who counted
them, a string) and `orcids` (an object of author name, as in `authors`: ORCID iD), each of them
also null; as our export writes them. A value of the wrong JSON type is an error of its line; a
date or ORCID iD that is not one is left out with a warning. Other fields are ignored; blank
lines are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, id_problem, paper_id_for_title
from searchsvc.core.publication import Publication, orcid
from searchsvc.core.text import preview
from searchsvc.ingest.fields import MAX_YEAR, MIN_YEAR, FieldProblem, date_in, dated, distinct, one_line, string_field
from searchsvc.ingest.json_records import json_papers


def read_jsonl(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per non-blank line, failing on the first malformed one."""
    return json_papers(path, lambda obj, where: _paper(obj, where, warn))


def _paper(obj: dict[str, Any], where: SourceLocation, warn: Callable[[str], None]) -> Paper:
    title = _text(obj, "title")
    if not title:
        raise FieldProblem("record has no title")
    given_id = obj.get("id")
    if isinstance(given_id, bool) or not isinstance(given_id, (str, int, type(None))):
        raise FieldProblem(f"'id' must be a string or an integer, found {json.dumps(given_id)}")
    paper_id = str(given_id).strip() if given_id is not None else ""
    if paper_id and (problem := id_problem(paper_id)):
        raise FieldProblem(f"'id' {preview(paper_id)} {problem}")
    given = {name: _text(obj, name) for name in ("arxiv", "doi", "url")}
    identifiers = Identifiers.of(arxiv=given["arxiv"], doi_text=given["doi"], url=given["url"])
    for name, value in given.items():
        if value and not getattr(identifiers, name):
            warn(f"{where}: {name!r} {preview(value)} is not valid; ignored")
    authors = _names(obj, "authors")
    year, publication = dated(
        _year(obj.get("year")), _publication(obj, authors, where, warn), lambda m: warn(f"{where}: {m}")
    )
    return Paper(
        id=paper_id or paper_id_for_title(title),
        title=title,
        abstract=_text(obj, "abstract"),
        year=year,
        subjects=_names(obj, "categories"),
        authors=authors,
        sources=[where],
        identifiers=identifiers,
        publication=publication,
    )


def _publication(
    obj: dict[str, Any], authors: list[str], where: SourceLocation, warn: Callable[[str], None]
) -> Publication:
    """`venue`, `date`, `citations`, `citations_source` and `orcids`: FieldProblem for a value of the wrong
    type, a warning for a date, count or ORCID iD that is not one (which is left out)."""
    date = date_in(_text(obj, "date"), "'date'", lambda message: warn(f"{where}: {message}"))
    citations = obj.get("citations")
    if citations is not None and (isinstance(citations, bool) or not isinstance(citations, int)):
        raise FieldProblem(f"'citations' must be a whole number or null, found {json.dumps(citations)[:60]}")
    if citations is not None and citations < 0:
        warn(f"{where}: 'citations' {citations} is not a count; ignored")
    orcids = obj.get("orcids")
    if orcids is not None and (
        not isinstance(orcids, dict) or not all(isinstance(v, str) or v is None for v in orcids.values())
    ):
        raise FieldProblem(
            f"'orcids' must be an object of author name: ORCID iD, or null, found {json.dumps(orcids)[:60]}"
        )
    kept: dict[str, str] = {}
    for name, given in (orcids or {}).items():
        if not given:
            continue
        if one_line(name) not in authors:
            warn(f"{where}: 'orcids' names {preview(name)}, who is not one of the 'authors'; ignored")
        elif not orcid(given):
            warn(f"{where}: 'orcids' of {preview(name)}: {preview(given)} is not an ORCID iD; ignored")
        else:
            kept[one_line(name)] = given
    return Publication.of(_text(obj, "venue"), date, citations, _text(obj, "citations_source"), kept)


def _text(obj: dict[str, Any], key: str) -> str:
    return one_line(string_field(obj, key))


def _year(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_YEAR <= value <= MAX_YEAR:
        raise FieldProblem(f"'year' must be a year such as 2021 or null, found {json.dumps(value)[:60]}")
    return value


def _names(obj: dict[str, Any], key: str) -> list[str]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FieldProblem(f"'{key}' must be a list of strings, found {json.dumps(value)[:60]}")
    return distinct(value)
