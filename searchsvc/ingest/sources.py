"""Source files → paper records: finds the files and picks the reader for each format.

The extension chooses; for `.json`, `.jsonl` and `.xml`, which several formats share, the
content confirms (the first record's fields, the root element's namespace), so a file is
never read by a reader that would misunderstand it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from searchsvc.core.errors import SearchsvcError, SourceFormatError
from searchsvc.core.paper import Paper
from searchsvc.ingest.arxiv_atom import ATOM, read_arxiv_atom
from searchsvc.ingest.arxiv_oai import read_arxiv_oai
from searchsvc.ingest.bibtex import read_bibtex
from searchsvc.ingest.field_limits import DEFAULT_LIMITS, FieldLimits, limited
from searchsvc.ingest.fields import composed_paper
from searchsvc.ingest.jsonl import read_jsonl
from searchsvc.ingest.lines import numbered_lines
from searchsvc.ingest.openalex import read_openalex
from searchsvc.ingest.profile import read_profile
from searchsvc.ingest.ris import read_ris
from searchsvc.ingest.table import read_table

Reader = Callable[[Path, Callable[[str], None]], Iterator[Paper]]
# Enough of an XML file to hold its declaration, comments and root element's namespace.
_XML_SNIFF_BYTES = 1 << 14


@dataclass(frozen=True)
class SourceFormat:
    """A format a rebuild reads: the name the summary counts records under, and its reader."""

    name: str
    read: Reader


PROFILE = SourceFormat("profile pages", read_profile)
RECORDS = SourceFormat("JSON lines", read_jsonl)
OAI = SourceFormat("arXiv OAI snapshot", read_arxiv_oai)
OPENALEX = SourceFormat("OpenAlex works", read_openalex)
ATOM_FEED = SourceFormat("arXiv Atom", read_arxiv_atom)
BIBTEX = SourceFormat("BibTeX", read_bibtex)
RIS = SourceFormat("RIS", read_ris)
TABLE = SourceFormat("CSV/TSV", read_table)


def _json_lines(path: Path) -> SourceFormat:
    """Our records, the arXiv OAI snapshot or OpenAlex works, by the fields of the first record."""
    for _, text in numbered_lines(path):
        if text.strip():
            try:
                first = json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                return RECORDS  # its reader names the line and column of the problem
            if isinstance(first, dict):
                if "authors_parsed" in first or ("versions" in first and isinstance(first.get("categories"), str)):
                    return OAI
                if "abstract_inverted_index" in first or "authorships" in first or "publication_year" in first:
                    return OPENALEX
            return RECORDS
    return RECORDS


def _xml(path: Path) -> SourceFormat:
    with path.open("rb") as stream:
        head = stream.read(_XML_SNIFF_BYTES)
    if ATOM.strip("{}").encode() in head:
        return ATOM_FEED
    raise SourceFormatError(
        str(path), 1, 'XML that is not an Atom feed (xmlns="http://www.w3.org/2005/Atom"): ' + ACCEPTED
    )


_JSON_LINES = "JSON lines of records, the arXiv OAI snapshot or OpenAlex works"
_TABLES = "CSV or TSV with a header row"
# Each extension a rebuild reads: what users are told it holds, and how its format is chosen.
_EXTENSIONS: list[tuple[str, str, Callable[[Path], SourceFormat]]] = [
    (".txt", "profile pages", lambda path: PROFILE),
    (".jsonl", _JSON_LINES, _json_lines),
    (".json", _JSON_LINES, _json_lines),
    (".ndjson", _JSON_LINES, _json_lines),
    (".atom", "arXiv Atom", lambda path: ATOM_FEED),
    (".xml", "arXiv Atom", _xml),
    (".bib", "BibTeX", lambda path: BIBTEX),
    (".ris", "RIS", lambda path: RIS),
    (".csv", _TABLES, lambda path: TABLE),
    (".tsv", _TABLES, lambda path: TABLE),
]
_BY_SUFFIX = {suffix: choose for suffix, _described, choose in _EXTENSIONS}
SUFFIXES = tuple(_BY_SUFFIX)


def formats_described() -> str:
    """Every format read, with its extensions ("BibTeX (.bib), ..."), from the registry above."""
    grouped: dict[str, list[str]] = {}
    for suffix, described, _choose in _EXTENSIONS:
        grouped.setdefault(described, []).append(suffix)
    return ", ".join(f"{described} ({', '.join(suffixes)})" for described, suffixes in grouped.items())


ACCEPTED = f"accepted are {formats_described()}"


def source_format(path: Path) -> SourceFormat:
    """The format `path` holds, by its extension and, where several formats share one, its content."""
    choose = _BY_SUFFIX.get(path.suffix.lower())
    if choose is None:
        raise _unsupported(path)
    return choose(path)


def _unsupported(path: Path) -> SourceFormatError:
    return SourceFormatError(str(path), 1, f"unsupported source format {path.suffix or '(no extension)'!r}: {ACCEPTED}")


def discover(paths: Iterable[Path]) -> list[Path]:
    """The source files named by `paths`, folders expanded, in one sorted order.

    Sorting makes a rebuild independent of the order sources are named in. Finding none is an
    error: a rebuild or an add of nothing is a mistyped path, not a wish to empty the index.
    """
    paths = list(paths)
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.update(p for p in path.rglob("*") if p.suffix.lower() in _BY_SUFFIX and p.is_file())
        elif path.is_file():
            if path.suffix.lower() not in _BY_SUFFIX:
                raise _unsupported(path)
            found.add(path)
        else:
            raise SearchsvcError(f"{path}: no such file or folder")
    if not found:
        where = ", ".join(str(p) for p in paths) or "(none given)"
        raise SearchsvcError(f"no source files ({', '.join('*' + s for s in SUFFIXES)}) in {where}")
    return sorted(found)


def read_records(
    files: Iterable[Path],
    warn: Callable[[str], None],
    counts: Counter[str] | None = None,
    limits: FieldLimits = DEFAULT_LIMITS,
) -> Iterator[Paper]:
    """Stream the records of every file, in order, each through its format's reader and within
    `limits` (the settings' field lengths: `FieldLimits.of(settings)`); `counts` (if given)
    counts the records read per format name."""
    for path in files:
        source = source_format(path)
        for paper in source.read(path, warn):
            if counts is not None:
                counts[source.name] += 1
            yield limited(composed_paper(paper), limits, warn)
