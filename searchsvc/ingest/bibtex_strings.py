"""BibTeX values that are not one braced or quoted text: `@string` macros and `#` joins.

BibTeX reads `booktitle = conf # " 2020"` as the text of the macro `conf` followed by " 2020".
bibtexparser 2 replaces a value that is one macro name but keeps a `#` expression as written
(docs/decisions.md, "the readers"), so the BibTeX reader joins the parts here as BibTeX does:
braced and quoted parts without their delimiters, numbers as written, macros by the text of the
`@string` above (names compared without case). A name no `@string` defines is kept as written,
and named for the reader to warn about (BibTeX warns too, and puts nothing in its place). The
month names `jan` … `dec` are defined before any `@string`, as BibTeX's styles define them
(`MONTH_MACROS`), so `month = jun` is June.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# plain.bst and the styles derived from it: MACRO {jan} {"January"} … MACRO {dec} {"December"}.
_MONTH_NAMES = "January February March April May June July August September October November December".split()
MONTH_MACROS = {name[:3].lower(): name for name in _MONTH_NAMES}
_WORD = re.compile(r"[^\s#{}\"]+")  # a macro name or a number
# Braces and quotes as bibtexparser's splitter counts them: one after a backslash is escaped.
_DELIMITER = re.compile(r'(?<!\\)[{}"]')


def resolved(expression: str, macros: Mapping[str, str]) -> tuple[str, str]:
    """The text of `expression` (parts joined by `#`, `macros` by lower-case name), and what could
    not be resolved in it ("" when all was); what cannot be read as parts is kept as written."""
    parts: list[str] = []
    undefined: list[str] = []
    at = _after_space(expression, 0)
    while at < len(expression):
        end = _part_end(expression, at)
        if end is None:
            return expression, "is not texts, numbers and @string names joined by #; kept as written"
        part = expression[at:end]
        if part[0] in '{"':
            parts.append(part[1:-1])
        elif part.isdigit():
            parts.append(part)
        elif (text := macros.get(part.lower())) is not None:
            parts.append(text)
        else:
            undefined.append(part)
            parts.append(part)
        at = _after_space(expression, end)
        if at < len(expression):
            if expression[at] != "#":
                return expression, "is not texts, numbers and @string names joined by #; kept as written"
            at = _after_space(expression, at + 1)
            if at == len(expression):
                return expression, "ends in #; kept as written"
    if undefined:
        names = ", ".join(dict.fromkeys(undefined))
        return "".join(parts), f"uses {names}, which no @string above defines; kept as written"
    return "".join(parts), ""


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _part_end(expression: str, at: int) -> int | None:
    """Where the part at `at` ends: after its closing brace or quote, or its word; None if it does not."""
    opening = expression[at]
    if opening not in '{"':
        word = _WORD.match(expression, at)
        return word.end() if word else None
    depth = 0
    for match in _DELIMITER.finditer(expression, at + 1):
        char = match[0]
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return match.end() if opening == "{" else None
            depth -= 1
        elif opening == '"' and depth == 0:
            return match.end()
    return None
