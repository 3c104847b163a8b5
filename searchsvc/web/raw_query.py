"""Bytes of the request line as sent: text that is not UTF-8 is refused, not searched.

Werkzeug decodes percent-escapes with replacement characters, so `q=%80` would reach the
search as `q=\ufffd`, a query the user never typed. The raw query string and path still hold
the bytes sent, so the check runs on them, once, before any view.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from flask import request

from searchsvc.core.errors import InvalidRequest

NOT_UTF8 = "Not valid UTF-8 text."


def refuse_invalid_utf8() -> None:
    """Raise InvalidRequest naming the first parameter (or the path) whose bytes are not UTF-8."""
    for pair in request.query_string.split(b"&"):
        raw_name, _, raw_value = pair.partition(b"=")
        name, name_ok = _decoded(raw_name)
        if not name_ok or not _decoded(raw_value)[1]:
            raise InvalidRequest(f"invalid parameters: {name} is not valid UTF-8 text", {name: [NOT_UTF8]})
    if not _is_utf8(_raw_path()):
        raise InvalidRequest("invalid path: the URL is not valid UTF-8 text", {"path": [NOT_UTF8]})


def _raw_path() -> bytes:
    """The path as sent: servers put the request line in RAW_URI or REQUEST_URI (as latin-1 text),
    while PATH_INFO may already be decoded with replacement characters."""
    uri = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    if uri is None:
        return request.environ.get("PATH_INFO", "").encode("latin-1", "replace")
    return unquote_to_bytes(uri.partition("?")[0].encode("latin-1", "replace"))


def _decoded(raw: bytes) -> tuple[str, bool]:
    """Percent-decoded text (replacement characters where invalid) and whether it was valid."""
    data = unquote_to_bytes(raw.replace(b"+", b" "))
    return data.decode("utf-8", "replace"), _is_utf8(data)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
