"""When a paper entered this index and when it last changed here (issue #31).

A paper's date says when it was published; its arrival says what is new *here*: what a feed
reader, `added_since` and `sort=added` ask for. Arrivals are kept with the merge state
(`ingest.collection`) across rebuilds and updates, so a rebuild never makes an old paper look new.
Instants are ISO 8601 in UTC to the second ("2026-12-04T22:04:13+00:00"), as the change journal
writes its changes' times: a paper a change adds arrives at that change's time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

# A date, or a date and time to the second or finer with an optional offset (naive: UTC).
_LAST_SECOND = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?")


@dataclass(frozen=True, slots=True)
class Arrival:
    """`added`: when the paper first entered this index; `changed`: when it was added or last
    changed here (by a rebuild that read it otherwise, or an update)."""

    added: str
    changed: str

    @classmethod
    def at(cls, instant: str) -> Arrival:
        """A paper new at `instant`."""
        return cls(instant, instant)

    @classmethod
    def from_stored(cls, added: object, changed: object) -> Arrival | None:
        """The arrival an engine stored (None where it stored none, or not an instant: bytes on
        disk are untrusted)."""
        if isinstance(added, str) and isinstance(changed, str) and _is_instant(added) and _is_instant(changed):
            return cls(added, changed)
        return None

    @property
    def added_second(self) -> int:
        """`added` as seconds since 1970: what engines sort and filter by."""
        return epoch_second(self.added)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def epoch_second(instant: str) -> int:
    """Seconds since 1970 of an ISO instant (naive: UTC), its fraction dropped."""
    parsed = datetime.fromisoformat(instant)
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp())


def since_second(text: str) -> int | None:
    """The first second of `since` as a request gives it: a date ("2026-12-01": from its first moment
    in UTC) or a date and time ("2026-12-04T22:04:13Z", "…+01:00"; naive: UTC); None if it is neither.
    A fraction of a second is dropped, so the papers stamped in that second are kept. Instants before
    1970 or past 9999 select as its bounds do, and are given as them (an offset can push a valid time there)."""
    text = text.strip()
    if not _INSTANT.fullmatch(text):
        return None
    try:
        if len(text) == len("2026-12-01"):
            day = date.fromisoformat(text)
            second = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
        else:
            second = epoch_second(text.replace("Z", "+00:00"))
    except ValueError:  # the right shape, not a real day or time: 2026-02-30
        return None
    return min(max(second, 0), _LAST_SECOND)


def _is_instant(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def iso_second(second: int) -> str:
    """Seconds since 1970 as an ISO instant in UTC: "2026-12-04T22:04:13Z"."""
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def last_changed(facts: Mapping[str, Any]) -> str:
    """When a generation's papers last changed, from its manifest or `_meta` (or a `status` built
    on them): a write's `changed_at`, else its build's `built_at`."""
    return str(facts.get("changed_at") or facts["built_at"])
