"""Who may change the index: a bearer token whose SHA-256 is one of the configured writers'.

Refusals, in this order: the write API is off (403: no token could help), a token in the URL
(400: it is never read, so a leaked URL never works), no `Authorization: Bearer` header (401),
a token that is no writer's (403). Read routes never come here: they stay open.
"""

from __future__ import annotations

from flask import current_app, request

from searchsvc.core.errors import SearchsvcError
from searchsvc.settings.write_tokens import is_token_parameter, writer_named_by
from searchsvc.web.service import service

# The write API's refusals of who asks: each its own status and code (web/http_errors.py).


class WriteApiOff(SearchsvcError):
    """A change asked of a service configured with no write tokens: no token could be right."""

    code = "write_api_off"


class MissingToken(SearchsvcError):
    """A change asked without an `Authorization: Bearer` header."""

    code = "unauthorized"


class WrongToken(SearchsvcError):
    """A bearer token that is none of the configured writers'."""

    code = "forbidden"


class TokenInQuery(SearchsvcError):
    """A token put in the URL, where logs, proxies and browser histories keep it: refused, never read."""

    code = "token_in_query"


def writer() -> str:
    """The name of the writer this request is from; raises the refusal when it is from none."""
    writers = service().writers
    if not writers:
        raise WriteApiOff(
            "the write API is off: set write_tokens_file (or write_token_hashes) to NAME:SHA256 entries made with "
            "`searchsvc token NAME`, then restart the service"
        )
    if any(map(is_token_parameter, request.args)):
        _log_refusal("token in the URL")
        raise TokenInQuery(
            "a token in the URL is refused, and was not checked: send it as the header 'Authorization: Bearer "
            "<token>'; make a new token too, since URLs are kept in logs and histories"
        )
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise MissingToken("changing the index needs a write token: send the header 'Authorization: Bearer <token>'")
    name = writer_named_by(token.strip(), writers)
    if name is None:
        _log_refusal("a token that is no writer's")
        raise WrongToken("this token may not change the index")
    return name


def _log_refusal(why: str) -> None:
    """Refused attempts, for the operator: where from, never what was presented."""
    current_app.logger.warning(
        "write refused: %s (%s %s from %s)", why, request.method, request.path, request.remote_addr
    )
