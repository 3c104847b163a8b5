"""Paper vectors kept by content, so a rebuild embeds only papers whose text is new.

One file per model, `<store dir>/<model id>.npz`, holding `keys` (a 16-byte digest of each
embedded text) and `vectors` (float16 rows, unit length). It is replaced whole and
atomically: a reader sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from searchsvc.semantic.encoder import DIMENSIONS, MODEL_ID

KEY_BYTES = 16


def paper_text(title: str, abstract: str) -> str:
    """What a paper's vector is computed from: title and abstract, as BEIR's dense baselines do."""
    return f"{title} {abstract}".strip()


def content_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


@dataclass(frozen=True)
class StoredVectors:
    keys: np.ndarray  # (n,) of S16
    vectors: np.ndarray  # (n, DIMENSIONS) float16

    def rows(self) -> dict[bytes, int]:
        return {bytes(key): row for row, key in enumerate(self.keys)}


def store_file(directory: Path) -> Path:
    return directory / f"{MODEL_ID}.npz"


def load(path: Path) -> StoredVectors:
    """The stored vectors, or none if the file does not exist yet."""
    try:
        with np.load(path) as data:
            return StoredVectors(data["keys"], data["vectors"])
    except FileNotFoundError:
        return StoredVectors(np.empty(0, dtype=f"S{KEY_BYTES}"), np.empty((0, DIMENSIONS), dtype=np.float16))


def save(path: Path, stored: StoredVectors) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".vectors-", suffix=".npz")
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
