"""Index generations on disk: build beside the published one, publish atomically, prune safely.

Layout of the index directory::

    CURRENT                 name of the published generation (replaced atomically)
    rebuild.lock            held (flock) by the one running change (a rebuild or a write), which
                            records in it what it is and which process runs it
    generations/<name>/     one complete Whoosh index each, plus
        manifest.json       written last: a generation without it is unfinished
        readers.lock        shared-locked by every process serving this generation

Whoosh's own generation numbers restart at 1 in every new directory and
`Searcher.refresh()` returns stale documents after updates (see docs/decisions.md),
so readers watch the pointer file and open a generation by its directory instead.
flock locks belong to the open file, so a process that dies, even by SIGKILL,
releases them: no stale lock can block the next change or keep a generation alive.
A forked child shares that open file, so it closes its copy of the rebuild lock at once
(the index writers are forked while the lock is held).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from searchsvc.backends.whoosh.journal import TEMPORARY as JOURNAL_TEMPORARY
from searchsvc.core.errors import IndexUnavailable, RebuildInProgress
from searchsvc.host import fsync_dir, remove_unless_locked

POINTER = "CURRENT"
GENERATIONS = "generations"
REBUILD_LOCK = "rebuild.lock"
READERS_LOCK = "readers.lock"
MANIFEST = "manifest.json"
# What new_generation names look like; a pointer naming anything else (`../elsewhere`) is refused,
# so no content of CURRENT can make a reader open a path outside generations/.
_GENERATION_NAME = re.compile(r"[0-9]{8}T[0-9]{12}Z-[0-9a-f]{6}")
_DIGESTS_KEPT = 4096  # files whose digests a process remembers (a generation has a few dozen)
_POINTER_BYTES = 256  # a generation name is 30; more is not a pointer, and need not be read
_HOLDER_BYTES = 1024  # of the change lock's record (JSON), read when the lock is refused
# What `_write_atomically` leaves if killed before its rename, in the index folder (`.CURRENT.<pid>.tmp`).
_POINTER_TEMPORARY = re.compile(rf"\.{POINTER}\.[0-9]+\.tmp")
# What a killed change leaves at the top of the folder: a pointer or a cut journal, never renamed.
_ROOT_TEMPORARY = re.compile(f"{_POINTER_TEMPORARY.pattern}|{JOURNAL_TEMPORARY.pattern}")
FILES = "files"  # the manifest's digest of each file, checked before a generation is opened
# Each file's stat (device, inode, size, mtime, ctime) when its bytes last matched the manifest:
# a process opening the generation hashes only the files changed since (a dot file: not in the manifest).
VERIFIED = ".verified.json"
_VERIFIED_BYTES = 1 << 20  # a generation has a few dozen files; more is not a record
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
# What readers rely on, with its type: anything else in a manifest is provenance, shown as is.
_MANIFEST_FIELDS: dict[str, type] = {
    "schema_version": int,
    "doc_count": int,
    "built_at": str,
    "engine": str,
    FILES: dict,
}

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
    def rebuild_lock(self, kind: str, by: str = "") -> Iterator[None]:
        """Hold the directory's change lock for one change (`kind` as in core.errors.CHANGE_KINDS,
        `by` which one in its own words), or fail at once, naming the change that holds it."""
        self.generations.mkdir(parents=True, exist_ok=True)
        with self._change_lock(kind, by) as holder:
            if holder is not None:
                raise RebuildInProgress.held_by(holder, str(self.root), "try again when it has finished")
            yield

    def remove_leftovers(self) -> list[str]:
        """Delete what killed changes left (unfinished generations, a pointer or a cut journal never
        renamed into place) unless a change runs now, whose own files they may be; return their names. The lock
        is taken only when there is something to remove: a write meanwhile would be refused."""
        if not self.generations.is_dir() or not (unfinished := self._unfinished()):
            return []  # nothing was ever built here, or nothing was left: take no lock
        with self._change_lock("start", "") as holder:
            if holder is not None:
                return []  # the running change, or the next one, removes them
            files = [path for path in unfinished if path.parent == self.root]
            for path in files:
                path.unlink(missing_ok=True)
            return self.prune() + [path.name for path in files]

    def _unfinished(self) -> list[Path]:
        """Generations without a manifest but the published one, and pointers and cut journals never renamed."""
        current = self.current_name()
        found = [
            path
            for path in self.generations.iterdir()
            if _GENERATION_NAME.fullmatch(path.name) and path.name != current and not (path / MANIFEST).exists()
        ]
        temporary = [path for path in self.root.glob(".*") if _ROOT_TEMPORARY.fullmatch(path.name) and path.is_file()]
        return found + temporary

    @contextmanager
    def _change_lock(self, kind: str, by: str) -> Iterator[dict[str, Any] | None]:
        """None while this process holds the change lock, with `kind`, `by` and who it is recorded
        in it; else, at once, the record of the change holding it."""
        fd = os.open(self.root / REBUILD_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        _HELD_LOCKS.add(fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield _holder(fd)
                return
            record = {"kind": kind, "by": by, "pid": os.getpid(), "host": socket.gethostname()}
            written = os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)
            os.ftruncate(fd, written)  # after writing: a reader sees a whole record, if an older one
            yield None
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

    def finish(self, generation: Path, manifest: dict[str, Any], known: dict[str, str] | None = None) -> None:
        """Mark a generation complete by writing its manifest, with a digest of every file, durably, last.
        `known`: digests of files linked from a published generation, whose manifest checked them."""
        _fsync_tree(generation)
        manifest = {**manifest, FILES: file_digests(generation, known or {})}
        _record_verified(generation, manifest[FILES])
        _write_atomically(generation / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

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
        def remove() -> None:
            # Manifest first: a reader that locks after us sees an unfinished generation and retries.
            (path / MANIFEST).unlink(missing_ok=True)
            shutil.rmtree(path, ignore_errors=True)

        return remove_unless_locked(path / READERS_LOCK, remove)  # readers hold it shared

    # Reading side ---------------------------------------------------------------

    def stamp(self) -> PointerStamp | None:
        """Cheap per-request check (one stat) of whether a new generation was published."""
        try:
            st = os.stat(self.root / POINTER)
        except FileNotFoundError:
            return None
        return PointerStamp(st.st_ino, st.st_mtime_ns)

    def current_name(self) -> str | None:
        """The pointer's text; bytes that are not UTF-8 read as U+FFFD, which no generation name holds."""
        try:
            with (self.root / POINTER).open("rb") as stream:
                return stream.read(_POINTER_BYTES).decode("utf-8", "replace").strip() or None
        except FileNotFoundError:
            return None

    def hold_current(self, attempts: int = 3) -> GenerationHold:
        """Shared-lock the published generation so no rebuild prunes it while it is read, and
        check its files against its manifest, so damaged bytes are a 503 now rather than a 500 later."""
        for _ in range(attempts):
            stamp = self.stamp()
            path = self.generations / self.published_name()
            try:
                fd = os.open(path / READERS_LOCK, os.O_RDONLY)
            except FileNotFoundError:
                continue  # pruned between reading the pointer and opening: read the pointer again
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                manifest = _read_manifest(path)
                if manifest is not None:
                    _check_files(path, manifest[FILES])
                    return GenerationHold(path, manifest, stamp, fd)
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        raise IndexUnavailable(
            "the published index generation is missing or unfinished: run `searchsvc rebuild`", private=str(path)
        )

    def manifest(self, generation: Path) -> dict[str, Any]:
        """A finished generation's manifest (IndexUnavailable if it has none or it is damaged)."""
        manifest = _read_manifest(generation)
        if manifest is None:
            raise IndexUnavailable(
                "the published index generation is unfinished: run `searchsvc rebuild`", private=str(generation)
            )
        return manifest

    def published_name(self) -> str:
        name = self.current_name()
        if name is None:
            raise IndexUnavailable("no index is published: run `searchsvc rebuild`", private=f"in {self.root}")
        if not _GENERATION_NAME.fullmatch(name):
            raise IndexUnavailable(
                f"the index pointer ({POINTER}) does not name a generation: run `searchsvc rebuild`",
                private=f"{self.root / POINTER} holds {name[:80]!r}",
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


def _holder(fd: int) -> dict[str, Any]:
    """What the change holding the lock recorded: a JSON object (an earlier version wrote its pid alone)."""
    try:
        record = json.loads(os.pread(fd, _HOLDER_BYTES, 0))
    except ValueError:  # being written, or cut short: a record of nothing
        return {}
    if isinstance(record, int):
        return {"pid": record}
    return record if isinstance(record, dict) else {}


def _read_manifest(generation: Path) -> dict[str, Any] | None:
    """The generation's manifest; None while it has none (unfinished, or being pruned)."""
    try:
        text = (generation / MANIFEST).read_bytes()
    except FileNotFoundError:
        return None
    try:
        manifest = json.loads(text)
    except ValueError as exc:  # not JSON, or not UTF-8
        raise _damaged(generation, f"{MANIFEST} is not JSON: {exc}") from None
    problem = _manifest_problem(manifest)
    if problem:
        raise _damaged(generation, f"{MANIFEST}: {problem}")
    return manifest


def _manifest_problem(manifest: Any) -> str | None:
    """What is wrong with the shape of a manifest read from disk, if anything."""
    if not isinstance(manifest, dict):
        return f"expected an object, found {type(manifest).__name__}"
    for key, kind in _MANIFEST_FIELDS.items():
        value = manifest.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{key!r} must be {kind.__name__}, found {json.dumps(value)[:40]}"
    for name, digest in manifest[FILES].items():
        if not _FILE_NAME.fullmatch(name) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            return f"{FILES!r} holds {json.dumps(name)[:40]}: {json.dumps(digest)[:80]}"
    return None


def _check_files(generation: Path, expected: dict[str, str]) -> None:
    """The generation holds exactly the manifest's files, byte for byte (Whoosh opens the newest
    table of contents it finds, so an extra file would be read too). A file not changed since its
    bytes were last checked (`VERIFIED`: the same inode, size, mtime and ctime, which any write,
    truncation, replacement or copy changes) is not hashed again: at 300,000 papers hashing the
    generation's 1.4 GB was half of a fresh process's open."""
    verified = _verified(generation)
    unchanged = {
        name: expected[name] for name, seen in verified.items() if name in expected and seen == _stat(generation / name)
    }
    found = file_digests(generation, unchanged)
    if found != expected:
        changed = sorted(set(found) ^ set(expected) | {n for n in found if expected.get(n) != found[n]})
        raise _damaged(generation, f"files differ from the manifest: {', '.join(changed)[:200]}")
    if len(unchanged) < len(found):
        try:
            _record_verified(generation, found)
        except OSError:  # a read-only index folder: the next process hashes them again
            pass


def _record_verified(generation: Path, digests: dict[str, str]) -> None:
    """Keep the stat of each of `digests`' files, whose bytes have just been checked or written."""
    stats = {name: _stat(generation / name) for name in digests}
    _write_atomically(generation / VERIFIED, json.dumps(stats, sort_keys=True) + "\n")


def _verified(generation: Path) -> dict[str, list[int] | None]:
    """The record of `_record_verified`; empty if missing or not one (then every file is hashed)."""
    try:
        with (generation / VERIFIED).open("rb") as stream:
            record = json.loads(stream.read(_VERIFIED_BYTES))
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    return {name: seen for name, seen in record.items() if isinstance(seen, list)}


def _stat(path: Path) -> list[int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def file_digests(generation: Path, known: dict[str, str] | None = None) -> dict[str, str]:
    """SHA-256 of each file of a generation but its manifest and readers' lock, by name (taken
    from `known` where given)."""
    digests = {}
    for path in sorted(generation.iterdir()):
        if known and path.name in known:
            digests[path.name] = known[path.name]
        elif path.name not in (MANIFEST, READERS_LOCK) and not path.name.startswith("."):
            digests[path.name] = _digest(path)
    return digests


# (inode, size, mtime) → SHA-256 of the files this process has read: an update's generation
# links most of the previous one's files, which a worker then need not read again.
_DIGESTS: dict[tuple[int, int, int], str] = {}


def _digest(path: Path) -> str:
    with path.open("rb") as stream:
        st = os.fstat(stream.fileno())
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        found = _DIGESTS.get(key)
        if found is None:
            found = _DIGESTS[key] = hashlib.file_digest(stream, "sha256").hexdigest()
            if len(_DIGESTS) > _DIGESTS_KEPT:
                del _DIGESTS[next(iter(_DIGESTS))]
        return found


def _damaged(generation: Path, detail: str) -> IndexUnavailable:
    return IndexUnavailable(
        f"cannot open index generation {generation.name}: its files are damaged; run `searchsvc rebuild`",
        private=f"{generation}: {detail}",
    )


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
    fsync_dir(path.parent)


def _fsync_tree(directory: Path) -> None:
    for path in directory.iterdir():
        if path.is_file():
            with path.open("rb") as stream:
                os.fsync(stream.fileno())
    fsync_dir(directory)
