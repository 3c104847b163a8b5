"""What the machine's kernel keeps and tells: whether a process still runs (what tells a file or
lock left by a killed process from one in use), a rename made to survive a crash, work done
after an answer by a process of its own, one such process at a time, and work done beside the
requests by a native thread."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")


def running(pid: int) -> bool:
    """Whether process `pid` runs on this machine."""
    if pid <= 0:  # os.kill(0, ...) and negative pids address process groups, not one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def remove_abandoned(directory: Path, prefix: str) -> None:
    """Delete the files and folders in `directory` named `<prefix><pid>-…` whose process has gone:
    a process killed while writing one cannot clean up after itself."""
    for path in directory.glob(f"{prefix}*"):
        pid = path.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and not running(int(pid)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def fsync_dir(directory: Path) -> None:
    """Flush the folder holding a rename, so the rename itself survives a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def start_detached(module: str, data: bytes) -> subprocess.Popen[bytes]:
    """Run `module.main()` in a process of its own with `data` on its standard input (secrets travel
    there, never on a command line) and return at once; its log lines go to this process's standard
    error. Not `python -m module`: a package that imports the module first would hold two copies."""
    run = f"import sys; from {module} import main; sys.exit(main())"
    process = subprocess.Popen([sys.executable, "-c", run], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(data)
    # Reaped when it ends (a green thread in a gevent worker), so no zombie is left behind.
    threading.Thread(target=process.wait, name=f"{module}-reaper", daemon=True).start()
    return process


@contextmanager
def alone(path: Path) -> Iterator[bool]:
    """Whether this process holds the lock at `path` (without waiting for it), for the block; the
    kernel drops it when the process dies, so a killed holder leaves no lock behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def alone_until_unchanged(lock: Path, state: Callable[[], object], work: Callable[[], _T]) -> list[_T] | None:
    """Do `work` holding `lock`, again as long as `state()` changed meanwhile; each pass's result,
    or None if another process held the lock first (it does the work).

    For work a change leaves to a process of its own, started after each change: a newcomer that
    finds the lock taken leaves, and the holder looks at `state()` again after releasing the lock.
    Either the newcomer tried after the release (it takes the lock) or its change came before the
    release (the holder sees it), so no change is left undone."""
    done: list[_T] = []
    while True:
        with alone(lock) as mine:
            if not mine:
                return done or None
            seen = state()
            done.append(work())
        if state() == seen:
            return done


_beside: Executor | None = None
_beside_made = threading.Lock()


def beside() -> Executor:
    """Where this process does work its requests need but should not wait for past their budget
    (opening a newly published index), one piece at a time, in a native thread: a thread of its
    own, or the pool `work_beside_in` named (a gevent worker's, whose futures wait cooperatively)."""
    global _beside
    with _beside_made:
        if _beside is None:
            _beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="searchsvc-beside")
        return _beside


def work_beside_in(executor: Executor) -> None:
    """From now on `beside()` is `executor` (before any work was handed to it)."""
    global _beside
    with _beside_made:
        _beside = executor
