"""A real `searchsvc rebuild` SIGKILLed while it reads, indexes (forked writers alive) or embeds:
nothing of it may live on, nor hold the rebuild lock, and the next rebuild must run at once."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from searchsvc.backends.whoosh.generations import GenerationStore
from tests.helpers.paths import SEEDS, SHARED_ACL
from tests.helpers.servers import SEARCHSVC, environment

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records"),
]

SURVIVAL_LIMIT = 2.0  # seconds a killed rebuild's processes may take to disappear
POLL = 0.005  # seconds between two looks at the rebuild; reading the ACL records takes about 2 s
PHASE_DEADLINE = 240.0  # seconds to reach the phase to kill in, on a loaded two-core machine


def slice_of_acl(path: Path, count: int) -> Path:
    """The first `count` ACL records as a source file."""
    with SHARED_ACL.open(encoding="utf-8") as source:
        path.write_text("".join(line for line, _ in zip(source, range(count), strict=False)), encoding="utf-8")
    return path


@contextmanager
def rebuilding(index_dir: Path, source: Path, semantic: bool) -> Iterator[subprocess.Popen[bytes]]:
    """A real rebuild process; SIGKILLed and reaped on exit whatever the test did."""
    env = environment(SEARCHSVC_INDEX_DIR=str(index_dir), SEARCHSVC_SEMANTIC_RANKING=str(semantic).lower())
    command = [str(SEARCHSVC), "rebuild", str(source)]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as victim:
        try:
            yield victim
        finally:
            victim.kill()
            victim.wait()


def wait_for(condition: Callable[[], bool], victim: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + PHASE_DEADLINE
    while not condition():
        assert victim.poll() is None, f"the rebuild ended (exit {victim.returncode}) before {what}"
        assert time.monotonic() < deadline, f"the rebuild never reached {what}"
        time.sleep(POLL)


def reading(index_dir: Path, victim: subprocess.Popen[bytes]) -> Callable[[], bool]:
    """The rebuild holds its lock and has not created its generation yet: it is reading sources."""

    def check() -> bool:
        try:
            holder = json.loads((index_dir / "rebuild.lock").read_text() or "{}")  # its kind, pid and host
        except (FileNotFoundError, json.JSONDecodeError):  # not there, or being written
            return False
        return holder.get("pid") == victim.pid and not any((index_dir / "generations").iterdir())

    return check


def indexing(index_dir: Path, victim: subprocess.Popen[bytes]) -> Callable[[], bool]:
    """Two forked index writers are running."""
    return lambda: len(psutil.Process(victim.pid).children(recursive=True)) >= 2


def embedding(index_dir: Path, victim: subprocess.Popen[bytes]) -> Callable[[], bool]:
    """The new generation is published: the rebuild has gone on to embed its papers."""
    return lambda: (index_dir / "CURRENT").exists()


def alive(process: psutil.Process) -> bool:
    """Running and not a zombie (this machine's init does not reap orphans)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def survivors(processes: list[psutil.Process], within: float) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while any(alive(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in processes if alive(p)]


def lock_is_free(index_dir: Path) -> bool:
    fd = os.open(index_dir / "rebuild.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


CASES = {
    # phase: (records, ranking by meaning on, how to tell the rebuild is in that phase)
    "reading": (None, False, reading),
    "indexing": (None, False, indexing),
    "embedding": (1500, True, embedding),  # a slice: embedding starts after its ~5 s of indexing
}


@pytest.mark.parametrize("phase", list(CASES))
def test_a_killed_rebuild_leaves_no_process_and_no_lock(phase: str, tmp_path: Path) -> None:
    records, semantic, in_phase = CASES[phase]
    index_dir = tmp_path / "index"
    source = SHARED_ACL if records is None else slice_of_acl(tmp_path / "slice.jsonl", records)
    with rebuilding(index_dir, source, semantic) as victim:
        wait_for(in_phase(index_dir, victim), victim, phase)
        time.sleep(0.5 if phase != "reading" else 0)  # well inside the phase (each lasts seconds)
        tree = [psutil.Process(victim.pid), *psutil.Process(victim.pid).children(recursive=True)]
        assert phase != "indexing" or len(tree) >= 3, "the writers were not running at the kill"
        victim.send_signal(signal.SIGKILL)
        left = survivors(tree, SURVIVAL_LIMIT)
    try:
        assert left == [], f"processes of the killed rebuild still run: {[(p.pid, p.cmdline()) for p in left]}"
        assert victim.returncode == -signal.SIGKILL, "the kill came too late: the rebuild had finished"
        assert lock_is_free(index_dir), "the rebuild lock is still held after the rebuild was killed"
        if phase == "reading":
            assert not any((index_dir / "generations").iterdir()), "the kill came after reading"
        again = subprocess.run(
            [str(SEARCHSVC), "rebuild", str(SEEDS)],
            env=environment(SEARCHSVC_INDEX_DIR=str(index_dir), SEARCHSVC_SEMANTIC_RANKING="false"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr
        status = subprocess.run(
            [str(SEARCHSVC), "status", "--index-dir", str(index_dir)], capture_output=True, text=True
        )
        assert json.loads(status.stdout)["doc_count"] == 28
    finally:
        for process in left:
            process.kill()


def _outlive_the_lock(started: Any, seconds: float) -> None:
    started.set()
    time.sleep(seconds)


def test_a_forked_child_does_not_keep_the_rebuild_lock(tmp_path: Path) -> None:
    """The writers are forked while the lock is held: the lock must end with the rebuild, not with them."""
    store = GenerationStore(tmp_path / "index")
    context = multiprocessing.get_context("fork")
    started = context.Event()
    child = context.Process(target=_outlive_the_lock, args=(started, 30), daemon=True)
    try:
        with store.rebuild_lock("rebuild"):
            child.start()
            assert started.wait(timeout=60)  # the child runs: whatever it does on forking is done
        assert child.is_alive()
        assert lock_is_free(tmp_path / "index"), "a forked child still holds the rebuild lock"
    finally:
        child.kill()
        child.join()
