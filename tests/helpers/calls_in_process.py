"""Functions `host.call_in_process` runs in tests: importable by name from a process of its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

from searchsvc.core.errors import SourceFormatError


def busy(seconds: float) -> tuple[int, int]:
    """Compute for `seconds` without a pause; how many turns, and this process's niceness."""
    ends = time.monotonic() + seconds
    turns = 0
    while time.monotonic() < ends:
        turns += 1
    return turns, os.nice(0)


def unreadable_source(line: int) -> None:
    print("printed, not answered")  # stdout is the answer's pipe: this must not corrupt it
    raise SourceFormatError("body", line, "not JSON")


def unexpected() -> None:
    raise KeyError("a bug")


def ends_without_answer() -> None:
    os._exit(3)


def write_later(folder: str) -> None:
    """Say this process's pid in `folder`/started, then write `folder`/written 3 seconds later."""
    (Path(folder) / "started").write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(3.0)
    (Path(folder) / "written").write_text("written", encoding="utf-8")
