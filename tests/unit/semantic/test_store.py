"""The vector store file: what a killed save leaves behind is removed by the next save."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.store import KEY_BYTES, StoredVectors, load, save


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_save_removes_files_left_by_dead_savers_and_keeps_live_ones(tmp_path: Path) -> None:
    abandoned = tmp_path / f".vectors-{_dead_pid()}-abc.npz"
    in_progress = tmp_path / f".vectors-{os.getppid()}-def.npz"  # a live process's save
    for path in (abandoned, in_progress):
        path.write_bytes(b"half a file")
    stored = StoredVectors(
        np.array([b"k" * KEY_BYTES], dtype=f"S{KEY_BYTES}"), np.ones((1, DIMENSIONS), dtype=np.float16)
    )
    save(tmp_path / "model.npz", stored)
    assert not abandoned.exists() and in_progress.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([in_progress.name, "model.npz"])
    assert load(tmp_path / "model.npz").keys.tolist() == [b"k" * KEY_BYTES]
