"""Paper records → downloads for reference managers (BibTeX, RIS, CSL-JSON), spreadsheets (CSV), re-import (JSON lines).

Each writer streams one `str` chunk per paper (CSV adds a header chunk first, CSL-JSON a closing one), so a
web route can send an export of any size without holding it in memory. Every format is made safe for
whatever text a record holds: JSON lines re-import with `searchsvc rebuild`, BibTeX entries always parse
(special characters are escaped, braces stay balanced), RIS values stay on their tag's line, CSL-JSON is
JSON, and CSV cells cannot run as spreadsheet formulas yet re-import as they were.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from searchsvc.core.paper import Paper
from searchsvc.core.publication import date_parts, venue_kind
from searchsvc.core.text import fold

_LIST_SEPARATOR = "; "
# In a CSV list cell (authors, subjects), `\;` is a `;` that belongs to the item and `\\` a backslash;
# a backslash before anything else is itself, so a sheet that never wrote `\;` or `\\` reads as before.
_LIST_ESCAPES = str.maketrans({"\\": "\\\\", ";": "\\;"})
_LIST_ESCAPE_OR_SEPARATOR = re.compile(r"\\([\\;])|;")
_CSV_HEADER = (
    *("id", "title", "year", "subjects", "authors", "abstract", "doi", "arxiv", "url"),
    *("venue", "date", "citations", "citations_source"),
)
_IDENTIFIERS = ("doi", "arxiv", "url")  # the columns (CSV) and keys (JSON lines) of Paper.identifiers
# OWASP CSV injection: a cell starting with one of these may be run as a formula by a spreadsheet,
# so it is written after a `'` (which spreadsheets show as text). A cell starting with `'` is marked
# too, so the CSV reader can always take the mark off again (`csv_text`): an export re-imports.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_MARKED_STARTS = (*_FORMULA_STARTS, "'")

# One pass over the text, so the braces of a replacement are never escaped again. `\{` is not used for braces:
# BibTeX and biber's btparse count braces without regard to backslashes, so an unbalanced `\{` breaks the entry.
_BIBTEX_ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\textbraceleft{}",
        "}": r"\textbraceright{}",
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "$": r"\$",
        "_": r"\_",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
)
# Letters that Unicode decomposition does not reduce to ASCII (applied after case folding).
# LaTeX reads "--" as an en dash and "---" as an em dash; "-{}-" keeps the hyphens as they were written.
_DASH_LIGATURE = re.compile(r"-(?=-)")
_ASCII_LETTERS = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i"})
_RIS_TYPES = {"article": "JOUR", "inproceedings": "CPAPER", "misc": "GEN"}
_CSL_TYPES = {"article": "article-journal", "inproceedings": "paper-conference", "misc": "article"}
_TITLE_STOPWORDS = frozenset({"a", "an", "the", "on", "of", "for", "and", "in", "to", "with"})


@dataclass(frozen=True)
class ExportFormat:
    """One download format: what to label the response with, and the writer that streams its chunks."""

    name: str
    label: str  # what a person calls it
    media_type: str
    extension: str
    write: Callable[[Iterable[Paper]], Iterator[str]]


def _write_jsonl(papers: Iterable[Paper]) -> Iterator[str]:
    """One JSON object a line, in the input record format of `searchsvc.ingest.jsonl`."""
    for paper in papers:
        found = paper.publication
        record = {
            "id": paper.id,
            "title": paper.title,
            "abstract": paper.abstract,
            "year": paper.year,
            "categories": paper.subjects,
            "authors": paper.authors,
            **{name: getattr(paper.identifiers, name) or None for name in _IDENTIFIERS},
            "venue": found.venue or None,
            "date": found.date or None,
            "citations": found.citations,
            "citations_source": found.citations_source or None,
            "orcids": found.orcids_of(paper.authors) or None,
        }
        yield json.dumps(record, ensure_ascii=False) + "\n"


def _write_csv(papers: Iterable[Paper]) -> Iterator[str]:
    """A header row, then one row per paper, every cell quoted and defused against formula injection."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)

    def row(cells: Iterable[str]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_cell(cell) for cell in cells])
        return buffer.getvalue()

    yield row(_CSV_HEADER)
    for paper in papers:
        found = paper.publication
        yield row(
            (
                paper.id,
                paper.title,
                "" if paper.year is None else str(paper.year),
                csv_list(paper.subjects),
                csv_list(paper.authors),
                paper.abstract,
                *(getattr(paper.identifiers, name) for name in _IDENTIFIERS),
                found.venue,
                found.date,
                "" if found.citations is None else str(found.citations),
                found.citations_source,
            )
        )


def csv_cell(text: str) -> str:
    """`text` as a CSV cell no spreadsheet runs as a formula: marked with a leading `'` when it
    starts like one (or with `'`)."""
    return "'" + text if text.startswith(_MARKED_STARTS) else text


