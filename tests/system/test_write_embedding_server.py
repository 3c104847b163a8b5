"""Writes through the Procfile's real gunicorn (gevent workers) with ranking by meaning on: every body the
limits allow, in every text format, is answered 2xx with what was done, and its papers are embedded by a
process of its own, never inside a request (issue #36: from 256 papers to embed, a write answered 500
and so did every write after it, since a gevent worker cannot run the encoder processes' pipes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.settings import Settings
from tests.helpers.bodies import FORMATS, body, largest_body
from tests.helpers.records import jsonl, made_up_papers
from tests.helpers.servers import get
from tests.helpers.write_servers import semantic_ranking, wait_until_ranked_by_meaning, write

pytestmark = pytest.mark.reliability

BODY_LIMIT = Settings().max_write_body_bytes  # the defaults: what users have
RECORDS_LIMIT = Settings().max_write_records


@pytest.fixture
def server(unembedded_server: tuple[str, Path]) -> str:
    return unembedded_server[0]


def test_a_write_to_an_index_built_without_meaning_is_answered_and_then_embedded(server: str) -> None:
    assert semantic_ranking(server) == "pending"  # built with it off: nothing embedded yet
    status, report = write(server, jsonl(made_up_papers("numbat", 1)).encode())
    assert status == 200, report
    assert report["added"] == ["numbat-00"] and report["semantic_ranking"] == "pending", report
    assert report["embedded"] == 0  # not in the request
    wait_until_ranked_by_meaning(server)  # the three built without it too
    # The tests below leave the embedding of their bodies' papers running: the server's stop ends it.


def test_the_next_write_is_answered_while_a_large_one_is_being_embedded(server: str) -> None:
    status, large = write(server, body("application/x-ndjson", "quoll", 1000))
    assert status == 200 and len(large["added"]) == 1000 and large["semantic_ranking"] == "pending", large
    status, small = write(server, jsonl(made_up_papers("bilby", 1)).encode())
    assert status == 200 and small["added"] == ["bilby-00"], small
    assert semantic_ranking(server) == "pending"  # the 1,000 papers' embedding did not hold it up
    wait_until_ranked_by_meaning(server)
    assert get(f"{server}/api/search?q=quoll+999")[1]["results"][0]["title"] == "quoll 999"


@pytest.mark.parametrize("content_type", list(FORMATS))
def test_a_body_of_256_papers_is_answered_in_every_format(server: str, content_type: str) -> None:
    """256 papers to embed: where every write began to answer 500 (the largest bodies: the next test)."""
    count = 256
    word = f"{content_type.split('/')[1][:8]}{count}"
    status, report = write(server, body(content_type, word, count), content_type)
    assert status == 200, report
    assert report["records"] == count and len(report["added"]) == count, report
    assert report["semantic_ranking"] == "pending" and report["changed_at"], report


@pytest.mark.parametrize("content_type", list(FORMATS))
def test_the_largest_body_the_limit_allows_is_answered_in_every_format(server: str, content_type: str) -> None:
    content, count = largest_body(content_type, f"largest{content_type.split('/')[1][:8]}", BODY_LIMIT, RECORDS_LIMIT)
    # As large as it gets: one record more would pass the byte limit or the record limit.
    assert len(content) <= BODY_LIMIT and (count == RECORDS_LIMIT or BODY_LIMIT < len(content) + 300)
    status, report = write(server, content, content_type)
    assert status == 200, report
    assert report["records"] == count and len(report["added"]) == count, report
    assert report["semantic_ranking"] == "pending", report


def test_one_record_past_the_limit_is_a_413_and_changes_nothing(server: str) -> None:
    before = get(f"{server}/readyz")[1]["generation"]
    status, refused = write(server, body("text/csv", "toomany", RECORDS_LIMIT + 1), "text/csv")
    assert status == 413 and refused["error"]["code"] == "too_many_records", refused
    assert f"more than {RECORDS_LIMIT:,} records" in refused["error"]["message"]
    assert get(f"{server}/readyz")[1]["generation"] == before
