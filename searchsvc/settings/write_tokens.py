"""Bearer tokens of the write API: made once, stored only as `name:sha256-hex` lines, checked in constant time.

The service never holds a token, only its SHA-256: a leaked tokens file or setting lets nobody
write. A token is 32 random bytes, so one unsalted hash is enough (nothing to guess word by word).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote_plus

TOKEN_BYTES = 32  # 256 random bits: beyond guessing, and no slower hash is needed to protect them
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
ENTRY_FORM = "NAME:SHA256 (NAME: letters, digits, _ . @ -, at most 64; SHA256: 64 lowercase hex digits)"
_MAX_FILE_BYTES = 1 << 20  # a tokens file is a few lines; a larger one is the wrong file
# Where a client might put a token in a URL (RFC 6750 section 2.3 names access_token): refused by the
# write API and hidden in the access log, which records the URL before the app sees it.
QUERY_TOKEN_PARAMETERS = frozenset({"token", "access_token"})


def is_token_parameter(name: str) -> bool:
    """Whether a query parameter's name is any spelling of a token's: percent-encoded once or more
    (`%2574oken`), in any case, with spaces, `+` or control characters in it (`token+`, `token%00`).
    Issue #36: those spellings were neither refused nor hidden in the access log."""
    for _attempt in range(3):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return "".join(char for char in name if char.isalnum() or char == "_").casefold() in QUERY_TOKEN_PARAMETERS


@dataclass(frozen=True)
class TokenHash:
    """One configured writer: the name logged for its changes, and its token's SHA-256."""

    name: str
    digest: bytes


def digest_of(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    """A fresh random token (URL-safe text, 43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def entry_for(name: str, token: str) -> str:
    """The `name:sha256-hex` line that lets `token` write as `name`; ValueError for a bad name."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a token name: {ENTRY_FORM}")
    return f"{name}:{digest_of(token).hex()}"


def parse_entry(text: str) -> TokenHash:
    """A `name:sha256-hex` entry; ValueError saying what is wrong (never echoing the hash)."""
    name, colon, digest = text.strip().partition(":")
    if not colon:
        raise ValueError(f"expected {ENTRY_FORM}, found no ':'")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name[:70]!r} is not a token name: expected {ENTRY_FORM}")
    if not _HEX_DIGEST.fullmatch(digest):
        raise ValueError(f"the hash of {name!r} is not 64 lowercase hex digits (a SHA-256): expected {ENTRY_FORM}")
    return TokenHash(name, bytes.fromhex(digest))


def read_tokens_file(path: Path) -> tuple[TokenHash, ...]:
    """The entries of a tokens file (blank lines and `#` comments skipped); ValueError `file:line: what is wrong`."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {_MAX_FILE_BYTES:,} bytes: not a tokens file")
    entries = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        try:
            text = line.decode("utf-8").split("#", 1)[0].strip()
            if text:
                entries.append(parse_entry(text))
        except (UnicodeDecodeError, ValueError) as exc:
            problem = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise ValueError(f"{path}:{number}: {problem}") from None
    return tuple(entries)


def duplicate_name(entries: Iterable[TokenHash]) -> str | None:
    """A name given to two entries, if any: each change is logged by name, so a name must mean one token."""
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            return entry.name
        seen.add(entry.name)
    return None


def writer_named_by(token: str, entries: Iterable[TokenHash]) -> str | None:
    """The name of the entry `token` hashes to, or None. Every entry is compared, in constant time
    each, whatever matched before: the time taken tells nothing of which entry, if any, matched."""
    presented = digest_of(token)
    found = None
    for entry in entries:
        if hmac.compare_digest(presented, entry.digest) and found is None:
            found = entry.name
    return found
