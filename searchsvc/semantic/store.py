"""Paper vectors kept by content, so a rebuild embeds only papers whose text is new.

One file per encoder, `<store dir>/<model id>.npz` (`selection.model_id`: int8 vectors are not
fp32 ones), holding `keys` (a 16-byte digest of each embedded text) and `vectors` (float16
rows, unit length). It is replaced whole and atomically: a reader sees the old file or the
new one, never a mix.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from searchsvc.host import remove_abandoned
from searchsvc.semantic.encoder import DIMENSIONS

KEY_BYTES = 16
_TEMP_PREFIX = ".vectors-"  # then the writing process's id: a save's file before it replaces the store
log = logging.getLogger(__name__)


def paper_text(title: str, abstract: str) -> str:
    """What a paper's vector is computed from: title and abstract, as BEIR's dense baselines do."""
    return f"{title} {abstract}".strip()


def content_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


@dataclass(frozen=True)
class StoredVectors:
    keys: np.ndarray  # (n,) of S16
    vectors: np.ndarray  # (n, DIMENSIONS) float16


def store_file(directory: Path, model_id: str) -> Path:
    return directory / f"{model_id}.npz"


# What reading a damaged .npz can raise: zipfile and numpy parse headers, sizes and flags from its bytes.
_UNREADABLE = (
    OSError,
    ValueError,
    KeyError,
    EOFError,
    RuntimeError,
    OverflowError,
    struct.error,
    zipfile.BadZipFile,
    zlib.error,
)


def load(path: Path) -> StoredVectors:
    """The stored vectors; none if the file does not exist yet, or cannot be read as a store
    (then searches rank lexically, and the next rebuild embeds every paper and replaces it)."""
    try:
        keys, vectors = _read_arrays(path)
    except FileNotFoundError:
        return _empty()
    except _UNREADABLE as exc:
        log.warning("ignoring the vector store %s: %s: %s", path, type(exc).__name__, exc)
        return _empty()
    problem = _problem(keys, vectors)
    if problem:
        log.warning("ignoring the vector store %s: %s", path, problem)
        return _empty()
    return StoredVectors(keys, vectors)


def _read_arrays(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with path.open("rb") as stream:  # np.load(path) would leak the file when it is not a zip
        data = np.load(stream, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        with data:
            return data["keys"], data["vectors"]


def _problem(keys: np.ndarray, vectors: np.ndarray) -> str | None:
    """What makes two arrays read from disk unusable as a store, if anything."""
    if keys.dtype != np.dtype(f"S{KEY_BYTES}") or keys.ndim != 1:
        return f"keys are {keys.dtype} {keys.shape}, expected S{KEY_BYTES} (n,)"
    if vectors.dtype != np.float16 or vectors.shape != (len(keys), DIMENSIONS):
        return f"vectors are {vectors.dtype} {vectors.shape}, expected float16 ({len(keys)}, {DIMENSIONS})"
    if not np.isfinite(vectors).all():
        return "vectors hold values that are not finite numbers"
    return None


def _empty() -> StoredVectors:
    return StoredVectors(np.empty(0, dtype=f"S{KEY_BYTES}"), np.empty((0, DIMENSIONS), dtype=np.float16))


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Hold the store at `path` for one writer, waiting for the one that has it.

    A rebuild, `searchsvc add` and the background embedding after a write through the API
    (operations/background_embedding.py) each load the store, add vectors and save it whole:
    two at once would each save without the other's vectors. The lock is the kernel's, so a
    killed writer's dies with it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def save(path: Path, stored: StoredVectors) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(path.parent, _TEMP_PREFIX)  # left by a process killed while saving
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{_TEMP_PREFIX}{os.getpid()}-", suffix=".npz")
    try:
        os.fchmod(fd, 0o644)  # readable by the service, like the index files
        with os.fdopen(fd, "wb") as stream:
            np.savez(stream, keys=stored.keys, vectors=stored.vectors)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def lookup(stored: StoredVectors, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of `keys`: its row in `stored`, and whether it is there at all (else the row is 0)."""
    if len(stored.keys) == 0:
        return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
    order = np.argsort(stored.keys)
    at = np.searchsorted(stored.keys[order], keys).clip(max=len(order) - 1)
    found = stored.keys[order[at]] == keys
    return np.where(found, order[at], 0), found
