"""What each kind of setting may hold: each rule reads a value from a file or the environment
and says, when it cannot, what the value must be (`must be an integer from 1 to 1000`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from searchsvc.settings.write_tokens import ENTRY_FORM, parse_entry, read_tokens_file


class Refused(ValueError):
    """A value the rule cannot use; the message completes `<VARIABLE>=<value>: ...`."""


class Rule(Protocol):
    def read(self, value: Any) -> Any:
        """The value in the setting's type, or Refused."""

    def __str__(self) -> str:
        """The values allowed, for `searchsvc settings` and error messages."""


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


class Integer:
    """An integer within [low, high]: limits of 0 or below, or beyond any use, break searches later."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def read(self, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _INTEGER.fullmatch(value) and len(value) < 20:
            number = int(value)
        else:
            raise Refused(f"must be {self}")
        if not self.low <= number <= self.high:
            raise Refused(f"must be {self}")
        return number

    def __str__(self) -> str:
        return f"an integer from {self.low} to {self.high}"


_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


class Boolean:
    def read(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
            return _BOOLEANS[value.strip().lower()]
        raise Refused(f"must be {self}")

    def __str__(self) -> str:
        return "true or false (also yes/no, on/off, 1/0)"


class Choice:
    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = options

    def read(self, value: Any) -> str:
        if isinstance(value, str) and value.strip() in self.options:
            return value.strip()
        raise Refused(f"must be {self}")

    def __str__(self) -> str:
        return "one of " + ", ".join(self.options)


_ADDRESS = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(?P<port>[0-9]{1,5})")


class OptionalAddress:
    """host:port to listen on (an IPv6 host in brackets), or empty for none."""

    def read(self, value: Any) -> str:
        if value == "" or value is None:
            return ""
        found = _ADDRESS.fullmatch(value.strip()) if isinstance(value, str) else None
        if found is None or not 1 <= int(found["port"]) <= 65535:
            raise Refused(f"must be {self}")
        return value.strip()

    def __str__(self) -> str:
        return "host:port (port 1 to 65535), or empty"


def address_port(address: str) -> str:
    """The port of an address OptionalAddress read, as text (as WSGI's SERVER_PORT holds it)."""
    return address.rsplit(":", 1)[1]


class Text:
    """Any text, or text matching `pattern`; a secret is never shown back."""

    def __init__(self, pattern: str | None = None, described: str = "any text", secret: bool = False) -> None:
        self.pattern = re.compile(pattern) if pattern else None
        self.described = described
        self.secret = secret

    def read(self, value: Any) -> str:
        if not isinstance(value, str) or (self.pattern and not self.pattern.fullmatch(value)):
            raise Refused(f"must be {self}")
        return value

    def __str__(self) -> str:
        return self.described


def _path_text(value: Any) -> str:
    """A path given as text; Path('') would silently mean the current folder."""
    text = str(value).strip() if isinstance(value, (str, Path)) else ""
    if not text or "\0" in text:
        raise Refused("must be a non-empty path")
    return text


class NonEmptyPath:
    def read(self, value: Any) -> Path:
        return Path(_path_text(value))

    def __str__(self) -> str:
        return "a non-empty path"


class OptionalPath:
    """A path, or empty for the documented default; kept as text."""

    def read(self, value: Any) -> str:
        if value == "" or value is None:
            return ""
        return _path_text(value)

    def __str__(self) -> str:
        return "a path, or empty for the default"


class PathList:
    def read(self, value: Any) -> tuple[Path, ...]:
        items = value.split(os.pathsep) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items:
            raise Refused(f"must be {self}")
        try:
            return tuple(Path(_path_text(item)) for item in items)
        except Refused:
            raise Refused(f"must be {self}") from None

    def __str__(self) -> str:
        return f"one or more non-empty paths (separated by {os.pathsep!r} in the environment)"


class CheckedFile:
    """A file read and checked now by `check` (ValueError saying `file:line: what is wrong`), or empty
    for none: a bad line stops the start rather than failing every request that needs the file later."""

    def __init__(self, check: Callable[[Path], object], described: str) -> None:
        self._check = check
        self._described = described

    def read(self, value: Any) -> str:
        if value == "" or value is None:
            return ""
        path = _path_text(value)
        try:
            self._check(Path(path))
        except ValueError as exc:
            raise Refused(str(exc)) from None
        return path

    def __str__(self) -> str:
        return self._described


class TokensFile(CheckedFile):
    """A file of write-token entries (`name:sha256-hex` lines)."""

    def __init__(self) -> None:
        super().__init__(read_tokens_file, "a file of NAME:SHA256 lines (# comments), or empty for none")


class SynonymsFile(CheckedFile):
    """A synonyms file (core.synonyms: groups of forms, one a line)."""

    def __init__(self) -> None:
        super().__init__(
            _read_synonyms, "a file of comma-separated forms, one group a line (# comments), or empty for none"
        )


def _read_synonyms(path: Path) -> object:
    from searchsvc.core.synonyms import read_file  # the query parser, loaded only where a file is set

    return read_file(path)


class TokenHashes:
    """Write-token entries given in the settings themselves: a list, or comma-separated text."""

    secret = True  # hashes cannot be reversed, but nobody needs to see them printed either

    def read(self, value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise Refused(f"must be {self}")
        entries = tuple(str(item).strip() for item in items if str(item).strip())
        for number, entry in enumerate(entries, start=1):
            try:
                parse_entry(entry)
            except ValueError as exc:
                raise Refused(f"entry {number}: {exc}") from None
        return entries

    def __str__(self) -> str:
        return f"{ENTRY_FORM}, separated by commas; or empty for none"


class UrlList:
    def read(self, value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise Refused(f"must be {self}")
        urls = tuple(str(item).strip() for item in items if str(item).strip())
        if not urls or not all(_is_http_url(url) for url in urls):
            raise Refused(f"must be {self}")
        return urls

    def __str__(self) -> str:
        return "one or more http:// or https:// URLs, separated by commas"


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number
        return False


def masked_url(url: str) -> str:
    """The URL without a password in it (`https://user:***@host`)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{parts.username}:***@{host}").geturl()
