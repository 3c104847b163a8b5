"""Reader for BibTeX files (`.bib`), as Zotero, JabRef, arXiv and Google Scholar export them.

Parsing is bibtexparser 2's (docs/decisions.md, "BibTeX"); this module feeds it one entry at a
time so memory stays flat however long the file is, keeps the `@string` macros defined so far,
and maps fields: LaTeX to Unicode, names to "First Last", `keywords` and `primaryClass` to
subjects, `doi`, `eprint` (arXiv) and `url` to identifiers.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import bibtexparser
from bibtexparser.library import Library
from bibtexparser.middlewares import RemoveEnclosingMiddleware, ResolveStringReferencesMiddleware
from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts, split_multiple_persons_names
from bibtexparser.model import Entry, Field, ParsingFailedBlock, String
from pylatexenc.latex2text import LatexNodes2Text

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, id_problem, paper_id_for_title
from searchsvc.ingest.fields import FieldProblem, distinct, one_line, preview, split_list, year_in
from searchsvc.ingest.lines import MAX_LINE_BYTES, numbered_lines

# One entry of a real bibliography is a few kilobytes (a long abstract, hundreds of authors);
# an entry this long is a brace left open, and reading on would hold the rest of the file.
MAX_ENTRY_CHARS = MAX_LINE_BYTES
# Our own export's note (core/export.py) carries the paper's id, so an export re-imports to the same papers.
_OWN_ID = re.compile(r"searchsvc id: (\S+)")
_LATEX_SPECIAL = re.compile(r"[\\{}$~]")
_ESCAPED_IN_VERBATIM = re.compile(r"\\([_%&#$])")
# LaTeX accent commands on one letter, in the three ways files write them: {\"u}, \"{u}, \"u.
_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304", ".": "\u0307"}
_ACCENTED = re.compile(r"""\{?\\(["'`^~=.])\s*(?:\{([A-Za-z])\}|([A-Za-z]))\}?""")
_ESCAPED_SPECIAL = re.compile(r"\\([&%#_$])")
_NOT_ENTRIES = {"comment", "preamble"}
_LATEX = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True)
# Commands our export writes for characters that LaTeX reads specially; pylatexenc drops or
# replaces some of them, so they are swapped for private-use characters around the decoding.
_LITERALS = {r"\textbraceleft{}": "{", r"\textbraceright{}": "}", r"\textasciicircum{}": "^", r"\textasciitilde{}": "~"}
_PLACEHOLDERS = {command: chr(0xE000 + n) for n, command in enumerate(_LITERALS)}
_RESTORE = str.maketrans({chr(0xE000 + n): char for n, char in enumerate(_LITERALS.values())})

# bibtexparser logs each block it cannot parse; the reader reports it as a SourceFormatError instead.
_library_log = logging.getLogger("bibtexparser")
_library_log.addHandler(logging.NullHandler())
_library_log.propagate = False


def read_bibtex(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per entry (`@string`, `@comment` and `@preamble` are not papers)."""
    macros = Library()  # the @string blocks read so far: entries below may use them
    found = 0
    for first_line, text in _entry_texts(path):
        for entry in _parse(path, first_line, text, macros):
            yield _paper(path, first_line + entry.start_line, entry, warn)
            found += 1
    if found == 0:
        raise SourceFormatError(str(path), 1, "file has no BibTeX entries (such as @article{key, title = {...}})")


def _entry_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each top-level `@` block: a new one starts where braces are balanced."""
    lines: list[str] = []
    start, depth, size = 1, 0, 0
    for number, text in numbered_lines(path):
        if depth <= 0 and text.lstrip().startswith("@") and lines:
            yield start, "\n".join(lines)
            lines, start, depth, size = [], number, 0, 0
        if not lines:
            start = number
        lines.append(text)
        depth += text.count("{") - text.count("}")
        size += len(text)
        if size > MAX_ENTRY_CHARS:
            raise SourceFormatError(
                str(path), start, f"entry longer than {MAX_ENTRY_CHARS:,} characters: is a brace left open?"
            )
    if lines:
        yield start, "\n".join(lines)


def _parse(path: Path, first_line: int, text: str, macros: Library) -> list[Entry]:
    before = len(macros.blocks)
    bibtexparser.parse_string(
        text, parse_stack=[ResolveStringReferencesMiddleware(True), RemoveEnclosingMiddleware(True)], library=macros
    )
    new = macros.blocks[before:]
    macros.remove([block for block in new if not isinstance(block, String)])
    for block in new:
        if isinstance(block, ParsingFailedBlock):
            key = _key_in(block.raw)
            problem = str(block.error) or type(block.error).__name__
            raise SourceFormatError(str(path), first_line + block.start_line, f"entry {key}cannot be read: {problem}")
    return [b for b in new if isinstance(b, Entry) and b.entry_type.lower() not in _NOT_ENTRIES]


def _key_in(raw: str) -> str:
    match = re.match(r"\s*@\s*\w+\s*[{(]\s*([^,\s]+)", raw or "")
    return f"{preview(match[1])} " if match else ""


def _paper(path: Path, line: int, entry: Entry, warn: Callable[[str], None]) -> Paper:
    where = f"{path}:{line}"
    fields = {key.lower(): value for key, value in entry.fields_dict.items()}

    def text(name: str) -> str:
        field = fields.get(name)
        return latex_to_text(str(field.value)) if field is not None else ""

    title = text("title")
    if not title:
        raise SourceFormatError(str(path), line, f"entry {preview(entry.key)} has no title")
    try:
        year = year_in(text("year") or text("date"))
    except FieldProblem as exc:
        raise SourceFormatError(str(path), line, f"entry {preview(entry.key)}: {exc}") from None
    identifiers = _identifiers(fields, text)
    for name, kept in (("doi", identifiers.doi), ("url", identifiers.url)):
        if name in fields and str(fields[name].value).strip() and not kept:
            warn(
                f"{where}: entry {preview(entry.key)}: {name} {preview(str(fields[name].value))} is not valid; ignored"
            )
    return Paper(
        id=_own_id(text("note")) or paper_id_for_title(title),
        title=title,
        abstract=text("abstract"),
        year=year,
        subjects=distinct([text("primaryclass"), *split_list(text("keywords"))]),
        authors=_names(str(fields["author"].value)) if "author" in fields else [],
        sources=[SourceLocation(str(path), line)],
        identifiers=identifiers,
    )


def _identifiers(fields: dict[str, Field], text: Callable[[str], str]) -> Identifiers:
    def raw(name: str) -> str:
        """`doi`, `url` and `eprint` are verbatim in BibTeX, not LaTeX; some tools escape a few characters anyway."""
        field = fields.get(name)
        return _ESCAPED_IN_VERBATIM.sub(r"\1", one_line(str(field.value))) if field is not None else ""

    arxiv = raw("eprint") if text("archiveprefix").lower() in ("", "arxiv") else ""
    return Identifiers.of(arxiv=arxiv, doi_text=raw("doi"), url=raw("url"))


def _own_id(note: str) -> str:
    match = _OWN_ID.search(note)
    return match[1] if match and id_problem(match[1]) is None else ""


def _names(value: str) -> list[str]:
    """ "Last, First and First von Last" → ["First Last", "First von Last"], LaTeX decoded after splitting
    (so braces still protect a corporate name such as {Barnes and Noble})."""
    names = []
    for name in split_multiple_persons_names(value):
        try:
            merged = parse_single_name_into_parts(name, strict=False).merge_first_name_first
        except InvalidNameError:
            merged = name
        names.append(latex_to_text(merged))
    return distinct(names)


def latex_to_text(value: str) -> str:
    """LaTeX accents and commands as Unicode, braces dropped, on one line (`{\\"o}` → `ö`)."""
    if not _LATEX_SPECIAL.search(value) and "--" not in value:
        return one_line(value)
    for command, placeholder in _PLACEHOLDERS.items():
        value = value.replace(command, placeholder)
    simple = _fast_latex(value)
    decoded = simple if simple is not None else _LATEX.latex_to_text(value)
    return one_line(decoded.translate(_RESTORE))


def _fast_latex(value: str) -> str | None:
    """`value` decoded when it holds only braces, escaped specials and accents on one letter (most
    fields of real files), else None for pylatexenc, which costs about a millisecond a field."""
    value = _ACCENTED.sub(lambda m: unicodedata.normalize("NFC", (m[2] or m[3]) + _ACCENTS[m[1]]), value)
    value = _ESCAPED_SPECIAL.sub(r"\1", value.replace("~", " "))
    if "\\" in value or "$" in value:
        return None
    # Dashes as LaTeX sets them ("--" en, "---" em) before braces go, so "-{}-" stays two hyphens.
    value = value.replace("---", "\u2014").replace("--", "\u2013")
    return value.replace("{", "").replace("}", "")
