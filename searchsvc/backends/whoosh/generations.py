"""Index generations on disk: build beside the published one, publish atomically, prune safely.

Layout of the index directory::

    CURRENT                 name of the published generation (replaced atomically)
    rebuild.lock            held (flock) by the one running rebuild
    generations/<name>/     one complete Whoosh index each, plus
        manifest.json       written last: a generation without it is unfinished
        readers.lock        shared-locked by every process serving this generation

Whoosh's own generation numbers restart at 1 in every new directory and
`Searcher.refresh()` returns stale documents after updates (see docs/decisions.md),
so readers watch the pointer file and open a generation by its directory instead.
flock locks belong to the open file, so a process that dies, even by SIGKILL,
releases them: no stale lock can block the next rebuild or keep a generation alive.
A forked child shares that open file, so it closes its copy of the rebuild lock at once
(the index writers are forked while the lock is held).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from searchsvc.core.errors import IndexUnavailable, RebuildInProgress

POINTER = "CURRENT"
GENERATIONS = "generations"
REBUILD_LOCK = "rebuild.lock"
READERS_LOCK = "readers.lock"
MANIFEST = "manifest.json"
# What new_generation names look like; a pointer naming anything else (`../elsewhere`) is refused,
# so no content of CURRENT can make a reader open a path outside generations/.
_GENERATION_NAME = re.compile(r"[0-9]{8}T[0-9]{12}Z-[0-9a-f]{6}")

# Descriptors of the rebuild lock this process holds; a forked child closes its copies.
_HELD_LOCKS: set[int] = set()


def _close_held_locks() -> None:
    """In a forked child: drop the parent's rebuild lock, which would otherwise live as long as the child."""
    for fd in _HELD_LOCKS:
        os.close(fd)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_held_locks)


@dataclass(frozen=True)
class PointerStamp:
    """Identity of the pointer file's current version; changes with every publish."""

    inode: int
    mtime_ns: int


class GenerationStore:
    """One index directory and the generations inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generations = root / GENERATIONS

    # Writing side ---------------------------------------------------------------

    @contextmanager
    def rebuild_lock(self) -> Iterator[None]:
        """Hold the directory's rebuild lock, or fail at once if another rebuild has it."""
        self.generations.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / REBUILD_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        _HELD_LOCKS.add(fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                raise RebuildInProgress(
                    f"another rebuild of {self.root} is running (pid {holder}); try again when it has finished"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
            yield
        finally:
            if fd in _HELD_LOCKS:  # not in a forked child, which closed it already
                _HELD_LOCKS.discard(fd)
                os.close(fd)

    def new_generation(self) -> Path:
        """Create an empty, uniquely named generation directory; names sort by creation time."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = self.generations / f"{stamp}-{secrets.token_hex(3)}"
        path.mkdir(parents=True)
        (path / READERS_LOCK).touch()
        return path

    def finish(self, generation: Path, manifest: dict[str, Any]) -> None:
        """Mark a generation complete by writing its manifest, durably, last."""
        _write_atomically(generation / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        _fsync_tree(generation)

    def publish(self, generation: Path) -> None:
        """Point readers at `generation` with one atomic rename."""
        if not (generation / MANIFEST).is_file():
            raise ValueError(f"{generation} is unfinished: it has no {MANIFEST}")
        _write_atomically(self.root / POINTER, generation.name + "\n")

    def prune(self) -> list[str]:
        """Delete every unpublished generation no process is reading; return their names.

        Covers both superseded generations and partial ones left by a killed rebuild. Only
        directories named as generations are touched: an --index-dir pointed at the wrong
        folder must not cost anyone their files.
        Call only while holding the rebuild lock, so no generation is being built.
        """
        current = self.current_name()
        removed = []
        for path in sorted(self.generations.iterdir()) if self.generations.is_dir() else []:
            if path.name == current or not _GENERATION_NAME.fullmatch(path.name) or not path.is_dir():
                continue
            if self._remove_if_unread(path):
                removed.append(path.name)
        return removed

    def discard(self, generation: Path) -> None:
        """Remove a generation that failed before it was published."""
        shutil.rmtree(generation, ignore_errors=True)

    def _remove_if_unread(self, path: Path) -> bool:
        try:
            fd = os.open(path / READERS_LOCK, os.O_RDWR)
        except FileNotFoundError:
            shutil.rmtree(path, ignore_errors=True)
            return True
        except PermissionError:  # not ours to judge: leave it
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            # Manifest first: a reader that locks after us sees an unfinished generation and retries.
            (path / MANIFEST).unlink(missing_ok=True)
            shutil.rmtree(path, ignore_errors=True)
            return True
        finally:
            os.close(fd)

    # Reading side ---------------------------------------------------------------

    def stamp(self) -> PointerStamp | None:
        """Cheap per-request check (one stat) of whether a new generation was published."""
        try:
            st = os.stat(self.root / POINTER)
        except FileNotFoundError:
            return None
        return PointerStamp(st.st_ino, st.st_mtime_ns)

    def current_name(self) -> str | None:
        try:
            return (self.root / POINTER).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def hold_current(self, attempts: int = 3) -> GenerationHold:
        """Shared-lock the published generation so no rebuild prunes it while it is read."""
        for _ in range(attempts):
            stamp = self.stamp()
            path = self.generations / self._published_name()
            try:
                fd = os.open(path / READERS_LOCK, os.O_RDONLY)
            except FileNotFoundError:
                continue  # pruned between reading the pointer and opening: read the pointer again
            fcntl.flock(fd, fcntl.LOCK_SH)
            manifest = _read_manifest(path)
            if manifest is not None:
                return GenerationHold(path, manifest, stamp, fd)
            os.close(fd)
        raise IndexUnavailable(f"the published generation in {self.root} is missing or unfinished")

    def _published_name(self) -> str:
        name = self.current_name()
        if name is None:
            raise IndexUnavailable(f"no index is published in {self.root}: run `searchsvc rebuild`")
        if not _GENERATION_NAME.fullmatch(name):
            raise IndexUnavailable(
                f"{self.root / POINTER} does not name a generation ({name[:80]!r}): run `searchsvc rebuild`"
            )
        return name


class GenerationHold:
    """An open shared lock on one generation; release it when done reading."""

    def __init__(self, path: Path, manifest: dict[str, Any], stamp: PointerStamp | None, fd: int) -> None:
        self.path = path
        self.manifest = manifest
        self.stamp = stamp
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_manifest(generation: Path) -> dict[str, Any] | None:
    try:
        return json.loads((generation / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _write_atomically(path: Path, text: str) -> None:
    """Write to a temporary name, fsync, rename over `path`, fsync the folder."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_tree(directory: Path) -> None:
    for path in directory.iterdir():
        if path.is_file():
            with path.open("rb") as stream:
                os.fsync(stream.fileno())
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