def csv_list(items: Iterable[str]) -> str:
    """`items` as one CSV cell: separated by "; ", each `;` and `\\` in an item escaped with `\\`."""
    return _LIST_SEPARATOR.join(item.translate(_LIST_ESCAPES) for item in items)


def csv_items(cell: str) -> list[str]:
    """The items `csv_list` wrote `cell` for (not yet stripped): split at each `;` not escaped,
    `\\;` and `\\\\` read as `;` and `\\`."""
    items: list[str] = []
    item: list[str] = []
    start = 0
    for match in _LIST_ESCAPE_OR_SEPARATOR.finditer(cell):
        item.append(cell[start : match.start()])
        if match[1]:
            item.append(match[1])
        else:
            items.append("".join(item))
            item = []
        start = match.end()
    item.append(cell[start:])
    items.append("".join(item))
    return items


def csv_text(cell: str) -> str:
    """The text `csv_cell` wrote `cell` for: its mark taken off (a cell no export marked, such as
    "'quoted'", is kept as it is)."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(_MARKED_STARTS) else cell


def _write_bibtex(papers: Iterable[Paper]) -> Iterator[str]:
    """One entry per paper, separated by blank lines; repeated citation keys get suffixes b, c, …"""
    used: set[str] = set()
    repeats: dict[str, int] = {}
    for number, paper in enumerate(papers):
        base = key = _citation_key(paper)
        while key in used:  # a loop, as a suffixed key may already be another paper's own key
            repeats[base] = repeats.get(base, 1) + 1
            key = base + _letters(repeats[base])
        used.add(key)
        yield ("\n" if number else "") + _entry(paper, key)


def bibtex_entry(paper: Paper) -> str:
    """The paper as one entry, with its unsuffixed citation key (as for a "copy BibTeX" button)."""
    return _entry(paper, _citation_key(paper))


def _entry(paper: Paper, key: str) -> str:
    """An `@article` in a journal, `@inproceedings` in proceedings, else `@misc` (a preprint, or
    nothing known of where it appeared)."""
    found = paper.publication
    kind = venue_kind(found.venue)
    fields = [("title", "{" + _escape(paper.title) + "}")]
    if paper.authors:
        fields.append(("author", " and ".join(_bibtex_name(name) for name in paper.authors)))
    if kind != "misc":
        fields.append(("journal" if kind == "article" else "booktitle", _escape(found.venue)))
    if paper.year is not None:
        fields.append(("year", str(paper.year)))
    if len(found.date) > len("2021"):
        fields.append(("date", found.date))  # biblatex's; BibTeX ignores it and reads the year
    if paper.abstract:
        fields.append(("abstract", _escape(paper.abstract)))
    if paper.subjects:
        fields.append(("keywords", _escape(", ".join(paper.subjects))))
    ids = paper.identifiers
    if ids.doi:
        fields.append(("doi", _verbatim(ids.doi)))
    if ids.arxiv:
        fields.extend([("eprint", ids.arxiv), ("archivePrefix", "arXiv")])
    if ids.url:
        fields.append(("url", _verbatim(ids.url)))
    fields.append(("note", _escape(f"searchsvc id: {paper.id}")))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}\n"


def _write_ris(papers: Iterable[Paper]) -> Iterator[str]:
    """One `TY … ER` record per paper, as Zotero, EndNote and Mendeley import them."""
    for paper in papers:
        yield ris_record(paper)


def ris_record(paper: Paper) -> str:
    """The paper as one RIS record: `JOUR` in a journal, `CPAPER` in proceedings, else `GEN` (a
    preprint, or nothing known of where it appeared), its venue as `T2`, which Zotero, EndNote and
    Mendeley read for both. Each value is folded onto its tag's one line, so no text can start a tag
    of its own; authors are written "Surname, Given", as RIS readers expect."""
    ids, found = paper.identifiers, paper.publication
    lines = [
        ("TY", _RIS_TYPES[venue_kind(found.venue)]),
        ("TI", paper.title),
        *(("AU", _surname_first(name)) for name in paper.authors),
        *([("T2", found.venue)] if found.venue else []),
        *([("PY", str(paper.year))] if paper.year is not None else []),
        *([("DA", found.date.replace("-", "/"))] if len(found.date) > len("2021") else []),
        *([("AB", paper.abstract)] if paper.abstract else []),
        *(("KW", subject) for subject in paper.subjects),
        *([("DO", ids.doi)] if ids.doi else []),
        *([("UR", ids.url)] if ids.url else []),
        *([("UR", f"https://arxiv.org/abs/{ids.arxiv}")] if ids.arxiv else []),
        ("N1", f"searchsvc id: {paper.id}"),
    ]
    return "".join(f"{tag}  - {' '.join(value.split())}\n" for tag, value in lines) + "ER  - \n\n"


def _write_csl(papers: Iterable[Paper]) -> Iterator[str]:
    """One JSON array of CSL-JSON items (what citeproc, Zotero and Mendeley read), an item a chunk
    and the closing bracket last, so the array streams."""
    opened = False
    for paper in papers:
        yield ("[\n" if not opened else ",\n") + json.dumps(csl_item(paper), ensure_ascii=False)
        opened = True
    yield "\n]\n" if opened else "[]\n"


def csl_item(paper: Paper) -> dict[str, object]:
    """The paper as one CSL-JSON item: its kind from its venue (`venue_kind`; a preprint or no
    venue is an "article"), names split as RIS splits them, the date as precise as known."""
    ids, found = paper.identifiers, paper.publication
    item: dict[str, object] = {"id": paper.id, "type": _CSL_TYPES[venue_kind(found.venue)], "title": paper.title}
    if paper.authors:
        item["author"] = [_csl_name(name) for name in paper.authors]
    if found.venue:
        item["container-title"] = found.venue
    if found.date:
        item["issued"] = {"date-parts": [date_parts(found.date)]}
    if paper.abstract:
        item["abstract"] = paper.abstract
    if paper.subjects:
        item["keyword"] = ", ".join(paper.subjects)
    if ids.doi:
        item["DOI"] = ids.doi
    url = ids.url or (f"https://arxiv.org/abs/{ids.arxiv}" if ids.arxiv else "")
    if url:
        item["URL"] = url
    if ids.arxiv:
        item["number"] = f"arXiv:{ids.arxiv}"  # how Zotero keeps a preprint's arXiv id
    item["note"] = f"searchsvc id: {paper.id}"
    return item


def _csl_name(name: str) -> dict[str, str]:
    """ "Maxim Naumov" or "Naumov, Maxim" → family and given names; a one-word name as it is."""
    family, comma, given = _surname_first(name).partition(", ")
    return {"family": family, "given": given} if comma else {"literal": name}


def _surname_first(name: str) -> str:
    """A name written "Given Surname" as "Surname, Given" (one with a comma, or of one word, as it is)."""
    words = name.split()
    return name if "," in name or len(words) < 2 else f"{words[-1]}, {' '.join(words[:-1])}"


def _escape(text: str) -> str:
    """`text` as a braced BibTeX value: special characters escaped, whitespace folded onto one line.

    Folding is no loss (BibTeX reads any run of whitespace as one space) and keeps a line of the value from
    starting with "@", which BibTeX parsers take for the start of a new entry.
    """
    return _DASH_LIGATURE.sub("-{}", " ".join(text.split()).translate(_BIBTEX_ESCAPES))


def _verbatim(value: str) -> str:
    """A DOI or URL as BibTeX tools read it: verbatim (`url`, `doi` are not LaTeX), so only the
    characters that would unbalance the entry are percent-encoded."""
    return value.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D")


def _bibtex_name(name: str) -> str:
    """The escaped name, braced whole where BibTeX would misread it (an inner "and", more than two commas)."""
    escaped = _escape(name)
    misread = "and" in fold(name).split() or name.count(",") > 2
    return "{" + escaped + "}" if misread else escaped


def _citation_key(paper: Paper) -> str:
    """Surname of the first author + year + first significant title word, e.g. `naumov2020compositional`."""
    surname = _key_word(_surname(paper.authors[0])) if paper.authors else ""
    year = "nd" if paper.year is None else str(paper.year)
    words = (_key_word(word) for word in paper.title.split())
    title_word = next((word for word in words if word and word not in _TITLE_STOPWORDS), "")
    return (surname or "anon") + year + title_word


def _surname(name: str) -> str:
    """The last word of "Given Surname"; the part before the comma of "Surname, Given" (as BibTeX reads it)."""
    if "," in name:
        return name.split(",", 1)[0]
    words = name.split()
    return words[-1] if words else ""


def _key_word(text: str) -> str:
    """`text` folded to lowercase ASCII letters and digits ("Müller" → "muller")."""
    folded = fold(text).translate(_ASCII_LETTERS)
    return "".join(c for c in folded if c.isascii() and c.isalnum())


def _letters(number: int) -> str:
    """1 → "a", 2 → "b", … 26 → "z", 27 → "aa": the suffix of the `number`-th entry with one key."""
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


EXPORT_FORMATS: dict[str, ExportFormat] = {
    export.name: export
    for export in (
        ExportFormat("bibtex", "BibTeX", "application/x-bibtex; charset=utf-8", "bib", _write_bibtex),
        ExportFormat(
            "csljson", "CSL-JSON", "application/vnd.citationstyles.csl+json; charset=utf-8", "json", _write_csl
        ),
        ExportFormat("csv", "CSV", "text/csv; charset=utf-8", "csv", _write_csv),
        ExportFormat("jsonl", "JSON lines", "application/x-ndjson; charset=utf-8", "jsonl", _write_jsonl),
        ExportFormat("ris", "RIS", "application/x-research-info-systems; charset=utf-8", "ris", _write_ris),
    )
}
