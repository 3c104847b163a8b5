"""The background merge's count of deleted copies, for an index a rebuild deletes while it counts
(the merge process crashed with KeyError: 'docs', seen in the suite's teardown)."""

from __future__ import annotations

from typing import Any

import pytest
from opensearchpy import exceptions as os_errors

from searchsvc.backends.opensearch.merging import deleted


class Stats:
    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer

    def stats(self, index: str, metric: str) -> dict[str, Any]:
        if self.answer is None:
            raise os_errors.NotFoundError(404, "index_not_found_exception", {})
        return self.answer


class Client:
    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.indices = Stats(answer)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"_all": {"total": {"docs": {"count": 9, "deleted": 4}}}}, 4),
        ({"_all": {"total": {}}}, 0),  # being deleted: no shard left to count
        (None, 0),  # deleted
    ],
    ids=["counted", "no-shards", "gone"],
)
def test_an_index_deleted_while_its_copies_are_counted_has_none(answer: dict[str, Any] | None, expected: int) -> None:
    assert deleted(Client(answer), "papers-1") == expected  # type: ignore[arg-type]
