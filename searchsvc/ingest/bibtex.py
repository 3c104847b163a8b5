"""Reader for BibTeX files (`.bib`), as Zotero, JabRef, arXiv and Google Scholar export them.

Parsing is bibtexparser 2's (docs/decisions.md, "BibTeX"); this module feeds it one entry at a
time so memory stays flat however long the file is, keeps the `@string` macros defined so far
and joins `#` expressions with them (ingest/bibtex_strings.py), and maps fields: LaTeX to
Unicode, names to "First Last", `keywords` and `primaryClass` to subjects, `doi`, `eprint`
(arXiv) and `url` to identifiers, `journal` (biblatex's `journaltitle`) or else `booktitle` to
the venue, and biblatex's `date` or else `year`, `month` (`jun` is BibTeX's month macro) and
`day` to the date. An entry in the plain shape that reference managers write
(braced or quoted values and numbers, no macros) is read by a scanner of our own, in a fraction
of bibtexparser's time (docs/performance.md, "Source readers");
anything else, and every error, is bibtexparser's.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple, cast

import bibtexparser
from bibtexparser.middlewares import RemoveEnclosingMiddleware
from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts
from bibtexparser.model import Entry, ParsingFailedBlock, String
from pylatexenc.latex2text import LatexNodes2Text

from searchsvc.core.errors import SourceFormatError
from searchsvc.core.identifiers import Identifiers
from searchsvc.core.paper import Paper, SourceLocation, id_problem, paper_id_for_title
from searchsvc.core.publication import Publication, date_of
from searchsvc.core.text import preview
from searchsvc.ingest.bibtex_strings import MONTH_MACROS, resolved
from searchsvc.ingest.fields import FieldProblem, date_in, dated, one_line, split_list, year_in
from searchsvc.ingest.lines import MAX_LINE_BYTES, line_chunks

# One entry of a real bibliography is a few kilobytes (a long abstract, hundreds of authors);
# an entry this long is a brace left open, and reading on would hold the rest of the file.
MAX_ENTRY_CHARS = MAX_LINE_BYTES
# Our own export's note (core/export.py) carries the paper's id, so an export re-imports to the same papers.
_OWN_ID = re.compile(r"searchsvc id: (\S+)")
_ESCAPED_IN_VERBATIM = re.compile(r"\\([_%&#$])")
# LaTeX accent commands on one letter (or dotless \i, \j), in the ways files write them: {\"u}, \"{u}, \"u,
# \v{r}, \v r, {\'\i}; a letter-named accent needs a space or brace after it (\vr is another command).
_ACCENTS = {
    **{'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "=": "\u0304", ".": "\u0307"},
    **{"v": "\u030c", "c": "\u0327", "u": "\u0306", "k": "\u0328", "H": "\u030b", "r": "\u030a", "d": "\u0323"},
}
# (The braces around {\"u} are left to go with all the others: a pattern that starts with a backslash
# is searched for at C speed, one that may start with a brace is tried at every character.)
_ACCENTED = re.compile(
    r"""\\(?:(["'`^~=.])\s*|([vcukHrd])(?:\s+|(?=[{\\])))"""
    r"""(?:\{(\\[ij]|[A-Za-z])\}|(\\[ij](?![A-Za-z])|[A-Za-z]))"""
)
# Letters that are commands ({\l}, \ss{}, \o x): the spaces after a command word are LaTeX's, not text.
_LETTERS = {
    **{"i": "\u0131", "j": "\u0237", "l": "\u0142", "L": "\u0141", "o": "\u00f8", "O": "\u00d8", "ss": "\u00df"},
    **{"ae": "\u00e6", "AE": "\u00c6", "oe": "\u0153", "OE": "\u0152", "aa": "\u00e5", "AA": "\u00c5"},
    **{"dh": "\u00f0", "DH": "\u00d0", "dj": "\u0111", "DJ": "\u0110", "th": "\u00fe", "TH": "\u00de"},
    **{"textquoteright": "\u2019", "textquoteleft": "\u2018"},
}
_LETTER = re.compile(r"\\(" + "|".join(sorted(_LETTERS, key=len, reverse=True)) + r")(?![A-Za-z])(?:\{\}|[ \t\n]*)")
_ESCAPED_SPECIAL = re.compile(r"\\([&%#_$ ])")  # \& and the like, and a control space ("\ ")
_MATH = re.compile(r"(?<!\\)\$")  # a $ that is not \$
_NOT_ENTRIES = {"comment", "preamble"}
# The plain entry shape the scanner reads (`_plain_entry`); anything else goes to bibtexparser.
_PLAIN_HEAD = re.compile(r"\s*@[ \t]*([A-Za-z]\w*)[ \t]*\{[ \t]*([^\s,{}()\"#=%@]+)[ \t]*,")
_PLAIN_NAME = re.compile(r"\s*+([A-Za-z][\w\-:.+]*+)\s*+=\s*+")
_PLAIN_NUMBER = re.compile(r"\d++")
_PLAIN_AFTER = re.compile(r"\s*+([,}])")
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_LATEX = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True)
# Commands our export writes for characters that LaTeX reads specially; pylatexenc drops or
# replaces some of them, so they are swapped for private-use characters around the decoding.
_LITERALS = {
    r"\textbackslash{}": "\\",
    r"\textbraceleft{}": "{",
    r"\textbraceright{}": "}",
    r"\textasciicircum{}": "^",
    r"\textasciitilde{}": "~",
}
_PLACEHOLDERS = {command: chr(0xE000 + n) for n, command in enumerate(_LITERALS)}
_RESTORE = str.maketrans({chr(0xE000 + n): char for n, char in enumerate(_LITERALS.values())})

# bibtexparser logs each block it cannot parse; the reader reports it as a SourceFormatError instead.
_library_log = logging.getLogger("bibtexparser")
_library_log.addHandler(logging.NullHandler())
_library_log.propagate = False


class _Entry(NamedTuple):
    """An entry's key, its line within the text it was read from, its fields (names lower case,
    values without their enclosing braces or quotes, macros and `#` resolved), and what could not
    be resolved in them, by field."""

    key: str
    line: int
    fields: dict[str, str]
    unresolved: dict[str, str]


def read_bibtex(path: Path, warn: Callable[[str], None]) -> Iterator[Paper]:
    """Yield one paper per entry (`@string`, `@comment` and `@preamble` are not papers)."""
    # The @string texts read so far, by lower-case name (entries below may use them), after BibTeX's own.
    macros: dict[str, str] = dict(MONTH_MACROS)
    found = 0
    source = str(path)
    for first_line, text in _entry_texts(path):
        plain = _plain_entry(text)
        for entry in [plain] if plain is not None else _parse(path, first_line, text, macros, warn):
            yield _paper(source, first_line + entry.line, entry, warn)
            found += 1
    if found == 0:
        raise SourceFormatError(str(path), 1, "file has no BibTeX entries (such as @article{key, title = {...}})")


def _entry_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each top-level `@` block: one starts at a line that begins with `@`
    where the braces since the last start are balanced (and at the top of the file)."""
    pending, line = "", 1  # the text from the current block's start, and its line
    for _, chunk in line_chunks(path):
        pending += chunk
        start, counted, depth = 0, 0, 0
        for at in _lines_opening_blocks(pending):
            depth += pending.count("{", counted, at) - pending.count("}", counted, at)
            counted = at
            if depth <= 0:
                yield line, _limited(path, line, pending[start:at])
                line += pending.count("\n", start, at)
                start, depth = at, 0
        pending = _limited(path, line, pending[start:])
    if pending.strip():
        yield line, pending


def _lines_opening_blocks(text: str) -> Iterator[int]:
    """Where each line of `text` but the first starts when it begins with `@` (after blanks), as a
    block does. (@ is rare in text: finding it costs less than a pattern that looks at every line.)"""
    at = text.find("@")
    while at >= 0:
        line = text.rfind("\n", 0, at) + 1
        if line and (line == at or text[line:at].isspace()):
            yield line
        end = text.find("\n", at)  # the first @ of a line decides: each line is looked at once
        at = text.find("@", end) if end >= 0 else -1


def _limited(path: Path, line: int, text: str) -> str:
    if len(text) > MAX_ENTRY_CHARS:
        raise SourceFormatError(
            str(path), line, f"entry longer than {MAX_ENTRY_CHARS:,} characters: is a brace left open?"
        )
    return text


def _plain_entry(text: str) -> _Entry | None:
    """The entry `text` holds when it is one entry of braced, quoted or numeric values, as bibtexparser
    with RemoveEnclosingMiddleware reads them; else None: macros, `#`, parentheses, `@string` and the
    like, repeated fields, text after the entry and every error are bibtexparser's."""
    head = _PLAIN_HEAD.match(text)
    if head is None or head[1].lower() in ("string", "comment", "preamble") or next(_lines_opening_blocks(text), 0):
        return None
    fields: dict[str, str] = {}
    at = head.end()
    while name := _PLAIN_NAME.match(text, at):
        value, at = _plain_value(text, name.end())
        after = _PLAIN_AFTER.match(text, at)
        key = name[1].lower()
        if value is None or after is None or key in fields:
            return None
        fields[key] = value
        at = after.end()
        if after[1] == "}":
            break
    else:
        closing = _PLAIN_AFTER.match(text, at)
        if closing is None or closing[1] != "}":
            return None
        at = closing.end()
    if text[at:].strip():
        return None
    return _Entry(head[2], text.count("\n", 0, head.start(1)), fields, {})


def _plain_value(text: str, at: int) -> tuple[str | None, int]:
    """(value, index after it) of the braced, quoted or numeric value at `at`, else (None, at).
    (str.find and str.count, not a pattern: a pattern steps through a long abstract one character
    at a time.)"""
    if text.startswith("{", at):
        close = at
        while (close := text.find("}", close + 1)) >= 0:
            if text.count("{", at + 1, close) == text.count("}", at + 1, close):
                return text[at + 1 : close], close + 1
        return None, at
    if text.startswith('"', at):
        close = text.find('"', at + 1)
        if close < 0 or text[close - 1] == "{":  # {"} is a quote inside the value
            return None, at
        return text[at + 1 : close], close + 1
    number = _PLAIN_NUMBER.match(text, at)
    return (number[0], number.end()) if number else (None, at)


def _parse(path: Path, first_line: int, text: str, macros: dict[str, str], warn: Callable[[str], None]) -> list[_Entry]:
    """The entries of `text`; its `@string` blocks are added to `macros`, for them and those below."""
    blocks = bibtexparser.parse_string(text, parse_stack=[RemoveEnclosingMiddleware(True)]).blocks
    # start_line is typed optional for blocks built by hand; the parser gives every block its line.
    for block in blocks:
        if isinstance(block, ParsingFailedBlock):
            key = _key_in(block.raw)
            problem = str(block.error) or type(block.error).__name__
            line = first_line + cast(int, block.start_line)
            raise SourceFormatError(str(path), line, f"entry {key}cannot be read: {problem}")
    entries = []
    for block in blocks:
        if isinstance(block, String):
            macros[block.key.lower()], problem = _text_of(str(block.value), block.enclosing, macros)
            if problem:
                warn(f"{path}:{first_line + cast(int, block.start_line)}: @string {preview(block.key)} {problem}")
        elif isinstance(block, Entry) and block.entry_type.lower() not in _NOT_ENTRIES:
            fields, unresolved = {}, {}
            for field in block.fields:
                name = field.key.lower()
                fields[name], problem = _text_of(str(field.value), field.enclosing, macros)
                if problem:
                    unresolved[name] = problem
            entries.append(_Entry(block.key, cast(int, block.start_line), fields, unresolved))
    return entries


def _text_of(value: str, enclosing: str | None, macros: dict[str, str]) -> tuple[str, str]:
    """A value's text and what could not be resolved in it: RemoveEnclosingMiddleware took the braces or
    quotes off one text and marked a value that is not one (a macro name, a `#` expression)."""
    return resolved(value, macros) if enclosing == "no-enclosing" else (value, "")


def _key_in(raw: str | None) -> str:
    match = re.match(r"\s*@\s*\w+\s*[{(]\s*([^,\s]+)", raw or "")
    return f"{preview(match[1])} " if match else ""


def _paper(source: str, line: int, entry: _Entry, warn: Callable[[str], None]) -> Paper:
    read: set[str] = set()  # the fields the paper took: a macro left undefined elsewhere (note = tbd) is no matter

    def given(name: str) -> str | None:
        read.add(name)
        return entry.fields.get(name)

    def text(name: str) -> str:
        value = given(name)
        return latex_to_text(value) if value is not None else ""

    title = text("title")
    if not title:
        raise SourceFormatError(source, line, f"entry {preview(entry.key)} has no title")
    try:
        year = year_in(text("year") or text("date"))
    except FieldProblem as exc:
        raise SourceFormatError(source, line, f"entry {preview(entry.key)}: {exc}") from None
    identifiers = _identifiers(given, text)
    for name, kept in (("doi", identifiers.doi), ("url", identifiers.url)):
        value = given(name) or ""
        if not kept and value.strip():
            warn(f"{source}:{line}: entry {preview(entry.key)}: {name} {preview(value)} is not valid; ignored")
    keywords = split_list(text("keywords"))
    primary = text("primaryclass")
    authors = given("author")
    about = f"{source}:{line}: entry {preview(entry.key)}:"
    venue = text("journal") or text("journaltitle") or text("booktitle")
    year, publication = dated(
        year, Publication.of(venue, _date(text, year, about, warn)), lambda m: warn(f"{about} {m}")
    )
    paper = Paper(
        id=_own_id(text("note")) or paper_id_for_title(title),
        title=title,
        abstract=text("abstract"),
        year=year,
        subjects=[primary, *(k for k in keywords if k != primary)] if primary else keywords,
        authors=_names(authors) if authors is not None else [],
        sources=[SourceLocation(source, line)],
        identifiers=identifiers,
        publication=publication,
    )
    for name in sorted(read & entry.unresolved.keys()):
        warn(f"{source}:{line}: entry {preview(entry.key)}: {name} {entry.unresolved[name]}")
    return paper


def _date(text: Callable[[str], str], year: int | None, about: str, warn: Callable[[str], None]) -> str:
    """biblatex's `date` (ISO 8601, or a range: its start), else `year`, `month` and `day` as BibTeX
    gives them; a `date` or `month` that cannot be read is warned about and left out."""
    found = date_in(text("date"), "date", lambda message: warn(f"{about} {message}"))
    if found:
        return found
    month = text("month")
    found = date_of(year, month, text("day"))
    if month and len(found) == len("2021"):
        warn(f"{about} month {preview(month)} is not a month; ignored")
    return found


def _identifiers(given: Callable[[str], str | None], text: Callable[[str], str]) -> Identifiers:
    def raw(name: str) -> str:
        """`doi`, `url` and `eprint` are verbatim in BibTeX, not LaTeX; some tools escape a few characters anyway."""
        value = given(name)
        return _ESCAPED_IN_VERBATIM.sub(r"\1", one_line(value)) if value is not None else ""

    arxiv = raw("eprint") if text("archiveprefix").lower() in ("", "arxiv") else ""
    return Identifiers.of(arxiv=arxiv, doi_text=raw("doi"), url=raw("url"))


def _own_id(note: str) -> str:
    match = _OWN_ID.search(note)
    return match[1] if match and id_problem(match[1]) is None else ""


def _names(value: str) -> list[str]:
    """ "Last, First and First von Last" → ["First Last", "First von Last"], LaTeX decoded after splitting
    (so braces still protect a corporate name such as {Barnes and Noble})."""
    if "," not in value and _no_latex(value):  # names as most files give them: fold and split once
        return list(dict.fromkeys(name for name in _AND.split(one_line(value)) if name))
    names = []
    for name in _split_names(value):
        # Without a comma a name is already "First von Last": parsing would only fold its spaces (and
        # read the ~ of \~o as one).
        if "," in name:
            try:
                name = parse_single_name_into_parts(name, strict=False).merge_first_name_first
            except InvalidNameError:
                pass
        names.append(latex_to_text(name))
    return list(dict.fromkeys(name for name in names if name))  # (each is on one line already)


def _split_names(value: str) -> list[str]:
    """The names of an author list: "and" between spaces, outside braces, separates two. (bibtexparser's
    splitter drops an accent that starts the name after an "and": \\'Alvaro becomes Alvaro.)"""
    value = value.strip(" \r\n\t")
    names, start = [], 0
    for separator in _AND.finditer(value):
        if value.count("{", 0, separator.start()) == value.count("}", 0, separator.start()):
            names.append(value[start : separator.start()])
            start = separator.end()
    return [*names, value[start:]] if value else []


def _no_latex(value: str) -> bool:
    """Whether `value` reads the same as LaTeX and as text (most fields are): no command, brace, math,
    tie or dash. (Six scans with `in` cost less than one with a pattern: a pattern steps one
    character at a time.)"""
    return (
        "\\" not in value
        and "{" not in value
        and "}" not in value
        and "$" not in value
        and "~" not in value
        and "--" not in value
    )


def latex_to_text(value: str) -> str:
    """LaTeX accents and commands as Unicode, braces dropped, on one line (`{\\"o}` → `ö`)."""
    if _no_latex(value):
        return one_line(value)
    literals = "\\text" in value  # str.translate costs more than the rest of the decoding: only when needed
    if literals:
        for command, placeholder in _PLACEHOLDERS.items():
            value = value.replace(command, placeholder)
    simple = _fast_latex(value)
    decoded = simple if simple is not None else _LATEX.latex_to_text(value)
    return one_line(decoded.translate(_RESTORE) if literals else decoded)


def _fast_latex(value: str) -> str | None:
    """`value` decoded when it holds only braces, escaped specials and accents on one letter (most
    fields of real files), else None for pylatexenc, which costs about a millisecond a field."""
    if "$" in value and _MATH.search(value):
        return None
    if "\\" in value:  # (each pattern costs a pass over the value: an abstract is a kilobyte)
        value = _ACCENTED.sub(_accented, value)
        value = _LETTER.sub(lambda m: _LETTERS[m[1]], value)
        value = _ESCAPED_SPECIAL.sub(r"\1", value)
        if "\\" in value:
            return None
    value = value.replace("~", " ")
    # Dashes and quotes as LaTeX sets them ("--" en, "---" em, ``quoted'') before braces go, so "-{}-"
    # stays two hyphens.
    value = value.replace("---", "\u2014").replace("--", "\u2013").replace("``", "\u201c").replace("''", "\u201d")
    return value.replace("{", "").replace("}", "")


def _accented(match: re.Match[str]) -> str:
    letter = (match[3] or match[4]).lstrip("\\")  # an accent on \i is on i: {\'\i} is í
    return unicodedata.normalize("NFC", letter + _ACCENTS[match[1] or match[2]])
