"""gunicorn's access log with every request-supplied value escaped, so no request can forge or split a line,
and with no credential in it.

gunicorn escapes only double quotes. Header values may still carry bytes such as 0x85 (NEL,
a line break to many log tools) or bidi overrides that make a line read differently, so every
character that is not printable is written as an escape (`core.text.escape_unprintable`, the rule
the command line prints by too), and backslashes are doubled so an escape in the log always means
one was needed.

Credentials: the write API refuses a token in the URL (web/write_auth.py), but gunicorn logs the
request line before anyone reads it, so a `token=` or `access_token=` value is hidden in every
value that holds the URL; the Authorization header is hidden from any format that names it.
"""

from __future__ import annotations

import re
from typing import Any

from gunicorn.glogging import Logger, SafeAtoms

from searchsvc.core.text import escape_unprintable
from searchsvc.settings.write_tokens import is_token_parameter

HIDDEN = "(hidden)"


# A query parameter as it appears raw in a URL: its name, and its value up to the next separator.
_PARAMETER = re.compile(r"((?:^|[?&;])([^=&;#\s]*)=)[^&;#\s]*")
_CREDENTIAL_ATOMS = frozenset(
    {"{authorization}i", "{proxy-authorization}i", "{http_authorization}e", "{http_proxy_authorization}e"}
)


def escape_for_log(value: str) -> str:
    return escape_unprintable(value.replace("\\", "\\\\"))


def without_credentials(key: str, value: str) -> str:
    """`value` of atom `key` with any token in a URL, or the whole value of an Authorization header, hidden."""
    if key.lower() in _CREDENTIAL_ATOMS:
        return HIDDEN
    return _PARAMETER.sub(lambda found: found[1] + HIDDEN if is_token_parameter(found[2]) else found[0], value)


class EscapedAtoms(SafeAtoms):
    def __init__(self, atoms: dict[str, Any]) -> None:
        super().__init__(
            {key: escape_for_log(without_credentials(key, v)) if isinstance(v, str) else v for key, v in atoms.items()}
        )


class EscapingLogger(Logger):
    """Set as `logger_class` in config/gunicorn.conf.py."""

    atoms_wrapper_class = EscapedAtoms
