"""Text rules every engine applies alike: folding, word starts, titles compared, snippets; and text
escaped for a terminal or a log."""

from __future__ import annotations

import json
import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+")
_WORD_START = re.compile(r"(?<!\w)\w")
ELLIPSIS = "…"
SNIPPET_CHARS = 240  # the abstract snippet when nothing is highlighted: about three lines of a result list
PREVIEW_CHARS = 40  # a value quoted in a warning or an error: enough to find it in its file


def composed(text: str) -> str:
    """`text` in Unicode's composed form (NFC): "e" and a combining acute as the one letter "é".
    Both engines fold "é" to "e" but keep a combining mark inside its word, so text written
    decomposed (as macOS and some PDF and BibTeX tools write it) was found by no query typed
    composed, nor the other way round, and its authors were facet values of their own."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def one_line(text: str | None) -> str:
    """`text` with every run of whitespace (line breaks included) folded to one space."""
    return " ".join(text.split()) if text else ""


def fold(text: str) -> str:
    """Case- and accent-insensitive form of `text` (for matching names and titles)."""
    if text.isascii():  # most text: NFKD changes no ASCII character and none is combining
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def normalise_title(title: str) -> str:
    """The title's words, case- and accent-folded, so trivial variants compare equal.

    Letters of every script are kept: a title in Chinese or Greek must not normalise to ''.
    """
    return " ".join(_NON_WORD.sub(" ", fold(title)).split())


def word_tails(value: str) -> tuple[str, ...]:
    """The folded value from each of its words on: "Maxim Naumov" → ("maxim naumov", "naumov")."""
    return folded_tails(fold(value))


def folded_tails(folded: str) -> tuple[str, ...]:
    """`word_tails` of a value already folded."""
    return tuple(folded[m.start() :] for m in _WORD_START.finditer(folded))


def has_word_starting(value: str, prefix: str) -> bool:
    """Whether a word of `value` starts with `prefix` (folded): "nau" finds "Maxim Naumov"."""
    wanted = fold(prefix)
    return any(tail.startswith(wanted) for tail in word_tails(value))


def opening(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The first `limit` characters of `text`, cut at a word boundary."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",.;:") + ELLIPSIS


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` as a warning or an error quotes it: in double quotes as JSON writes a string (quotes,
    backslashes and controls escaped, letters of every script kept), every other unprintable
    character escaped as well, and cut after `limit` characters with "…"."""
    cut = text if len(text) <= limit else text[:limit] + ELLIPSIS
    return escape_unprintable(json.dumps(cut, ensure_ascii=False))


def escape_unprintable(text: str, keep: str = "") -> str:
    """`text` with every character that is not printable (C0 and C1 controls, DEL, bidi overrides,
    format and unassigned characters), except those in `keep`, written as a JSON string escapes it
    (`\\u001b`; beyond U+FFFF its UTF-16 pair), so a terminal or a log shows it instead of acting on
    it, and JSON text stays JSON that decodes to the same characters.

    Backslashes are left alone: what needs every escape to be unambiguous doubles them first."""
    if text.isprintable():  # most text: nothing to do
        return text
    return "".join(char if char.isprintable() or char in keep else _escaped(char) for char in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


# Letterlike Symbols and Mathematical Alphanumeric Symbols whose compatibility form is one letter or digit.
_MATH_LETTER = re.compile("[\u2100-\u214f\U0001d400-\U0001d7ff]")
_MATH_LETTERS = {
    code: folded
    for code in (*range(0x2100, 0x2150), *range(0x1D400, 0x1D800))
    if len(folded := unicodedata.normalize("NFKC", chr(code))) == 1 and folded.isalnum() and folded != chr(code)
}


def math_letters(text: str) -> str:
    """`text` with letterlike and mathematical letters as the letters they style (`ℓ` → `l`, `𝒪` → `O`,
    `ℝ` → `R`), one character for one, as math in titles and abstracts is indexed (`core.tex.math_words`):
    a query pasted from a page's rendered math finds the paper it came from, its columns unmoved."""
    return text.translate(_MATH_LETTERS) if _MATH_LETTER.search(text) else text
