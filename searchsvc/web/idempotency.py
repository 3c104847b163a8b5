"""Idempotency keys of the write API (after draft-ietf-httpapi-idempotency-key-header): a client
that sent a write and got no answer (a dropped connection, a worker killed, a timeout) sends it
again with the same `Idempotency-Key`; the change is made at most once, and the retry is answered
with the first one's report. `GET /api/changes/<key>` tells the outcome without sending it again.

A key belongs to its writer: another writer's key is another key. The journal keeps it with a
digest of the request (method, path, media type, body), so a key sent with another request is
refused (422) rather than answered with a change the client did not ask for.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from flask import request

from searchsvc.core.catalogue import Idempotency
from searchsvc.core.errors import InvalidRequest

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
_CHARACTERS = rf"[\x21\x23-\x7e]{{1,{MAX_KEY_LENGTH}}}"  # visible ASCII but '"'
_KEY = re.compile(rf'"({_CHARACTERS})"|({_CHARACTERS})')  # quoted, as the draft's examples, or bare
_CHUNK_BYTES = 1 << 16
KEY_RULE = f"1 to {MAX_KEY_LENGTH} visible ASCII characters, such as a UUID"


def sent_key() -> str | None:
    """The request's idempotency key, None if it sent none; InvalidRequest if it is not one."""
    raw = request.headers.get(HEADER)
    return None if raw is None else valid_key(raw, f"the {HEADER} header")


def valid_key(raw: str, where: str) -> str:
    """`raw` as a key (a structured-field string's quotes removed), or InvalidRequest naming `where`."""
    found = _KEY.fullmatch(raw.strip())
    if found is None:
        raise InvalidRequest(f"{where} is not an idempotency key: it must be {KEY_RULE}", {"field": HEADER})
    return found.group(1) or found.group(2)


def keyed(writer: str, key: str | None, body: Path | None = None) -> Idempotency | None:
    """This request under `key` by `writer`, its digest taken over what it asks (None: no key)."""
    if key is None:
        return None
    digest = hashlib.sha256(f"{request.method} {request.path}\n{request.mimetype}\n".encode())
    if body is not None:
        with body.open("rb") as stream:
            while chunk := stream.read(_CHUNK_BYTES):
                digest.update(chunk)
    return Idempotency(writer, key, digest.hexdigest())
