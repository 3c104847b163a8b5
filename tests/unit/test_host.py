"""Scratch folders told apart by their locks, not by the pid in their names: two servers sharing an
index folder from different PID namespaces (containers on one volume) see each other's pids as
dead, or as some other live process. Work in processes of their own: at a lower priority, and a
call waited for answers what it returned or raised, and dies with its caller."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest

from searchsvc.core.errors import SourceFormatError
from searchsvc.host import (
    BACKGROUND_NICENESS,
    SCRATCH_LOCK,
    ProcessLost,
    RemoteTraceback,
    ScratchFolder,
    at_lower_priority,
    call_in_process,
    remove_abandoned,
    start_detached,
)
from tests.helpers import calls_in_process

PREFIX = ".write-"
_MAKE_AND_WAIT = """
import sys, time
from pathlib import Path
from searchsvc.host import ScratchFolder
folder = ScratchFolder(Path(sys.argv[1]), sys.argv[2])
print(folder.path, flush=True)
time.sleep(60)
"""


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@contextmanager
def held_by_another_host(folder: Path) -> Iterator[None]:
    """`folder` in use by a process this one cannot see: only its lock tells."""
    folder.mkdir()
    fd = os.open(folder / SCRATCH_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_folder_in_use_is_kept_and_an_abandoned_one_removed_whatever_pid_their_names_show(tmp_path: Path) -> None:
    """Issue #36: each server deleted the other's uploads, their pids being dead in its own namespace."""
    in_use = tmp_path / f"{PREFIX}{dead_pid()}-other-host"
    abandoned = tmp_path / f"{PREFIX}{os.getppid()}-killed"  # its pid names a live process here
    abandoned.mkdir()
    (abandoned / "body.jsonl").write_text("{}\n", encoding="utf-8")
    with held_by_another_host(in_use):
        (in_use / "body.jsonl").write_text("{}\n", encoding="utf-8")
        assert remove_abandoned(tmp_path, PREFIX) == [abandoned.name]
        assert (in_use / "body.jsonl").exists() and not abandoned.exists()
    assert remove_abandoned(tmp_path, PREFIX) == [in_use.name]  # once its process let go
    assert list(tmp_path.iterdir()) == []


def test_a_scratch_folder_is_locked_while_used_and_removed_after_its_process_is_killed(tmp_path: Path) -> None:
    mine = ScratchFolder(tmp_path, PREFIX)
    assert mine.path.name.startswith(f"{PREFIX}{os.getpid()}-") and mine.path.stat().st_mode & 0o777 == 0o700
    child = subprocess.Popen([sys.executable, "-c", _MAKE_AND_WAIT, str(tmp_path), PREFIX], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        theirs = Path(child.stdout.readline().decode().strip())
        assert remove_abandoned(tmp_path, PREFIX) == [] and theirs.is_dir()
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert remove_abandoned(tmp_path, PREFIX) == [theirs.name]
    mine.remove()
    assert list(tmp_path.iterdir()) == []


def test_only_names_with_the_prefix_are_touched(tmp_path: Path) -> None:
    others = [tmp_path / "write-1-x", tmp_path / ".writer-1-x", tmp_path / "notes.txt"]
    for path in others:
        path.write_text("theirs", encoding="utf-8")
    (tmp_path / f"{PREFIX}link").symlink_to(tmp_path / "notes.txt")
    assert remove_abandoned(tmp_path, PREFIX) == []
    assert all(path.read_text(encoding="utf-8") == "theirs" for path in others)


def test_work_started_in_the_background_yields_the_cores_to_searches(tmp_path: Path) -> None:
    """A write's embedding runs detached at a lower priority, which its encoder processes inherit."""
    told = tmp_path / "niceness"
    process = start_detached("tests.helpers.niceness_probe", str(told).encode())
    assert process.wait(timeout=60) == 0
    assert int(told.read_text(encoding="utf-8")) == min(19, os.nice(0) + BACKGROUND_NICENESS)


def test_a_call_in_a_process_of_its_own_answers_at_a_lower_priority() -> None:
    turns, niceness = call_in_process(calls_in_process.busy, 0.05)
    assert turns > 0
    assert niceness == os.nice(0) + BACKGROUND_NICENESS


def test_what_a_call_raises_is_raised_to_its_caller_with_its_fields_and_where() -> None:
    """A SourceFormatError's constructor takes (path, line, problem), not its message: it still travels."""
    with pytest.raises(SourceFormatError) as raised:
        call_in_process(calls_in_process.unreadable_source, 7)
    assert (raised.value.message, raised.value.line, raised.value.details) == (
        "body:7: not JSON",
        7,
        {"path": "body", "line": 7},
    )
    assert isinstance(raised.value.__cause__, RemoteTraceback)
    assert "unreadable_source" in str(raised.value.__cause__)
    with pytest.raises(KeyError, match="a bug"):
        call_in_process(calls_in_process.unexpected)


def test_a_process_that_ends_without_an_answer_is_process_lost() -> None:
    with pytest.raises(ProcessLost, match="ends_without_answer ended with status 3"):
        call_in_process(calls_in_process.ends_without_answer)


_KILLED_PARENT = """
import sys
from searchsvc.host import call_in_process
from tests.helpers.calls_in_process import write_later
call_in_process(write_later, sys.argv[1])
"""


def test_a_call_dies_with_the_process_that_waits_for_it(tmp_path: Path) -> None:
    """As a thread would: a write whose worker was killed must not go on holding the index's lock."""
    parent = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(tmp_path)])
    started = tmp_path / "started"
    waited = time.monotonic() + 60
    while not (started.exists() and started.read_text(encoding="utf-8")) and parent.poll() is None:
        assert time.monotonic() < waited, "the call never started"
        time.sleep(0.01)
    parent.kill()
    parent.wait()
    call = psutil.Process(int(started.read_text(encoding="utf-8")))
    with suppress(psutil.NoSuchProcess):
        call.wait(timeout=10)  # SIGKILLed by the kernel as its parent died, long before it writes
    assert not (tmp_path / "written").exists()


def test_a_change_at_lower_priority_leaves_the_callers_own() -> None:
    """Linux keeps a niceness per thread: the command's change yields, its caller's thread does not."""
    here = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, here)
    seen = at_lower_priority(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert seen == min(19, before + BACKGROUND_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, here) == before
    with pytest.raises(KeyError, match="a bug"):
        at_lower_priority(calls_in_process.unexpected)
