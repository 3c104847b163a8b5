"""What the machine's kernel keeps and tells: whether a process still runs, scratch folders locked
while in use (what tells one left by a killed process from one in use, on any host sharing the
folder), a rename made to survive a crash, work done after an answer by a process of its own,
one such process at a time, work waited for in a process of its own that dies with its parent,
and work done beside the requests by a native thread."""

from __future__ import annotations

import ctypes
import fcntl
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

_T = TypeVar("_T")


def running(pid: int) -> bool:
    """Whether process `pid` runs on this machine, as this process's PID namespace numbers them."""
    if pid <= 0:  # os.kill(0, ...) and negative pids address process groups, not one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


SCRATCH_LOCK = ".lock"  # in each scratch folder, held (flock) by the process using the folder


class ScratchFolder:
    """A folder of this process's own in `parent` (None: the system's temporary directory), named
    `<prefix><pid>-<random>` and locked until `remove`, so `remove_abandoned` tells it from one a
    killed process left, whichever host or PID namespace looks: two containers sharing a volume
    number their processes alike, so a pid in a name tells nothing there (it is for the operator's
    eyes). The kernel drops the lock with its process, even at SIGKILL; a forked child shares it."""

    def __init__(self, parent: Path | None, prefix: str) -> None:
        while True:  # again only if a sweep removed the new folder before this process locked it
            path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))  # mode 0700
            fd = _locked(path / SCRATCH_LOCK)
            if fd is not None:
                break
        self.path = path
        self._remove = weakref.finalize(self, _remove_then_unlock, path, fd)

    def remove(self) -> None:
        """Delete the folder, then drop its lock (done at garbage collection otherwise)."""
        self._remove()


def _locked(lock: Path) -> int | None:
    """The lock file at `lock`, made and held; None if its folder was swept away meanwhile."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except FileNotFoundError:
        return None
    fcntl.flock(fd, fcntl.LOCK_EX)  # waits only for a sweep that took it first, while it removes the folder
    try:
        if os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
            return fd
    except FileNotFoundError:
        pass
    os.close(fd)
    return None


def _remove_then_unlock(path: Path, fd: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.close(fd)


def remove_abandoned(directory: Path, prefix: str) -> list[str]:
    """Delete the scratch folders in `directory` named `<prefix><pid>-…` whose lock no process holds
    (a process killed while using one cannot clean up after itself), whatever the pid; their names.
    A plain file so named (an earlier version wrote files) goes when no process holds a lock on it."""
    removed = []
    for path in sorted(directory.glob(f"{prefix}*")):
        pid, dash, _random = path.name.removeprefix(prefix).partition("-")
        if not (pid.isdigit() and dash) or path.is_symlink():
            continue  # not named by ScratchFolder: not ours
        if path.is_dir():
            gone = remove_unless_locked(path / SCRATCH_LOCK, partial(shutil.rmtree, path, ignore_errors=True))
        else:
            gone = path.is_file() and remove_unless_locked(path, partial(path.unlink, missing_ok=True))
        if gone:
            removed.append(path.name)
    return removed


def remove_unless_locked(lock: Path, remove: Callable[[], None]) -> bool:
    """`remove()` while holding the lock at `lock` (made if missing: a folder whose maker was killed
    before locking it), unless another process holds it; whether it was called."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:  # removed meanwhile, or another user's: not ours to judge
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        remove()
        return True
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Flush the folder holding a rename, so the rename itself survives a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Work started in the background (embedding a write's papers, merging on OpenSearch) yields the cores to
# searches: at 300,000 papers a write's embedding on both cores beside 4 clients took searches past their budget.
# Not more: at 10 (a tenth of a core beside a busy process) 1,000 papers were not embedded in 2 minutes under load.
BACKGROUND_NICENESS = 5


def start_detached(module: str, data: bytes) -> subprocess.Popen[bytes]:
    """Run `module.main()` in a process of its own, at a lower priority (`BACKGROUND_NICENESS`, which
    the processes it starts inherit), with `data` on its standard input (secrets travel there, never
    on a command line) and return at once; its log lines go to this process's standard error. Not
    `python -m module`: a package that imports the module first would hold two copies."""
    process = _python_at_lower_priority(f"import sys; from {module} import main; sys.exit(main())", subprocess.DEVNULL)
    assert process.stdin is not None
    with process.stdin:
        process.stdin.write(data)
    # Reaped when it ends (a green thread in a gevent worker), so no zombie is left behind.
    threading.Thread(target=process.wait, name=f"{module}-reaper", daemon=True).start()
    return process


def _python_at_lower_priority(code: str, stdout: int) -> subprocess.Popen[bytes]:
    """`python -c code` started at `BACKGROUND_NICENESS`, its standard input a pipe."""
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=stdout)
    with suppress(OSError):  # gone already, or not allowed: it runs at the usual priority
        os.setpriority(os.PRIO_PROCESS, process.pid, BACKGROUND_NICENESS)
    return process


