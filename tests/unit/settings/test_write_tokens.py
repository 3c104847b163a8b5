"""Write tokens: made random, kept as hashes, compared in constant time against every writer."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from searchsvc.settings import write_tokens
from searchsvc.settings.write_tokens import TokenHash, entry_for, new_token, parse_entry, writer_named_by


def test_a_new_token_is_random_and_its_entry_holds_only_its_hash() -> None:
    token = new_token()
    assert token != new_token() and len(token) >= 43
    entry = entry_for("ci-bot", token)
    assert entry == f"ci-bot:{hashlib.sha256(token.encode()).hexdigest()}" and token not in entry
    assert parse_entry(entry) == TokenHash("ci-bot", hashlib.sha256(token.encode()).digest())


def test_the_writer_is_named_by_the_token_that_hashes_to_its_entry() -> None:
    tokens = {name: new_token() for name in ("alice", "bob", "ci-bot")}
    writers = [parse_entry(entry_for(name, token)) for name, token in tokens.items()]
    for name, token in tokens.items():
        assert writer_named_by(token, writers) == name
    assert writer_named_by(new_token(), writers) is None
    assert writer_named_by("", writers) is None
    assert writer_named_by(entry_for("alice", tokens["alice"]).split(":")[1], writers) is None  # the hash is no token


def test_every_writer_is_compared_whichever_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    """No early return: the time taken says nothing of which writer, if any, matched."""
    calls: list[bytes] = []
    real_compare = hmac.compare_digest

    def compare(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return real_compare(a, b)

    monkeypatch.setattr(write_tokens.hmac, "compare_digest", compare)
    token = new_token()
    writers = [
        parse_entry(entry_for("first", token)),
        *(parse_entry(entry_for(f"w{n}", new_token())) for n in range(4)),
    ]
    assert writer_named_by(token, writers) == "first"
    assert len(calls) == len(writers)
