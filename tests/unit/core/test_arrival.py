"""Instants as requests give them (`added_since`) and as engines store them."""

from __future__ import annotations

import pytest

from searchsvc.core.arrival import Arrival, epoch_second, iso_second, since_second

MOMENT = 1796424853  # 2026-12-04T22:54:13Z


@pytest.mark.parametrize(
    ("given", "second"),
    [
        ("2026-12-04T22:54:13Z", MOMENT),
        ("2026-12-04T22:54:13+00:00", MOMENT),
        ("2026-12-04T23:54:13+01:00", MOMENT),
        ("2026-12-04T22:54:13", MOMENT),  # no offset: UTC
        ("2026-12-04T22:54:13.999Z", MOMENT),  # the second it falls in: its papers are kept
        ("2026-12-04 22:54:13Z", MOMENT),
        ("2026-12-04T22:54Z", MOMENT - 13),
        ("2026-12-04", MOMENT - (22 * 3600 + 54 * 60 + 13)),  # a day: from its start, in UTC
    ],
)
def test_since_reads_a_date_or_an_instant(given: str, second: int) -> None:
    assert since_second(given) == second


@pytest.mark.parametrize(
    "given", ["", "yesterday", "2026-12", "2026-02-30", "2026-12-04T25:00Z", "2026-12-04T22:54:13+1", "1796424853"]
)
def test_since_refuses_what_is_not_an_instant(given: str) -> None:
    assert since_second(given) is None


@pytest.mark.parametrize(
    ("given", "echoed"),
    [
        ("0001-01-01T00:00:00+23:59", "1970-01-01T00:00:00Z"),
        ("1900-01-01", "1970-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59Z"),
    ],
)
def test_instants_past_the_bounds_select_as_the_bounds(given: str, echoed: str) -> None:
    second = since_second(given)
    assert second is not None and iso_second(second) == echoed


def test_instants_round_trip() -> None:
    assert iso_second(MOMENT) == "2026-12-04T22:54:13Z"
    assert epoch_second("2026-12-04T22:54:13+00:00") == MOMENT
    assert Arrival("2026-12-04T22:54:13+00:00", "2026-12-05T00:00:00+00:00").added_second == MOMENT


@pytest.mark.parametrize(
    ("added", "changed"), [(None, None), ("soon", "2026-12-04"), (1796424853, "2026-12-04"), ("", "")]
)
def test_an_arrival_an_engine_stored_wrongly_is_none(added: object, changed: object) -> None:
    assert Arrival.from_stored(added, changed) is None
