"""Text rules every engine applies alike: folding, word starts, titles compared, snippets."""

from __future__ import annotations

import re
import unicodedata

_NON_WORD = re.compile(r"[\W_]+")
_WORD_START = re.compile(r"(?<!\w)\w")
ELLIPSIS = "…"
SNIPPET_CHARS = 240  # the abstract snippet when nothing is highlighted: about three lines of a result list


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