def at_lower_priority(work: Callable[[], _T]) -> _T:
    """`work()` in a thread of this process at `BACKGROUND_NICENESS` (Linux keeps a niceness per
    thread, and the processes the thread starts inherit it), waited for; this thread's own
    priority is untouched, as no unprivileged process could raise it back. For a command's change
    (`searchsvc add`, `remove`): a server on the same machine answers its searches first. A
    daemon thread, so an interrupted command ends at once, as a killed change does (nothing half-made)."""
    done: list[_T] = []
    failed: list[BaseException] = []

    def run() -> None:
        with suppress(OSError):  # not allowed: it runs at the usual priority
            os.setpriority(
                os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + BACKGROUND_NICENESS
            )
        try:
            done.append(work())
        except BaseException as exc:  # raised again in the waiting thread, where it is expected
            failed.append(exc)

    thread = threading.Thread(target=run, name="searchsvc-change", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


class ProcessLost(Exception):
    """A process `call_in_process` started ended without an answer (killed, or out of memory)."""


class RemoteTraceback(Exception):
    """Where an exception raised in another process was raised: its traceback, as text."""

    def __str__(self) -> str:
        return str(self.args[0])


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def call_in_process(function: Callable[..., _T], *args: Any) -> _T:
    """`function(*args)` in a process of its own at a lower priority (`BACKGROUND_NICENESS`), waited
    for: its result, or what it raised, raised here (with its traceback as the cause). Arguments and
    results travel pickled on pipes, never on a command line. The process dies with this one (or
    with the thread that started it: a gevent worker starts it from its one native thread), as a
    thread would; a process that ends without an answer is `ProcessLost`.

    Why: work in a native thread shares the interpreter with the requests around it, in turns, so a
    write at 300,000 papers slowed every search of its worker (issue #30); in a process of its own it
    shares only the cores, and gives them up to the searches first."""
    process = _python_at_lower_priority(
        f"from searchsvc.host import answer_call; answer_call({os.getpid()})", subprocess.PIPE
    )
    answer, _ = process.communicate(pickle.dumps((function, args)))  # cooperative in a gevent worker
    if process.returncode != 0 or not answer:
        raise ProcessLost(f"the process doing {function.__qualname__} ended with status {process.returncode}")
    raised, value, where = pickle.loads(answer)  # noqa: S301 - written by the process this one started
    if raised:
        raise value from RemoteTraceback(where)
    return value


def answer_call(parent: int) -> None:
    """The process `call_in_process` starts: the call from standard input, its outcome to standard
    output, as (raised, value, traceback). Anything the call prints goes to standard error."""
    die_with(parent)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    function, args = pickle.load(sys.stdin.buffer)  # noqa: S301 - written by the parent process
    try:
        outcome: tuple[bool, Any, str] = (False, function(*args), "")
    except Exception as exc:  # every kind goes back to the caller, which raises it
        outcome = (True, exc, traceback.format_exc())
    try:
        data = pickle.dumps(outcome)
    except Exception:  # an exception that cannot travel: its text does
        data = pickle.dumps((True, RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}"), outcome[2]))
    with answers:
        answers.write(data)


def die_with(parent: int) -> None:
    """Have the kernel SIGKILL this child the moment its parent dies (Linux), so work whose parent
    was killed does not go on without it, at full CPU or holding a lock its retry needs.

    The parent may have died between fork and this call, before the request took effect:
    then this process is already someone else's child, and it leaves at once.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    exit_if_orphaned(parent)


def exit_if_orphaned(parent: int) -> None:
    """Leave at once if the parent has gone (where no death signal exists, the caller checks again)."""
    if os.getppid() != parent:
        os._exit(1)


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


# CPython 3.11 keeps one AST recursion counter per interpreter, so two threads building or converting
# AST objects at once can fail with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905): numpy parses every .npy header with ast.literal_eval (a generation opened
# `beside`), werkzeug compiles every route with ast (an app made), fingerprint.py parses modules.
# Where this code runs any of them, it holds this lock; it failed a test run now and then.
AST_LOCK = threading.RLock()

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
