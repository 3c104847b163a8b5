"""The vector store file: what a killed save leaves behind is removed by the next save."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from searchsvc.host import ScratchFolder
from searchsvc.semantic.encoder import DIMENSIONS
from searchsvc.semantic.store import KEY_BYTES, TEMP_PREFIX, StoredVectors, load, save


def test_a_save_removes_files_left_by_dead_savers_and_keeps_live_ones(tmp_path: Path) -> None:
    in_progress = ScratchFolder(tmp_path, TEMP_PREFIX)  # a save of another store in the folder, locked
    abandoned = tmp_path / f"{TEMP_PREFIX}1-abc"  # a killed save's, whose lock went with its process
    abandoned.mkdir()
    (abandoned / "model.npz").write_bytes(b"half a file")
    earlier = tmp_path / f"{TEMP_PREFIX}1-def.npz"  # an earlier version's file
    earlier.write_bytes(b"half a file")
    stored = StoredVectors(
        np.array([b"k" * KEY_BYTES], dtype=f"S{KEY_BYTES}"), np.ones((1, DIMENSIONS), dtype=np.float16)
    )
    save(tmp_path / "model.npz", stored)
    assert not abandoned.exists() and not earlier.exists() and in_progress.path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([in_progress.path.name, "model.npz"])
    assert load(tmp_path / "model.npz").keys.tolist() == [b"k" * KEY_BYTES]
