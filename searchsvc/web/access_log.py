"""gunicorn's access log with every request-supplied value escaped, so no request can forge or split a line.

gunicorn escapes only double quotes. Header values may still carry bytes such as 0x85 (NEL,
a line break to many log tools) or bidi overrides that make a line read differently, so every
character that is not printable is written as an escape, and backslashes are doubled so an
escape in the log always means one was needed.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger, SafeAtoms


def escape_for_log(value: str) -> str:
    return "".join(_escape_char(char) for char in value)


def _escape_char(char: str) -> str:
    if char == "\\":
        return "\\\\"
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


class EscapedAtoms(SafeAtoms):
    def __init__(self, atoms: dict[str, Any]) -> None:
        super().__init__({key: escape_for_log(v) if isinstance(v, str) else v for key, v in atoms.items()})


class EscapingLogger(Logger):
    """Set as `logger_class` in config/gunicorn.conf.py."""

    atoms_wrapper_class = EscapedAtoms
